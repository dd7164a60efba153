package controller

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strings"

	hypershiftv1beta1 "github.com/openshift/hypershift/api/hypershift/v1beta1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	workv1 "open-cluster-management.io/api/work/v1"

	csv1 "github.com/openhcp/openhcp/cluster-service/api/v1"
	"github.com/openhcp/openhcp/cluster-service/pkg/manifests"
)

// failureConditions are HostedCluster conditions that, when False, mean the cluster cannot
// become ready without a change from the customer or SRE; each maps to a stable PascalCase code.
// Any other "Valid<X>" condition that is False maps to "Invalid<X>".
var failureConditions = map[string]string{
	"ValidConfiguration":                   "InvalidConfiguration",
	"ValidReleaseImage":                    "InvalidReleaseImage",
	"ValidReleaseInfo":                     "InvalidReleaseInfo",
	"ValidHostedControlPlaneConfiguration": "InvalidHostedControlPlaneConfiguration",
	"SupportedHostedCluster":               "UnsupportedHostedCluster",
	"ValidAzureKMSConfig":                  "InvalidAzureKMSConfig",
}

// ErrorCodeDegraded is the code for a HostedCluster that reports Degraded=True.
const ErrorCodeDegraded = "HostedClusterDegraded"

// ErrorCodeManifestRejected is the code for an object the management cluster refused to store.
const ErrorCodeManifestRejected = "ManifestRejected"

var pascalRE = regexp.MustCompile(`^[A-Z][A-Za-z0-9]*$`)

// Feedback is the HostedCluster status as it came back through the work's status feedback.
type Feedback struct {
	Found      bool // the agent reported feedback for the HostedCluster at all
	Conditions []metav1.Condition
	// Desired is .status.version.desired.version.
	Desired string
	History []struct {
		State   string `json:"state"`
		Version string `json:"version"`
	}
	Endpoint struct {
		Host string `json:"host"`
		Port int32  `json:"port"`
	}
	// Generation is the HostedCluster's .metadata.generation.
	Generation int64
	// Config is the updatable configuration of the HostedCluster's spec, as applied.
	Config manifests.ReportedConfig
}

// ParseFeedback reads the HostedCluster's feedback values out of a work.
func ParseFeedback(w *workv1.ManifestWork) (Feedback, error) {
	var fb Feedback
	for _, v := range feedbackOf(w, "HostedCluster", "hostedclusters") {
		if v.Name == manifests.FeedbackGeneration && v.Value.Integer != nil {
			fb.Generation = *v.Value.Integer
		}
		if v.Value.JsonRaw == nil {
			continue
		}
		raw := []byte(*v.Value.JsonRaw)
		var err error
		switch v.Name {
		case manifests.FeedbackConditions:
			fb.Found = true
			err = json.Unmarshal(raw, &fb.Conditions)
		case manifests.FeedbackVersionDesired:
			var d struct {
				Version string `json:"version"`
			}
			err = json.Unmarshal(raw, &d)
			fb.Desired = d.Version
		case manifests.FeedbackVersionHistory:
			err = json.Unmarshal(raw, &fb.History)
		case manifests.FeedbackControlPlaneEndpoint:
			err = json.Unmarshal(raw, &fb.Endpoint)
		case manifests.FeedbackAutoscaling:
			err = json.Unmarshal(raw, &fb.Config.Autoscaling)
		case manifests.FeedbackAPIServerNetworking:
			err = json.Unmarshal(raw, &fb.Config.APIServer)
		case manifests.FeedbackImageContentSources:
			err = json.Unmarshal(raw, &fb.Config.ImageContentSources)
		case manifests.FeedbackSecretEncryption:
			err = json.Unmarshal(raw, &fb.Config.SecretEncryption)
		case manifests.FeedbackWorkloadIdentities:
			err = json.Unmarshal(raw, &fb.Config.WorkloadIdentities)
		}
		if err != nil {
			return fb, fmt.Errorf("decode feedback %q of work %s: %w", v.Name, w.Name, err)
		}
	}
	return fb, nil
}

// partialReport says whether a status derived from a work (its conditions, and whether it is
// INSTALLING) is only a Maestro agent's partial report, which must not replace the stored status
// (whose conditions are prev): INSTALLING without a single condition of the HostedCluster or
// NodePool, where the stored status has some. An agent that restarted reports the work's applied
// manifests before it reads the objects again, and each status event replaces the work's whole
// status in Maestro, so for a few seconds a READY cluster's work looks as it did right after its
// create; that says nothing about the cluster. The feedback that follows is derived as usual.
// A manifest the agent failed to apply (applyFailure) goes through, and so does a work Maestro
// does not have (nil: sent again by the reconcile); a refused manifest, a failure condition and
// a deletion are not INSTALLING, so they are never held.
func partialReport(w *workv1.ManifestWork, prev, next []*csv1.Condition, nextInstalling bool) bool {
	return w != nil && nextInstalling && len(next) == 0 && len(prev) > 0 && applyFailure(w) == ""
}

// DeriveStatus is DeriveClusterStatus without checking the configuration.
func DeriveStatus(w *workv1.ManifestWork, deleting bool) (*csv1.ClusterStatus, error) {
	return DeriveClusterStatus(w, nil, deleting)
}

// DeriveClusterStatus computes the cluster status from what Maestro reports for its work, and
// nothing else. w is nil when Maestro has no work (yet); built is the HostedCluster Cluster
// Service sends (nil: the configuration is not checked). The rules, in order:
//   - deleting → UNINSTALLING;
//   - a manifest the management cluster refused for good (rejection) → ERROR ManifestRejected;
//   - a failure condition (Valid*=False, SupportedHostedCluster=False) → ERROR with its code;
//   - Available=True → READY, or UPDATING while the desired version is not the completed one,
//     while the reported configuration differs from built (feedback from before an update), or
//     while HyperShift has not reported ReconciliationSucceeded=True for the reported generation;
//   - Degraded=True → ERROR HostedClusterDegraded;
//   - otherwise INSTALLING.
func DeriveClusterStatus(w *workv1.ManifestWork, built *hypershiftv1beta1.HostedCluster, deleting bool) (*csv1.ClusterStatus, error) {
	fb, err := ParseFeedback(w)
	if err != nil {
		return nil, err
	}
	st := &csv1.ClusterStatus{Applied: workApplied(w), Conditions: reportedConditions(fb.Conditions...)}
	for _, h := range fb.History {
		if h.State == "Completed" {
			st.CurrentVersion = h.Version
			break
		}
	}
	if fb.Endpoint.Host != "" {
		st.ApiUrl = fmt.Sprintf("https://%s:%d", fb.Endpoint.Host, fb.Endpoint.Port)
	}
	// HyperShift reports no console address: it follows from the ingress domain of the spec sent,
	// once the agent has applied that spec.
	if built != nil && st.Applied {
		st.ConsoleUrl = manifests.ConsoleURL(built)
	}

	if state, code, msg, ok := clusterWork.firstRules(w, fb.Conditions, deleting); ok {
		st.State, st.ErrorCode, st.Message = state, code, msg
		return st, nil
	}
	if c := find(fb.Conditions, "Available"); c != nil && c.Status == metav1.ConditionTrue {
		st.State, st.Message = csv1.ClusterState_CLUSTER_STATE_READY, "The cluster is ready."
		if fb.Desired != "" && st.CurrentVersion != "" && fb.Desired != st.CurrentVersion {
			st.State = csv1.ClusterState_CLUSTER_STATE_UPDATING
			st.Message = fmt.Sprintf("The cluster is updating from %s to %s.", st.CurrentVersion, fb.Desired)
			return st, nil
		}
		if built != nil {
			if msg := configPending(built, fb); msg != "" {
				st.State, st.Message = csv1.ClusterState_CLUSTER_STATE_UPDATING, "The cluster configuration is being applied: "+msg
			}
		}
		return st, nil
	}
	if c := find(fb.Conditions, "Degraded"); c != nil && c.Status == metav1.ConditionTrue {
		st.State, st.ErrorCode, st.Message = csv1.ClusterState_CLUSTER_STATE_ERROR, ErrorCodeDegraded, conditionMessage(c)
		return st, nil
	}
	working := "The control plane is being installed."
	if c := find(fb.Conditions, "Available"); c != nil && c.Message != "" {
		working = "The control plane is being installed: " + c.Message
	}
	st.State, st.Message = csv1.ClusterState_CLUSTER_STATE_INSTALLING, clusterWork.installingMessage(w, st.Applied, fb.Found, working)
	return st, nil
}

func failure(conds []metav1.Condition) (string, *metav1.Condition, bool) {
	for i := range conds {
		c := &conds[i]
		if c.Status != metav1.ConditionFalse {
			continue
		}
		if code, ok := failureConditions[c.Type]; ok {
			return code, c, true
		}
		if rest, ok := strings.CutPrefix(c.Type, "Valid"); ok && pascalRE.MatchString(rest) {
			return "Invalid" + rest, c, true
		}
	}
	return "", nil, false
}

func conditionMessage(c *metav1.Condition) string {
	if c.Message != "" {
		return c.Message
	}
	return fmt.Sprintf("%s is %s: %s", c.Type, c.Status, c.Reason)
}

func find(conds []metav1.Condition, typ string) *metav1.Condition {
	for i := range conds {
		if conds[i].Type == typ {
			return &conds[i]
		}
	}
	return nil
}

func metaConditionTrue(conds []metav1.Condition, typ string) bool {
	c := find(conds, typ)
	return c != nil && c.Status == metav1.ConditionTrue
}

// rejection finds a manifest of the work's current generation that the management cluster's
// apiserver refused for good: its Applied condition is False and the apiserver answered that the
// object is invalid (schema or CEL validation) or that admission denied it (a
// ValidatingAdmissionPolicy, a webhook). Sending the same object again cannot succeed; only a new
// spec can, and once one applies the condition turns True and the state follows. Every other
// apply failure (the apiserver unreachable, a conflict, a namespace being terminated, the
// agent's own permissions) is transient: the agent keeps retrying and applyFailure puts the
// reason in the status message.
func rejection(w *workv1.ManifestWork) (string, bool) {
	for _, m := range w.Status.ResourceStatus.Manifests {
		c := find(m.Conditions, workv1.ManifestApplied)
		if c == nil || c.Status != metav1.ConditionFalse || (c.ObservedGeneration != 0 && c.ObservedGeneration != w.Generation) {
			continue
		}
		if permanentApplyError(c.Message) {
			return fmt.Sprintf("%s %s: %s", m.ResourceMeta.Kind, m.ResourceMeta.Name, c.Message), true
		}
	}
	return "", false
}

// permanentApplyError says whether an apiserver's answer refuses the object itself: Kubernetes
// words these "<kind> \"<name>\" is invalid: …" and "… denied request: …" / "… denied the
// request: …" (StatusReasonInvalid, and admission's Forbidden with a denial).
func permanentApplyError(msg string) bool {
	return strings.Contains(msg, " is invalid: ") || strings.Contains(msg, "denied request") || strings.Contains(msg, "denied the request")
}

// applyFailure is the message of the first manifest the agent failed to apply.
func applyFailure(w *workv1.ManifestWork) string {
	for _, m := range w.Status.ResourceStatus.Manifests {
		if c := find(m.Conditions, workv1.ManifestApplied); c != nil && c.Status == metav1.ConditionFalse {
			return fmt.Sprintf("%s %s: %s", m.ResourceMeta.Kind, m.ResourceMeta.Name, c.Message)
		}
	}
	return ""
}

// configPending says what the cluster's configuration still waits for, or "" once the
// management cluster has the built configuration and HyperShift has reconciled that generation.
func configPending(built *hypershiftv1beta1.HostedCluster, fb Feedback) string {
	if diff := manifests.ConfigDifferences(built, fb.Config); len(diff) > 0 {
		return "waiting for the management cluster to apply the " + strings.Join(diff, ", ") + "."
	}
	rs := find(fb.Conditions, string(hypershiftv1beta1.ReconciliationSucceeded))
	switch {
	case rs == nil || rs.ObservedGeneration != fb.Generation:
		return fmt.Sprintf("waiting for HyperShift to reconcile generation %d of the HostedCluster.", fb.Generation)
	case rs.Status != metav1.ConditionTrue:
		return "HyperShift has not reconciled it yet: " + conditionMessage(rs)
	}
	return ""
}
