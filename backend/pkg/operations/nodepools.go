package operations

import (
	"context"
	"fmt"
	"strings"

	csv1 "github.com/openhcp/openhcp/cluster-service/api/v1"
	"github.com/openhcp/openhcp/internal/armdoc"
	"github.com/openhcp/openhcp/internal/docstore"
	"github.com/openhcp/openhcp/internal/reconcile"
)

// Node pool operations are documents like a cluster's, on the resource
// …/hcpOpenShiftClusters/{c}/nodePools/{n}, with the Cluster Service node pool ID as InternalID.
// They are observed through GetNodePool and WatchNodePools, and end by mapNodePool.

func (c *Controller) observeNodePool(ctx context.Context, op *armdoc.OperationDocument) (observation, error) {
	if c.cfg.NodePools == nil {
		return observation{}, fmt.Errorf("node pool operation %s: the backend has no Cluster Service node pool client", op.ID)
	}
	np, err := c.cfg.NodePools.GetNodePool(ctx, &csv1.GetNodePoolRequest{Id: op.InternalID})
	return observed("node pool", op.InternalID, np, err, func(np *csv1.NodePool) outcome { return mapNodePool(op, np) })
}

// mapNodePool derives the outcome of op from the node pool's Cluster Service state
// (docs/cluster-service.md, "Node pool states"). A nil pool means Cluster Service does not
// know it.
func mapNodePool(op *armdoc.OperationDocument, np *csv1.NodePool) outcome {
	if op.Request == armdoc.OperationDelete {
		if np == nil {
			return outcome{status: armdoc.StateSucceeded, gone: true}
		}
		return outcome{status: armdoc.StateDeleting}
	}
	if np == nil {
		return outcome{status: armdoc.StateFailed, err: &armdoc.CloudErrorBody{
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
		return outcome{status: armdoc.StateFailed, err: &armdoc.CloudErrorBody{Code: code, Message: msg}}
	case csv1.NodePoolState_NODE_POOL_STATE_UNINSTALLING:
		// The pool, or its cluster, is being deleted while this create or update ran.
		return outcome{status: armdoc.StateCanceled, err: &armdoc.CloudErrorBody{
			Code:    "Canceled",
			Message: "The operation was canceled because the node pool is being deleted.",
		}}
	}
	if op.Request == armdoc.OperationUpdate {
		// Cluster Service's READY already means the nodes and version its spec asks for
		// (DeriveNodePoolStatus); observed_revision says which spec that is.
		if st.GetState() == csv1.NodePoolState_NODE_POOL_STATE_READY && readyAt(st.GetObservedRevision(), op) {
			return outcome{status: armdoc.StateSucceeded}
		}
		return outcome{status: armdoc.StateUpdating}
	}
	switch st.GetState() {
	case csv1.NodePoolState_NODE_POOL_STATE_READY:
		return outcome{status: armdoc.StateSucceeded}
	case csv1.NodePoolState_NODE_POOL_STATE_PENDING, csv1.NodePoolState_NODE_POOL_STATE_UNSPECIFIED:
		return outcome{status: armdoc.StateAccepted}
	}
	return outcome{status: armdoc.StateProvisioning}
}

// readyAt is the one completion rule of an update, for every kind: the READY status reflects a
// spec at or after the one the operation's call stored (its InternalRevision, the spec_revision
// Cluster Service returned). A READY from before the change, or one read before Cluster Service
// derived a status from the new spec, does not end it.
func readyAt(observedRevision int64, op *armdoc.OperationDocument) bool {
	return op.InternalRevision > 0 && observedRevision >= op.InternalRevision
}

// followNodePools follows Cluster Service's node pool watch stream (reconcile.Follow).
func (c *Controller) followNodePools(ctx context.Context, changed func(id string)) {
	if c.cfg.NodePools == nil {
		return
	}
	reconcile.Follow(ctx, c.log, "node pool", func(ctx context.Context, since int64) (reconcile.Stream[*csv1.NodePoolEvent], error) {
		return c.cfg.NodePools.WatchNodePools(ctx, &csv1.WatchNodePoolsRequest{SinceRevision: since})
	}, func(ev *csv1.NodePoolEvent) { changed(ev.GetNodePool().GetId()) })
}

// childResourceDeletes are the deletes of every resource document below parentID (a cluster's
// node pools), so a finished cluster delete removes them in the same transaction: Cluster
// Service deleted the pools with the cluster.
func (c *Controller) childResourceDeletes(ctx context.Context, partition, parentID string) ([]docstore.TxOp, error) {
	var ops []docstore.TxOp
	q := docstore.Query{Partition: partition, Type: docstore.TypeResource, ResourceIDPrefix: strings.ToLower(parentID) + "/", Limit: feedPage}
	for {
		page, err := c.store.Query(ctx, q)
		if err != nil {
			return nil, fmt.Errorf("list resources below %s: %w", parentID, err)
		}
		for _, d := range page.Documents {
			ops = append(ops, docstore.TxOp{Kind: docstore.TxDelete, Doc: d, IfMatch: d.ETag})
		}
		if page.Continuation == "" {
			return ops, nil
		}
		q.Continuation = page.Continuation
	}
}
