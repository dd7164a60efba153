package controller

import (
	"strings"

	"google.golang.org/protobuf/types/known/timestamppb"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	workv1 "open-cluster-management.io/api/work/v1"

	csv1 "github.com/openhcp/openhcp/cluster-service/api/v1"
)

// Every status derived from a work (a cluster's, DeriveClusterStatus; a node pool's,
// DeriveNodePoolStatus) reads the work and its feedback, and applies its first rules, the same
// way; what differs per kind is its states and its words (workKind).

// workKind is one kind of object with a work of its own, whose states are S.
type workKind[S ~int32] struct {
	noun                             string // "node pool"
	manifests                        string // how messages name its manifests: "the node pool's manifests"
	installing, uninstalling, failed S
}

var (
	clusterWork  = workKind[csv1.ClusterState]{noun: "cluster", manifests: "the manifests", installing: csv1.ClusterState_CLUSTER_STATE_INSTALLING, uninstalling: csv1.ClusterState_CLUSTER_STATE_UNINSTALLING, failed: csv1.ClusterState_CLUSTER_STATE_ERROR}
	nodePoolWork = workKind[csv1.NodePoolState]{noun: "node pool", manifests: "the node pool's manifests", installing: csv1.NodePoolState_NODE_POOL_STATE_INSTALLING, uninstalling: csv1.NodePoolState_NODE_POOL_STATE_UNINSTALLING, failed: csv1.NodePoolState_NODE_POOL_STATE_ERROR}
)

// firstRules are the rules every work-derived status applies first, in order: deleting →
// uninstalling; no work (w nil) → installing, just sent; a manifest the management cluster
// refused for good (rejection) → failed ManifestRejected; a failure condition among conds
// (failure) → failed with its code. ok is false when none applies.
func (k workKind[S]) firstRules(w *workv1.ManifestWork, conds []metav1.Condition, deleting bool) (state S, code, message string, ok bool) {
	switch {
	case deleting:
		return k.uninstalling, "", "The " + k.noun + " is being deleted.", true
	case w == nil:
		return k.installing, "", capitalized(k.manifests) + " are sent to the management cluster.", true
	}
	if msg, ok := rejection(w); ok {
		return k.failed, ErrorCodeManifestRejected, "The management cluster refused the " + k.noun + "'s manifests: " + msg, true
	}
	if code, c, ok := failure(conds); ok {
		return k.failed, code, conditionMessage(c), true
	}
	return 0, "", "", false
}

// installingMessage says why an object is still installing: its manifests are not applied
// (applyFailure says why, if the agent knows), or HyperShift has not reported on it (found
// false), or, once it has, working.
func (k workKind[S]) installingMessage(w *workv1.ManifestWork, applied, found bool, working string) string {
	switch {
	case !applied:
		if msg := applyFailure(w); msg != "" {
			return "Applying " + k.manifests + " failed: " + msg
		}
		return "Waiting for the management cluster to apply " + k.manifests + "."
	case !found:
		return capitalized(k.manifests) + " are applied; waiting for HyperShift to report status."
	}
	return working
}

func capitalized(s string) string { return strings.ToUpper(s[:1]) + s[1:] }

// workApplied says whether the agent applied every manifest of w (nil: no work, not applied).
func workApplied(w *workv1.ManifestWork) bool {
	return w != nil && metaConditionTrue(w.Status.Conditions, workv1.WorkApplied)
}

// reportedConditions are an object's conditions as a status carries them.
func reportedConditions(conds ...metav1.Condition) []*csv1.Condition {
	var out []*csv1.Condition
	for _, c := range conds {
		out = append(out, &csv1.Condition{Type: c.Type, Status: string(c.Status), Reason: c.Reason,
			Message: c.Message, LastTransitionTime: timestamppb.New(c.LastTransitionTime.Time)})
	}
	return out
}

// feedbackOf is the status feedback w carries for its manifests of kind (or resource, as the
// agent may name either); nil for no work.
func feedbackOf(w *workv1.ManifestWork, kind, resource string) []workv1.FeedbackValue {
	if w == nil {
		return nil
	}
	var out []workv1.FeedbackValue
	for _, m := range w.Status.ResourceStatus.Manifests {
		if m.ResourceMeta.Kind == kind || m.ResourceMeta.Resource == resource {
			out = append(out, m.StatusFeedbacks.Values...)
		}
	}
	return out
}
