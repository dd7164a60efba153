package frontend

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"

	"github.com/openhcp/openhcp/internal/docstore"
	"github.com/openhcp/openhcp/internal/docstore/postgres"
)

// headStore is the real PostgreSQL store recording the IDs each GetMany reads, with a hook run
// after QueryHeads answers (to write a document between the two queries).
type headStore struct {
	*postgres.Store
	mu         sync.Mutex
	heads      int
	read       [][]string
	afterHeads func()
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

func TestClusterListReadsOnlyBodiesOfClustersNotKeptAndRendersOneWrittenBetweenQueries(t *testing.T) {
	var hs *headStore
	e := newEnv(t, func(c *Config) {
		hs = &headStore{Store: c.Store.(*postgres.Store)}
		c.Store = hs
	})
	paths := []string{clusterPath("rg1", "a"), clusterPath("rg1", "b"), clusterPath("rg1", "c")}
	for _, p := range paths {
		if resp := e.put(p, minimalBody()); resp.code != 201 {
			t.Fatalf("create %s: %d %s", p, resp.code, resp.body)
		}
	}
	// Without a status cache here, only a cluster Cluster Service does not know (no InternalID)
	// is kept from one list to the next: clear the IDs so the lists below can keep them.
	for _, p := range paths {
		ctx := context.Background()
		d, err := e.store.Get(ctx, partitionKey(testSub), strings.ToLower(p))
		if err != nil {
			t.Fatal(err)
		}
		var m map[string]any
		json.Unmarshal(d.Body, &m)
		m["internalId"] = ""
		d.Body, _ = json.Marshal(m)
		if _, err := e.store.Replace(ctx, d, d.ETag); err != nil {
			t.Fatal(err)
		}
	}
	listPath := "/subscriptions/" + testSub + "/resourceGroups/rg1/providers/Microsoft.RedHatOpenShift/hcpOpenShiftClusters?api-version=" + testVersion
	list := func() map[string]map[string]any {
		t.Helper()
		resp := e.do("GET", listPath, nil, nil)
		if resp.code != 200 {
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
		if len(out) != len(paths) {
			t.Fatalf("listed %d clusters, want %d: %s", len(out), len(paths), resp.body)
		}
		return out
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
		ctx := context.Background()
		d, err := e.store.Get(ctx, partitionKey(testSub), strings.ToLower(paths[1]))
		if err != nil {
			t.Errorf("get b: %v", err)
			return
		}
		var m map[string]any
		json.Unmarshal(d.Body, &m)
		m["tags"] = map[string]any{"written": v}
		d.Body, _ = json.Marshal(m)
		if _, err := e.store.Replace(ctx, d, d.ETag); err != nil {
			t.Errorf("replace b: %v", err)
		}
	}
	setTags("before")
	hs.mu.Lock()
	hs.afterHeads = func() { setTags("between") }
	hs.mu.Unlock()
	got := list()
	if _, read = hs.reads(); len(read) != 2 || len(read[1]) != 1 {
		t.Fatalf("bodies read %v; want a second read of b alone", read)
	}
	tags, _ := got[strings.ToLower(paths[1])]["tags"].(map[string]any)
	if tags["written"] != "between" {
		t.Fatalf("b listed as %v, want the tags written between the queries", got[strings.ToLower(paths[1])])
	}
	// The next list answers b from what it kept, with the write.
	got = list()
	if _, read = hs.reads(); len(read) != 2 {
		t.Fatalf("bodies read %v after b was kept; want no further read", read)
	}
	if tags, _ := got[strings.ToLower(paths[1])]["tags"].(map[string]any); tags["written"] != "between" {
		t.Fatalf("b listed from the kept item as %v", got[strings.ToLower(paths[1])])
	}
}
