package controller

import (
	"context"
	"encoding/json"
	"time"

	"github.com/openhcp/openhcp/backend/pkg/oprecord"
	"github.com/openhcp/openhcp/internal/backoff"
	"github.com/openhcp/openhcp/internal/docstore"
)

const feedPage = 500

// followFeed enqueues every operation written to the store, so a new operation is picked up
// as soon as it is committed rather than at the next resync. It starts from the beginning of the
// feed: reconciling is idempotent, and terminal operations are skipped cheaply.
func (c *Controller) followFeed(ctx context.Context) {
	var checkpoint docstore.Checkpoint
	// A store that fails (PostgreSQL restarting) is asked again after 1s, doubling to 5s while
	// it keeps failing.
	delays := backoff.Policy{Initial: time.Second, Max: 5 * time.Second}.Delays()
	for ctx.Err() == nil {
		page, err := c.store.Changes(ctx, checkpoint, feedPage)
		if err != nil {
			wait := delays.Next()
			c.log.Warn("read change feed", "checkpoint", checkpoint, "error", err, "retryIn", wait)
			backoff.Sleep(ctx, wait)
			continue
		}
		delays.Reset()
		checkpoint = page.Next
		for _, ch := range page.Changes {
			if !ch.Deleted && ch.Doc != nil {
				c.enqueue(ch.Doc, subscriptionSettle)
			}
		}
		if len(page.Changes) == feedPage {
			continue
		}
		if err := c.store.WaitForChanges(ctx, checkpoint); err != nil && ctx.Err() == nil {
			wait := delays.Next()
			c.log.Warn("wait for changes", "error", err, "retryIn", wait)
			backoff.Sleep(ctx, wait)
		}
	}
}

// enqueueOpsOf queues the active operations of the Cluster Service object id (a cluster, node
// pool, external auth or credential); an empty id, as a BOOKMARK event has, queues nothing.
func (c *Controller) enqueueOpsOf(id string) {
	if id == "" {
		return
	}
	for _, k := range c.opsForCluster(id) {
		c.queue.Add(k)
	}
}

// subscriptionSettle delays the backend's look at a subscription that just became Deleted, so
// the frontend's own cascade (started in the same request) usually runs first and the two do not
// race for the same resource documents; either way only one Delete operation per cluster wins,
// as every write is conditional.
const subscriptionSettle = 2 * time.Second

// enqueue queues the work a document calls for: an active operation is reconciled, an ended
// one with a notification still to send is posted, a Deleted subscription is cascaded.
func (c *Controller) enqueue(d *docstore.Document, settle time.Duration) {
	switch d.Type {
	case docstore.TypeOperation:
		var op oprecord.Record
		if json.Unmarshal(d.Body, &op) != nil {
			return
		}
		k := opKey{d.PartitionKey, d.ID}
		switch {
		case !op.Status.Terminal():
			c.track(k, op.InternalID, op.Request, op.StartTime)
			c.queue.Add(k)
		case op.NeedsNotification():
			c.notifier.Enqueue(k.partition, k.id)
		}
	case docstore.TypeSubscription:
		c.subs.EnqueueDocument(d, settle)
	}
}

// pollLoop is poll mode: every PollInterval it lists the active operations and reconciles each,
// which asks Cluster Service for its cluster. Nothing else tells it of a change.
func (c *Controller) pollLoop(ctx context.Context) {
	for {
		if err := c.Resync(ctx); err != nil && ctx.Err() == nil {
			c.log.Warn("poll", "error", err)
		}
		if !backoff.Sleep(ctx, c.cfg.PollInterval) {
			return
		}
	}
}

// resyncLoop enqueues every active operation periodically, repairing whatever the feed and the
// watch missed (a crash between two writes, a dropped event).
func (c *Controller) resyncLoop(ctx context.Context) {
	for {
		if err := c.Resync(ctx); err != nil && ctx.Err() == nil {
			c.log.Warn("resync", "error", err)
		}
		if !backoff.Sleep(ctx, c.cfg.ResyncPeriod) {
			return
		}
	}
}

// Resync enqueues every active operation, every undelivered notification and every Deleted
// subscription, in every partition.
func (c *Controller) Resync(ctx context.Context) error {
	for _, typ := range []string{docstore.TypeOperation, docstore.TypeSubscription} {
		q := docstore.Query{Type: typ, Limit: feedPage}
		for {
			page, err := c.store.Query(ctx, q)
			if err != nil {
				return err
			}
			for _, d := range page.Documents {
				c.enqueue(d, 0)
			}
			if page.Continuation == "" {
				break
			}
			q.Continuation = page.Continuation
		}
	}
	return nil
}
