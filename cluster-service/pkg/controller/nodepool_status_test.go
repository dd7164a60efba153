package controller

import (
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	workv1 "open-cluster-management.io/api/work/v1"

	csv1 "github.com/openhcp/openhcp/cluster-service/api/v1"
)

// poolWork builds a node pool work's status as the Maestro agent reports it: conditions as raw
// JSON, replicas as an Integer and version as a String (JSONPath scalars come back typed), the
// labels as raw JSON (with the spec hash "built") and the generation (2) as an Integer.
func poolWork(t *testing.T, applied bool, conds []cond, replicas *int64, version string) *workv1.ManifestWork {
	t.Helper()
	w := &workv1.ManifestWork{ObjectMeta: metav1.ObjectMeta{Name: "nodepool-x"}}
	st := metav1.ConditionFalse
	if applied {
		st = metav1.ConditionTrue
	}
	w.Status.Conditions = []metav1.Condition{{Type: workv1.WorkApplied, Status: st}}
	var vals []workv1.FeedbackValue
	if conds != nil {
		vals = append(vals, workv1.FeedbackValue{Name: "conditions", Value: workv1.FieldValue{Type: workv1.JsonRaw, JsonRaw: raw(t, conds)}})
	}
	if replicas != nil {
		vals = append(vals, workv1.FeedbackValue{Name: "replicas", Value: workv1.FieldValue{Type: workv1.Integer, Integer: replicas}})
	}
	if version != "" {
		vals = append(vals, workv1.FeedbackValue{Name: "version", Value: workv1.FieldValue{Type: workv1.String, String: &version}})
	}
	gen := int64(2)
	vals = append(vals,
		workv1.FeedbackValue{Name: "labels", Value: workv1.FieldValue{Type: workv1.JsonRaw, JsonRaw: raw(t, map[string]string{"openhcp.io/spec-hash": "built"})}},
		workv1.FeedbackValue{Name: "generation", Value: workv1.FieldValue{Type: workv1.Integer, Integer: &gen}})
	w.Status.ResourceStatus.Manifests = []workv1.ManifestCondition{{
		ResourceMeta:    workv1.ManifestResourceMeta{Group: "hypershift.openshift.io", Kind: "NodePool", Resource: "nodepools", Name: "np"},
		Conditions:      []metav1.Condition{{Type: workv1.ManifestApplied, Status: st, Message: "admission webhook denied"}},
		StatusFeedbacks: workv1.StatusFeedbackResult{Values: vals},
	}}
	return w
}

// withSpecHash makes a pool work report a NodePool built from another spec.
func withSpecHash(t *testing.T, w *workv1.ManifestWork, hash string) *workv1.ManifestWork {
	vals := w.Status.ResourceStatus.Manifests[0].StatusFeedbacks.Values
	for i := range vals {
		if vals[i].Name == "labels" {
			vals[i].Value.JsonRaw = raw(t, map[string]string{"openhcp.io/spec-hash": hash})
		}
	}
	return w
}

func TestDeriveNodePoolStatus(t *testing.T) {
	n := func(v int64) *int64 { return &v }
	ready := cond{Type: "Ready", Status: metav1.ConditionTrue, Reason: "AsExpected", ObservedGeneration: 2}
	readyBefore := cond{Type: "Ready", Status: metav1.ConditionTrue, Reason: "AsExpected", ObservedGeneration: 1}
	notReady := cond{Type: "Ready", Status: metav1.ConditionFalse, Reason: "WaitingForAvailableMachines", Message: "Minimum availability requires 3 replicas, current 2 available"}
	fixed := func(r int32) *csv1.NodePoolSpec { return &csv1.NodePoolSpec{Replicas: r, VersionId: "4.19.17"} }
	auto := &csv1.NodePoolSpec{Autoscaling: &csv1.NodePoolAutoscaling{Min: 2, Max: 5}, VersionId: "4.19.17"}
	tests := []struct {
		name     string
		work     *workv1.ManifestWork
		spec     *csv1.NodePoolSpec
		deleting bool
		want     csv1.NodePoolState
		msg      string
	}{
		{"no_work_yet_is_installing", nil, fixed(2), false, csv1.NodePoolState_NODE_POOL_STATE_INSTALLING, "sent"},
		{"apply_failure_is_reported", poolWork(t, false, nil, nil, ""), fixed(2), false, csv1.NodePoolState_NODE_POOL_STATE_INSTALLING, "admission webhook denied"},
		{"applied_without_feedback_waits_for_hypershift", poolWork(t, true, nil, nil, ""), fixed(2), false, csv1.NodePoolState_NODE_POOL_STATE_INSTALLING, "waiting for HyperShift"},
		{"first_machines_coming_is_installing", poolWork(t, true, []cond{notReady}, n(0), ""), fixed(2), false, csv1.NodePoolState_NODE_POOL_STATE_INSTALLING, "current 2 available"},
		{"ready_at_wanted_count_and_version", poolWork(t, true, []cond{ready}, n(2), "4.19.17"), fixed(2), false, csv1.NodePoolState_NODE_POOL_STATE_READY, "ready"},
		{"stale_ready_feedback_after_scale_is_updating", poolWork(t, true, []cond{ready}, n(2), "4.19.17"), fixed(3), false, csv1.NodePoolState_NODE_POOL_STATE_UPDATING, "scaling from 2 to 3"},
		{"scaling_is_updating", poolWork(t, true, []cond{notReady}, n(2), "4.19.17"), fixed(3), false, csv1.NodePoolState_NODE_POOL_STATE_UPDATING, "scaling from 2 to 3"},
		{"version_rollout_is_updating", poolWork(t, true, []cond{ready}, n(2), "4.19.16"), fixed(2), false, csv1.NodePoolState_NODE_POOL_STATE_UPDATING, "from 4.19.16 to 4.19.17"},
		{"autoscaled_within_bounds_is_ready", poolWork(t, true, []cond{ready}, n(3), "4.19.17"), auto, false, csv1.NodePoolState_NODE_POOL_STATE_READY, "ready"},
		{"autoscaled_below_min_is_updating", poolWork(t, true, []cond{ready}, n(1), "4.19.17"), auto, false, csv1.NodePoolState_NODE_POOL_STATE_UPDATING, "2-5"},
		{"invalid_release_image_is_error", poolWork(t, true, []cond{{Type: "ValidReleaseImage", Status: metav1.ConditionFalse, Message: "no version"}}, n(0), ""), fixed(2), false,
			csv1.NodePoolState_NODE_POOL_STATE_ERROR, "no version"},
		// An update that leaves replicas and version satisfied (labels, taints, a wider
		// autoscaling range) is READY only once the NodePool carries it and HyperShift
		// reconciled it.
		{"ready_feedback_of_the_spec_before_an_update_is_updating", withSpecHash(t, poolWork(t, true, []cond{ready}, n(3), "4.19.17"), "before"), auto, false,
			csv1.NodePoolState_NODE_POOL_STATE_UPDATING, "apply the node pool's change"},
		{"ready_observed_at_an_older_generation_is_updating", poolWork(t, true, []cond{readyBefore}, n(3), "4.19.17"), auto, false,
			csv1.NodePoolState_NODE_POOL_STATE_UPDATING, "reconcile generation 2"},
		{"deleting_is_uninstalling", poolWork(t, true, []cond{ready}, n(2), "4.19.17"), fixed(2), true, csv1.NodePoolState_NODE_POOL_STATE_UNINSTALLING, "deleted"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			st, err := DeriveNodePoolStatus(tc.work, tc.spec, "4.19.17", "built", tc.deleting)
			if err != nil {
				t.Fatal(err)
			}
			if st.State != tc.want || !strings.Contains(st.Message, tc.msg) {
				t.Fatalf("state %v %q; want %v containing %q", st.State, st.Message, tc.want, tc.msg)
			}
			if tc.want == csv1.NodePoolState_NODE_POOL_STATE_ERROR && st.ErrorCode != "InvalidReleaseImage" {
				t.Fatalf("error code %q", st.ErrorCode)
			}
			if tc.work != nil && tc.name == "ready_at_wanted_count_and_version" && (st.Replicas != 2 || st.CurrentVersion != "4.19.17" || !st.Applied || len(st.Conditions) != 1) {
				t.Fatalf("status = %v", st)
			}
		})
	}
}
