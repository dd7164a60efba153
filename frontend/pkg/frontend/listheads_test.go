//go:build !fuzzlean

// Left out of the fuzzing build (hack/fuzz-long.sh builds with -tags fuzzlean): this file links
// Cluster Service's server, whose coverage counters every fuzz execution would scan.

package frontend

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/openhcp/openhcp/cluster-service/pkg/server/servertest"
	"github.com/openhcp/openhcp/frontend/pkg/api"
	"github.com/openhcp/openhcp/frontend/pkg/clusterstatus"
	"github.com/openhcp/openhcp/internal/armdoc"
	"github.com/openhcp/openhcp/internal/docstore"
	"github.com/openhcp/openhcp/internal/docstore/postgres"
)

// headStore is the real PostgreSQL store counting its queries and recording the IDs each GetMany
// reads, with a hook run after QueryHeads answers (to write a document between the two queries).
type headStore struct {
	*postgres.Store
	mu         sync.Mutex
	queries    int
	heads      int
	read       [][]string
	afterHeads func()
	// gets counts the Get calls of clusters' documents, unless the GetUnlessETag calls and
	// bodiless their answers without a body.
	gets, unless, bodiless int
}

func (h *headStore) Get(ctx context.Context, partition, id string) (*docstore.Document, error) {
	if strings.Contains(id, "/hcpopenshiftclusters/") {
		h.mu.Lock()
		h.gets++
		h.mu.Unlock()
	}
	return h.Store.Get(ctx, partition, id)
}

func (h *headStore) GetUnlessETag(ctx context.Context, partition, id, etag string) (*docstore.Document, error) {
	d, err := h.Store.GetUnlessETag(ctx, partition, id, etag)
	h.mu.Lock()
	h.unless++
	if err == nil && d.Body == nil {
		h.bodiless++
	}
	h.mu.Unlock()
	return d, err
}

// getReads are the counts of Get, GetUnlessETag and its bodiless answers so far.
func (h *headStore) getReads() (gets, unless, bodiless int) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.gets, h.unless, h.bodiless
}

func (h *headStore) Query(ctx context.Context, q docstore.Query) (docstore.Page, error) {
	h.mu.Lock()
	h.queries++
	h.mu.Unlock()
	return h.Store.Query(ctx, q)
}

func (h *headStore) QueryHeads(ctx context.Context, q docstore.Query) (docstore.Page, error) {
	p, err := h.Store.QueryHeads(ctx, q)
	h.mu.Lock()
	h.heads++
	hook := h.afterHeads
	h.afterHeads = nil
	h.mu.Unlock()
	if hook != nil {
		hook()
	}
	return p, err
}

func (h *headStore) GetMany(ctx context.Context, partition, typ string, ids []string) ([]*docstore.Document, error) {
	h.mu.Lock()
	h.read = append(h.read, append([]string(nil), ids...))
	h.mu.Unlock()
	return h.Store.GetMany(ctx, partition, typ, ids)
}

func (h *headStore) reads() (heads int, read [][]string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.heads, append([][]string(nil), h.read...)
}

func (h *headStore) setAfterHeads(f func()) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.afterHeads = f
}

// headsEnv is a frontend whose store is a headStore, with a real Cluster Service and a status
// cache following it, and the clusters names of resource group rg created, their operations
// ended, and the cache answering for each of them.
func headsEnv(t *testing.T, rg string, names ...string) (*env, *headStore, *servertest.Server, []string) {
	t.Helper()
	cs := realClusterService(t)
	var hs *headStore
	e := newEnv(t, withClusterService(t, cs, clusterstatus.New()), func(c *Config) {
		hs = &headStore{Store: c.Store.(*postgres.Store)}
		c.Store = hs
	})
	var paths []string
	for _, n := range names {
		p := clusterPath(rg, n)
		created := e.put(p, realBody())
		if created.code != http.StatusCreated {
			t.Fatalf("create %s: %d %s", p, created.code, created.body)
		}
		e.finish(opIDFrom(t, created.header.Get("Azure-AsyncOperation")), armdoc.StateSucceeded, nil)
		paths = append(paths, p)
	}
	// Waited for without a GET, which would keep each cluster's item as a list does.
	for _, p := range paths {
		e.waitCached(t, p, "")
	}
	return e, hs, cs, paths
}

// waitCached waits until the status cache vouches for path's cluster, showing apiURL unless it
// is "", without a request (a GET keeps the item it renders, as a list does).
func (e *env) waitCached(t *testing.T, path, apiURL string) {
	t.Helper()
	rd, _ := e.resource(path)
	deadline := time.Now().Add(30 * time.Second)
	for {
		cl, cached := e.srv.cachedStatusOf(rd.InternalID, rd.InternalRevision)
		if cached && (apiURL == "" || cl.GetStatus().GetApiUrl() == apiURL) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the status cache never vouched for %s with api.url %q", path, apiURL)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// listClusters lists rg's clusters, by lowercase ID.
func (e *env) listClusters(t *testing.T, rg string) map[string]map[string]any {
	t.Helper()
	resp := e.do(http.MethodGet, "/subscriptions/"+testSub+"/resourceGroups/"+rg+"/providers/Microsoft.RedHatOpenShift/hcpOpenShiftClusters", nil, nil)
	if resp.code != http.StatusOK {
		t.Fatalf("list: %d %s", resp.code, resp.body)
	}
	var page struct {
		Value []map[string]any `json:"value"`
	}
	if err := json.Unmarshal(resp.body, &page); err != nil {
		t.Fatal(err)
	}
	out := map[string]map[string]any{}
	for _, v := range page.Value {
		out[strings.ToLower(v["id"].(string))] = v
	}
	return out
}

// rewrite replaces path's document with change applied to it (the test's error on failure, as
// it runs in the store hook too).
func (e *env) rewrite(t *testing.T, path string, change func(rd *armdoc.ResourceDocument)) {
	rd, d := e.resource(path)
	if rd == nil {
		t.Errorf("no document for %s", path)
		return
	}
	change(rd)
	if _, err := e.store.Replace(context.Background(), mustWithBody(d, rd), d.ETag); err != nil {
		t.Errorf("replace %s: %v", path, err)
	}
}

func TestClusterListReadsOnlyBodiesOfClustersNotKeptAndRendersOneWrittenBetweenQueries(t *testing.T) {
	e, hs, _, paths := headsEnv(t, "rg-heads", "a", "b", "c")
	list := func() map[string]map[string]any {
		t.Helper()
		got := e.listClusters(t, "rg-heads")
		if len(got) != len(paths) {
			t.Fatalf("listed %d clusters, want %d: %v", len(got), len(paths), got)
		}
		return got
	}

	list()
	heads, read := hs.reads()
	if heads != 1 || len(read) != 1 || len(read[0]) != len(paths) {
		t.Fatalf("first list: %d head queries, bodies read %v; want 1 and one read of all %d", heads, read, len(paths))
	}

	list()
	heads, read = hs.reads()
	if heads != 2 || len(read) != 1 {
		t.Fatalf("second list with nothing changed: %d head queries, bodies read %v; want no further read", heads, read)
	}

	// Cluster b is written (so its kept item is out of date), then written again after the
	// page's ETags are read and before its body is: the list shows the second write. (A write
	// after the ETags are read to a cluster whose kept item they match is not shown: the list
	// is the page as of its first query, as it was when one query read the bodies.)
	setTags := func(v string) {
		e.rewrite(t, paths[1], func(rd *armdoc.ResourceDocument) { rd.Tags = map[string]string{"written": v} })
	}
	setTags("before")
	hs.setAfterHeads(func() { setTags("between") })
	got := list()
	if _, read = hs.reads(); len(read) != 2 || len(read[1]) != 1 {
		t.Fatalf("bodies read %v; want a second read of b alone", read)
	}
	b := strings.ToLower(paths[1])
	if tags, _ := got[b]["tags"].(map[string]any); tags["written"] != "between" {
		t.Fatalf("b listed as %v, want the tags written between the queries", got[b])
	}
	// The next list answers b from what it kept, with the write.
	got = list()
	if _, read = hs.reads(); len(read) != 2 {
		t.Fatalf("bodies read %v after b was kept; want no further read", read)
	}
	if tags, _ := got[b]["tags"].(map[string]any); tags["written"] != "between" {
		t.Fatalf("b listed from the kept item as %v", got[b])
	}
}

// A kept item whose status is out of date is looked up in the status cache before its body is
// read; when the document was written in between (here: the backend recorded a revision the
// cache has not reached), that lookup is not the one for the document rendered, which is looked
// up again and, being ahead of the cache, answered by a Cluster Service call.
func TestAClusterWrittenBetweenTheListQueriesIsLookedUpAgain(t *testing.T) {
	e, hs, cs, paths := headsEnv(t, "rg-between", "a")
	path := paths[0]
	if got := e.listClusters(t, "rg-between"); len(got) != 1 {
		t.Fatalf("listed %v, want one cluster", got)
	}
	rd, _ := e.resource(path)
	observed := setAPIURL(t, cs, rd.InternalID, "https://api.between.example:443")
	// Not by a GET, which would keep the item anew: the list's kept item must be out of date.
	e.waitCached(t, path, "https://api.between.example:443")

	hs.setAfterHeads(func() {
		e.rewrite(t, path, func(rd *armdoc.ResourceDocument) {
			rd.InternalRevision = observed.Revision + 1000
			rd.Tags = map[string]string{"written": "between"}
		})
	})
	behind := e.lookups("miss_behind")
	got := e.listClusters(t, "rg-between")
	if heads, read := hs.reads(); heads == 0 || len(read) == 0 {
		t.Fatalf("the list did not take the heads path: %d head queries, bodies read %v", heads, read)
	}
	item := got[strings.ToLower(path)]
	if tags, _ := item["tags"].(map[string]any); tags["written"] != "between" {
		t.Fatalf("listed %v, want the tags written between the queries", item)
	}
	if !strings.Contains(mustJSONString(t, item), "https://api.between.example:443") {
		t.Fatalf("listed %v without Cluster Service's status", item)
	}
	if n := e.lookups("miss_behind") - behind; n != 1 {
		t.Fatalf("the document written between the queries, ahead of the cache, made %v miss_behind lookups, want 1 (the kept item's lookup was reused)", n)
	}
}

func mustJSONString(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// Node pools and external auths are stored under their cluster's ID, so a list's prefix query
// finds them: on the heads path they are neither listed nor read.
func TestClusterListOnTheHeadsPathLeavesOutChildResources(t *testing.T) {
	e, hs, _, paths := headsEnv(t, "rg-children", "a")
	_, d := e.resource(paths[0])
	var children []string
	for _, child := range []struct{ kind, typ string }{{"nodePools", api.NodePoolResourceType}, {"externalAuths", api.ExternalAuthResourceType}} {
		id := paths[0] + "/" + child.kind + "/child"
		children = append(children, strings.ToLower(id))
		var m map[string]any
		if err := json.Unmarshal(d.Body, &m); err != nil {
			t.Fatal(err)
		}
		m["resourceId"] = id
		body, _ := json.Marshal(m)
		if _, err := e.store.Create(context.Background(), &docstore.Document{PartitionKey: d.PartitionKey, ID: strings.ToLower(id),
			Type: docstore.TypeResource, ResourceID: strings.ToLower(id), Body: body}); err != nil {
			t.Fatalf("create %s: %v", child.typ, err)
		}
	}
	for _, round := range []string{"first", "second"} {
		got := e.listClusters(t, "rg-children")
		if len(got) != 1 || got[strings.ToLower(paths[0])] == nil {
			t.Fatalf("%s list: %v, want cluster a alone", round, got)
		}
	}
	heads, read := hs.reads()
	if heads != 2 {
		t.Fatalf("%d head queries for two lists, want 2", heads)
	}
	for _, ids := range read {
		for _, id := range ids {
			for _, c := range children {
				if id == c {
					t.Fatalf("the list read the body of child %s (reads %v)", id, read)
				}
			}
		}
	}
}

// Without a status cache that has caught up, a listed item can rarely be kept, so the list reads
// the page with its bodies in one query rather than its heads and then its bodies.
func TestClusterListWithoutASyncedStatusCacheReadsThePageInOneQuery(t *testing.T) {
	for _, tc := range []struct {
		name     string
		statuses *clusterstatus.Cache
	}{
		{"no_status_cache", nil},
		{"status_cache_not_synced", clusterstatus.New()}, // never followed
	} {
		t.Run(tc.name, func(t *testing.T) {
			var hs *headStore
			e := newEnv(t, func(c *Config) {
				hs = &headStore{Store: c.Store.(*postgres.Store)}
				c.Store = hs
				c.ClusterStatus = tc.statuses
			})
			for _, n := range []string{"a", "b"} {
				if resp := e.put(clusterPath("rg-plain", n), minimalBody()); resp.code != http.StatusCreated {
					t.Fatalf("create %s: %d %s", n, resp.code, resp.body)
				}
			}
			hs.mu.Lock()
			before := hs.queries
			hs.mu.Unlock()
			if got := e.listClusters(t, "rg-plain"); len(got) != 2 {
				t.Fatalf("listed %v, want two clusters", got)
			}
			hs.mu.Lock()
			queries := hs.queries - before
			hs.mu.Unlock()
			if heads, read := hs.reads(); heads != 0 || len(read) != 0 || queries != 1 {
				t.Fatalf("the list made %d queries, %d head queries and body reads %v; want one query", queries, heads, read)
			}
		})
	}
}

// A GET of a cluster whose rendering is kept, its status current, reads its document without the
// body and answers the same bytes and headers; a moved status or a changed document is read and
// rendered again, each GET in one read and one status lookup (none for a 304).
func TestGetOfAKeptClusterReadsItsDocumentWithoutTheBody(t *testing.T) {
	e, hs, cs, paths := headsEnv(t, "rg-kept", "kept")
	path := paths[0]
	get := func(what string, header map[string]string) response {
		t.Helper()
		resp := e.do(http.MethodGet, path, nil, header)
		if resp.code != http.StatusOK && resp.code != http.StatusNotModified {
			t.Fatalf("%s: GET %d %s", what, resp.code, resp.body)
		}
		return resp
	}
	// reads runs f (one GET) and checks the reads and lookups it made.
	reads := func(what string, f func() response, wantGets, wantUnless, wantBodiless int, wantLookups float64) response {
		t.Helper()
		g0, u0, b0 := hs.getReads()
		l0 := e.allLookups()
		resp := f()
		g, u, b := hs.getReads()
		if g-g0 != wantGets || u-u0 != wantUnless || b-b0 != wantBodiless {
			t.Fatalf("%s: %d Get, %d GetUnlessETag (%d without a body); want %d, %d (%d)", what, g-g0, u-u0, b-b0, wantGets, wantUnless, wantBodiless)
		}
		if n := e.allLookups() - l0; n != wantLookups {
			t.Fatalf("%s: %v status lookups, want %v", what, n, wantLookups)
		}
		return resp
	}
	first := reads("first GET", func() response { return get("first", nil) }, 1, 0, 0, 1)
	kept := reads("GET of the kept rendering", func() response { return get("kept", nil) }, 0, 1, 1, 1)
	if string(kept.body) != string(first.body) || kept.header.Get("ETag") != first.header.Get("ETag") || kept.header.Get("Content-Type") != first.header.Get("Content-Type") {
		t.Fatalf("the kept answer differs:\n%v %s\nfirst:\n%v %s", kept.header, kept.body, first.header, first.body)
	}
	etag := first.header.Get("ETag")
	if nm := reads("If-None-Match", func() response { return get("if-none-match", map[string]string{"If-None-Match": etag}) }, 0, 1, 1, 0); nm.code != http.StatusNotModified {
		t.Fatalf("If-None-Match %s: %d", etag, nm.code)
	}

	// Cluster Service's status moves: the look before the read sees it, and the body is read.
	rd, _ := e.resource(path)
	setAPIURL(t, cs, rd.InternalID, "https://api.moved.example:443")
	e.waitCached(t, path, "https://api.moved.example:443")
	moved := reads("GET after the status moved", func() response { return get("moved", nil) }, 1, 0, 0, 1)
	if !strings.Contains(string(moved.body), "https://api.moved.example:443") {
		t.Fatalf("the GET after the status moved: %s", moved.body)
	}

	// The document changes: it comes with its body and is rendered again.
	_, doc := e.resource(path)
	var body map[string]any
	if err := json.Unmarshal(doc.Body, &body); err != nil {
		t.Fatal(err)
	}
	body["tags"] = map[string]any{"changed": "yes"}
	changed := *doc
	changed.Body = mustJSON(body)
	if _, err := e.store.Replace(context.Background(), &changed, doc.ETag); err != nil {
		t.Fatal(err)
	}
	again := reads("GET after the document changed", func() response { return get("changed", nil) }, 0, 1, 0, 1)
	if !strings.Contains(string(again.body), `"changed":"yes"`) || again.header.Get("ETag") == etag {
		t.Fatalf("the GET after the document changed: %v %s", again.header, again.body)
	}
	reads("GET of the new kept rendering", func() response { return get("kept again", nil) }, 0, 1, 1, 1)
}
