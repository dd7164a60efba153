package controller

import (
	"encoding/json"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	workv1 "open-cluster-management.io/api/work/v1"

	csv1 "github.com/openhcp/openhcp/cluster-service/api/v1"
	"github.com/openhcp/openhcp/cluster-service/pkg/manifests"
)

// NodePoolFeedback is the NodePool status as it came back through the work's status feedback.
type NodePoolFeedback struct {
	Found      bool // the agent reported the NodePool's conditions at all
	Conditions []metav1.Condition
	// Replicas is .status.replicas; HasReplicas says whether it was reported (0 is a value).
	Replicas    int32
	HasReplicas bool
	// Version is .status.version: the version all its machines run.
	Version string
	// SpecHash is the NodePool's LabelNodePoolSpecHash: which built spec the feedback is about.
	SpecHash string
	// Generation is the NodePool's .metadata.generation.
	Generation int64
}

// ParseNodePoolFeedback reads the NodePool's feedback values out of a work. JSONPath feedback
// comes back typed for scalars (replicas as Integer, version as String) and as raw JSON for the
// conditions list.
func ParseNodePoolFeedback(w *workv1.ManifestWork) (NodePoolFeedback, error) {
	var fb NodePoolFeedback
	for _, v := range feedbackOf(w, "NodePool", "nodepools") {
		switch v.Name {
		case manifests.FeedbackConditions:
			if v.Value.JsonRaw == nil {
				continue
			}
			fb.Found = true
			if err := json.Unmarshal([]byte(*v.Value.JsonRaw), &fb.Conditions); err != nil {
				return fb, fmt.Errorf("decode feedback %q of work %s: %w", v.Name, w.Name, err)
			}
		case manifests.FeedbackNodePoolReplicas:
			switch {
			case v.Value.Integer != nil:
				fb.Replicas, fb.HasReplicas = int32(*v.Value.Integer), true
			case v.Value.JsonRaw != nil:
				if err := json.Unmarshal([]byte(*v.Value.JsonRaw), &fb.Replicas); err != nil {
					return fb, fmt.Errorf("decode feedback %q of work %s: %w", v.Name, w.Name, err)
				}
				fb.HasReplicas = true
			}
		case manifests.FeedbackNodePoolLabels:
			if v.Value.JsonRaw == nil {
				continue
			}
			var labels map[string]string
			if err := json.Unmarshal([]byte(*v.Value.JsonRaw), &labels); err != nil {
				return fb, fmt.Errorf("decode feedback %q of work %s: %w", v.Name, w.Name, err)
			}
			fb.SpecHash = labels[manifests.LabelNodePoolSpecHash]
		case manifests.FeedbackGeneration:
			if v.Value.Integer != nil {
				fb.Generation = *v.Value.Integer
			}
		case manifests.FeedbackNodePoolVersion:
			switch {
			case v.Value.String != nil:
				fb.Version = *v.Value.String
			case v.Value.JsonRaw != nil:
				if err := json.Unmarshal([]byte(*v.Value.JsonRaw), &fb.Version); err != nil {
					return fb, fmt.Errorf("decode feedback %q of work %s: %w", v.Name, w.Name, err)
				}
			}
		}
	}
	return fb, nil
}

// DeriveNodePoolStatus computes a node pool's status from its work and nothing else; spec,
// wantVersion (the version the pool is built with) and specHash (the LabelNodePoolSpecHash of
// the NodePool built from spec; "" when deleting) say what "done" means. w is nil when Maestro
// has no work (yet). The rules, in order:
//   - deleting → UNINSTALLING;
//   - no work → INSTALLING (just sent);
//   - a Valid*=False condition → ERROR Invalid<X>;
//   - Ready=True with the wanted replicas and version, reported by a NodePool that carries the
//     built spec (its spec hash) and that HyperShift reconciled (Ready observed at its
//     generation) → READY: feedback from before an update never ends the update;
//   - a pool that never reported a version → INSTALLING;
//   - otherwise UPDATING (scaling, or a version rolling out).
func DeriveNodePoolStatus(w *workv1.ManifestWork, spec *csv1.NodePoolSpec, wantVersion, specHash string, deleting bool) (*csv1.NodePoolStatus, error) {
	fb, err := ParseNodePoolFeedback(w)
	if err != nil {
		return nil, err
	}
	st := &csv1.NodePoolStatus{Applied: workApplied(w), Conditions: reportedConditions(fb.Conditions...),
		Replicas: fb.Replicas, CurrentVersion: fb.Version}

	if state, code, msg, ok := nodePoolWork.firstRules(w, fb.Conditions, deleting); ok {
		st.State, st.ErrorCode, st.Message = state, code, msg
		return st, nil
	}
	ready := find(fb.Conditions, "Ready")
	scaled := fb.HasReplicas && replicasWanted(spec, fb.Replicas)
	current := fb.SpecHash == specHash && ready != nil && ready.ObservedGeneration == fb.Generation
	if ready != nil && ready.Status == metav1.ConditionTrue && scaled && fb.Version == wantVersion && current {
		st.State, st.Message = csv1.NodePoolState_NODE_POOL_STATE_READY, "The node pool is ready."
		return st, nil
	}
	progress := ""
	if ready != nil && ready.Message != "" {
		progress = ": " + ready.Message
	}
	if fb.Version == "" {
		st.State = csv1.NodePoolState_NODE_POOL_STATE_INSTALLING
		st.Message = nodePoolWork.installingMessage(w, st.Applied, fb.Found, "The node pool's machines are being created"+progress)
		return st, nil
	}
	st.State = csv1.NodePoolState_NODE_POOL_STATE_UPDATING
	switch {
	case fb.Version != wantVersion:
		st.Message = fmt.Sprintf("The node pool is updating from %s to %s%s", fb.Version, wantVersion, progress)
	case !scaled:
		st.Message = fmt.Sprintf("The node pool is scaling from %d to %s nodes%s", fb.Replicas, replicasText(spec), progress)
	case fb.SpecHash != specHash:
		st.Message = "Waiting for the management cluster to apply the node pool's change."
	case !current:
		st.Message = fmt.Sprintf("Waiting for HyperShift to reconcile generation %d of the NodePool.", fb.Generation)
	default:
		st.Message = "The node pool is rolling out a change" + progress
	}
	if msg := applyFailure(w); msg != "" {
		st.Message = "Applying the node pool's manifests failed: " + msg
	}
	return st, nil
}

// replicasWanted says whether n ready machines is what the spec asks for.
func replicasWanted(spec *csv1.NodePoolSpec, n int32) bool {
	if as := spec.GetAutoscaling(); as != nil {
		return n >= as.GetMin() && n <= as.GetMax()
	}
	return n == spec.GetReplicas()
}

func replicasText(spec *csv1.NodePoolSpec) string {
	if as := spec.GetAutoscaling(); as != nil {
		return fmt.Sprintf("%d-%d", as.GetMin(), as.GetMax())
	}
	return fmt.Sprint(spec.GetReplicas())
}
