package server

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/known/timestamppb"

	csv1 "github.com/openhcp/openhcp/cluster-service/api/v1"
	"github.com/openhcp/openhcp/cluster-service/pkg/model"
	"github.com/openhcp/openhcp/cluster-service/pkg/store"
	"github.com/openhcp/openhcp/cluster-service/pkg/versions"
)

var (
	// .../hcpOpenShiftClusters/{cluster}/nodePools/{name}; ARO HCP node pool names are 3-15
	// characters.
	armNodePoolRE = regexp.MustCompile(`(?i)^(/subscriptions/[0-9a-f-]{36}/resourcegroups/[-\w._()]{1,90}/providers/microsoft\.redhatopenshift/hcpopenshiftclusters/[a-zA-Z]([-a-zA-Z0-9]{0,52}[a-zA-Z0-9])?)/nodepools/([a-zA-Z][-a-zA-Z0-9]{1,13}[a-zA-Z0-9])$`)
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
	spec := model.ValidateNodePoolSpec(v.model(), "node_pool.spec", in.GetSpec(), modelCluster(cl), nil, s.cfg.Versions, s.cfg.Now)
	if err := v.err(); err != nil {
		return nil, err
	}
	np, created, err := s.st.CreateNodePool(ctx, &store.NodePool{ID: in.GetId(), ClusterID: cl.ID, ARMResourceID: in.GetArmResourceId(), Spec: spec})
	if err != nil {
		return nil, s.toStatus(ctx, "create node pool", err)
	}
	log := LoggerFrom(ctx).With("node_pool_id", np.ID, "cluster_id", np.ClusterID)
	if !created && np.Deleting {
		return nil, status.Errorf(codes.FailedPrecondition, "the node pool %s for this ARM resource is being deleted; retry when it is gone", np.ID)
	}
	if created {
		log.Info("node pool created", "arm_resource_id", np.ARMResourceID, "revision", np.Revision)
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
// model.ValidateNodePoolSpec as a create, so no caller reads and writes back the whole spec.
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
		LoggerFrom(ctx).Info("node pool upgrade started", "node_pool_id", np.ID, "upgrade_policy_id", upgrade.Id, "from", upgrade.FromVersion, "to", upgrade.ToVersion)
	}
	LoggerFrom(ctx).Info("node pool updated", "node_pool_id", np.ID, "cluster_id", np.ClusterID, "revision", np.Revision)
	return store.NodePoolProto(np), nil
}

// decideNodePoolUpdate applies u to the stored pool and validates the result as a create would
// (plus what may not change). Violations name the request's fields: update.<field of the spec>.
func decideNodePoolUpdate(cl *store.Cluster, cur *store.NodePool, u *csv1.NodePoolUpdate, catalogue *versions.Catalogue, now func() time.Time) (*csv1.NodePoolSpec, error) {
	var specV violations
	spec := model.ValidateNodePoolSpec(specV.model(), "spec", csv1.ApplyNodePoolUpdate(cur.Spec, u), modelCluster(cl), cur.Spec, catalogue, now)
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
	LoggerFrom(ctx).Info("node pool deletion requested", "node_pool_id", np.ID, "cluster_id", np.ClusterID, "revision", np.Revision)
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

// modelCluster is what the model reads of a node pool's cluster.
func modelCluster(cl *store.Cluster) model.Cluster {
	return model.Cluster{Spec: cl.Spec, Status: cl.Status}
}
