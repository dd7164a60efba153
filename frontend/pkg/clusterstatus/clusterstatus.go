// Package clusterstatus keeps, in the frontend, Cluster Service's view of every cluster (the
// DNS domain and issuer it chose, the URLs and conditions it observed) as its revision-ordered
// WatchClusters stream reports it, so that an ARM GET or list reads that status from memory
// instead of calling Cluster Service per request. A lookup the cache cannot answer safely is a
// miss, and the caller asks Cluster Service as before.
package clusterstatus

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	csv1 "github.com/openhcp/openhcp/cluster-service/api/v1"
	"github.com/openhcp/openhcp/internal/backoff"
)

// Why a lookup missed, as the lookups metric's result label says it.
const (
	resultHit      = "hit"
	resultUnsynced = "miss_unsynced" // no stream has caught up since start or since it broke
	resultAbsent   = "miss_absent"   // the stream has not (yet) shown this cluster
	resultBehind   = "miss_behind"   // the document, or a write this process answered, is newer than the stream
)

// Cache is Cluster Service's clusters as the watch last showed them. Its zero value is not
// usable; New makes one. It is safe for concurrent use.
type Cache struct {
	mu sync.RWMutex
	// clusters are by Cluster Service ID; what a lookup returns is shared and read-only.
	clusters map[string]*csv1.Cluster
	// synced is true from the BOOKMARK that ends a stream's snapshot or replay until that
	// stream breaks: while it is false the cache may lack changes and answers nothing.
	synced bool
	// floor is, per cluster, the revision of the latest write of it this process answered that
	// the stream has not shown yet (Wrote): a lookup below it misses, so a GET after a PUT,
	// PATCH or DELETE this frontend answered never shows Cluster Service's state from before it.
	floor map[string]int64
	// removed are told the ID of every cluster Cluster Service removed (OnRemoved).
	removed []func(id string)

	lookups *prometheus.CounterVec
	events  prometheus.Counter
}

// New returns an empty cache, not synced until Follow has caught up.
func New() *Cache {
	return &Cache{
		clusters: map[string]*csv1.Cluster{},
		floor:    map[string]int64{},
		lookups: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "frontend_cluster_status_cache_lookups_total",
			Help: "Lookups of a cluster's Cluster Service status in the frontend's watch-fed cache, by result: hit, or the reason of a miss (miss_unsynced, miss_absent, miss_behind); a miss calls Cluster Service.",
		}, []string{"result"}),
		events: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "frontend_cluster_status_cache_events_total",
			Help: "WatchClusters messages the frontend's cluster status cache has applied (snapshots, changes and bookmarks).",
		}),
	}
}

// Collectors are the cache's metrics, for the frontend's registry.
func (c *Cache) Collectors() []prometheus.Collector {
	return []prometheus.Collector{c.lookups, c.events}
}

// Get returns cluster id as Cluster Service last showed it, when the cache can vouch for it:
// synced, holding the cluster at revision atLeast or later (the revision the caller's document
// reflects, ResourceDocument.InternalRevision), and at or after every write of it this process
// answered. The returned message is shared: callers must not change it.
func (c *Cache) Get(id string, atLeast int64) (*csv1.Cluster, bool) {
	cl, result := c.get(id, atLeast)
	c.lookups.WithLabelValues(result).Inc()
	return cl, result == resultHit
}

// Peek is Get without counting a lookup in the metric: for a caller deciding, before the read
// that a Get then follows, what that read needs (the frontend's GET of a kept rendering).
func (c *Cache) Peek(id string, atLeast int64) (*csv1.Cluster, bool) {
	cl, result := c.get(id, atLeast)
	return cl, result == resultHit
}

func (c *Cache) get(id string, atLeast int64) (*csv1.Cluster, string) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	switch cl, ok := c.clusters[id]; {
	case !c.synced:
		return nil, resultUnsynced
	case !ok:
		return nil, resultAbsent
	case cl.GetRevision() < max(atLeast, c.floor[id]):
		return nil, resultBehind
	default:
		return cl, resultHit
	}
}

// Synced says whether a stream has caught up and not broken since: while it is false every Get
// misses.
func (c *Cache) Synced() bool {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.synced
}

// Wrote records Cluster Service's answer to a write this process made (a create, an update, a
// delete): until the stream shows the cluster at that revision or later, Get misses it.
func (c *Cache) Wrote(cl *csv1.Cluster) {
	if cl.GetId() == "" || cl.GetRevision() == 0 {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if cur, ok := c.clusters[cl.GetId()]; ok && cur.GetRevision() >= cl.GetRevision() {
		return
	}
	c.floor[cl.GetId()] = max(c.floor[cl.GetId()], cl.GetRevision())
}

// errHistoryRestarted is a resumed stream's revision below one it already showed: Cluster
// Service's database was restored or a replica promoted, and revisions restarted lower. What the
// cache holds may be gone from that history, so it is gathered again from a snapshot. Cluster
// Service itself refuses such a resume point (OutOfRange); this guards against one that does not.
var errHistoryRestarted = errors.New("Cluster Service's revisions went backwards; gathering a snapshot again")

// OnRemoved has f told, outside the cache's lock, the ID of each cluster Cluster Service
// removed: a DELETED event, or a cluster a new snapshot no longer has. What a caller keeps
// about a cluster (the frontend's rendered list items) can then go with it.
func (c *Cache) OnRemoved(f func(id string)) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.removed = append(c.removed, f)
}

// tellRemoved calls the OnRemoved functions for ids; c.mu is not held.
func (c *Cache) tellRemoved(ids []string) {
	if len(ids) == 0 {
		return
	}
	c.mu.RLock()
	fs := c.removed
	c.mu.RUnlock()
	for _, f := range fs {
		for _, id := range ids {
			f(id)
		}
	}
}

// Stream is the client side of WatchClusters.
type Stream interface {
	Recv() (*csv1.ClusterEvent, error)
}

// Watch opens WatchClusters from since (0: a snapshot first), as csv1.ClustersClient does.
type Watch func(ctx context.Context, since int64) (Stream, error)

// WatchOf is client's WatchClusters as a Watch.
func WatchOf(client csv1.ClustersClient) Watch {
	return func(ctx context.Context, since int64) (Stream, error) {
		s, err := client.WatchClusters(ctx, &csv1.WatchClustersRequest{SinceRevision: since})
		if err != nil {
			return nil, err
		}
		return s, nil
	}
}

var _ Stream = (grpc.ServerStreamingClient[csv1.ClusterEvent])(nil)

// Follow keeps the cache until ctx ends. The first stream starts from 0: a snapshot that
// replaces the whole cache at its BOOKMARK. A stream that breaks (Cluster Service restarted,
// the connection dropped) makes the cache unsynced at once, and the next one resumes after the
// highest revision seen, so no change in between is missed; it is synced again at that
// stream's BOOKMARK. A resume refused as compacted or as beyond Cluster Service's newest
// revision (OutOfRange), or a stream whose revisions go backwards, starts over from a snapshot.
func (c *Cache) Follow(ctx context.Context, log *slog.Logger, watch Watch) {
	var since int64
	backoff.Reconnect(ctx, backoff.Policy{Initial: 500 * time.Millisecond, Max: 10 * time.Second}, func(ctx context.Context) (bool, error) {
		received, next, err := c.follow(ctx, watch, since)
		since = next
		return received, err
	}, func(err error, wait time.Duration) {
		if !errors.Is(err, io.EOF) {
			log.Warn("cluster status watch broken; answering from Cluster Service calls until it catches up again", "since", since, "error", err, "backoff", wait)
		}
	})
	c.setUnsynced()
}

// follow follows one stream from since and returns whether a message arrived, the revision to
// resume from and why the stream ended. A snapshot (since 0) is gathered apart and replaces
// the cache only once complete.
func (c *Cache) follow(ctx context.Context, watch Watch, since int64) (received bool, next int64, err error) {
	defer c.setUnsynced()
	stream, err := watch(ctx, since)
	if err != nil {
		return false, since, err
	}
	var snapshot map[string]*csv1.Cluster
	if since == 0 {
		snapshot = map[string]*csv1.Cluster{}
	}
	for {
		ev, err := stream.Recv()
		if err != nil {
			if status.Code(err) == codes.OutOfRange {
				return received, 0, err
			}
			return received, since, err
		}
		received = true
		c.events.Inc()
		if snapshot != nil {
			// A snapshot's revisions say nothing about what the cache holds until its
			// BOOKMARK: a stream that breaks before it resumes from since (0), a snapshot again.
			if ev.GetType() == csv1.EventType_EVENT_TYPE_BOOKMARK {
				c.tellRemoved(c.replace(snapshot, ev.GetRevision()))
				snapshot = nil
				since = max(since, ev.GetRevision())
			} else {
				apply(snapshot, ev)
			}
			continue
		}
		if ev.GetRevision() < since {
			return received, 0, fmt.Errorf("revision %d after %d: %w", ev.GetRevision(), since, errHistoryRestarted)
		}
		c.apply(ev)
		if ev.GetType() == csv1.EventType_EVENT_TYPE_DELETED && ev.GetCluster().GetId() != "" {
			c.tellRemoved([]string{ev.GetCluster().GetId()})
		}
		since = max(since, ev.GetRevision())
	}
}

// apply changes m by one event; a BOOKMARK changes nothing.
func apply(m map[string]*csv1.Cluster, ev *csv1.ClusterEvent) {
	id := ev.GetCluster().GetId()
	if id == "" {
		return
	}
	switch ev.GetType() {
	case csv1.EventType_EVENT_TYPE_UPSERTED:
		if cur, ok := m[id]; !ok || cur.GetRevision() <= ev.GetCluster().GetRevision() {
			m[id] = ev.GetCluster()
		}
	case csv1.EventType_EVENT_TYPE_DELETED:
		delete(m, id)
	}
}

// replace makes a complete snapshot (at revision at) the cache, and synced, and returns the IDs
// of the clusters the cache held that the snapshot does not (removed meanwhile).
func (c *Cache) replace(snapshot map[string]*csv1.Cluster, at int64) (removed []string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for id := range c.clusters {
		if _, ok := snapshot[id]; !ok {
			removed = append(removed, id)
		}
	}
	c.clusters = snapshot
	c.synced = true
	c.trimFloor(at)
	return removed
}

// apply applies one event of a resumed or live stream; its BOOKMARK (the end of the replay)
// makes the cache synced.
func (c *Cache) apply(ev *csv1.ClusterEvent) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if ev.GetType() == csv1.EventType_EVENT_TYPE_BOOKMARK {
		c.synced = true
		c.trimFloor(ev.GetRevision())
		return
	}
	apply(c.clusters, ev)
	id := ev.GetCluster().GetId()
	if f, ok := c.floor[id]; ok && (ev.GetType() == csv1.EventType_EVENT_TYPE_DELETED || ev.GetCluster().GetRevision() >= f) {
		delete(c.floor, id)
	}
}

// trimFloor, at a BOOKMARK of revision at (the cache holds every change up to it), forgets the
// floors the cache has reached, and those of clusters it does not hold that are not after at
// (the cluster was removed since that write). A floor after at stays: that write's events are
// still to come. c.mu is held.
func (c *Cache) trimFloor(at int64) {
	for id, f := range c.floor {
		if cl, ok := c.clusters[id]; (ok && cl.GetRevision() >= f) || (!ok && f <= at) {
			delete(c.floor, id)
		}
	}
}

func (c *Cache) setUnsynced() {
	c.mu.Lock()
	c.synced = false
	c.mu.Unlock()
}
