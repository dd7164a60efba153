package store

import (
	"context"

	csv1 "github.com/openhcp/openhcp/cluster-service/api/v1"
)

// NodePool is a stored node pool.
type NodePool = Child[*csv1.NodePoolSpec, *csv1.NodePoolStatus]

// NodePoolEvent is one entry of the node pool event log.
type NodePoolEvent = ChildEvent[*csv1.NodePoolSpec, *csv1.NodePoolStatus]

// nodePools is the node pool kind: any number per cluster, each sent as its own ManifestWork.
var nodePools = (&childKind[*csv1.NodePoolSpec, *csv1.NodePoolStatus]{log: nodePoolEventLog,
	pendingMessage: "The node pool is accepted; its manifests are not sent yet.", deletingMessage: "The node pool is being deleted.",
	// An ERROR speaks for the spec it observed only: a new spec is being applied (the update that
	// fixes a pool whose work Maestro refused must not end on the old ERROR).
	updatingFrom: []string{"READY", "ERROR"}, updatingMessage: "The node pool change is being applied.",
}).of(&csv1.NodePool{})

// NodePoolProto is the API form of a stored node pool.
func NodePoolProto(np *NodePool) *csv1.NodePool { return nodePools.proto(np).(*csv1.NodePool) }

// NodePools is the store of node pools.
func (s *Store) NodePools() Children[*csv1.NodePoolSpec, *csv1.NodePoolStatus] {
	return Children[*csv1.NodePoolSpec, *csv1.NodePoolStatus]{s: s, k: nodePools}
}

// GetNodePool, UpdateNodePoolStatus and RemoveNodePool are NodePools().Get, .UpdateStatus and
// .Remove under their former names, kept only for the backend's tests, which this change does
// not edit; new code calls NodePools().
func (s *Store) GetNodePool(ctx context.Context, id string) (*NodePool, error) {
	return s.NodePools().Get(ctx, id)
}

func (s *Store) UpdateNodePoolStatus(ctx context.Context, id string, revision int64, st *csv1.NodePoolStatus) (*NodePool, error) {
	return s.NodePools().UpdateStatus(ctx, id, revision, st)
}

func (s *Store) RemoveNodePool(ctx context.Context, id string, revision int64) error {
	return s.NodePools().Remove(ctx, id, revision)
}
