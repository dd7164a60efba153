package manifests

import (
	"encoding/json"
	"fmt"
	"sort"
	"time"

	hypershiftv1beta1 "github.com/openshift/hypershift/api/hypershift/v1beta1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	workv1 "open-cluster-management.io/api/work/v1"

	csv1 "github.com/openhcp/openhcp/cluster-service/api/v1"
)

// Feedback value names for the cluster's configuration on the HostedCluster manifest: the
// updatable parts of the spec as the management cluster has them, so the controller can tell
// an update applied from feedback written before it.
const (
	// FeedbackGeneration is .metadata.generation, to tell whether HyperShift's conditions
	// (observedGeneration) are about the spec the agent reports.
	FeedbackGeneration          = "generation"
	FeedbackAutoscaling         = "autoscaling"
	FeedbackAPIServerNetworking = "apiServerNetworking"
	FeedbackImageContentSources = "imageContentSources"
	FeedbackSecretEncryption    = "secretEncryption"
	FeedbackWorkloadIdentities  = "workloadIdentities"
)

// configFeedback are the feedback rules of the HostedCluster's configuration.
var configFeedback = []struct{ name, path string }{
	{FeedbackGeneration, ".metadata.generation"},
	{FeedbackAutoscaling, ".spec.autoscaling"},
	{FeedbackAPIServerNetworking, ".spec.networking.apiServer"},
	{FeedbackImageContentSources, ".spec.imageContentSources"},
	{FeedbackSecretEncryption, ".spec.secretEncryption"},
	{FeedbackWorkloadIdentities, ".spec.platform.azure.azureAuthenticationConfig.workloadIdentities"},
}

// applyConfig sets the HostedCluster fields that come from the cluster's configuration. Each
// uses HyperShift's own field; what HyperShift has no field for (vnet integration subnet, key
// vault visibility) stays in Cluster Service.
func applyConfig(hc *hypershiftv1beta1.HostedCluster, s *csv1.ClusterSpec) {
	if a := s.GetAutoscaling(); a != nil {
		hc.Spec.Autoscaling = hypershiftv1beta1.ClusterAutoscaling{
			MaxNodesTotal:        a.MaxNodesTotal,
			MaxPodGracePeriod:    a.MaxPodGracePeriodSeconds,
			PodPriorityThreshold: a.PodPriorityThreshold,
		}
		if a.MaxNodeProvisionTimeSeconds != nil {
			hc.Spec.Autoscaling.MaxNodeProvisionTime = fmt.Sprintf("%ds", a.GetMaxNodeProvisionTimeSeconds())
		}
	}
	if cidrs := s.GetApiAuthorizedCidrs(); len(cidrs) > 0 {
		blocks := make([]hypershiftv1beta1.CIDRBlock, 0, len(cidrs))
		for _, c := range cidrs {
			blocks = append(blocks, hypershiftv1beta1.CIDRBlock(c))
		}
		hc.Spec.Networking.APIServer = &hypershiftv1beta1.APIServerNetworking{AllowedCIDRBlocks: blocks}
	}
	for _, m := range s.GetImageDigestMirrors() {
		hc.Spec.ImageContentSources = append(hc.Spec.ImageContentSources,
			hypershiftv1beta1.ImageContentSource{Source: m.GetSource(), Mirrors: append([]string(nil), m.GetMirrors()...)})
	}
	switch s.GetIngressVisibility() {
	case "Private":
		if hc.Annotations == nil {
			hc.Annotations = map[string]string{}
		}
		hc.Annotations[hypershiftv1beta1.PrivateIngressControllerAnnotation] = "true"
	case "Disabled":
		// The CRD allows disabling Ingress only together with Console (which needs routes).
		disable(hc, hypershiftv1beta1.IngressCapability, hypershiftv1beta1.ConsoleCapability)
	}
	hc.Spec.FIPS = s.GetCryptoRestrictions() == "FIPS"
	if p := s.GetDnsBaseDomainPrefix(); p != "" {
		hc.Spec.DNS.BaseDomainPrefix = &p
	}
}

func disable(hc *hypershiftv1beta1.HostedCluster, caps ...hypershiftv1beta1.OptionalCapability) {
	if hc.Spec.Capabilities == nil {
		hc.Spec.Capabilities = &hypershiftv1beta1.Capabilities{}
	}
	hc.Spec.Capabilities.Disabled = append(hc.Spec.Capabilities.Disabled, caps...)
	sort.Slice(hc.Spec.Capabilities.Disabled, func(i, j int) bool {
		return hc.Spec.Capabilities.Disabled[i] < hc.Spec.Capabilities.Disabled[j]
	})
}

// NodeDrainTimeout is a NodePool's spec.nodeDrainTimeout for the cluster's
// node_drain_timeout_minutes; nil for 0 (no limit, HyperShift's default).
func NodeDrainTimeout(minutes int32) *metav1.Duration {
	if minutes <= 0 {
		return nil
	}
	return &metav1.Duration{Duration: time.Duration(minutes) * time.Minute}
}

// ReportedConfig is the HostedCluster's configuration as the agent reports it.
type ReportedConfig struct {
	Autoscaling         hypershiftv1beta1.ClusterAutoscaling
	APIServer           *hypershiftv1beta1.APIServerNetworking
	ImageContentSources []hypershiftv1beta1.ImageContentSource
	SecretEncryption    *hypershiftv1beta1.SecretEncryptionSpec
	WorkloadIdentities  *hypershiftv1beta1.AzureWorkloadIdentities
}

// ConfigDifferences lists the parts of the configuration where the reported HostedCluster
// differs from the built one (nil: it has what was built). It compares only the fields Cluster
// Service sets, so values the apiserver defaults (autoscaling.scaling, …) never count.
func ConfigDifferences(built *hypershiftv1beta1.HostedCluster, got ReportedConfig) []string {
	var diff []string
	w, g := built.Spec.Autoscaling, got.Autoscaling
	if !equality.Semantic.DeepEqual(w.MaxNodesTotal, g.MaxNodesTotal) || !equality.Semantic.DeepEqual(w.MaxPodGracePeriod, g.MaxPodGracePeriod) ||
		!equality.Semantic.DeepEqual(w.PodPriorityThreshold, g.PodPriorityThreshold) || w.MaxNodeProvisionTime != g.MaxNodeProvisionTime {
		diff = append(diff, "autoscaling")
	}
	var wantCIDRs, gotCIDRs []hypershiftv1beta1.CIDRBlock
	if built.Spec.Networking.APIServer != nil {
		wantCIDRs = built.Spec.Networking.APIServer.AllowedCIDRBlocks
	}
	if got.APIServer != nil {
		gotCIDRs = got.APIServer.AllowedCIDRBlocks
	}
	if !sameSet(wantCIDRs, gotCIDRs) {
		diff = append(diff, "API authorized CIDRs")
	}
	if len(built.Spec.ImageContentSources) != 0 || len(got.ImageContentSources) != 0 {
		if !equality.Semantic.DeepEqual(built.Spec.ImageContentSources, got.ImageContentSources) {
			diff = append(diff, "image digest mirrors")
		}
	}
	if !sameKMSKeys(built.Spec.SecretEncryption, got.SecretEncryption) {
		diff = append(diff, "etcd encryption keys")
	}
	if az := built.Spec.Platform.Azure; az != nil && !equality.Semantic.DeepEqual(az.AzureAuthenticationConfig.WorkloadIdentities, got.WorkloadIdentities) {
		diff = append(diff, "workload identities")
	}
	return diff
}

func sameSet(a, b []hypershiftv1beta1.CIDRBlock) bool {
	if len(a) != len(b) {
		return false
	}
	in := map[hypershiftv1beta1.CIDRBlock]bool{}
	for _, x := range a {
		in[x] = true
	}
	for _, x := range b {
		if !in[x] {
			return false
		}
	}
	return true
}

func sameKMSKeys(want, got *hypershiftv1beta1.SecretEncryptionSpec) bool {
	azure := func(s *hypershiftv1beta1.SecretEncryptionSpec) *hypershiftv1beta1.AzureKMSSpec {
		if s == nil || s.KMS == nil {
			return nil
		}
		return s.KMS.Azure
	}
	w, g := azure(want), azure(got)
	if w == nil || g == nil {
		return w == nil && g == nil
	}
	return w.ActiveKey == g.ActiveKey && equality.Semantic.DeepEqual(w.BackupKey, g.BackupKey)
}

// HostedClusterOf decodes the HostedCluster of a cluster's work.
func HostedClusterOf(work *workv1.ManifestWork) (*hypershiftv1beta1.HostedCluster, error) {
	for i, m := range work.Spec.Workload.Manifests {
		var meta metav1.TypeMeta
		if err := json.Unmarshal(m.Raw, &meta); err != nil {
			return nil, fmt.Errorf("read manifest %d of work %s: %w", i, work.Name, err)
		}
		if meta.Kind == "HostedCluster" {
			hc := &hypershiftv1beta1.HostedCluster{}
			if err := json.Unmarshal(m.Raw, hc); err != nil {
				return nil, fmt.Errorf("read HostedCluster of work %s: %w", work.Name, err)
			}
			return hc, nil
		}
	}
	return nil, fmt.Errorf("work %s has no HostedCluster", work.Name)
}
