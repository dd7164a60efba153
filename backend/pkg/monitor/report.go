package monitor

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	csv1 "github.com/openhcp/openhcp/cluster-service/api/v1"
	"github.com/openhcp/openhcp/internal/docstore"
	"github.com/openhcp/openhcp/internal/healthdoc"
	"github.com/openhcp/openhcp/internal/logattr"
)

// rewriteAfter is how often an unchanged verdict is written again, so a reader can tell a
// verdict nobody refreshes (CheckedAt far behind) from a steady one.
const rewriteAfter = 5 * time.Minute

// sweepEvery is how often a replica looks for health documents of deleted clusters in the
// buckets it owns.
const sweepEvery = 5 * time.Minute

// written is what this replica last wrote for a cluster.
type written struct {
	doc  healthdoc.Cluster
	etag string
}

func same(a, b healthdoc.Cluster) bool {
	return a.Health == b.Health && a.Shard == b.Shard && slices.EqualFunc(a.NodePools, b.NodePools, func(x, y healthdoc.NodePool) bool {
		return x.ID == y.ID && x.Health == y.Health
	})
}

func toDoc(r ClusterReport, replica string) healthdoc.Cluster {
	d := healthdoc.Cluster{ClusterID: r.ClusterID, Shard: r.Shard, Health: string(r.Verdict.Health), Reason: r.Verdict.Reason,
		Since: r.CheckedAt, CheckedAt: r.CheckedAt, Replica: replica}
	for _, np := range r.NodePools {
		d.NodePools = append(d.NodePools, healthdoc.NodePool{ID: np.ID, Health: string(np.Verdict.Health), Reason: np.Verdict.Reason})
	}
	return d
}

// writeReport stores r as the cluster's health document when its verdict changed or the stored
// one is older than rewriteAfter. Writes are conditional on what was read, so a replica that
// lost the bucket a moment ago cannot overwrite its successor's newer verdict blindly.
func (c *Checker) writeReport(ctx context.Context, r ClusterReport) error {
	if c.cfg.Reports == nil {
		return nil
	}
	next := toDoc(r, c.cfg.Replica)
	c.mu.Lock()
	prev, known := c.written[r.ClusterID]
	c.mu.Unlock()
	if !known {
		d, err := c.cfg.Reports.Get(ctx, healthdoc.Partition, r.ClusterID)
		switch {
		case errors.Is(err, docstore.ErrNotFound):
		case err != nil:
			return fmt.Errorf("read health of %s: %w", r.ClusterID, err)
		default:
			if err := json.Unmarshal(d.Body, &prev.doc); err == nil {
				prev.etag, known = d.ETag, true
			}
		}
	}
	if known && same(prev.doc, next) {
		next.Since = prev.doc.Since
		if r.CheckedAt.Sub(prev.doc.CheckedAt) < rewriteAfter {
			return nil
		}
	}
	body, err := json.Marshal(next)
	if err != nil {
		return err
	}
	doc := &docstore.Document{PartitionKey: healthdoc.Partition, ID: r.ClusterID, Type: healthdoc.Type, ResourceID: r.ClusterID, Body: body}
	var out *docstore.Document
	if known {
		out, err = c.cfg.Reports.Replace(ctx, doc, prev.etag)
	} else {
		out, err = c.cfg.Reports.Create(ctx, doc)
	}
	if err != nil {
		// Someone else wrote since: read again at the next pass.
		c.mu.Lock()
		delete(c.written, r.ClusterID)
		c.mu.Unlock()
		return fmt.Errorf("write health of %s: %w", r.ClusterID, err)
	}
	c.mu.Lock()
	c.written[r.ClusterID] = written{doc: next, etag: out.ETag}
	c.mu.Unlock()
	return nil
}

// sweep deletes the health documents of clusters Cluster Service no longer lists (listed is a
// complete list, read before the documents), in the buckets this replica owns, at most every
// sweepEvery. A document exists only for a cluster a replica saw listed before, so one missing
// from a later complete list, and not written since rewriteAfter, belongs to a deleted cluster.
// Each delete is conditional on the ETag read, so a document rewritten meanwhile stays until
// the next sweep.
func (c *Checker) sweep(ctx context.Context, listed []*csv1.Cluster, now time.Time) error {
	if c.cfg.Reports == nil || now.Sub(c.swept) < sweepEvery {
		return nil
	}
	exists := make(map[string]bool, len(listed))
	for _, cl := range listed {
		exists[cl.GetId()] = true
	}
	var failed []error
	q := docstore.Query{Partition: healthdoc.Partition, Type: healthdoc.Type, Limit: 500}
	for {
		page, err := c.cfg.Reports.Query(ctx, q)
		if err != nil {
			return fmt.Errorf("list health documents: %w", err)
		}
		for _, d := range page.Documents {
			if exists[d.ID] || !c.cfg.Owner.Owns(d.ID) {
				continue
			}
			var h healthdoc.Cluster
			if err := json.Unmarshal(d.Body, &h); err == nil && now.Sub(h.CheckedAt) < rewriteAfter {
				// Written lately: perhaps by the bucket's previous holder, from a list newer
				// than ours that has the cluster. A deleted cluster's document is written no
				// more, so it is old at a later sweep.
				continue
			}
			if err := c.cfg.Reports.Delete(ctx, healthdoc.Partition, d.ID, d.ETag); err != nil && !errors.Is(err, docstore.ErrNotFound) {
				failed = append(failed, fmt.Errorf("delete health of deleted cluster %s: %w", d.ID, err))
				continue
			}
			c.mu.Lock()
			delete(c.written, d.ID)
			c.mu.Unlock()
			c.cfg.Log.Info("removed the health document of a deleted cluster", logattr.ClusterID(d.ID))
		}
		if page.Continuation == "" {
			break
		}
		q.Continuation = page.Continuation
	}
	if len(failed) == 0 {
		c.swept = now
	}
	return errors.Join(failed...)
}
