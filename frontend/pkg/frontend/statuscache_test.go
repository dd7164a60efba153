//go:build !fuzzlean

// Left out of the fuzzing build (hack/fuzz-long.sh builds with -tags fuzzlean): this file links
// Cluster Service's server, whose coverage counters every fuzz execution would scan.

package frontend

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	csv1 "github.com/openhcp/openhcp/cluster-service/api/v1"
	"github.com/openhcp/openhcp/cluster-service/pkg/placement"
	"github.com/openhcp/openhcp/cluster-service/pkg/server/servertest"
	"github.com/openhcp/openhcp/cluster-service/pkg/store"
	"github.com/openhcp/openhcp/frontend/pkg/clusterstatus"
	"github.com/openhcp/openhcp/internal/armdoc"
	"github.com/openhcp/openhcp/internal/docstore"
)

// realClusterService starts a real Cluster Service (its store in PostgreSQL, one shard) for
// the frontend to call.
func realClusterService(t testing.TB) *servertest.Server {
	t.Helper()
	cs := servertest.Start(t, pg.Get(t))
	if _, err := cs.Store.RegisterShard(context.Background(), placement.Shard{Name: "mgmt-1", Status: csv1.ShardStatus_SHARD_STATUS_ACTIVE, MaxClusters: 1000}); err != nil {
		t.Fatal(err)
	}
	return cs
}

// realBody is minimalBody with a version the real Cluster Service's catalogue offers.
func realBody() map[string]any { return set(minimalBody(), "properties.version.id", "4.19.16") }

// withClusterService points the frontend at cs; with a status cache (statuses not nil) that
// follows cs's WatchClusters until the test ends, as cmd/frontend wires it.
func withClusterService(t testing.TB, cs *servertest.Server, statuses *clusterstatus.Cache) func(*Config) {
	return func(c *Config) {
		c.Clusters = csv1.NewClustersClient(cs.Conn)
		if statuses != nil {
			ctx, cancel := context.WithCancel(context.Background())
			t.Cleanup(cancel)
			go statuses.Follow(ctx, slog.New(slog.NewTextHandler(io.Discard, nil)), clusterstatus.WatchOf(c.Clusters))
			c.ClusterStatus = statuses
		}
	}
}

// setAPIURL has Cluster Service observe cluster csID at api.url url, the rest of its status as
// it was (what its controller writes), and returns the status as written.
func setAPIURL(t testing.TB, cs *servertest.Server, csID, url string) *store.Cluster {
	t.Helper()
	cur, err := cs.Store.GetCluster(context.Background(), csID)
	if err != nil {
		t.Fatal(err)
	}
	st := &csv1.ClusterStatus{}
	if cur.Status != nil {
		st = proto.Clone(cur.Status).(*csv1.ClusterStatus)
	}
	st.ApiUrl = url
	out, err := cs.Store.UpdateStatus(context.Background(), csID, cur.Revision, st)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// lookups is the status cache's lookups counter for result, from the frontend's registry.
func (e *env) lookups(result string) float64 {
	e.t.Helper()
	mfs, err := e.srv.metrics.reg.Gather()
	if err != nil {
		e.t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != "frontend_cluster_status_cache_lookups_total" {
			continue
		}
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "result" && l.GetValue() == result {
					return m.GetCounter().GetValue()
				}
			}
		}
	}
	return 0
}

// allLookups is the status cache's lookups counter, every result summed.
func (e *env) allLookups() float64 {
	var n float64
	for _, r := range []string{"hit", "miss_unsynced", "miss_absent", "miss_behind"} {
		n += e.lookups(r)
	}
	return n
}

// eventuallyAPIURL GETs path until its properties.api.url is want, answered from the cache (a
// Cluster Service call shows it before the cache has caught up).
func (e *env) eventuallyAPIURL(path, want string) map[string]any {
	e.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		hits := e.lookups("hit")
		got := e.do(http.MethodGet, path, nil, nil)
		if got.code != http.StatusOK {
			e.t.Fatalf("GET %s: %d %s", path, got.code, got.body)
		}
		m := got.json(e.t.(*testing.T))
		if url, _ := m["properties"].(map[string]any)["api"].(map[string]any)["url"].(string); url == want && e.lookups("hit") > hits {
			return m
		}
		if time.Now().After(deadline) {
			e.t.Fatalf("GET %s still answers api.url %v, want %q", path, m["properties"].(map[string]any)["api"], want)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestGetAndListReadClusterServiceStatusFromTheWatch(t *testing.T) {
	cs := realClusterService(t)
	e := newEnv(t, withClusterService(t, cs, clusterstatus.New()))
	path := clusterPath("rg-cache", "cached")
	created := e.put(path, realBody())
	if created.code != http.StatusCreated {
		t.Fatalf("create: %d %s", created.code, created.body)
	}
	e.finish(opIDFrom(t, created.header.Get("Azure-AsyncOperation")), armdoc.StateSucceeded, nil)
	rd, _ := e.resource(path)

	t.Run("a_get_right_after_create_shows_what_cluster_service_chose", func(t *testing.T) {
		got := e.do(http.MethodGet, path, nil, nil).json(t)
		dns, _ := got["properties"].(map[string]any)["dns"].(map[string]any)["baseDomain"].(string)
		if want := "ocm-dev-" + rd.InternalID; !strings.Contains(dns, rd.InternalID) {
			t.Fatalf("dns.baseDomain %q, want Cluster Service's (naming %s)", dns, want)
		}
	})

	// Cluster Service observes the cluster (what its controller writes).
	cur, err := cs.Store.GetCluster(context.Background(), rd.InternalID)
	if err != nil {
		t.Fatal(err)
	}
	at := timestamppb.New(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
	observed, err := cs.Store.UpdateStatus(context.Background(), rd.InternalID, cur.Revision, &csv1.ClusterStatus{
		State: csv1.ClusterState_CLUSTER_STATE_READY, ApiUrl: "https://api.cached.example:443", ConsoleUrl: "https://console.cached.example",
		Conditions: []*csv1.Condition{{Type: "Available", Status: "True", Reason: "AsExpected", LastTransitionTime: at}},
	})
	if err != nil {
		t.Fatal(err)
	}

	t.Run("a_status_change_shows_in_get_and_list_answered_from_the_cache", func(t *testing.T) {
		e.eventuallyAPIURL(path, "https://api.cached.example:443")
		hits := e.lookups("hit")
		got := e.do(http.MethodGet, path, nil, nil)
		if e.lookups("hit") != hits+1 {
			t.Fatalf("a GET with the cache synced did not read it: hits %v then %v", hits, e.lookups("hit"))
		}
		list := e.do(http.MethodGet, "/subscriptions/"+testSub+"/resourceGroups/rg-cache/providers/Microsoft.RedHatOpenShift/hcpOpenShiftClusters", nil, nil)
		if list.code != http.StatusOK || !strings.Contains(string(list.body), "https://api.cached.example:443") || e.lookups("hit") != hits+2 {
			t.Fatalf("list from the cache: %d %s (hits %v)", list.code, list.body, e.lookups("hit"))
		}
		if !strings.Contains(string(got.body), "https://console.cached.example") {
			t.Fatalf("GET lacks the console URL: %s", got.body)
		}
	})

	t.Run("a_list_item_kept_from_an_earlier_list_follows_its_status_and_document", func(t *testing.T) {
		list := func() string {
			got := e.do(http.MethodGet, "/subscriptions/"+testSub+"/resourceGroups/rg-cache/providers/Microsoft.RedHatOpenShift/hcpOpenShiftClusters", nil, nil)
			if got.code != http.StatusOK {
				t.Fatalf("list: %d %s", got.code, got.body)
			}
			return string(got.body)
		}
		first := list()
		if again := list(); again != first {
			t.Fatalf("a list of nothing changed differs:\n%s\n%s", first, again)
		}
		// A new status in Cluster Service: once the cache has it, the list shows it.
		observed = setAPIURL(t, cs, rd.InternalID, "https://api.moved.example:443")
		e.eventuallyAPIURL(path, "https://api.moved.example:443")
		if got := list(); !strings.Contains(got, "https://api.moved.example:443") {
			t.Fatalf("the list kept the old status: %s", got)
		}
		// A new document (tags): the list shows it.
		if got := e.do(http.MethodPatch, path, []byte(`{"tags":{"team":"blue"}}`), nil); got.code != http.StatusOK && got.code != http.StatusAccepted {
			t.Fatalf("PATCH tags: %d %s", got.code, got.body)
		}
		if got := list(); !strings.Contains(got, `"team":"blue"`) || !strings.Contains(got, "https://api.moved.example:443") {
			t.Fatalf("the list kept the old document: %s", got)
		}
	})

	t.Run("a_list_looks_each_cluster_up_in_the_cache_once", func(t *testing.T) {
		listPath := "/subscriptions/" + testSub + "/resourceGroups/rg-cache/providers/Microsoft.RedHatOpenShift/hcpOpenShiftClusters"
		list := func(want string) {
			t.Helper()
			before := e.allLookups()
			got := e.do(http.MethodGet, listPath, nil, nil)
			if got.code != http.StatusOK || !strings.Contains(string(got.body), want) {
				t.Fatalf("list: %d %s, want %s", got.code, got.body, want)
			}
			if n := e.allLookups() - before; n != 1 {
				t.Fatalf("a list of one cluster made %v status cache lookups, want 1", n)
			}
		}
		list("https://api.moved.example:443") // kept, and reused
		// A status the kept item does not show: the lookup that finds it stale also renders it.
		observed = setAPIURL(t, cs, rd.InternalID, "https://api.once.example:443")
		e.eventuallyAPIURL(path, "https://api.once.example:443")
		list("https://api.once.example:443")
		list("https://api.once.example:443")
	})

	t.Run("a_get_answers_the_item_kept_while_it_holds", func(t *testing.T) {
		get := func() string {
			got := e.do(http.MethodGet, path, nil, nil)
			if got.code != http.StatusOK {
				t.Fatalf("GET: %d %s", got.code, got.body)
			}
			return string(got.body)
		}
		first := get()
		_, doc := e.resource(path)
		key := listItemKey{partition: doc.PartitionKey, id: doc.ID, version: testVersion}
		it, ok := e.srv.listItems.get(key)
		if !ok || string(it.body) != first {
			t.Fatalf("the GET kept no item, or another body: %v %s", ok, it.body)
		}
		// A marker in the kept item's place (another location) shows whether the next GET
		// answers it or renders the cluster again.
		mark := func(it listItem) {
			it.body = []byte(strings.Replace(first, `"location":"eastus"`, `"location":"kept"`, 1))
			e.srv.listItems.put(key, it)
		}
		mark(it)
		if got := get(); !strings.Contains(got, `"location":"kept"`) {
			t.Fatalf("a GET of nothing changed rendered the cluster again: %s", got)
		}
		// A new status: the kept item no longer holds, and the GET renders it.
		observed = setAPIURL(t, cs, rd.InternalID, "https://api.kept.example:443")
		e.waitCached(t, path, "https://api.kept.example:443")
		if got := get(); !strings.Contains(got, "https://api.kept.example:443") {
			t.Fatalf("a GET after a status change answered %s", got)
		}
		// A new document: likewise.
		it, _ = e.srv.listItems.get(key)
		mark(it)
		if got := e.do(http.MethodPatch, path, []byte(`{"tags":{"team":"green"}}`), nil); got.code != http.StatusOK && got.code != http.StatusAccepted {
			t.Fatalf("PATCH tags: %d %s", got.code, got.body)
		}
		if got := get(); !strings.Contains(got, `"team":"green"`) || strings.Contains(got, `"location":"kept"`) {
			t.Fatalf("a GET after a write answered %s", got)
		}
		// The status the next subtest expects.
		observed = setAPIURL(t, cs, rd.InternalID, "https://api.once.example:443")
		e.waitCached(t, path, "https://api.once.example:443")
	})

	t.Run("a_document_newer_than_the_cache_is_answered_by_a_call", func(t *testing.T) {
		// The backend recorded a revision the stream has not shown (here: one ahead of it).
		rd, doc := e.resource(path)
		rd.InternalRevision = observed.Revision + 1000
		if _, err := e.store.Replace(context.Background(), mustWithBody(doc, rd), doc.ETag); err != nil {
			t.Fatal(err)
		}
		behind, hits := e.lookups("miss_behind"), e.lookups("hit")
		got := e.do(http.MethodGet, path, nil, nil)
		if got.code != http.StatusOK || !strings.Contains(string(got.body), "https://api.once.example:443") {
			t.Fatalf("GET: %d %s", got.code, got.body)
		}
		list := e.do(http.MethodGet, "/subscriptions/"+testSub+"/resourceGroups/rg-cache/providers/Microsoft.RedHatOpenShift/hcpOpenShiftClusters", nil, nil)
		if list.code != http.StatusOK || !strings.Contains(string(list.body), "https://api.once.example:443") {
			t.Fatalf("list: %d %s", list.code, list.body)
		}
		if e.lookups("miss_behind") < behind+2 || e.lookups("hit") != hits {
			t.Fatalf("a document ahead of the cache was answered from it: miss_behind %v→%v, hit %v→%v",
				behind, e.lookups("miss_behind"), hits, e.lookups("hit"))
		}
	})
}

// BenchmarkClusterStatusReads is the CPU of an ARM GET of a cluster and of a list of 100 with a
// real Cluster Service in this process: its status by a call (GetCluster, ListClusters), and
// from the watch-fed cache, back to back. cpu-ms/op is this process's CPU (frontend and
// Cluster Service; not PostgreSQL).
func BenchmarkClusterStatusReads(b *testing.B) {
	cs := realClusterService(b)
	called := newEnv(b, withClusterService(b, cs, nil))
	cached := newEnv(b, withClusterService(b, cs, clusterstatus.New()))
	at := timestamppb.New(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
	var paths []string
	for i := range 100 {
		path := clusterPath("rg-bench", fmt.Sprintf("status-%03d", i))
		paths = append(paths, path)
		created := called.do(http.MethodPut, path, mustJSON(realBody()), nil)
		if created.code != http.StatusCreated {
			b.Fatalf("create: %d %s", created.code, created.body)
		}
		// The cached frontend has its own store: the same document there.
		d, err := called.store.Get(context.Background(), strings.ToLower(testSub), strings.ToLower(path))
		if err != nil {
			b.Fatal(err)
		}
		if _, err := cached.store.Transact(context.Background(), d.PartitionKey, []docstore.TxOp{{Kind: docstore.TxCreate, Doc: d}}); err != nil {
			b.Fatal(err)
		}
		rd, _ := called.resource(path)
		cur, err := cs.Store.GetCluster(context.Background(), rd.InternalID)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := cs.Store.UpdateStatus(context.Background(), rd.InternalID, cur.Revision, &csv1.ClusterStatus{
			State: csv1.ClusterState_CLUSTER_STATE_READY, ApiUrl: "https://api.bench.example:443", ConsoleUrl: "https://console.bench.example",
			Conditions: []*csv1.Condition{{Type: "Available", Status: "True", Reason: "AsExpected", LastTransitionTime: at}},
		}); err != nil {
			b.Fatal(err)
		}
	}
	deadline := time.Now().Add(60 * time.Second)
	for !strings.Contains(string(cached.do(http.MethodGet, paths[len(paths)-1], nil, nil).body), "api.bench.example") || cached.lookups("hit") == 0 {
		if time.Now().After(deadline) {
			b.Fatal("the status cache never answered")
		}
		time.Sleep(20 * time.Millisecond)
	}
	const version = "2026-06-30-preview"
	list := "/subscriptions/" + testSub + "/resourceGroups/rg-bench/providers/Microsoft.RedHatOpenShift/hcpOpenShiftClusters"
	for _, op := range []struct{ name, path, want string }{{"get", paths[0], `"baseDomain"`}, {"list_100", list, `"status-099"`}} {
		for _, tc := range []struct {
			name string
			e    *env
		}{{"call", called}, {"cache", cached}} {
			url := tc.e.http.URL + op.path + "?api-version=" + version
			b.Run(op.name+"/"+tc.name, func(b *testing.B) {
				b.ReportAllocs()
				cpu := processCPU()
				for b.Loop() {
					resp, err := http.Get(url)
					if err != nil {
						b.Fatal(err)
					}
					body, _ := io.ReadAll(resp.Body)
					resp.Body.Close()
					if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), op.want) || !strings.Contains(string(body), "api.bench.example") {
						b.Fatalf("GET: %d %s", resp.StatusCode, body)
					}
				}
				reportCPU(b, cpu)
			})
		}
	}
}

// pausedAfterSync is a Watch whose first stream delivers its snapshot and BOOKMARK, then
// nothing more: a stream that lags behind every later write.
func pausedAfterSync(watch clusterstatus.Watch) clusterstatus.Watch {
	return func(ctx context.Context, since int64) (clusterstatus.Stream, error) {
		s, err := watch(ctx, since)
		if err != nil {
			return nil, err
		}
		return &pausedStream{ctx: ctx, s: s}, nil
	}
}

type pausedStream struct {
	ctx    context.Context
	s      clusterstatus.Stream
	synced bool
}

func (p *pausedStream) Recv() (*csv1.ClusterEvent, error) {
	if p.synced {
		<-p.ctx.Done()
		return nil, p.ctx.Err()
	}
	ev, err := p.s.Recv()
	p.synced = ev.GetType() == csv1.EventType_EVENT_TYPE_BOOKMARK
	return ev, err
}

func TestAWriteAnsweredHereIsNotReadOlderFromTheCache(t *testing.T) {
	cs := realClusterService(t)
	statuses := clusterstatus.New()
	e := newEnv(t, func(c *Config) {
		c.Clusters = csv1.NewClustersClient(cs.Conn)
		c.ClusterStatus = statuses
	})
	path := clusterPath("rg-ryw", "ryw")
	created := e.put(path, realBody())
	if created.code != http.StatusCreated {
		t.Fatalf("create: %d %s", created.code, created.body)
	}
	e.finish(opIDFrom(t, created.header.Get("Azure-AsyncOperation")), armdoc.StateSucceeded, nil)
	// The cache syncs with the cluster in its snapshot, then receives nothing more.
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	go statuses.Follow(ctx, slog.New(slog.NewTextHandler(io.Discard, nil)), pausedAfterSync(clusterstatus.WatchOf(csv1.NewClustersClient(cs.Conn))))
	deadline := time.Now().Add(30 * time.Second)
	for e.lookups("hit") == 0 {
		if time.Now().After(deadline) {
			t.Fatal("the status cache never answered")
		}
		e.do(http.MethodGet, path, nil, nil)
		time.Sleep(20 * time.Millisecond)
	}
	// A DELETE answered by this frontend: Cluster Service's answer is a later revision
	// (uninstalling) than the cache holds, so the GET after it calls Cluster Service.
	if got := e.do(http.MethodDelete, path, nil, nil); got.code != http.StatusAccepted {
		t.Fatalf("DELETE: %d %s", got.code, got.body)
	}
	behind, hits := e.lookups("miss_behind"), e.lookups("hit")
	if got := e.do(http.MethodGet, path, nil, nil); got.code != http.StatusOK {
		t.Fatalf("GET after DELETE: %d %s", got.code, got.body)
	}
	if e.lookups("miss_behind") != behind+1 || e.lookups("hit") != hits {
		t.Fatalf("the GET after a write answered here read the cache from before it: miss_behind %v→%v, hit %v→%v",
			behind, e.lookups("miss_behind"), hits, e.lookups("hit"))
	}
}

// A cluster Cluster Service removed takes its kept list items with it when the watch says
// DELETED, rather than leaving them until the kept items are full.
func TestAKeptListItemGoesWithItsRemovedCluster(t *testing.T) {
	cs := realClusterService(t)
	e := newEnv(t, withClusterService(t, cs, clusterstatus.New()))
	path := clusterPath("rg-gone", "gone")
	created := e.put(path, realBody())
	if created.code != http.StatusCreated {
		t.Fatalf("create: %d %s", created.code, created.body)
	}
	e.finish(opIDFrom(t, created.header.Get("Azure-AsyncOperation")), armdoc.StateSucceeded, nil)
	rd, _ := e.resource(path)
	kept := func() int {
		e.srv.listItems.mu.Lock()
		defer e.srv.listItems.mu.Unlock()
		n := 0
		for _, it := range e.srv.listItems.items {
			if it.csID == rd.InternalID {
				n++
			}
		}
		return n
	}
	if got := e.do(http.MethodGet, "/subscriptions/"+testSub+"/resourceGroups/rg-gone/providers/Microsoft.RedHatOpenShift/hcpOpenShiftClusters", nil, nil); got.code != http.StatusOK {
		t.Fatalf("list: %d %s", got.code, got.body)
	}
	if kept() != 1 {
		t.Fatalf("%d items kept for the listed cluster, want 1", kept())
	}
	d, err := cs.Store.MarkDeleting(context.Background(), rd.InternalID)
	if err != nil {
		t.Fatal(err)
	}
	if err := cs.Store.RemoveCluster(context.Background(), rd.InternalID, d.Revision); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for kept() != 0 {
		if time.Now().After(deadline) {
			t.Fatal("the removed cluster's list item is still kept")
		}
		time.Sleep(20 * time.Millisecond)
	}
}
