package clusterstatus

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	csv1 "github.com/openhcp/openhcp/cluster-service/api/v1"
	"github.com/openhcp/openhcp/cluster-service/pkg/placement"
	"github.com/openhcp/openhcp/cluster-service/pkg/server/servertest"
	"github.com/openhcp/openhcp/cluster-service/pkg/store"
	"github.com/openhcp/openhcp/internal/pgserver/pgservertest"
)

var pg pgservertest.Shared

func TestMain(m *testing.M) { pg.Main(m) }

// region is a real Cluster Service (its store in PostgreSQL, its gRPC API on loopback) with one
// shard, and a cache following its WatchClusters as the frontend does.
type region struct {
	t     *testing.T
	cs    *servertest.Server
	cache *Cache
	stop  context.CancelFunc
}

func newRegion(t *testing.T) *region {
	t.Helper()
	cs := servertest.Start(t, pg.Get(t))
	if _, err := cs.Store.RegisterShard(context.Background(), placement.Shard{Name: "mgmt-1", Status: csv1.ShardStatus_SHARD_STATUS_ACTIVE, MaxClusters: 100}); err != nil {
		t.Fatal(err)
	}
	r := &region{t: t, cs: cs}
	r.follow()
	return r
}

// follow starts a new cache following the region's watch, as a (re)started frontend does.
func (r *region) follow() {
	if r.stop != nil {
		r.stop()
	}
	ctx, cancel := context.WithCancel(context.Background())
	r.t.Cleanup(cancel)
	r.cache, r.stop = New(), cancel
	go r.cache.Follow(ctx, slog.New(slog.NewTextHandler(io.Discard, nil)), WatchOf(csv1.NewClustersClient(r.cs.Conn)))
}

func (r *region) create(n int) *store.Cluster {
	r.t.Helper()
	id := fmt.Sprintf("%032d", n)
	c, _, err := r.cs.Store.CreateCluster(context.Background(), &store.Cluster{ID: id, Namespace: "ocm-dev-" + id,
		ARMResourceID: fmt.Sprintf("/subscriptions/00000000-0000-0000-0000-000000000001/resourceGroups/rg/providers/Microsoft.RedHatOpenShift/hcpOpenShiftClusters/c%d", n),
		Spec:          &csv1.ClusterSpec{VersionId: "4.19.7", DnsBaseDomain: "c.example", Azure: &csv1.AzureSpec{Location: "eastus"}}}, placement.LeastLoaded{})
	if err != nil {
		r.t.Fatalf("create cluster: %v", err)
	}
	return c
}

// setAPIURL writes a new status (what the controller does when it observes the cluster).
func (r *region) setAPIURL(c *store.Cluster, url string) *store.Cluster {
	r.t.Helper()
	st := &csv1.ClusterStatus{State: csv1.ClusterState_CLUSTER_STATE_READY, ApiUrl: url}
	out, err := r.cs.Store.UpdateStatus(context.Background(), c.ID, c.Revision, st)
	if err != nil {
		r.t.Fatalf("update status: %v", err)
	}
	return out
}

// eventually waits, with a generous deadline, until the cache answers id as want says.
func (r *region) eventually(what, id string, want func(*csv1.Cluster, bool) bool) {
	r.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		cl, ok := r.cache.get(id, 0)
		if want(cl, ok == resultHit) {
			return
		}
		if time.Now().After(deadline) {
			r.t.Fatalf("%s: cache still answers %v (%s)", what, cl, ok)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func atRevision(rev int64) func(*csv1.Cluster, bool) bool {
	return func(cl *csv1.Cluster, ok bool) bool { return ok && cl.GetRevision() == rev }
}

func TestCacheFollowsClusterService(t *testing.T) {
	t.Run("a_synced_cache_answers_each_cluster_at_its_latest_revision", func(t *testing.T) {
		r := newRegion(t)
		c := r.create(1)
		r.eventually("after create", c.ID, atRevision(c.Revision))
		c = r.setAPIURL(c, "https://api.one.example:443")
		r.eventually("after a status write", c.ID, func(cl *csv1.Cluster, ok bool) bool {
			return ok && cl.GetRevision() == c.Revision && cl.GetStatus().GetApiUrl() == "https://api.one.example:443"
		})
		if _, ok := r.cache.Get(fmt.Sprintf("%032d", 99), 0); ok {
			t.Fatal("a cluster Cluster Service never had is answered")
		}
		if got := testutil.ToFloat64(r.cache.lookups.WithLabelValues(resultHit)); got != 0 {
			t.Fatalf("hits counted by get: %v (only Get counts)", got)
		}
		if _, ok := r.cache.Get(c.ID, 0); !ok || testutil.ToFloat64(r.cache.lookups.WithLabelValues(resultHit)) != 1 ||
			testutil.ToFloat64(r.cache.lookups.WithLabelValues(resultAbsent)) != 1 {
			t.Fatalf("lookups not counted: hit %v, absent %v", testutil.ToFloat64(r.cache.lookups.WithLabelValues(resultHit)),
				testutil.ToFloat64(r.cache.lookups.WithLabelValues(resultAbsent)))
		}
		// Peek answers as Get does and counts nothing.
		if cl, ok := r.cache.Peek(c.ID, 0); !ok || cl.GetRevision() != c.Revision {
			t.Fatalf("Peek of a cluster Get answers: %v %v", cl, ok)
		}
		if _, ok := r.cache.Peek(c.ID, c.Revision+1); ok {
			t.Fatal("Peek answers a cluster behind the revision asked for")
		}
		if hit, behind := testutil.ToFloat64(r.cache.lookups.WithLabelValues(resultHit)), testutil.ToFloat64(r.cache.lookups.WithLabelValues(resultBehind)); hit != 1 || behind != 0 {
			t.Fatalf("Peek counted lookups: hit %v, behind %v", hit, behind)
		}
	})

	t.Run("a_write_answered_here_is_never_read_older_from_the_cache", func(t *testing.T) {
		r := newRegion(t)
		c, other := r.create(1), r.create(2)
		r.eventually("after create", other.ID, atRevision(other.Revision))
		// An answer whose event has not arrived (here: a revision the stream has not reached):
		// the cache misses that cluster, and the handler calls Cluster Service.
		r.cache.Wrote(&csv1.Cluster{Id: other.ID, Revision: other.Revision + 1000})
		if cl, res := r.cache.get(other.ID, 0); res != resultBehind {
			t.Fatalf("after a write at a later revision the cache answers %v (%s), want %s", cl, res, resultBehind)
		}
		// A real write, its answer recorded as the frontend does: from then on no lookup
		// returns an older revision, and once its event is in the cache answers it.
		next := r.setAPIURL(c, "https://api.two.example:443")
		r.cache.Wrote(&csv1.Cluster{Id: c.ID, Revision: next.Revision})
		deadline := time.Now().Add(30 * time.Second)
		for {
			cl, res := r.cache.get(c.ID, 0)
			if res == resultHit && cl.GetRevision() < next.Revision {
				t.Fatalf("after a write at %d the cache answered revision %d", next.Revision, cl.GetRevision())
			}
			if res == resultHit {
				break
			}
			if res != resultBehind || time.Now().After(deadline) {
				t.Fatalf("after a write the cache answers %s", res)
			}
			time.Sleep(5 * time.Millisecond)
		}
		// An answer older than what the stream already showed sets no floor.
		r.cache.Wrote(&csv1.Cluster{Id: c.ID, Revision: c.Revision})
		if _, res := r.cache.get(c.ID, 0); res != resultHit {
			t.Fatalf("an older write's answer made the cache miss: %s", res)
		}
	})

	t.Run("a_write_of_a_cluster_the_stream_has_not_shown_outlives_its_bookmarks", func(t *testing.T) {
		r := newRegion(t)
		first := r.create(1)
		r.eventually("after create", first.ID, atRevision(first.Revision))
		// This process answered a write of cluster 2 at a revision no event has reached yet;
		// the keep-alive BOOKMARKs in between (every second) must not forget it.
		id := fmt.Sprintf("%032d", 2)
		r.cache.Wrote(&csv1.Cluster{Id: id, Revision: first.Revision + 1000})
		bookmarks := testutil.ToFloat64(r.cache.events)
		deadline := time.Now().Add(30 * time.Second)
		for testutil.ToFloat64(r.cache.events) < bookmarks+2 {
			if time.Now().After(deadline) {
				t.Fatal("no keep-alive BOOKMARK arrived")
			}
			time.Sleep(50 * time.Millisecond)
		}
		c := r.create(2)
		r.eventually("after the create's event", id, func(*csv1.Cluster, bool) bool {
			cl, res := r.cache.get(id, 0)
			if res == resultHit {
				t.Fatalf("answered revision %d below the write at %d", cl.GetRevision(), first.Revision+1000)
			}
			r.cache.mu.RLock()
			defer r.cache.mu.RUnlock()
			return r.cache.clusters[id].GetRevision() == c.Revision
		})
		if _, res := r.cache.get(id, 0); res != resultBehind {
			t.Fatalf("after its create's event the cache answers %s, want %s", res, resultBehind)
		}
	})

	t.Run("a_document_newer_than_the_cache_misses", func(t *testing.T) {
		r := newRegion(t)
		c := r.create(1)
		r.eventually("after create", c.ID, atRevision(c.Revision))
		if _, res := r.cache.get(c.ID, c.Revision+1); res != resultBehind {
			t.Fatalf("a document at a later revision: %s, want %s", res, resultBehind)
		}
		if _, res := r.cache.get(c.ID, c.Revision); res != resultHit {
			t.Fatalf("a document at the cache's revision: %s, want %s", res, resultHit)
		}
	})

	t.Run("a_removed_cluster_is_never_answered", func(t *testing.T) {
		r := newRegion(t)
		c := r.create(1)
		r.eventually("after create", c.ID, atRevision(c.Revision))
		d, err := r.cs.Store.MarkDeleting(context.Background(), c.ID)
		if err != nil {
			t.Fatal(err)
		}
		r.eventually("while deleting", c.ID, func(cl *csv1.Cluster, ok bool) bool {
			return ok && cl.GetRevision() == d.Revision && cl.GetStatus().GetState() == csv1.ClusterState_CLUSTER_STATE_UNINSTALLING
		})
		if err := r.cs.Store.RemoveCluster(context.Background(), c.ID, d.Revision); err != nil {
			t.Fatal(err)
		}
		r.eventually("after removal", c.ID, func(cl *csv1.Cluster, ok bool) bool { return !ok && cl == nil })
	})

	t.Run("a_restarted_frontend_answers_nothing_until_its_snapshot_is_complete", func(t *testing.T) {
		r := newRegion(t)
		c := r.create(1)
		r.eventually("after create", c.ID, atRevision(c.Revision))
		r.cs.Stop() // the new cache cannot sync while Cluster Service is away
		r.follow()
		if _, res := r.cache.get(c.ID, 0); res != resultUnsynced {
			t.Fatalf("a new cache answers before its snapshot: %s", res)
		}
		gone := r.create(2)
		d, err := r.cs.Store.MarkDeleting(context.Background(), gone.ID)
		if err != nil {
			t.Fatal(err)
		}
		if err := r.cs.Store.RemoveCluster(context.Background(), gone.ID, d.Revision); err != nil {
			t.Fatal(err)
		}
		c = r.setAPIURL(c, "https://api.restarted.example:443")
		r.cs.Serve(t)
		r.eventually("after the snapshot", c.ID, atRevision(c.Revision))
		if _, res := r.cache.get(gone.ID, 0); res != resultAbsent {
			t.Fatalf("a cluster removed before the snapshot: %s, want %s", res, resultAbsent)
		}
	})

	t.Run("after_a_cluster_service_restart_the_stream_resumes_and_misses_nothing", func(t *testing.T) {
		r := newRegion(t)
		c, gone := r.create(1), r.create(2)
		r.eventually("after create", gone.ID, atRevision(gone.Revision))
		r.cs.Stop()
		r.eventually("while Cluster Service is away", c.ID, func(_ *csv1.Cluster, ok bool) bool {
			_, res := r.cache.get(c.ID, 0)
			return !ok && res == resultUnsynced
		})
		// Changes while it is away: a status write, a removal, a create.
		c = r.setAPIURL(c, "https://api.resumed.example:443")
		d, err := r.cs.Store.MarkDeleting(context.Background(), gone.ID)
		if err != nil {
			t.Fatal(err)
		}
		if err := r.cs.Store.RemoveCluster(context.Background(), gone.ID, d.Revision); err != nil {
			t.Fatal(err)
		}
		fresh := r.create(3)
		r.cs.Serve(t)
		r.eventually("after the restart", c.ID, atRevision(c.Revision))
		r.eventually("the create while away", fresh.ID, atRevision(fresh.Revision))
		if _, res := r.cache.get(gone.ID, 0); res != resultAbsent {
			t.Fatalf("a cluster removed while Cluster Service was away: %s, want %s", res, resultAbsent)
		}
	})
	t.Run("a_cluster_service_restored_to_lower_revisions_is_gathered_again", func(t *testing.T) {
		r := newRegion(t)
		c, gone := r.create(1), r.create(2)
		for i := range 5 {
			c = r.setAPIURL(c, fmt.Sprintf("https://api.before-%d.example:443", i))
		}
		r.eventually("before the restore", c.ID, atRevision(c.Revision))
		// The database comes back from an older backup: cluster 1 only, with a status the
		// cache never saw, at revisions below everything the cache holds.
		restored := servertest.Start(t, pg.Get(t))
		if _, err := restored.Store.RegisterShard(context.Background(), placement.Shard{Name: "mgmt-1", Status: csv1.ShardStatus_SHARD_STATUS_ACTIVE, MaxClusters: 100}); err != nil {
			t.Fatal(err)
		}
		restored.Stop()
		r.cs.Stop()
		r.cs.Store = restored.Store
		old := c
		c = r.setAPIURL(r.create(1), "https://api.restored.example:443")
		if c.Revision >= old.Revision {
			t.Fatalf("the restored store is at revision %d, not below the cache's %d", c.Revision, old.Revision)
		}
		r.cs.Serve(t)
		r.eventually("after the restore", c.ID, atRevision(c.Revision))
		if _, res := r.cache.get(gone.ID, 0); res != resultAbsent {
			t.Fatalf("a cluster the restored database lacks: %s, want %s", res, resultAbsent)
		}
	})
}
