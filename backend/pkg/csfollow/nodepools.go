package csfollow

import (
	"context"
	"fmt"
	"log/slog"

	csv1 "github.com/openhcp/openhcp/cluster-service/api/v1"
	"github.com/openhcp/openhcp/internal/armdoc"
	"github.com/openhcp/openhcp/internal/reconcile"
)

// Node pool operations are documents like a cluster's, on the resource
// …/hcpOpenShiftClusters/{c}/nodePools/{n}, with the Cluster Service node pool ID as InternalID.
// They are observed through GetNodePool and WatchNodePools, and end by mapNodePool.

func (c Clients) observeNodePool(ctx context.Context, op *armdoc.OperationDocument) (Observation, error) {
	if c.NodePools == nil {
		return Observation{}, fmt.Errorf("node pool operation %s: the backend has no Cluster Service node pool client", op.ID)
	}
	np, err := c.NodePools.GetNodePool(ctx, &csv1.GetNodePoolRequest{Id: op.InternalID})
	return observed("node pool", op.InternalID, np, err, func(np *csv1.NodePool) Outcome { return mapNodePool(op, np) })
}

// nodePoolOutcomes are the node pool states (docs/cluster-service.md, "Node pool states").
var nodePoolOutcomes = childOutcomes[csv1.NodePoolState]{
	noun:            "node pool",
	ready:           csv1.NodePoolState_NODE_POOL_STATE_READY,
	failed:          csv1.NodePoolState_NODE_POOL_STATE_ERROR,
	deleting:        csv1.NodePoolState_NODE_POOL_STATE_UNINSTALLING,
	notStarted:      []csv1.NodePoolState{csv1.NodePoolState_NODE_POOL_STATE_PENDING, csv1.NodePoolState_NODE_POOL_STATE_UNSPECIFIED},
	failedMessage:   "The node pool reported a failure.",
	canceledMessage: "The operation was canceled because the node pool is being deleted.",
}

// mapNodePool derives the outcome of op from the node pool's Cluster Service state
// (childOutcomes.outcome). A nil pool means Cluster Service does not know it.
func mapNodePool(op *armdoc.OperationDocument, np *csv1.NodePool) Outcome {
	return nodePoolOutcomes.outcome(op, np != nil, np.GetStatus())
}

// readyAt is the one completion rule of an update, for every kind: the READY status reflects a
// spec at or after the one the operation's call stored (its InternalRevision, the spec_revision
// Cluster Service returned). A READY from before the change, or one read before Cluster Service
// derived a status from the new spec, does not end it.
func readyAt(observedRevision int64, op *armdoc.OperationDocument) bool {
	return op.InternalRevision > 0 && observedRevision >= op.InternalRevision
}

// followNodePools follows Cluster Service's node pool watch stream (reconcile.Follow).
func (c Clients) followNodePools(ctx context.Context, log *slog.Logger, changed func(id string)) {
	if c.NodePools == nil {
		return
	}
	reconcile.Follow(ctx, log, "node pool", func(ctx context.Context, since int64) (reconcile.Stream[*csv1.NodePoolEvent], error) {
		return c.NodePools.WatchNodePools(ctx, &csv1.WatchNodePoolsRequest{SinceRevision: since})
	}, func(ev *csv1.NodePoolEvent) { changed(ev.GetNodePool().GetId()) })
}
