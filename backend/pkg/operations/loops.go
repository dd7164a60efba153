package operations

import (
	"context"
	"encoding/json"
	"io"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	csv1 "github.com/openhcp/openhcp/cluster-service/api/v1"
	"github.com/openhcp/openhcp/internal/api"
	"github.com/openhcp/openhcp/internal/store"
)

const feedPage = 500

// followFeed enqueues every operation written to the store, so a new operation is picked up
// as soon as it is committed rather than at the next resync. It starts from the beginning of the
// feed: reconciling is idempotent, and terminal operations are skipped cheaply.
func (c *Controller) followFeed(ctx context.Context) {
	var checkpoint int64
	for ctx.Err() == nil {
		changes, err := c.store.Changes(ctx, checkpoint, feedPage)
		if err != nil {
			c.log.Warn("read change feed", "checkpoint", checkpoint, "error", err)
			sleep(ctx, time.Second)
			continue
		}
		for _, ch := range changes {
			checkpoint = ch.Seq
			if ch.Deleted || ch.Doc == nil || ch.Doc.Type != store.TypeOperation {
				continue
			}
			var op api.OperationDocument
			if json.Unmarshal(ch.Doc.Body, &op) != nil || op.Status.Terminal() {
				continue
			}
			c.queue.add(opKey{ch.Doc.PartitionKey, ch.Doc.ID})
		}
		if len(changes) == feedPage {
			continue
		}
		if err := c.store.WaitForChanges(ctx, checkpoint); err != nil && ctx.Err() == nil {
			c.log.Warn("wait for changes", "error", err)
			sleep(ctx, time.Second)
		}
	}
}

// followClusters follows Cluster Service's watch stream and enqueues the operations of every
// cluster that changed. On a broken stream it reconnects from the last revision it saw.
func (c *Controller) followClusters(ctx context.Context) {
	var since int64
	backoff := 500 * time.Millisecond
	for ctx.Err() == nil {
		stream, err := c.cs.WatchClusters(ctx, &csv1.WatchClustersRequest{SinceRevision: since})
		if err == nil {
			for {
				ev, rerr := stream.Recv()
				if rerr != nil {
					err = rerr
					break
				}
				backoff = 500 * time.Millisecond
				since = max(since, ev.GetRevision())
				c.metrics.observeEvent()
				if id := ev.GetCluster().GetId(); id != "" {
					for _, k := range c.opsForCluster(id) {
						c.queue.add(k)
					}
				}
			}
		}
		if ctx.Err() != nil {
			return
		}
		if status.Code(err) == codes.OutOfRange {
			// The revision we had is compacted away: start over from a snapshot; the resync
			// loop covers anything in between.
			since = 0
		}
		if err != io.EOF {
			c.log.Warn("cluster watch broken; reconnecting", "since", since, "error", err, "backoff", backoff)
		}
		sleep(ctx, backoff)
		backoff = min(backoff*2, 10*time.Second)
	}
}

// resyncLoop enqueues every active operation periodically, repairing whatever the feed and the
// watch missed (a crash between two writes, a dropped event).
func (c *Controller) resyncLoop(ctx context.Context) {
	for {
		if err := c.Resync(ctx); err != nil && ctx.Err() == nil {
			c.log.Warn("resync", "error", err)
		}
		if !sleep(ctx, c.cfg.ResyncPeriod) {
			return
		}
	}
}

// Resync enqueues every non-terminal operation in every partition.
func (c *Controller) Resync(ctx context.Context) error {
	q := store.Query{Type: store.TypeOperation, Limit: feedPage}
	for {
		page, err := c.store.Query(ctx, q)
		if err != nil {
			return err
		}
		for _, d := range page.Documents {
			var op api.OperationDocument
			if json.Unmarshal(d.Body, &op) != nil || op.Status.Terminal() {
				continue
			}
			k := opKey{d.PartitionKey, d.ID}
			c.track(k, op.InternalID)
			c.queue.add(k)
		}
		if page.Continuation == "" {
			return nil
		}
		q.Continuation = page.Continuation
	}
}

func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}
