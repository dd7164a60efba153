// Package subscriptions cascades the deletion of a Deleted subscription.
// The frontend starts the cascade when ARM reports a subscription Deleted, but only once, in
// the request, and it logs and forgets what fails. The backend makes the cascade level-triggered:
// while a subscription is Deleted, every cluster it still owns gets a Delete operation, exactly
// like one a customer started, and Cluster Service is asked to delete it; the ordinary delete
// path then removes the resource document once Cluster Service forgets the cluster.
package subscriptions

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/openhcp/openhcp/backend/pkg/metrics"
	"github.com/openhcp/openhcp/backend/pkg/oprecord"
	csv1 "github.com/openhcp/openhcp/cluster-service/api/v1"
	"github.com/openhcp/openhcp/internal/arm"
	"github.com/openhcp/openhcp/internal/armdoc"
	"github.com/openhcp/openhcp/internal/docstore"
	"github.com/openhcp/openhcp/internal/logattr"
	"github.com/openhcp/openhcp/internal/opkind"
	"github.com/openhcp/openhcp/internal/reconcile"
)

// Config tunes the cascade; the controller's Config documents and defaults each field.
type Config struct {
	// ResyncPeriod is how soon a subscription with resources left is looked at again.
	ResyncPeriod time.Duration
	// OperationTTL is how long the Delete operations the cascade creates are kept.
	OperationTTL time.Duration
}

// Guard grants a write: it returns a context that ends when the grant does, or an error when
// nothing may be written now. The caller calls the returned cancel.
type Guard func(ctx context.Context) (context.Context, context.CancelFunc, error)

// Cascader deletes what Deleted subscriptions own.
type Cascader struct {
	store   docstore.Store
	cs      csv1.ClustersClient
	log     *slog.Logger
	metrics *metrics.Metrics
	guard   Guard
	cfg     Config
	now     func() time.Time
	// started is told of every Delete operation the cascade records and asked Cluster Service
	// for, so the controller drives it at once.
	started func(partition, opID, clusterID string, start time.Time)
	queue   *reconcile.Queue[string]
}

// New returns a cascader. m may be nil; started may be nil.
func New(st docstore.Store, cs csv1.ClustersClient, log *slog.Logger, m *metrics.Metrics, guard Guard, cfg Config,
	started func(partition, opID, clusterID string, start time.Time)) *Cascader {
	if started == nil {
		started = func(string, string, string, time.Time) {}
	}
	return &Cascader{
		store: st, cs: cs, log: log, metrics: m, guard: guard, cfg: cfg, now: time.Now, started: started,
		// A failed cascade is retried after 250ms doubling to 30s.
		queue: reconcile.NewQueue[string](reconcile.Backoff{Base: 250 * time.Millisecond, Max: 30 * time.Second}),
	}
}

// page is how many documents one store query returns.
const page = 500

func subscriptionPartition(docID string) string {
	return strings.ToLower(strings.TrimPrefix(docID, "/subscriptions/"))
}

// EnqueueDocument queues the cascade of a subscription document (store.TypeSubscription) that
// says Deleted, after settle; any other document is ignored.
func (c *Cascader) EnqueueDocument(d *docstore.Document, settle time.Duration) {
	var sub armdoc.SubscriptionDocument
	if d.Type != docstore.TypeSubscription || json.Unmarshal(d.Body, &sub) != nil || sub.State != armdoc.SubscriptionDeleted {
		return
	}
	k := subscriptionPartition(d.ID)
	if settle > 0 {
		c.queue.AddAfter(k, settle)
	} else {
		c.queue.Add(k)
	}
}

// Run cascades queued subscriptions until ctx ends.
func (c *Cascader) Run(ctx context.Context) {
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for reconcile.Process(ctx, c.queue, c.ReconcileSubscription, func(r reconcile.Result[string]) {
			if r.Outcome == reconcile.OutcomeError {
				c.log.Warn("cascade delete of subscription failed; retrying", logattr.SubscriptionID(r.Key), "error", r.Err)
			}
		}) {
		}
	}()
	<-ctx.Done()
	c.queue.ShutDown()
	wg.Wait()
}

// ReconcileSubscription deletes every cluster of a Deleted subscription that is not already
// being deleted. It returns when to look again (while anything is left).
func (c *Cascader) ReconcileSubscription(ctx context.Context, partition string) (time.Duration, error) {
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
	q := docstore.Query{Partition: partition, Type: docstore.TypeResource, Limit: page}
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
func (c *Cascader) deleteForSubscription(ctx context.Context, d *docstore.Document) error {
	var rd armdoc.ResourceDocument
	if err := json.Unmarshal(d.Body, &rd); err != nil {
		return fmt.Errorf("decode resource %s: %w", d.ID, err)
	}
	ops := []docstore.TxOp{}
	now := c.now().UTC()
	var afterCreate *time.Time
	if rd.ActiveOperationID != "" {
		cur, err := c.store.Get(ctx, d.PartitionKey, rd.ActiveOperationID)
		if err != nil && !errors.Is(err, docstore.ErrNotFound) {
			return fmt.Errorf("get operation %s: %w", rd.ActiveOperationID, err)
		}
		if cur != nil {
			var op oprecord.Record
			if err := json.Unmarshal(cur.Body, &op); err != nil {
				return fmt.Errorf("decode operation %s: %w", rd.ActiveOperationID, err)
			}
			if !op.Status.Terminal() && op.Request == armdoc.OperationDelete {
				return c.csDelete(ctx, rd.InternalID, op.CorrelationID)
			}
			if !op.Status.Terminal() {
				afterCreate = armdoc.AfterCreateOf(&op.OperationDocument)
				op.Status, op.LastTransitionTime, op.EndTime = armdoc.StateCanceled, now, &now
				op.Error = &armdoc.CloudErrorBody{Code: "Canceled", Message: "The operation was canceled because the subscription was deleted."}
				op.PendNotification()
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
		CorrelationID: correlation, AfterCreate: afterCreate,
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
	c.metrics.CascadeDelete()
	c.log.Info("deleting cluster of deleted subscription", logattr.ResourceID(rd.ResourceID), logattr.ClusterID(rd.InternalID),
		logattr.OperationID(opID), logattr.CorrelationRequestID(correlation))
	if err := c.csDelete(ctx, rd.InternalID, correlation); err != nil {
		return err
	}
	c.started(d.PartitionKey, opID, rd.InternalID, now)
	return nil
}

// csDelete asks Cluster Service to delete a cluster; one it does not know is already deleted.
func (c *Cascader) csDelete(ctx context.Context, clusterID, correlation string) error {
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

// cascadeClusterChild handles a resource below a cluster (a child kind of internal/opkind, named
// `what` in errors and logs) of a Deleted subscription: it goes with its cluster (Cluster Service
// removes it with the cluster, and the cluster's finished delete removes its document). One
// whose cluster document is already gone is removed at once. It reports whether the resource is
// still there.
func (c *Cascader) cascadeClusterChild(ctx context.Context, d *docstore.Document, what string) (bool, error) {
	id, err := arm.ParseResourceID(d.ResourceID)
	if err != nil {
		return false, fmt.Errorf("%s %s: %w", what, d.ID, err)
	}
	parent := id.Parent().String()
	_, err = c.store.Get(ctx, d.PartitionKey, parent)
	if err == nil {
		return true, nil
	}
	if !errors.Is(err, docstore.ErrNotFound) {
		return false, fmt.Errorf("get cluster %s of %s %s: %w", parent, what, d.ID, err)
	}
	wctx, cancel, err := c.guard(ctx)
	defer cancel()
	if err != nil {
		return false, err
	}
	if err := c.store.Delete(wctx, d.PartitionKey, d.ID, d.ETag); err != nil && !errors.Is(err, docstore.ErrNotFound) {
		return false, fmt.Errorf("remove %s %s of a deleted cluster: %w", what, d.ID, err)
	}
	var rd armdoc.ResourceDocument
	_ = json.Unmarshal(d.Body, &rd)
	c.log.Info("removed "+what+" whose cluster is gone", logattr.ResourceID(rd.ResourceID))
	return false, nil
}
