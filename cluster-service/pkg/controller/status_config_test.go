package controller

import (
	"bytes"
	"strings"
	"testing"

	hypershiftv1beta1 "github.com/openshift/hypershift/api/hypershift/v1beta1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	workv1 "open-cluster-management.io/api/work/v1"

	csv1 "github.com/openhcp/openhcp/cluster-service/api/v1"
	"github.com/openhcp/openhcp/cluster-service/pkg/manifests"
)

// builtHC is the HostedCluster Cluster Service would send for a spec with this configuration.
func builtHC(t *testing.T, maxNodes int32, cidrs ...string) *hypershiftv1beta1.HostedCluster {
	t.Helper()
	spec := &csv1.ClusterSpec{VersionId: "4.19.7", ChannelGroup: "stable", ApiAuthorizedCidrs: cidrs,
		Autoscaling: &csv1.ClusterAutoscaling{MaxNodesTotal: ptr.To(maxNodes)}}
	w, err := manifests.Build(manifests.Config{}, manifests.Cluster{ID: "c1", ARMResourceID: "/x/hcpOpenShiftClusters/hc",
		Spec: spec, EtcdEncryptionKey: bytes.Repeat([]byte{1}, 32)})
	if err != nil {
		t.Fatal(err)
	}
	hc, err := manifests.HostedClusterOf(w)
	if err != nil {
		t.Fatal(err)
	}
	return hc
}

// withConfig adds the configuration feedback of hc at generation gen to w.
func withConfig(t *testing.T, w *workv1.ManifestWork, hc *hypershiftv1beta1.HostedCluster, gen int64) *workv1.ManifestWork {
	t.Helper()
	m := &w.Status.ResourceStatus.Manifests[1]
	m.StatusFeedbacks.Values = append(m.StatusFeedbacks.Values,
		workv1.FeedbackValue{Name: manifests.FeedbackGeneration, Value: workv1.FieldValue{Type: workv1.Integer, Integer: &gen}},
		workv1.FeedbackValue{Name: manifests.FeedbackAutoscaling, Value: workv1.FieldValue{Type: workv1.JsonRaw, JsonRaw: raw(t, hc.Spec.Autoscaling)}})
	if hc.Spec.Networking.APIServer != nil {
		m.StatusFeedbacks.Values = append(m.StatusFeedbacks.Values,
			workv1.FeedbackValue{Name: manifests.FeedbackAPIServerNetworking, Value: workv1.FieldValue{Type: workv1.JsonRaw, JsonRaw: raw(t, hc.Spec.Networking.APIServer)}})
	}
	if hc.Spec.SecretEncryption != nil {
		m.StatusFeedbacks.Values = append(m.StatusFeedbacks.Values,
			workv1.FeedbackValue{Name: manifests.FeedbackSecretEncryption, Value: workv1.FieldValue{Type: workv1.JsonRaw, JsonRaw: raw(t, hc.Spec.SecretEncryption)}})
	}
	return w
}

func TestDeriveClusterStatusConfiguration(t *testing.T) {
	available := cond{Type: "Available", Status: metav1.ConditionTrue, Reason: "AsExpected"}
	reconciled := func(gen int64, status metav1.ConditionStatus) cond {
		return cond{Type: "ReconciliationSucceeded", Status: status, Reason: "ReconciliatonSucceeded", Message: "Reconciliation completed successfully", ObservedGeneration: gen}
	}
	completed := []map[string]string{{"state": "Completed", "version": "4.19.7"}}
	want := builtHC(t, 20, "192.0.2.0/24")
	tests := []struct {
		name      string
		reported  *hypershiftv1beta1.HostedCluster // what the agent reports as applied
		gen       int64
		conds     []cond
		state     csv1.ClusterState
		msgSubstr string
	}{
		{"applied_and_reconciled_at_the_reported_generation_is_ready", want, 3, []cond{available, reconciled(3, metav1.ConditionTrue)},
			csv1.ClusterState_CLUSTER_STATE_READY, "ready"},
		{"feedback_from_before_the_update_is_updating", builtHC(t, 10), 2, []cond{available, reconciled(2, metav1.ConditionTrue)},
			csv1.ClusterState_CLUSTER_STATE_UPDATING, "apply the autoscaling, API authorized CIDRs"},
		{"applied_but_not_reconciled_at_this_generation_is_updating", want, 3, []cond{available, reconciled(2, metav1.ConditionTrue)},
			csv1.ClusterState_CLUSTER_STATE_UPDATING, "reconcile generation 3"},
		{"no_reconciliation_condition_is_updating", want, 3, []cond{available},
			csv1.ClusterState_CLUSTER_STATE_UPDATING, "reconcile generation 3"},
		{"a_failed_reconciliation_is_updating_with_hypershifts_message", want, 3,
			[]cond{available, {Type: "ReconciliationSucceeded", Status: metav1.ConditionFalse, Reason: "ReconciliationError", Message: "cannot reach the KMS", ObservedGeneration: 3}},
			csv1.ClusterState_CLUSTER_STATE_UPDATING, "cannot reach the KMS"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			w := withConfig(t, work(t, true, tc.conds, completed, "4.19.7", "api.example.com"), tc.reported, tc.gen)
			st, err := DeriveClusterStatus(w, want, false)
			if err != nil {
				t.Fatal(err)
			}
			if st.State != tc.state || !strings.Contains(st.Message, tc.msgSubstr) {
				t.Fatalf("state %s %q; want %s containing %q", st.State, st.Message, tc.state, tc.msgSubstr)
			}
		})
	}
}
