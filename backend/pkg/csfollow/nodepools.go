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

// mapNodePool derives the outcome of op from the node pool's Cluster Service state
// (docs/cluster-service.md, "Node pool states"). A nil pool means Cluster Service does not
// know it.
func mapNodePool(op *armdoc.OperationDocument, np *csv1.NodePool) Outcome {
	if op.Request == armdoc.OperationDelete {
		if np == nil {
			return Outcome{Status: armdoc.StateSucceeded, Gone: true}
		}
		return Outcome{Status: armdoc.StateDeleting}
	}
	if np == nil {
		return Outcome{Status: armdoc.StateFailed, Err: &armdoc.CloudErrorBody{
			Code:    "InternalServerError",
			Message: fmt.Sprintf("The node pool %s is no longer known to the service.", op.ExternalID),
		}}
	}
	st := np.GetStatus()
	if awaitingRevision(op) && st.GetState() != csv1.NodePoolState_NODE_POOL_STATE_UNINSTALLING {
		return notRecorded() // neither an old READY nor an old ERROR speaks for this update
	}
	switch st.GetState() {
	case csv1.NodePoolState_NODE_POOL_STATE_ERROR:
		code := st.GetErrorCode()
		if code == "" {
			code = "ProvisioningFailed"
		}
		msg := st.GetMessage()
		if msg == "" {
			msg = "The node pool reported a failure."
		}
		return Outcome{Status: armdoc.StateFailed, Err: &armdoc.CloudErrorBody{Code: code, Message: msg}}
	case csv1.NodePoolState_NODE_POOL_STATE_UNINSTALLING:
		// The pool, or its cluster, is being deleted while this create or update ran.
		return Outcome{Status: armdoc.StateCanceled, Err: &armdoc.CloudErrorBody{
			Code:    "Canceled",
			Message: "The operation was canceled because the node pool is being deleted.",
		}}
	}
	if op.Request == armdoc.OperationUpdate {
		// Cluster Service's READY already means the nodes and version its spec asks for
		// (DeriveNodePoolStatus); observed_revision says which spec that is.
		if st.GetState() == csv1.NodePoolState_NODE_POOL_STATE_READY && readyAt(st.GetObservedRevision(), op) {
			return Outcome{Status: armdoc.StateSucceeded}
		}
		return Outcome{Status: armdoc.StateUpdating}
	}
	switch st.GetState() {
	case csv1.NodePoolState_NODE_POOL_STATE_READY:
		return Outcome{Status: armdoc.StateSucceeded}
	case csv1.NodePoolState_NODE_POOL_STATE_PENDING, csv1.NodePoolState_NODE_POOL_STATE_UNSPECIFIED:
		return Outcome{Status: armdoc.StateAccepted}
	}
	return Outcome{Status: armdoc.StateProvisioning}
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
