package manifests

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"sort"
	"strings"

	hypershiftv1beta1 "github.com/openshift/hypershift/api/hypershift/v1beta1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	workv1 "open-cluster-management.io/api/work/v1"

	csv1 "github.com/openhcp/openhcp/cluster-service/api/v1"
	"github.com/openhcp/openhcp/cluster-service/pkg/model"
)

const (
	// LabelNodePoolID marks a node pool's work and its NodePool with the Cluster Service ID.
	LabelNodePoolID = "openhcp.io/node-pool-id"

	nodePoolWorkNamePrefix = "nodepool-"

	// LabelNodePoolSpecHash on the NodePool is a hash of the spec Cluster Service built. It is
	// written in the same apply as that spec, so feedback that carries it (with the NodePool's
	// generation) is about this spec, never about the one before an update.
	LabelNodePoolSpecHash = "openhcp.io/spec-hash"

	// Feedback value names on the NodePool manifest.
	FeedbackNodePoolReplicas = "replicas"
	FeedbackNodePoolVersion  = "version"
	FeedbackNodePoolLabels   = "labels"

	nodePoolImageGeneration = hypershiftv1beta1.Gen2
	nodePoolUpgradeType     = hypershiftv1beta1.UpgradeTypeReplace
	nodePoolArch            = hypershiftv1beta1.ArchitectureAMD64
)

// NodePoolWorkName is the ManifestWork name of a node pool. It starts with "nodepool-", never
// with the "cluster-" of cluster works, so a watch event maps to exactly one kind.
func NodePoolWorkName(id string) string { return nodePoolWorkNamePrefix + id }

// NodePoolIDFromWorkName reverses NodePoolWorkName; ok is false for other works.
func NodePoolIDFromWorkName(name string) (string, bool) {
	id, ok := strings.CutPrefix(name, nodePoolWorkNamePrefix)
	return id, ok && id != ""
}

// NodePoolName is the HyperShift NodePool's name: the ARM node pool name, lower-cased. It is
// unique within the cluster's namespace because ARM names are unique within the cluster.
func NodePoolName(armResourceID string) string { return armName(armResourceID) }

// NodePool is what a node pool build needs.
type NodePool struct {
	ID            string
	ARMResourceID string
	Spec          *csv1.NodePoolSpec
	// Cluster is the cluster the pool belongs to: its namespace and HostedCluster name come
	// from it, and its subnet is the default.
	Cluster Cluster
	// WatchStatus: as Cluster.WatchStatus, for the NodePool.
	WatchStatus bool
}

// BuildNodePool returns the ManifestWork holding one HyperShift NodePool. It goes to the same
// consumer as the cluster's work and into the cluster's namespace, which the cluster's work
// creates; the controller sends it only once that work is applied.
func BuildNodePool(cfg Config, np NodePool) (*workv1.ManifestWork, error) {
	cfg = cfg.withDefaults()
	if np.Spec == nil || np.Cluster.Spec == nil {
		return nil, errors.New("build node pool manifests: node pool or cluster has no spec")
	}
	s := np.Spec
	ns := Namespace(cfg.Env, np.Cluster.ID)
	labels := map[string]string{LabelClusterID: np.Cluster.ID, LabelNodePoolID: np.ID}
	// The stored spec is complete: model.DefaultNodePool is the
	// one place that defaults the version, subnet and OS disk, so the build takes them as they are.
	version := s.GetVersionId()
	subnet, _ := model.CanonicalSubnet(s.GetPlatform().GetSubnetId())
	diskSize := s.GetPlatform().GetOsDiskSizeGib()
	diskType := s.GetPlatform().GetOsDiskStorageAccountType()
	persistence := s.GetPlatform().GetOsDiskPersistence()
	// Always explicit: HyperShift defaults encryptionAtHost to Enabled, Cluster Service (and
	// ARM) to off.
	encryptionAtHost := encryptionAtHostDisabled
	if s.GetPlatform().GetEncryptionAtHost() {
		encryptionAtHost = encryptionAtHostEnabled
	}
	// The pool's own drain timeout wins over the cluster's; 0 on either is no limit (unset).
	drainMinutes := np.Cluster.Spec.GetNodeDrainTimeoutMinutes()
	if s.NodeDrainTimeoutMinutes != nil {
		drainMinutes = s.GetNodeDrainTimeoutMinutes()
	}
	gen := nodePoolImageGeneration
	pool := &hypershiftv1beta1.NodePool{
		TypeMeta:   metav1.TypeMeta{APIVersion: hypershiftv1beta1.GroupVersion.String(), Kind: "NodePool"},
		ObjectMeta: metav1.ObjectMeta{Name: NodePoolName(np.ARMResourceID), Namespace: ns, Labels: maps.Clone(labels)},
		Spec: hypershiftv1beta1.NodePoolSpec{
			ClusterName: HostedClusterName(cfg.Env, np.Cluster.ARMResourceID),
			Release:     hypershiftv1beta1.Release{Image: ReleaseImage(cfg.ReleaseImageRepository, version)},
			Platform: hypershiftv1beta1.NodePoolPlatform{
				Type: hypershiftv1beta1.AzurePlatform,
				Azure: &hypershiftv1beta1.AzureNodePoolPlatform{
					VMSize: s.GetPlatform().GetVmSize(),
					Image: hypershiftv1beta1.AzureVMImage{
						Type:             hypershiftv1beta1.AzureMarketplace,
						AzureMarketplace: &hypershiftv1beta1.AzureMarketplaceImage{ImageGeneration: &gen},
					},
					OSDisk: hypershiftv1beta1.AzureNodePoolOSDisk{
						SizeGiB:                diskSize,
						DiskStorageAccountType: hypershiftv1beta1.AzureDiskStorageAccountType(diskType),
						EncryptionSetID:        model.CanonicalDiskEncryptionSet(s.GetPlatform().GetOsDiskEncryptionSetId()),
						Persistence:            hypershiftv1beta1.AzureDiskPersistence(persistence),
					},
					EncryptionAtHost: encryptionAtHost,
					AvailabilityZone: s.GetPlatform().GetAvailabilityZone(),
					SubnetID:         subnet,
				},
			},
			Management:       hypershiftv1beta1.NodePoolManagement{UpgradeType: nodePoolUpgradeType, AutoRepair: s.GetAutoRepair()},
			NodeLabels:       s.GetLabels(),
			Arch:             nodePoolArch,
			NodeDrainTimeout: NodeDrainTimeout(drainMinutes),
			PausedUntil:      PausedUntil(np.Cluster.Spec),
		},
	}
	if as := s.GetAutoscaling(); as != nil {
		pool.Spec.AutoScaling = &hypershiftv1beta1.NodePoolAutoScaling{Min: as.GetMin(), Max: as.GetMax()}
	} else {
		r := s.GetReplicas()
		pool.Spec.Replicas = &r
	}
	for _, t := range s.GetTaints() {
		pool.Spec.Taints = append(pool.Spec.Taints, hypershiftv1beta1.Taint{Key: t.GetKey(), Value: t.GetValue(), Effect: corev1.TaintEffect(t.GetEffect())})
	}
	sort.SliceStable(pool.Spec.Taints, func(i, j int) bool { return pool.Spec.Taints[i].Key < pool.Spec.Taints[j].Key })
	specJSON, err := json.Marshal(pool.Spec)
	if err != nil {
		return nil, fmt.Errorf("encode NodePool spec for %s: %w", np.ID, err)
	}
	sum := sha256.Sum256(specJSON)
	pool.Labels[LabelNodePoolSpecHash] = hex.EncodeToString(sum[:16]) // a label value has at most 63 characters

	raw, err := json.Marshal(pool)
	if err != nil {
		return nil, fmt.Errorf("encode NodePool for %s: %w", np.ID, err)
	}
	work := &workv1.ManifestWork{
		TypeMeta:   metav1.TypeMeta{APIVersion: "work.open-cluster-management.io/v1", Kind: "ManifestWork"},
		ObjectMeta: metav1.ObjectMeta{Name: NodePoolWorkName(np.ID), Labels: labels},
		Spec: workv1.ManifestWorkSpec{
			Workload:     workv1.ManifestsTemplate{Manifests: []workv1.Manifest{{RawExtension: runtime.RawExtension{Raw: raw}}}},
			DeleteOption: &workv1.DeleteOption{PropagationPolicy: workv1.DeletePropagationPolicyTypeForeground},
			ManifestConfigs: []workv1.ManifestConfigOption{{
				ResourceIdentifier: workv1.ResourceIdentifier{Group: hypershiftv1beta1.GroupVersion.Group, Resource: "nodepools",
					Name: pool.Name, Namespace: ns},
				UpdateStrategy: &workv1.UpdateStrategy{
					Type:            workv1.UpdateStrategyTypeServerSideApply,
					ServerSideApply: &workv1.ServerSideApplyConfig{Force: true, FieldManager: FieldManager},
				},
				FeedbackScrapeType: feedbackScrape(np.WatchStatus),
				FeedbackRules: []workv1.FeedbackRule{{
					Type: workv1.JSONPathsType,
					JsonPaths: []workv1.JsonPath{
						{Name: FeedbackConditions, Path: ".status.conditions"},
						{Name: FeedbackNodePoolReplicas, Path: ".status.replicas"},
						{Name: FeedbackNodePoolVersion, Path: ".status.version"},
						{Name: FeedbackNodePoolLabels, Path: ".metadata.labels"},
						{Name: FeedbackGeneration, Path: ".metadata.generation"},
					},
				}},
			}},
		},
	}
	hash, err := SpecHash(work)
	if err != nil {
		return nil, err
	}
	work.Annotations = map[string]string{AnnotationSpecHash: hash}
	return work, nil
}

// NodePoolSpecHashOf is the LabelNodePoolSpecHash of the NodePool in a node pool's work ("" if
// the work has no NodePool).
func NodePoolSpecHashOf(work *workv1.ManifestWork) (string, error) {
	for i, m := range work.Spec.Workload.Manifests {
		var obj metav1.PartialObjectMetadata
		if err := json.Unmarshal(m.Raw, &obj); err != nil {
			return "", fmt.Errorf("read manifest %d of work %s: %w", i, work.Name, err)
		}
		if obj.Kind == "NodePool" {
			return obj.Labels[LabelNodePoolSpecHash], nil
		}
	}
	return "", nil
}

const (
	encryptionAtHostEnabled  = "Enabled"
	encryptionAtHostDisabled = "Disabled"
)
