package controller

import (
	"encoding/json"
	"strings"
	"testing"

	hypershiftv1beta1 "github.com/openshift/hypershift/api/hypershift/v1beta1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	workv1 "open-cluster-management.io/api/work/v1"

	csv1 "github.com/openhcp/openhcp/cluster-service/api/v1"
)

type cond = metav1.Condition

func raw(t *testing.T, v any) *string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	s := string(b)
	return &s
}

// work builds a ManifestWork status as the Maestro agent reports it.
func work(t *testing.T, applied bool, conds []cond, history []map[string]string, desired string, host string) *workv1.ManifestWork {
	t.Helper()
	w := &workv1.ManifestWork{ObjectMeta: metav1.ObjectMeta{Name: "cluster-x"}}
	st := metav1.ConditionFalse
	if applied {
		st = metav1.ConditionTrue
	}
	w.Status.Conditions = []metav1.Condition{{Type: workv1.WorkApplied, Status: st}}
	var vals []workv1.FeedbackValue
	if conds != nil {
		vals = append(vals, workv1.FeedbackValue{Name: "conditions", Value: workv1.FieldValue{Type: workv1.JsonRaw, JsonRaw: raw(t, conds)}})
	}
	if history != nil {
		vals = append(vals, workv1.FeedbackValue{Name: "versionHistory", Value: workv1.FieldValue{Type: workv1.JsonRaw, JsonRaw: raw(t, history)}})
	}
	if desired != "" {
		vals = append(vals, workv1.FeedbackValue{Name: "versionDesired", Value: workv1.FieldValue{Type: workv1.JsonRaw, JsonRaw: raw(t, map[string]string{"version": desired})}})
	}
	if host != "" {
		vals = append(vals, workv1.FeedbackValue{Name: "controlPlaneEndpoint", Value: workv1.FieldValue{Type: workv1.JsonRaw, JsonRaw: raw(t, map[string]any{"host": host, "port": 443})}})
	}
	w.Status.ResourceStatus.Manifests = []workv1.ManifestCondition{
		{ResourceMeta: workv1.ManifestResourceMeta{Kind: "Namespace", Resource: "namespaces", Name: "ns"},
			Conditions: []metav1.Condition{{Type: workv1.ManifestApplied, Status: st, Message: "no matches for kind"}}},
		{ResourceMeta: workv1.ManifestResourceMeta{Group: "hypershift.openshift.io", Kind: "HostedCluster", Resource: "hostedclusters", Name: "hc"},
			StatusFeedbacks: workv1.StatusFeedbackResult{Values: vals}},
	}
	return w
}

// rejected is a work at generation 2 whose HostedCluster the agent could not apply, with the
// apiserver's answer msg, observed at generation observed (0: the agent did not say).
func rejected(t *testing.T, msg string, observed int64) *workv1.ManifestWork {
	w := work(t, false, nil, nil, "", "")
	w.Generation = 2
	w.Status.ResourceStatus.Manifests[0].Conditions[0].Status = metav1.ConditionTrue
	w.Status.ResourceStatus.Manifests[1].Conditions = []metav1.Condition{{Type: workv1.ManifestApplied, Status: metav1.ConditionFalse,
		Reason: "AppliedManifestFailed", Message: msg, ObservedGeneration: observed}}
	return w
}

func TestDeriveStatus(t *testing.T) {
	available := cond{Type: "Available", Status: metav1.ConditionTrue, Reason: "AsExpected"}
	notAvailable := cond{Type: "Available", Status: metav1.ConditionFalse, Reason: "Waiting", Message: "etcd is starting"}
	completed := []map[string]string{{"state": "Completed", "version": "4.19.7"}}
	tests := []struct {
		name     string
		work     func(t *testing.T) *workv1.ManifestWork
		deleting bool
		want     csv1.ClusterState
		code     string
		check    func(t *testing.T, st *csv1.ClusterStatus)
	}{
		{name: "no_work_yet_is_installing", work: func(*testing.T) *workv1.ManifestWork { return nil }, want: csv1.ClusterState_CLUSTER_STATE_INSTALLING},
		{
			name: "not_applied_reports_the_apply_failure",
			work: func(t *testing.T) *workv1.ManifestWork { return work(t, false, nil, nil, "", "") },
			want: csv1.ClusterState_CLUSTER_STATE_INSTALLING,
			check: func(t *testing.T, st *csv1.ClusterStatus) {
				if st.Applied || st.Message != "Applying the manifests failed: Namespace ns: no matches for kind" {
					t.Fatalf("applied %v message %q", st.Applied, st.Message)
				}
			},
		},
		{
			name: "applied_without_feedback_is_installing",
			work: func(t *testing.T) *workv1.ManifestWork { return work(t, true, nil, nil, "", "") },
			want: csv1.ClusterState_CLUSTER_STATE_INSTALLING,
			check: func(t *testing.T, st *csv1.ClusterStatus) {
				if !st.Applied {
					t.Fatal("applied = false")
				}
			},
		},
		{
			name: "available_false_is_installing_with_its_message",
			work: func(t *testing.T) *workv1.ManifestWork { return work(t, true, []cond{notAvailable}, nil, "", "") },
			want: csv1.ClusterState_CLUSTER_STATE_INSTALLING,
			check: func(t *testing.T, st *csv1.ClusterStatus) {
				if st.Message != "The control plane is being installed: etcd is starting" || len(st.Conditions) != 1 {
					t.Fatalf("message %q conditions %v", st.Message, st.Conditions)
				}
			},
		},
		{
			name: "available_true_is_ready_with_version_and_api_url",
			work: func(t *testing.T) *workv1.ManifestWork {
				return work(t, true, []cond{available}, completed, "4.19.7", "api.example.com")
			},
			want: csv1.ClusterState_CLUSTER_STATE_READY,
			check: func(t *testing.T, st *csv1.ClusterStatus) {
				if st.CurrentVersion != "4.19.7" || st.ApiUrl != "https://api.example.com:443" || st.ErrorCode != "" {
					t.Fatalf("status = %+v", st)
				}
			},
		},
		{
			name: "available_with_newer_desired_is_updating",
			work: func(t *testing.T) *workv1.ManifestWork {
				h := []map[string]string{{"state": "Partial", "version": "4.19.8"}, {"state": "Completed", "version": "4.19.7"}}
				return work(t, true, []cond{available}, h, "4.19.8", "")
			},
			want: csv1.ClusterState_CLUSTER_STATE_UPDATING,
		},
		{
			name: "degraded_is_error",
			work: func(t *testing.T) *workv1.ManifestWork {
				return work(t, true, []cond{notAvailable, {Type: "Degraded", Status: metav1.ConditionTrue, Reason: "EtcdFailing", Message: "etcd quorum lost"}}, nil, "", "")
			},
			want: csv1.ClusterState_CLUSTER_STATE_ERROR, code: "HostedClusterDegraded",
			check: func(t *testing.T, st *csv1.ClusterStatus) {
				if st.Message != "etcd quorum lost" {
					t.Fatalf("message %q", st.Message)
				}
			},
		},
		{
			name: "invalid_release_image_is_error_even_if_available",
			work: func(t *testing.T) *workv1.ManifestWork {
				return work(t, true, []cond{available, {Type: "ValidReleaseImage", Status: metav1.ConditionFalse, Message: "image not found"}}, nil, "", "")
			},
			want: csv1.ClusterState_CLUSTER_STATE_ERROR, code: "InvalidReleaseImage",
		},
		{
			name: "unknown_valid_condition_false_maps_to_invalid_code",
			work: func(t *testing.T) *workv1.ManifestWork {
				return work(t, true, []cond{{Type: "ValidOIDCConfiguration", Status: metav1.ConditionFalse, Reason: "Bad"}}, nil, "", "")
			},
			want: csv1.ClusterState_CLUSTER_STATE_ERROR, code: "InvalidOIDCConfiguration",
		},
		{
			name: "unsupported_hosted_cluster",
			work: func(t *testing.T) *workv1.ManifestWork {
				return work(t, true, []cond{{Type: "SupportedHostedCluster", Status: metav1.ConditionFalse}}, nil, "", "")
			},
			want: csv1.ClusterState_CLUSTER_STATE_ERROR, code: "UnsupportedHostedCluster",
		},
		{
			name: "invalid_object_is_error_with_the_apiserver_reason",
			work: func(t *testing.T) *workv1.ManifestWork {
				return rejected(t, `HostedCluster.hypershift.openshift.io "hc" is invalid: spec.secretEncryption.kms.azure.kms.objectEncoding: Unsupported value: ""`, 0)
			},
			want: csv1.ClusterState_CLUSTER_STATE_ERROR, code: ErrorCodeManifestRejected,
			check: func(t *testing.T, st *csv1.ClusterStatus) {
				if !strings.Contains(st.Message, `objectEncoding: Unsupported value: ""`) {
					t.Fatalf("message %q lacks the apiserver's reason", st.Message)
				}
			},
		},
		{
			name: "admission_denial_is_error",
			work: func(t *testing.T) *workv1.ManifestWork {
				return rejected(t, `hostedclusters.hypershift.openshift.io "hc" is forbidden: ValidatingAdmissionPolicy 'p' with binding 'b' denied request: no`, 0)
			},
			want: csv1.ClusterState_CLUSTER_STATE_ERROR, code: ErrorCodeManifestRejected,
		},
		{
			name: "transient_apply_failure_keeps_installing_with_the_reason",
			work: func(t *testing.T) *workv1.ManifestWork {
				return rejected(t, `Post "https://127.0.0.1:6443/apis/...": dial tcp 127.0.0.1:6443: connect: connection refused`, 0)
			},
			want: csv1.ClusterState_CLUSTER_STATE_INSTALLING,
			check: func(t *testing.T, st *csv1.ClusterStatus) {
				if !strings.Contains(st.Message, "connection refused") {
					t.Fatalf("message %q lacks the reason", st.Message)
				}
			},
		},
		{
			name: "namespace_being_terminated_is_transient",
			work: func(t *testing.T) *workv1.ManifestWork {
				return rejected(t, `hostedclusters.hypershift.openshift.io "hc" is forbidden: unable to create new content in namespace ns because it is being terminated`, 0)
			},
			want: csv1.ClusterState_CLUSTER_STATE_INSTALLING,
		},
		{
			name: "a_refusal_of_an_older_generation_is_not_the_current_spec's",
			work: func(t *testing.T) *workv1.ManifestWork {
				return rejected(t, `HostedCluster.hypershift.openshift.io "hc" is invalid: spec.x: bad`, 1)
			},
			want: csv1.ClusterState_CLUSTER_STATE_INSTALLING,
		},
		{
			name:     "deleting_is_uninstalling_whatever_the_feedback",
			work:     func(t *testing.T) *workv1.ManifestWork { return work(t, true, []cond{available}, nil, "", "") },
			deleting: true,
			want:     csv1.ClusterState_CLUSTER_STATE_UNINSTALLING,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st, err := DeriveStatus(tt.work(t), tt.deleting)
			if err != nil {
				t.Fatal(err)
			}
			if st.State != tt.want || st.ErrorCode != tt.code {
				t.Fatalf("state %v code %q (message %q), want %v %q", st.State, st.ErrorCode, st.Message, tt.want, tt.code)
			}
			if tt.check != nil {
				tt.check(t, st)
			}
		})
	}
}

func TestDeriveStatusRejectsBadFeedback(t *testing.T) {
	w := work(t, true, nil, nil, "", "")
	bad := "{not json"
	w.Status.ResourceStatus.Manifests[1].StatusFeedbacks.Values = []workv1.FeedbackValue{{Name: "conditions", Value: workv1.FieldValue{Type: workv1.JsonRaw, JsonRaw: &bad}}}
	if _, err := DeriveStatus(w, false); err == nil {
		t.Fatal("malformed feedback accepted")
	}
}

func TestDeriveStatusConsoleURL(t *testing.T) {
	built := &hypershiftv1beta1.HostedCluster{ObjectMeta: metav1.ObjectMeta{Name: "shop"}}
	built.Spec.DNS.BaseDomain = "ocm-dev-x.hypershift.local"
	tests := []struct {
		name    string
		w       *workv1.ManifestWork
		built   *hypershiftv1beta1.HostedCluster
		deleted bool
		want    string
	}{
		{"applied_work_reports_the_console_of_the_spec_sent", work(t, true, nil, nil, "", ""), built, false, "https://console-openshift-console.apps.shop.ocm-dev-x.hypershift.local"},
		{"not_before_the_work_is_applied", work(t, false, nil, nil, "", ""), built, false, ""},
		{"not_without_a_work", nil, built, false, ""},
		{"not_without_a_base_domain", work(t, true, nil, nil, "", ""), &hypershiftv1beta1.HostedCluster{ObjectMeta: metav1.ObjectMeta{Name: "shop"}}, false, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st, err := DeriveClusterStatus(tt.w, tt.built, tt.deleted)
			if err != nil {
				t.Fatal(err)
			}
			if st.GetConsoleUrl() != tt.want {
				t.Fatalf("console_url = %q, want %q", st.GetConsoleUrl(), tt.want)
			}
		})
	}
}

// TestPartialReportIsHeld: the first report of a Maestro agent that restarted (the work applied,
// no feedback of the HostedCluster or NodePool yet) derives INSTALLING without conditions; it
// is held, so a READY cluster or pool stays READY, while any report with feedback, a refused
// manifest, a failure or a deletion goes through, and so does the first report of a new
// cluster (no stored conditions yet).
func TestPartialReportIsHeld(t *testing.T) {
	available := []cond{{Type: "Available", Status: metav1.ConditionTrue}}
	stored := func(t *testing.T) []*csv1.Condition {
		st, err := DeriveStatus(work(t, true, available, nil, "", "api.x"), false)
		if err != nil {
			t.Fatal(err)
		}
		if st.GetState() != csv1.ClusterState_CLUSTER_STATE_READY {
			t.Fatalf("stored status %v, want READY", st.GetState())
		}
		return st.GetConditions()
	}
	tests := []struct {
		name     string
		prev     bool // the stored status was derived from feedback (READY)
		w        func(t *testing.T) *workv1.ManifestWork
		deleting bool
		held     bool
	}{
		{"restarted agent: applied, no feedback yet", true, func(t *testing.T) *workv1.ManifestWork { return work(t, true, nil, nil, "", "") }, false, true},
		{"feedback back, still available", true, func(t *testing.T) *workv1.ManifestWork { return work(t, true, available, nil, "", "api.x") }, false, false},
		{"feedback back, no longer available", true, func(t *testing.T) *workv1.ManifestWork {
			return work(t, true, []cond{{Type: "Available", Status: metav1.ConditionFalse}}, nil, "", "api.x")
		}, false, false},
		{"a manifest the agent failed to apply", true, func(t *testing.T) *workv1.ManifestWork { return rejected(t, "admission webhook denied", 2) }, false, false},
		{"deleting", true, func(t *testing.T) *workv1.ManifestWork { return work(t, true, nil, nil, "", "") }, true, false},
		{"no work at Maestro", true, func(t *testing.T) *workv1.ManifestWork { return nil }, false, false},
		{"a new cluster's first report", false, func(t *testing.T) *workv1.ManifestWork { return work(t, true, nil, nil, "", "") }, false, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var prev []*csv1.Condition
			if tt.prev {
				prev = stored(t)
			}
			w := tt.w(t)
			st, err := DeriveStatus(w, tt.deleting)
			if err != nil {
				t.Fatal(err)
			}
			if got := partialReport(w, prev, st.GetConditions(), st.GetState() == csv1.ClusterState_CLUSTER_STATE_INSTALLING); got != tt.held {
				t.Fatalf("held = %v, want %v (derived %v %q)", got, tt.held, st.GetState(), st.GetMessage())
			}
		})
	}

	// A node pool the same way: a status derived from feedback, then a restarted agent's first
	// report.
	reported, err := DeriveNodePoolStatus(poolWork(t, true, []cond{{Type: "Ready", Status: metav1.ConditionTrue}}, ptr.To(int64(1)), "4.19.17"),
		&csv1.NodePoolSpec{Replicas: 1}, "4.19.17", "", false)
	if err != nil {
		t.Fatal(err)
	}
	partialWork := poolWork(t, true, nil, nil, "")
	partial, err := DeriveNodePoolStatus(partialWork, &csv1.NodePoolSpec{Replicas: 1}, "4.19.17", "", false)
	if err != nil {
		t.Fatal(err)
	}
	if !partialReport(partialWork, reported.GetConditions(), partial.GetConditions(), partial.GetState() == csv1.NodePoolState_NODE_POOL_STATE_INSTALLING) {
		t.Fatalf("a reported pool's partial report (%v %q) is not held", partial.GetState(), partial.GetMessage())
	}
}
