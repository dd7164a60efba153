package server

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/known/timestamppb"
	"k8s.io/apimachinery/pkg/util/validation"

	csv1 "github.com/openhcp/openhcp/cluster-service/api/v1"
	"github.com/openhcp/openhcp/cluster-service/pkg/manifests"
	"github.com/openhcp/openhcp/cluster-service/pkg/store"
	"github.com/openhcp/openhcp/cluster-service/pkg/versions"
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

// CreateNodePool implements csv1.NodePoolsServer.
func (s *Server) CreateNodePool(ctx context.Context, req *csv1.CreateNodePoolRequest) (*csv1.NodePool, error) {
	in := req.GetNodePool()
	var v violations
	if in == nil {
		v.add("node_pool", "is required")
		return nil, v.err()
	}
	validateClusterID(&v, "node_pool.id", in.GetId())
	validateClusterID(&v, "node_pool.cluster_id", in.GetClusterId())
	m := armNodePoolRE.FindStringSubmatch(in.GetArmResourceId())
	if m == nil {
		v.add("node_pool.arm_resource_id", "must be /subscriptions/{uuid}/resourceGroups/{rg}/providers/Microsoft.RedHatOpenShift/hcpOpenShiftClusters/{cluster}/nodePools/{name} with a name of 3-15 letters, digits or '-', not %q", in.GetArmResourceId())
	}
	if err := v.err(); err != nil {
		return nil, err
	}
	cl, err := s.st.GetCluster(ctx, in.GetClusterId())
	if errors.Is(err, store.ErrNotFound) {
		return nil, status.Errorf(codes.NotFound, "cluster %s not found", in.GetClusterId())
	}
	if err != nil {
		return nil, s.toStatus(ctx, "create node pool", err)
	}
	if !strings.EqualFold(m[1], cl.ARMResourceID) {
		v.add("node_pool.arm_resource_id", "belongs to cluster %s, not to cluster %s (%s)", m[1], cl.ID, cl.ARMResourceID)
	}
	spec := validateNodePoolSpec(&v, "node_pool.spec", in.GetSpec(), cl, nil, s.cfg.Versions, s.cfg.Now)
	if err := v.err(); err != nil {
		return nil, err
	}
	np, created, err := s.st.CreateNodePool(ctx, &store.NodePool{ID: in.GetId(), ClusterID: cl.ID, ARMResourceID: in.GetArmResourceId(), Spec: spec})
	if err != nil {
		return nil, s.toStatus(ctx, "create node pool", err)
	}
	log := LoggerFrom(ctx).With("nodePoolID", np.ID, "clusterID", np.ClusterID)
	if !created && np.Deleting {
		return nil, status.Errorf(codes.FailedPrecondition, "the node pool %s for this ARM resource is being deleted; retry when it is gone", np.ID)
	}
	if created {
		log.Info("node pool created", "resourceID", np.ARMResourceID, "revision", np.Revision)
	} else {
		log.Info("node pool already exists for this ARM resource; returning it", "requested_id", in.GetId())
	}
	return store.NodePoolProto(np), nil
}

// GetNodePool implements csv1.NodePoolsServer.
func (s *Server) GetNodePool(ctx context.Context, req *csv1.GetNodePoolRequest) (*csv1.NodePool, error) {
	var v violations
	validateClusterID(&v, "id", req.GetId())
	if err := v.err(); err != nil {
		return nil, err
	}
	np, err := s.st.GetNodePool(ctx, req.GetId())
	if err != nil {
		return nil, s.toStatus(ctx, "get node pool", err)
	}
	return store.NodePoolProto(np), nil
}

// ListNodePools implements csv1.NodePoolsServer.
func (s *Server) ListNodePools(ctx context.Context, req *csv1.ListNodePoolsRequest) (*csv1.ListNodePoolsResponse, error) {
	var v violations
	validateClusterID(&v, "cluster_id", req.GetClusterId())
	if err := v.err(); err != nil {
		return nil, err
	}
	if _, err := s.st.GetCluster(ctx, req.GetClusterId()); err != nil {
		return nil, s.toStatus(ctx, "list node pools", err)
	}
	pools, err := s.st.ListNodePools(ctx, req.GetClusterId(), "", 0)
	if err != nil {
		return nil, s.toStatus(ctx, "list node pools", err)
	}
	resp := &csv1.ListNodePoolsResponse{}
	for _, np := range pools {
		resp.NodePools = append(resp.NodePools, store.NodePoolProto(np))
	}
	return resp, nil
}

// UpdateNodePool implements csv1.NodePoolsServer: the partial update is applied to the stored
// spec under the pool's write lock, and the result is defaulted and validated by the same
// validateNodePoolSpec as a create, so no caller reads and writes back the whole spec.
func (s *Server) UpdateNodePool(ctx context.Context, req *csv1.UpdateNodePoolRequest) (*csv1.NodePool, error) {
	var v violations
	validateClusterID(&v, "id", req.GetId())
	if req.GetRevision() < 0 {
		v.add("revision", "must not be negative")
	}
	if req.GetSpecRevision() < 0 {
		v.add("spec_revision", "must not be negative")
	}
	if req.GetUpdate() == nil {
		v.add("update", "is required: set the fields to change (an empty update changes nothing)")
	}
	if err := v.err(); err != nil {
		return nil, err
	}
	cur, err := s.st.GetNodePool(ctx, req.GetId())
	if err != nil {
		return nil, s.toStatus(ctx, "update node pool", err)
	}
	cl, err := s.st.GetCluster(ctx, cur.ClusterID)
	if err != nil {
		return nil, s.toStatus(ctx, "update node pool", err)
	}
	if cur.Deleting || cl.Deleting {
		return nil, status.Errorf(codes.FailedPrecondition, "node pool %s is being deleted", cur.ID)
	}
	var upgrade *csv1.UpgradePolicy
	np, err := s.st.UpdateNodePool(ctx, cur.ID, store.Precondition{Revision: req.GetRevision(), SpecRevision: req.GetSpecRevision()}, func(cur *store.NodePool) (*csv1.NodePoolSpec, *csv1.UpgradePolicy, error) {
		spec, err := decideNodePoolUpdate(cl, cur, req.GetUpdate(), s.cfg.Versions, s.cfg.Now)
		if err != nil {
			return nil, nil, err
		}
		upgrade = nil
		if from, to := cur.Spec.GetVersionId(), spec.GetVersionId(); from != to {
			// The new version is in the spec at once (the ARM contract: the update is done when the
			// pool is READY at it), so the pool's policy starts STARTED.
			upgrade = &csv1.UpgradePolicy{Id: newPolicyID(), ClusterId: cl.ID, NodePoolId: cur.ID, Type: csv1.UpgradeType_UPGRADE_TYPE_NODE_POOL,
				FromVersion: from, ToVersion: to, NextRun: timestamppb.New(s.cfg.Now()), State: csv1.UpgradePolicyState_UPGRADE_POLICY_STATE_STARTED,
				Message: fmt.Sprintf("Upgrading the node pool from %s to %s.", from, to)}
		}
		return spec, upgrade, nil
	})
	if errors.Is(err, store.ErrUpgradeInProgress) {
		return nil, status.Errorf(codes.FailedPrecondition, "update node pool %s: %v; wait for it to finish", cur.ID, err)
	}
	if _, ok := status.FromError(err); ok && err != nil {
		return nil, err // the update's violations, already a status
	}
	if err != nil {
		return nil, s.toStatus(ctx, "update node pool", err)
	}
	if upgrade != nil && np.Spec.GetVersionId() == upgrade.ToVersion {
		LoggerFrom(ctx).Info("node pool upgrade started", "nodePoolID", np.ID, "upgradePolicyID", upgrade.Id, "from", upgrade.FromVersion, "to", upgrade.ToVersion)
	}
	LoggerFrom(ctx).Info("node pool updated", "nodePoolID", np.ID, "clusterID", np.ClusterID, "revision", np.Revision)
	return store.NodePoolProto(np), nil
}

// decideNodePoolUpdate applies u to the stored pool and validates the result as a create would
// (plus what may not change). Violations name the request's fields: update.<field of the spec>.
func decideNodePoolUpdate(cl *store.Cluster, cur *store.NodePool, u *csv1.NodePoolUpdate, catalogue *versions.Catalogue, now func() time.Time) (*csv1.NodePoolSpec, error) {
	var specV violations
	spec := validateNodePoolSpec(&specV, "spec", csv1.ApplyNodePoolUpdate(cur.Spec, u), cl, cur.Spec, catalogue, now)
	return spec, updateViolations(specV, (&csv1.NodePoolUpdate{}).ProtoReflect().Descriptor()).err()
}

// updateViolations readdresses violations of a merged spec ("spec.taints[1].effect") to the
// update request's field ("update.taints.values[1].effect"); a violation of a part the update
// cannot change keeps the spec's path (the caller cannot map it to its own field).
func updateViolations(specV violations, update protoreflect.MessageDescriptor) violations {
	var v violations
	for _, f := range specV {
		field := f.Field
		if p, ok := csv1.UpdateFieldPath(update, strings.TrimPrefix(field, "spec.")); ok && strings.HasPrefix(field, "spec.") {
			field = "update." + p
		}
		v.add(field, "%s", f.Description)
	}
	return v
}

// DeleteNodePool implements csv1.NodePoolsServer.
func (s *Server) DeleteNodePool(ctx context.Context, req *csv1.DeleteNodePoolRequest) (*csv1.NodePool, error) {
	var v violations
	validateClusterID(&v, "id", req.GetId())
	if err := v.err(); err != nil {
		return nil, err
	}
	np, err := s.st.MarkNodePoolDeleting(ctx, req.GetId())
	if err != nil {
		return nil, s.toStatus(ctx, "delete node pool", err)
	}
	LoggerFrom(ctx).Info("node pool deletion requested", "nodePoolID", np.ID, "clusterID", np.ClusterID, "revision", np.Revision)
	return store.NodePoolProto(np), nil
}

// WatchNodePools implements csv1.NodePoolsServer, exactly as WatchClusters does for clusters.
func (s *Server) WatchNodePools(req *csv1.WatchNodePoolsRequest, stream grpc.ServerStreamingServer[csv1.NodePoolEvent]) error {
	return serveWatch(s, req.GetSinceRevision(), stream, watchLog[*csv1.NodePoolEvent]{
		snapshot: func(ctx context.Context) ([]*csv1.NodePoolEvent, int64, error) {
			pools, rev, err := s.st.NodePoolSnapshot(ctx)
			return messages(pools, func(np *store.NodePool) *csv1.NodePoolEvent {
				return &csv1.NodePoolEvent{Type: csv1.EventType_EVENT_TYPE_UPSERTED, Revision: np.Revision, NodePool: store.NodePoolProto(np)}
			}), rev, err
		},
		eventsAfter: func(ctx context.Context, after int64, limit int) ([]*csv1.NodePoolEvent, error) {
			evs, err := s.st.NodePoolEventsAfter(ctx, after, limit)
			return messages(evs, func(ev store.NodePoolEvent) *csv1.NodePoolEvent {
				return &csv1.NodePoolEvent{Type: ev.Type, Revision: ev.Revision, NodePool: store.NodePoolProto(ev.NodePool)}
			}), err
		},
		compacted: s.st.CompactedNodePoolRevision,
		bookmark: func(rev int64) *csv1.NodePoolEvent {
			return &csv1.NodePoolEvent{Type: csv1.EventType_EVENT_TYPE_BOOKMARK, Revision: rev}
		},
		snapshotOp: "watch node pools snapshot", compactedOp: "watch node pools", eventsOp: "watch node pool events",
		history: "node pool event history",
	})
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
