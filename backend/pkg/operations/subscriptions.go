package operations

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/google/uuid"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	csv1 "github.com/openhcp/openhcp/cluster-service/api/v1"
	"github.com/openhcp/openhcp/internal/armdoc"
	"github.com/openhcp/openhcp/internal/docstore"
	"github.com/openhcp/openhcp/internal/opkind"
	"github.com/openhcp/openhcp/internal/reconcile"
)

// The frontend starts the cascade when ARM reports a subscription Deleted, but only once, in
// the request, and it logs and forgets what fails. The backend makes the cascade level-triggered:
// while a subscription is Deleted, every cluster it still owns gets a Delete operation, exactly
// like one a customer started, and Cluster Service is asked to delete it; the ordinary delete
// path then removes the resource document once Cluster Service forgets the cluster.

func subscriptionPartition(docID string) string {
	return strings.ToLower(strings.TrimPrefix(docID, "/subscriptions/"))
}

func (c *Controller) subscriptionWorker(ctx context.Context) {
	for reconcile.Process(ctx, c.subQ, func(ctx context.Context, k opKey) (time.Duration, error) {
		return c.ReconcileSubscription(ctx, k.partition)
	}, func(r reconcile.Result[opKey]) {
		if r.Outcome == reconcile.OutcomeError {
			c.log.Warn("cascade delete of subscription failed; retrying", "subscriptionID", r.Key.partition, "error", r.Err)
		}
	}) {
	}
}

// ReconcileSubscription deletes every cluster of a Deleted subscription that is not already
// being deleted. It returns when to look again (while anything is left).
func (c *Controller) ReconcileSubscription(ctx context.Context, partition string) (time.Duration, error) {
	subDoc, err := c.store.Get(ctx, partition, "/subscriptions/"+partition)
	if errors.Is(err, docstore.ErrNotFound) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("get subscription %s: %w", partition, err)
	}
	var sub armdoc.SubscriptionDocument
	if err := json.Unmarshal(subDoc.Body, &sub); err != nil {
		return 0, fmt.Errorf("decode subscription %s: %w", partition, err)
	}
	if sub.State != armdoc.SubscriptionDeleted {
		return 0, nil
	}
	left := 0
	q := docstore.Query{Partition: partition, Type: docstore.TypeResource, Limit: feedPage}
	for {
		page, err := c.store.Query(ctx, q)
		if err != nil {
			return 0, fmt.Errorf("list resources of subscription %s: %w", partition, err)
		}
		for _, d := range page.Documents {
			reg, ok := opkind.OfResource(d.ResourceID)
			if ok && reg.ChildType != "" {
				// Cluster Service removes a child with its cluster, and the cluster's finished
				// delete removes its document.
				there, err := c.cascadeClusterChild(ctx, d, reg.What)
				if err != nil {
					return 0, err
				}
				if there {
					left++
				}
				continue
			}
			if !ok || reg.Kind != opkind.Cluster {
				continue
			}
			left++
			if err := c.deleteForSubscription(ctx, d); err != nil {
				return 0, err
			}
		}
		if page.Continuation == "" {
			break
		}
		q.Continuation = page.Continuation
	}
	if left > 0 {
		return c.cfg.ResyncPeriod, nil
	}
	return 0, nil
}

// deleteForSubscription makes sure one cluster is being deleted: a running Delete operation is
// left to finish (Cluster Service is asked again, which is idempotent); anything else gets a new
// Delete operation, recorded with the resource in one transaction, and a running create or
// update is canceled.
func (c *Controller) deleteForSubscription(ctx context.Context, d *docstore.Document) error {
	var rd armdoc.ResourceDocument
	if err := json.Unmarshal(d.Body, &rd); err != nil {
		return fmt.Errorf("decode resource %s: %w", d.ID, err)
	}
	ops := []docstore.TxOp{}
	now := c.now().UTC()
	if rd.ActiveOperationID != "" {
		cur, err := c.store.Get(ctx, d.PartitionKey, rd.ActiveOperationID)
		if err != nil && !errors.Is(err, docstore.ErrNotFound) {
			return fmt.Errorf("get operation %s: %w", rd.ActiveOperationID, err)
		}
		if cur != nil {
			var op opRecord
			if err := json.Unmarshal(cur.Body, &op); err != nil {
				return fmt.Errorf("decode operation %s: %w", rd.ActiveOperationID, err)
			}
			if !op.Status.Terminal() && op.Request == armdoc.OperationDelete {
				return c.csDelete(ctx, rd.InternalID, op.CorrelationID)
			}
			if !op.Status.Terminal() {
				op.Status, op.LastTransitionTime, op.EndTime = armdoc.StateCanceled, now, &now
				op.Error = &armdoc.CloudErrorBody{Code: "Canceled", Message: "The operation was canceled because the subscription was deleted."}
				if op.NotificationURI != "" && op.Notification == nil {
					op.Notification = &notification{State: notifyPending}
				}
				body, err := json.Marshal(op)
				if err != nil {
					return err
				}
				next := *cur
				next.Body = body
				ops = append(ops, docstore.TxOp{Kind: docstore.TxReplace, Doc: &next, IfMatch: cur.ETag})
			}
		}
	}
	opID := uuid.NewString()
	correlation := uuid.NewString()
	op := armdoc.OperationDocument{
		ID: opID, Request: armdoc.OperationDelete, ExternalID: rd.ResourceID, InternalID: rd.InternalID,
		Location: rd.Location, Status: armdoc.StateDeleting, StartTime: now, LastTransitionTime: now,
		CorrelationID: correlation,
	}
	opBody, err := json.Marshal(op)
	if err != nil {
		return err
	}
	rd.ProvisioningState = armdoc.StateDeleting
	rd.ActiveOperationID = opID
	resBody, err := json.Marshal(rd)
	if err != nil {
		return err
	}
	res := *d
	res.Body = resBody
	ops = append(ops,
		docstore.TxOp{Kind: docstore.TxReplace, Doc: &res, IfMatch: d.ETag},
		docstore.TxOp{Kind: docstore.TxCreate, Doc: &docstore.Document{PartitionKey: d.PartitionKey, ID: opID, Type: docstore.TypeOperation,
			ResourceID: d.ResourceID, Body: opBody, TTL: c.cfg.OperationTTL}},
	)
	wctx, cancel, err := c.guard(ctx)
	defer cancel()
	if err != nil {
		return err
	}
	if _, err := c.store.Transact(wctx, d.PartitionKey, ops); err != nil {
		return fmt.Errorf("record delete of %s for its deleted subscription: %w", rd.ResourceID, err)
	}
	c.metrics.cascadeDelete()
	c.log.Info("deleting cluster of deleted subscription", "resourceID", rd.ResourceID, "clusterID", rd.InternalID, "operationID", opID, "correlationRequestID", correlation)
	c.track(opKey{d.PartitionKey, opID}, rd.InternalID, armdoc.OperationDelete, now)
	if err := c.csDelete(ctx, rd.InternalID, correlation); err != nil {
		return err
	}
	c.queue.Add(opKey{d.PartitionKey, opID})
	return nil
}

// csDelete asks Cluster Service to delete a cluster; one it does not know is already deleted.
func (c *Controller) csDelete(ctx context.Context, clusterID, correlation string) error {
	if clusterID == "" {
		return nil
	}
	gctx, cancel, err := c.guard(ctx)
	defer cancel()
	if err != nil {
		return err
	}
	gctx = metadata.AppendToOutgoingContext(gctx, "x-ms-correlation-request-id", correlation)
	_, err = c.cs.DeleteCluster(gctx, &csv1.DeleteClusterRequest{Id: clusterID})
	if err != nil && status.Code(err) != codes.NotFound {
		return fmt.Errorf("delete cluster %s in cluster service: %w", clusterID, err)
	}
	return nil
}
