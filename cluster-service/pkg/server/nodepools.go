package server

import (
	"cmp"
	"context"
	"fmt"
	"regexp"
	"strings"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"
	"k8s.io/apimachinery/pkg/util/validation"

	csv1 "github.com/openhcp/openhcp/cluster-service/api/v1"
	"github.com/openhcp/openhcp/cluster-service/pkg/manifests"
	"github.com/openhcp/openhcp/cluster-service/pkg/store"
	"github.com/openhcp/openhcp/cluster-service/pkg/versions"
	"github.com/openhcp/openhcp/internal/logattr"
)

var (
	// .../hcpOpenShiftClusters/{cluster}/nodePools/{name}; ARO HCP node pool names are 3-15
	// characters.
	armNodePoolRE = regexp.MustCompile(`(?i)^(/subscriptions/[0-9a-f-]{36}/resourcegroups/[-\w._()]{1,90}/providers/microsoft\.redhatopenshift/hcpopenshiftclusters/[a-zA-Z]([-a-zA-Z0-9]{0,52}[a-zA-Z0-9])?)/nodepools/([a-zA-Z][-a-zA-Z0-9]{1,13}[a-zA-Z0-9])$`)
	taintValueRE  = regexp.MustCompile(`^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$`)
	taintEffects  = []string{"NoSchedule", "PreferNoSchedule", "NoExecute"}
	osDiskTypes   = []string{"Premium_LRS", "PremiumV2_LRS", "StandardSSD_LRS", "Standard_LRS", "UltraSSD_LRS"}
	// HyperShift's NodePool CRD accepts only these zones (availabilityZone: self in ['1', '2', '3']).
	zones              = []string{"1", "2", "3"}
	osDiskPersistences = []string{"Persistent", "Ephemeral"}
	maxPoolNodes       = int32(500)
	maxMinorsBehind    = 2
)

// nodePoolService is the node pool kind of the child RPCs.
func (s *Server) nodePoolService() *childService[*csv1.NodePoolSpec, *csv1.NodePoolStatus, *csv1.NodePool, *csv1.NodePoolUpdate, *csv1.NodePoolEvent] {
	return &childService[*csv1.NodePoolSpec, *csv1.NodePoolStatus, *csv1.NodePool, *csv1.NodePoolUpdate, *csv1.NodePoolEvent]{
		what: "node pool", field: "node_pool", logKey: logattr.KeyNodePoolID, armRE: armNodePoolRE,
		armHint: "must be /subscriptions/{uuid}/resourceGroups/{rg}/providers/Microsoft.RedHatOpenShift/hcpOpenShiftClusters/{cluster}/nodePools/{name} with a name of 3-15 letters, digits or '-', not %q",
		validate: func(v *violations, in *csv1.NodePoolSpec, cl *store.Cluster) *csv1.NodePoolSpec {
			return validateNodePoolSpec(v, "node_pool.spec", in, cl, nil, s.cfg.Versions, s.cfg.Now)
		},
		decide: s.decideNodePoolUpdate,
		store:  s.st.NodePools(), toProto: store.NodePoolProto,
	}
}

// CreateNodePool implements csv1.NodePoolsServer.
func (s *Server) CreateNodePool(ctx context.Context, req *csv1.CreateNodePoolRequest) (*csv1.NodePool, error) {
	return s.nodePoolService().create(ctx, s, req.GetNodePool())
}

// GetNodePool implements csv1.NodePoolsServer.
func (s *Server) GetNodePool(ctx context.Context, req *csv1.GetNodePoolRequest) (*csv1.NodePool, error) {
	return s.nodePoolService().get(ctx, s, req.GetId())
}

// ListNodePools implements csv1.NodePoolsServer.
func (s *Server) ListNodePools(ctx context.Context, req *csv1.ListNodePoolsRequest) (*csv1.ListNodePoolsResponse, error) {
	pools, err := s.nodePoolService().list(ctx, s, req.GetClusterId())
	if err != nil {
		return nil, err
	}
	return &csv1.ListNodePoolsResponse{NodePools: pools}, nil
}

// UpdateNodePool implements csv1.NodePoolsServer (childService.update).
func (s *Server) UpdateNodePool(ctx context.Context, req *csv1.UpdateNodePoolRequest) (*csv1.NodePool, error) {
	return s.nodePoolService().update(ctx, s, req)
}

// decideNodePoolUpdate applies u to the stored pool and validates the result as a create would
// (plus what may not change). A new version starts a node pool upgrade policy with it.
func (s *Server) decideNodePoolUpdate(v *violations, cl *store.Cluster, cur *store.NodePool, u *csv1.NodePoolUpdate) (*csv1.NodePoolSpec, *csv1.UpgradePolicy) {
	spec := validateNodePoolSpec(v, "spec", csv1.ApplyNodePoolUpdate(cur.Spec, u), cl, cur.Spec, s.cfg.Versions, s.cfg.Now)
	from, to := cur.Spec.GetVersionId(), spec.GetVersionId()
	if len(*v) > 0 || from == to {
		return spec, nil
	}
	// The new version is in the spec at once (the ARM contract: the update is done when the
	// pool is READY at it), so the pool's policy starts STARTED.
	return spec, &csv1.UpgradePolicy{Id: newPolicyID(), ClusterId: cl.ID, NodePoolId: cur.ID, Type: csv1.UpgradeType_UPGRADE_TYPE_NODE_POOL,
		FromVersion: from, ToVersion: to, NextRun: timestamppb.New(s.cfg.Now()), State: csv1.UpgradePolicyState_UPGRADE_POLICY_STATE_STARTED,
		Message: fmt.Sprintf("Upgrading the node pool from %s to %s.", from, to)}
}

// DeleteNodePool implements csv1.NodePoolsServer.
func (s *Server) DeleteNodePool(ctx context.Context, req *csv1.DeleteNodePoolRequest) (*csv1.NodePool, error) {
	return s.nodePoolService().delete(ctx, s, req.GetId())
}

// WatchNodePools implements csv1.NodePoolsServer, exactly as WatchClusters does for clusters.
func (s *Server) WatchNodePools(req *csv1.WatchNodePoolsRequest, stream grpc.ServerStreamingServer[csv1.NodePoolEvent]) error {
	return s.nodePoolService().watch(s, req.GetSinceRevision(), stream)
}

// DefaultNodePool is the one place a node pool spec's defaults are applied (Cluster Service
// stores the result, and the manifest builder takes it as it is): the OS disk's size, storage
// account type and persistence; the cluster's subnet; the channel group (an update that names
// none keeps the pool's, else the cluster's); and the version (an update keeps the pool's, a
// create takes the control plane's — what runs while a control-plane upgrade is under way).
// cur is the stored spec of an update, nil on create. in is not changed.
func DefaultNodePool(in *csv1.NodePoolSpec, cl *store.Cluster, cur *csv1.NodePoolSpec) *csv1.NodePoolSpec {
	spec := proto.Clone(in).(*csv1.NodePoolSpec)
	if spec.Platform == nil {
		spec.Platform = &csv1.NodePoolPlatform{}
	}
	p := spec.Platform
	if p.OsDiskSizeGib == 0 {
		p.OsDiskSizeGib = manifests.DefaultOSDiskSizeGiB
	}
	if p.OsDiskStorageAccountType == "" {
		p.OsDiskStorageAccountType = manifests.DefaultOSDiskStorageAccountType
	}
	if p.SubnetId == "" {
		p.SubnetId = cl.Spec.GetAzure().GetSubnetId()
	}
	if p.OsDiskPersistence == "" {
		p.OsDiskPersistence = manifests.DefaultOSDiskPersistence
	}
	if spec.ChannelGroup == "" {
		spec.ChannelGroup = cur.GetChannelGroup()
	}
	if spec.ChannelGroup == "" {
		spec.ChannelGroup = cl.Spec.GetChannelGroup()
	}
	if spec.VersionId == "" {
		spec.VersionId = cur.GetVersionId()
	}
	if spec.VersionId == "" {
		spec.VersionId = controlPlaneVersion(cl)
	}
	return spec
}

// controlPlaneVersion is the version a node pool is measured against: the cluster's, or what
// runs while a control-plane upgrade is under way (the spec is then ahead of what runs).
func controlPlaneVersion(cl *store.Cluster) string {
	cp := cl.Spec.GetVersionId()
	if running := cl.Status.GetCurrentVersion(); running != "" {
		if c, err := versions.Compare(running, cp); err == nil && c < 0 {
			cp = running
		}
	}
	return cp
}

// validateNodePoolSpec checks a node pool spec against its cluster (and, for an update, the
// current spec) and returns it with defaults applied and the version resolved.
func validateNodePoolSpec(v *violations, field string, in *csv1.NodePoolSpec, cl *store.Cluster, cur *csv1.NodePoolSpec,
	catalogue *versions.Catalogue, now func() time.Time) *csv1.NodePoolSpec {
	if in == nil {
		v.add(field, "is required")
		return nil
	}
	spec := DefaultNodePool(in, cl, cur)
	p := spec.Platform
	groupOK := true
	if _, ok := catalogue.Versions(spec.ChannelGroup); !ok {
		groupOK = false
		v.add(field+".channel_group", "channel group %q does not exist; use one of %s", spec.ChannelGroup, strings.Join(catalogue.Groups(), ", "))
	} else if cur != nil && cmp.Or(cur.GetChannelGroup(), cl.Spec.GetChannelGroup()) != spec.ChannelGroup {
		// Like a cluster's: a pool moves to another group only if that group offers what it
		// runs; upgrades then follow the new group's edges.
		if _, ok := catalogue.Get(spec.ChannelGroup, cur.GetVersionId()); !ok {
			groupOK = false
			v.add(field+".channel_group", "the node pool runs %s, which channel group %s does not offer", cur.GetVersionId(), spec.ChannelGroup)
		}
	}

	// Version: resolved like the cluster's, never ahead of the control plane, at most two
	// minors behind it, and on an update never a downgrade.
	cpVersion := controlPlaneVersion(cl)
	group := spec.ChannelGroup
	switch {
	case !groupOK:
		// Reported above; resolving in an unknown group would only repeat it.
	case in.GetVersionId() == "":
		// Defaulted (the pool's own, or the control plane's): nothing to resolve.
	case cur.GetVersionId() != "":
		// An update moves along the catalogue's upgrade edges, like the control plane.
		if resolved, err := catalogue.ResolveUpgrade(group, cur.GetVersionId(), spec.VersionId, now()); err != nil {
			v.add(field+".version_id", "%v", err)
		} else {
			spec.VersionId = resolved
		}
	default:
		if resolved, err := catalogue.Resolve(group, spec.VersionId, now()); err != nil {
			v.add(field+".version_id", "%v", err)
		} else {
			spec.VersionId = resolved
		}
	}
	if c, err := versions.Compare(spec.VersionId, cpVersion); err == nil && c > 0 {
		v.add(field+".version_id", "%s is ahead of the control plane version %s; upgrade the cluster first", spec.VersionId, cpVersion)
	} else if n, ok := versions.MinorsBehind(spec.VersionId, cpVersion); !ok || n > maxMinorsBehind {
		v.add(field+".version_id", "%s is more than %d minor versions behind the control plane version %s", spec.VersionId, maxMinorsBehind, cpVersion)
	}
	if cur != nil && cur.GetVersionId() != "" {
		if c, err := versions.Compare(spec.VersionId, cur.GetVersionId()); err == nil && c < 0 {
			v.add(field+".version_id", "cannot downgrade the node pool from %s to %s", cur.GetVersionId(), spec.VersionId)
		}
	}

	if as := spec.GetAutoscaling(); as != nil {
		if spec.Replicas != 0 {
			v.add(field+".replicas", "must not be set together with autoscaling")
		}
		// HyperShift's NodePoolAutoScaling has min >= 1 (Minimum=1 in its CRD), although ARM
		// allows 0: a pool that scales from zero cannot be expressed on the NodePool.
		if as.GetMin() < 1 || as.GetMin() > maxPoolNodes {
			v.add(field+".autoscaling.min", "must be between 1 and %d, not %d", maxPoolNodes, as.GetMin())
		}
		if as.GetMax() < as.GetMin() || as.GetMax() > maxPoolNodes {
			v.add(field+".autoscaling.max", "must be between min (%d) and %d, not %d", as.GetMin(), maxPoolNodes, as.GetMax())
		}
	} else if spec.Replicas < 0 || spec.Replicas > maxPoolNodes {
		v.add(field+".replicas", "must be between 0 and %d, not %d", maxPoolNodes, spec.Replicas)
	}
	for k, val := range spec.GetLabels() {
		if errs := validation.IsQualifiedName(k); len(errs) > 0 {
			v.add(field+".labels", "key %q: %s", k, strings.Join(errs, "; "))
		}
		if errs := validation.IsValidLabelValue(val); len(errs) > 0 {
			v.add(field+".labels", "value of %q: %s", k, strings.Join(errs, "; "))
		}
	}
	seen := map[string]bool{}
	for i, t := range spec.GetTaints() {
		f := fmt.Sprintf("%s.taints[%d]", field, i)
		if errs := validation.IsQualifiedName(t.GetKey()); len(errs) > 0 {
			v.add(f+".key", "%q: %s", t.GetKey(), strings.Join(errs, "; "))
		}
		if len(t.GetValue()) > 63 || !taintValueRE.MatchString(t.GetValue()) {
			v.add(f+".value", "%q must be at most 63 letters, digits, '-', '_' or '.', starting and ending with a letter or digit", t.GetValue())
		}
		if t.GetEffect() == "" {
			v.add(f+".effect", "is required: one of %s", strings.Join(taintEffects, ", "))
		}
		oneOf(v, f+".effect", t.GetEffect(), taintEffects...)
		if k := t.GetKey() + ":" + t.GetEffect(); seen[k] {
			v.add(f, "duplicates the taint %s", k)
		} else {
			seen[k] = true
		}
	}
	if err := manifests.ValidateVMSize(p.GetVmSize()); err != nil {
		v.add(field+".platform.vm_size", "%v", err)
	}
	if n := p.GetOsDiskSizeGib(); n < 16 || n > 65536 {
		v.add(field+".platform.os_disk_size_gib", "must be between 16 and 65536, not %d", n)
	}
	oneOf(v, field+".platform.os_disk_storage_account_type", p.GetOsDiskStorageAccountType(), osDiskTypes...)
	oneOf(v, field+".platform.availability_zone", p.GetAvailabilityZone(), zones...)
	oneOf(v, field+".platform.os_disk_persistence", p.GetOsDiskPersistence(), osDiskPersistences...)
	if id := p.GetOsDiskEncryptionSetId(); id != "" {
		if err := manifests.ValidateDiskEncryptionSetID(id); err != nil {
			v.add(field+".platform.os_disk_encryption_set_id", "%v", err)
		}
	}
	if spec.NodeDrainTimeoutMinutes != nil {
		validateDrainTimeout(v, field+".node_drain_timeout_minutes", spec.GetNodeDrainTimeoutMinutes())
	}
	if err := manifests.ValidateSubnetID(p.GetSubnetId()); err != nil {
		v.add(field+".platform.subnet_id", "must be a subnet resource ID: %v", err)
	}
	if c := cur.GetPlatform(); cur != nil {
		for name, pair := range map[string][2]string{
			"vm_size":                      {c.GetVmSize(), p.GetVmSize()},
			"os_disk_size_gib":             {fmt.Sprint(c.GetOsDiskSizeGib()), fmt.Sprint(p.GetOsDiskSizeGib())},
			"os_disk_storage_account_type": {c.GetOsDiskStorageAccountType(), p.GetOsDiskStorageAccountType()},
			"subnet_id":                    {c.GetSubnetId(), p.GetSubnetId()},
			"availability_zone":            {c.GetAvailabilityZone(), p.GetAvailabilityZone()},
			"encryption_at_host":           {fmt.Sprint(c.GetEncryptionAtHost()), fmt.Sprint(p.GetEncryptionAtHost())},
			"os_disk_encryption_set_id":    {c.GetOsDiskEncryptionSetId(), p.GetOsDiskEncryptionSetId()},
			// A pool stored before pools had a persistence has Persistent disks.
			"os_disk_persistence": {cmp.Or(c.GetOsDiskPersistence(), manifests.DefaultOSDiskPersistence), p.GetOsDiskPersistence()},
		} {
			if !strings.EqualFold(pair[0], pair[1]) {
				v.add(field+".platform."+name, "cannot change after create: is %q, asked for %q", pair[0], pair[1])
			}
		}
	}
	return spec
}
