package operations

import (
	"context"
	"fmt"
	"strings"

	csv1 "github.com/openhcp/openhcp/cluster-service/api/v1"
	"github.com/openhcp/openhcp/internal/api"
	"github.com/openhcp/openhcp/internal/store"
)

// Node pool operations are documents like a cluster's, on the resource
// …/hcpOpenShiftClusters/{c}/nodePools/{n}, with the Cluster Service node pool ID as InternalID.
// They are observed through GetNodePool and WatchNodePools, and end by mapNodePool.

// isNodePool reports whether an ARM resource ID (any casing) names a node pool.
func isNodePool(rid string) bool { return isClusterChild(rid, "nodepools") }

func (c *Controller) observeNodePool(ctx context.Context, op *api.OperationDocument) (observation, error) {
	if c.cfg.NodePools == nil {
		return observation{}, fmt.Errorf("node pool operation %s: the backend has no Cluster Service node pool client", op.ID)
	}
	np, err := c.cfg.NodePools.GetNodePool(ctx, &csv1.GetNodePoolRequest{Id: op.InternalID})
	return observed("node pool", op.InternalID, np, err, func(np *csv1.NodePool) outcome { return mapNodePool(op, np) })
}

// mapNodePool derives the outcome of op from the node pool's Cluster Service state
// (docs/cluster-service.md, "Node pool states"). A nil pool means Cluster Service does not
// know it.
func mapNodePool(op *api.OperationDocument, np *csv1.NodePool) outcome {
	if op.Request == api.OperationDelete {
		if np == nil {
			return outcome{status: api.StateSucceeded, gone: true}
		}
		return outcome{status: api.StateDeleting}
	}
	if np == nil {
		return outcome{status: api.StateFailed, err: &api.CloudErrorBody{
			Code:    "InternalServerError",
			Message: fmt.Sprintf("The node pool %s is no longer known to the service.", op.ExternalID),
		}}
	}
	st := np.GetStatus()
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
		return outcome{status: api.StateFailed, err: &api.CloudErrorBody{Code: code, Message: msg}}
	case csv1.NodePoolState_NODE_POOL_STATE_UNINSTALLING:
		// The pool, or its cluster, is being deleted while this create or update ran.
		return outcome{status: api.StateCanceled, err: &api.CloudErrorBody{
			Code:    "Canceled",
			Message: "The operation was canceled because the node pool is being deleted.",
		}}
	}
	if op.Request == api.OperationUpdate {
		// READY is only stored after the update when the update took effect (its revision)
		// and the pool's observed nodes and version are what the new spec asks: right after
		// UpdateNodePool the pool still carries the status it had before.
		if st.GetState() == csv1.NodePoolState_NODE_POOL_STATE_READY && np.GetRevision() >= op.InternalRevision && nodePoolSatisfied(np) {
			return outcome{status: api.StateSucceeded}
		}
		return outcome{status: api.StateUpdating}
	}
	switch st.GetState() {
	case csv1.NodePoolState_NODE_POOL_STATE_READY:
		return outcome{status: api.StateSucceeded}
	case csv1.NodePoolState_NODE_POOL_STATE_PENDING, csv1.NodePoolState_NODE_POOL_STATE_UNSPECIFIED:
		return outcome{status: api.StateAccepted}
	}
	return outcome{status: api.StateProvisioning}
}

// nodePoolSatisfied reports whether the pool's reported nodes and version are what its spec
// asks for: replicas (or within the autoscaling range) and the version, when one is set.
func nodePoolSatisfied(np *csv1.NodePool) bool {
	spec, st := np.GetSpec(), np.GetStatus()
	if as := spec.GetAutoscaling(); as != nil {
		if st.GetReplicas() < as.GetMin() || st.GetReplicas() > as.GetMax() {
			return false
		}
	} else if st.GetReplicas() != spec.GetReplicas() {
		return false
	}
	return spec.GetVersionId() == "" || st.GetCurrentVersion() == spec.GetVersionId()
}

// followNodePools follows Cluster Service's node pool watch stream (followWatch).
func (c *Controller) followNodePools(ctx context.Context) {
	if c.cfg.NodePools == nil {
		return
	}
	followWatch(ctx, c, "node pool", func(ctx context.Context, since int64) (csStream[*csv1.NodePoolEvent], error) {
		return c.cfg.NodePools.WatchNodePools(ctx, &csv1.WatchNodePoolsRequest{SinceRevision: since})
	}, func(ev *csv1.NodePoolEvent) string { return ev.GetNodePool().GetId() })
}

// childResourceDeletes are the deletes of every resource document below parentID (a cluster's
// node pools), so a finished cluster delete removes them in the same transaction: Cluster
// Service deleted the pools with the cluster.
func (c *Controller) childResourceDeletes(ctx context.Context, partition, parentID string) ([]store.TxOp, error) {
	var ops []store.TxOp
	q := store.Query{Partition: partition, Type: store.TypeResource, ResourceIDPrefix: strings.ToLower(parentID) + "/", Limit: feedPage}
	for {
		page, err := c.store.Query(ctx, q)
		if err != nil {
			return nil, fmt.Errorf("list resources below %s: %w", parentID, err)
		}
		for _, d := range page.Documents {
			ops = append(ops, store.TxOp{Kind: store.TxDelete, Doc: d, IfMatch: d.ETag})
		}
		if page.Continuation == "" {
			return ops, nil
		}
		q.Continuation = page.Continuation
	}
}

// cascadeNodePool handles a node pool of a Deleted subscription (cascadeClusterChild):
// Cluster Service deletes the pools of a deleted cluster and the cluster's finished delete
// removes their documents. It reports whether the pool is still there.
func (c *Controller) cascadeNodePool(ctx context.Context, d *store.Document) (bool, error) {
	return c.cascadeClusterChild(ctx, d, "nodepools", "node pool")
}
