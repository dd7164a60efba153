package store

import (
	"context"
	"errors"

	csv1 "github.com/openhcp/openhcp/cluster-service/api/v1"
)

// ErrDeleting: the object (or the cluster it belongs to) is being deleted, so it cannot change.
var ErrDeleting = errors.New("being deleted")

// NodePool is a stored node pool.
type NodePool = Child[*csv1.NodePoolSpec, *csv1.NodePoolStatus]

// NodePoolEvent is one entry of the node pool event log.
type NodePoolEvent struct {
	Type     csv1.EventType // UPSERTED or DELETED
	Revision int64
	NodePool *NodePool // for DELETED, the last known state
}

// nodePools is the node pool kind: any number per cluster, sent as its own ManifestWork.
var nodePools = &childKind[*csv1.NodePoolSpec, *csv1.NodePoolStatus]{
	what: "node pool", table: "node_pools", log: nodePoolEventLog,
	docKey: "nodePool", api: (&csv1.NodePool{}).ProtoReflect().Type(),
	statePrefix:    "NODE_POOL_STATE_",
	pendingMessage: "The node pool is accepted; its manifests are not sent yet.", deletingMessage: "The node pool is being deleted.",
	specChanged: func(st *csv1.NodePoolStatus) {
		if st.GetState() == csv1.NodePoolState_NODE_POOL_STATE_READY {
			setChildState(st, "NODE_POOL_STATE_", "UPDATING", "The node pool change is being applied.")
		}
	},
}

// NodePoolProto is the API form of a stored node pool.
func NodePoolProto(np *NodePool) *csv1.NodePool { return nodePools.proto(np).(*csv1.NodePool) }

// CreateNodePool stores a new node pool of np.ClusterID (childKind.create).
func (s *Store) CreateNodePool(ctx context.Context, np *NodePool) (_ *NodePool, created bool, err error) {
	return nodePools.create(ctx, s, np)
}

// GetNodePool returns the node pool or ErrNotFound.
func (s *Store) GetNodePool(ctx context.Context, id string) (*NodePool, error) {
	return nodePools.get(ctx, s, id)
}

// ListNodePools returns the node pools of one cluster in id order; with clusterID empty, up to
// limit pools of every cluster with an id greater than afterID (limit 0: no limit).
func (s *Store) ListNodePools(ctx context.Context, clusterID, afterID string, limit int) ([]*NodePool, error) {
	return nodePools.list(ctx, s, clusterID, afterID, limit)
}

// UpdateNodePool writes the spec decide returns under the pool's write lock, with upgrade (a
// node pool upgrade policy) in the same transaction (childKind.update).
func (s *Store) UpdateNodePool(ctx context.Context, id string, pre Precondition,
	decide func(cur *NodePool) (*csv1.NodePoolSpec, *csv1.UpgradePolicy, error)) (*NodePool, error) {
	return nodePools.update(ctx, s, id, pre, decide)
}

// MarkNodePoolDeleting sets the deleting flag and UNINSTALLING; idempotent like MarkDeleting.
func (s *Store) MarkNodePoolDeleting(ctx context.Context, id string) (*NodePool, error) {
	return nodePools.markDeleting(ctx, s, id)
}

// UpdateNodePoolStatus replaces the status if the pool is still at revision (ErrConflict
// otherwise); an identical status keeps the revision.
func (s *Store) UpdateNodePoolStatus(ctx context.Context, id string, revision int64, st *csv1.NodePoolStatus) (*NodePool, error) {
	return nodePools.updateStatus(ctx, s, id, revision, st)
}

// RemoveNodePool deletes a pool that is marked deleting and still at revision, and records its
// DELETED event. Only the controller calls it, once the pool's ManifestWork is gone.
func (s *Store) RemoveNodePool(ctx context.Context, id string, revision int64) error {
	return nodePools.remove(ctx, s, id, revision)
}

// NodePoolEventsAfter returns up to limit node pool events with a revision greater than after.
func (s *Store) NodePoolEventsAfter(ctx context.Context, after int64, limit int) ([]NodePoolEvent, error) {
	return eventsAfterOf(ctx, s, nodePools, after, limit, func(typ csv1.EventType, rev int64, np *NodePool) NodePoolEvent {
		return NodePoolEvent{Type: typ, Revision: rev, NodePool: np}
	})
}

// NodePoolSnapshot returns every node pool and the revision it is consistent with.
func (s *Store) NodePoolSnapshot(ctx context.Context) ([]*NodePool, int64, error) {
	return nodePools.snapshot(ctx, s)
}

// CurrentNodePoolRevision is the revision of the latest node pool event.
func (s *Store) CurrentNodePoolRevision(ctx context.Context) (int64, error) {
	return currentRevision(ctx, s.pool, nodePoolEventLog)
}

// CompactedNodePoolRevision is the newest node pool revision whose tombstone may be pruned.
func (s *Store) CompactedNodePoolRevision(ctx context.Context) (int64, error) {
	return compactedRevision(ctx, s.pool, nodePoolEventLog)
}
