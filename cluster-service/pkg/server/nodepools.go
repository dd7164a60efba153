package server

import (
	"context"
	"fmt"
	"regexp"
	"strings"

	"google.golang.org/grpc"
	"google.golang.org/protobuf/types/known/timestamppb"

	csv1 "github.com/openhcp/openhcp/cluster-service/api/v1"
	"github.com/openhcp/openhcp/cluster-service/pkg/model"
	"github.com/openhcp/openhcp/cluster-service/pkg/store"
	"github.com/openhcp/openhcp/internal/logattr"
)

var (
	// .../hcpOpenShiftClusters/{cluster}/nodePools/{name}; ARO HCP node pool names are 3-15
	// characters.
	armNodePoolRE = regexp.MustCompile(`(?i)^(/subscriptions/[0-9a-f-]{36}/resourcegroups/[-\w._()]{1,90}/providers/microsoft\.redhatopenshift/hcpopenshiftclusters/[a-zA-Z]([-a-zA-Z0-9]{0,52}[a-zA-Z0-9])?)/nodepools/([a-zA-Z][-a-zA-Z0-9]{1,13}[a-zA-Z0-9])$`)
)

// nodePoolService is the node pool kind of the child RPCs.
func (s *Server) nodePoolService() *childService[*csv1.NodePoolSpec, *csv1.NodePoolStatus, *csv1.NodePool, *csv1.NodePoolUpdate, *csv1.NodePoolEvent] {
	return &childService[*csv1.NodePoolSpec, *csv1.NodePoolStatus, *csv1.NodePool, *csv1.NodePoolUpdate, *csv1.NodePoolEvent]{
		what: "node pool", field: "node_pool", logKey: logattr.KeyNodePoolID, armRE: armNodePoolRE,
		armHint: "must be /subscriptions/{uuid}/resourceGroups/{rg}/providers/Microsoft.RedHatOpenShift/hcpOpenShiftClusters/{cluster}/nodePools/{name} with a name of 3-15 letters, digits or '-', not %q",
		validate: func(v *violations, in *csv1.NodePoolSpec, cl *store.Cluster) *csv1.NodePoolSpec {
			spec := model.ValidateNodePoolSpec(v.model(), "node_pool.spec", in, modelCluster(cl), nil, s.cfg.Versions, s.cfg.Now)
			if len(*v) == 0 {
				// The pool's IDs are not the hook's; stand-ins of their lengths (a 32-character ID,
				// a 15-character name, the most) build the same size.
				s.nodePoolWorkFits(v, "node_pool.spec", strings.Repeat("0", 32), cl.ARMResourceID+"/nodePools/"+strings.Repeat("n", 15), spec, nil, cl)
			}
			return spec
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
	spec := model.ValidateNodePoolSpec(v.model(), "spec", csv1.ApplyNodePoolUpdate(cur.Spec, u), modelCluster(cl), cur.Spec, s.cfg.Versions, s.cfg.Now)
	if len(*v) == 0 {
		s.nodePoolWorkFits(v, "spec", cur.ID, cur.ARMResourceID, spec, cur.Spec, cl)
	}
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

// modelCluster is what the model reads of a node pool's cluster.
func modelCluster(cl *store.Cluster) model.Cluster {
	return model.Cluster{Spec: cl.Spec, Status: cl.Status}
}
