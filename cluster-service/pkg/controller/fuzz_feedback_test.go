package controller

import (
	"encoding/json"
	"testing"

	workv1 "open-cluster-management.io/api/work/v1"

	csv1 "github.com/openhcp/openhcp/cluster-service/api/v1"
	"github.com/openhcp/openhcp/cluster-service/pkg/manifests"
)

// feedbackNames are the status feedback values Cluster Service reads, for the fuzzer to pick.
var feedbackNames = []string{
	manifests.FeedbackConditions, manifests.FeedbackVersionDesired, manifests.FeedbackVersionHistory,
	manifests.FeedbackControlPlaneEndpoint, manifests.FeedbackAutoscaling, manifests.FeedbackAPIServerNetworking,
	manifests.FeedbackImageContentSources, manifests.FeedbackSecretEncryption, manifests.FeedbackWorkloadIdentities,
	manifests.FeedbackGeneration, manifests.FeedbackNodePoolReplicas, manifests.FeedbackNodePoolVersion,
	manifests.FeedbackNodePoolLabels, manifests.FeedbackAuthenticationSpec, manifests.FeedbackAuthenticationStatus,
}

// feedbackKinds are the objects whose feedback is read.
var feedbackKinds = []string{"HostedCluster", "NodePool", "Authentication", "Secret"}

// FuzzWorkStatusFeedback feeds what a management cluster's Maestro agent reports (a work's
// status, decoded from the status CloudEvent's JSON payload, plus one feedback value of
// fuzzer-chosen name, object and raw JSON) to every parser Cluster Service runs on it: the
// cluster, node pool and external auth feedback and status derivation. The agent is another
// machine, so the promises are: no panic; a status is derived or an error returned, never
// neither; a derived cluster status has a state; and a deleting cluster is UNINSTALLING
// whatever the feedback says, unless the feedback cannot be read at all.
func FuzzWorkStatusFeedback(f *testing.F) {
	f.Add([]byte(`{}`), uint8(0), uint8(0), `[{"type":"Available","status":"True","lastTransitionTime":"2024-01-01T00:00:00Z","reason":"AsExpected","message":""}]`, int64(0))
	f.Add([]byte(`{"conditions":[{"type":"Applied","status":"True","lastTransitionTime":"2024-01-01T00:00:00Z","reason":"x","message":""}]}`), uint8(2), uint8(0), `[{"state":"Completed","version":"4.19.7"}]`, int64(0))
	f.Add([]byte(`{"resourceStatus":{"manifests":[{"resourceMeta":{"kind":"HostedCluster","name":"c"},"conditions":[{"type":"Applied","status":"False","reason":"AppliedManifestFailed","message":"denied","lastTransitionTime":"2024-01-01T00:00:00Z"}]}]}}`), uint8(3), uint8(0), `{"host":"api.example.com","port":443}`, int64(0))
	f.Add([]byte(`null`), uint8(9), uint8(1), ``, int64(7))
	f.Add([]byte(`{}`), uint8(10), uint8(1), `3`, int64(-1))
	f.Add([]byte(`{}`), uint8(14), uint8(2), `{"oidcClients":[{"componentName":"console"}]}`, int64(0))
	f.Add([]byte(`{}`), uint8(0), uint8(0), `[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]`, int64(0))
	f.Fuzz(func(t *testing.T, status []byte, name, kind uint8, raw string, integer int64) {
		w := &workv1.ManifestWork{}
		w.Name = "0123456789abcdefghijklmnopqrstuv"
		if err := json.Unmarshal(status, &w.Status); err != nil {
			return // the Maestro client refuses a payload it cannot decode
		}
		v := workv1.FeedbackValue{Name: feedbackNames[int(name)%len(feedbackNames)], Value: workv1.FieldValue{Type: workv1.JsonRaw, JsonRaw: &raw}}
		if v.Name == manifests.FeedbackGeneration || v.Name == manifests.FeedbackNodePoolReplicas {
			v.Value = workv1.FieldValue{Type: workv1.Integer, Integer: &integer}
		}
		k := feedbackKinds[int(kind)%len(feedbackKinds)]
		w.Status.ResourceStatus.Manifests = append(w.Status.ResourceStatus.Manifests, workv1.ManifestCondition{
			ResourceMeta:    workv1.ManifestResourceMeta{Kind: k, Name: "c"},
			StatusFeedbacks: workv1.StatusFeedbackResult{Values: []workv1.FeedbackValue{v}},
		})

		st, err := DeriveClusterStatus(w, nil, false)
		if (st == nil) == (err == nil) {
			t.Fatalf("DeriveClusterStatus returned status %v and error %v", st, err)
		}
		if st != nil && st.GetState() == csv1.ClusterState_CLUSTER_STATE_UNSPECIFIED {
			t.Fatalf("derived a cluster status without a state: %v", st)
		}
		del, err := DeriveClusterStatus(w, nil, true)
		if err == nil && del.GetState() != csv1.ClusterState_CLUSTER_STATE_UNINSTALLING {
			t.Fatalf("a deleting cluster derived state %v", del.GetState())
		}
		np, err := DeriveNodePoolStatus(w, &csv1.NodePoolSpec{VersionId: "4.19.7", Replicas: 2}, "4.19.7", "hash", false)
		if (np == nil) == (err == nil) {
			t.Fatalf("DeriveNodePoolStatus returned status %v and error %v", np, err)
		}
		_, _ = parseAuthFeedback(w)
		_, _ = statusSequence(w)
	})
}
