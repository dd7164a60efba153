package frontend

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/openhcp/openhcp/internal/armdoc"
	"github.com/openhcp/openhcp/internal/docstore"
)

// TestListPagesAreCutBySize lists resources whose documents are large (50 tags of 750
// characters each, about 38 KB rendered) with PageBytes of 100,000: every page of clusters (by
// resource group and by subscription, where node pools share the prefix and are left out) and
// of node pools holds at most PageBytes of items, its nextLink leads to the rest, and each
// resource is listed once, in order. A resource larger than PageBytes still gets a page of its
// own. (External auths list through the same code, at most one per cluster.)
func TestListPagesAreCutBySize(t *testing.T) {
	const pageBytes = 100_000
	e, _ := newNodePoolEnv(t, func(c *Config) { c.PageBytes = pageBytes })
	bigTags := func(seed string) map[string]any {
		tags := map[string]any{}
		for i := range 50 {
			tags[fmt.Sprintf("%s%03d%s", seed, i, strings.Repeat("n", 490))] = strings.Repeat("v", 250)
		}
		return tags
	}
	var clusters, pools []string
	for i := range 5 {
		name := fmt.Sprintf("c%d", i)
		body := minimalBody()
		body["tags"] = bigTags(name)
		resp := e.put(clusterPath("rg", name), body)
		if resp.code != 201 {
			t.Fatalf("PUT cluster: %d %s", resp.code, resp.body)
		}
		e.finish(opIDFrom(t, resp.header.Get("Azure-AsyncOperation")), armdoc.StateSucceeded, nil)
		clusters = append(clusters, strings.ToLower(clusterPath("rg", name)))
	}
	for i := range 5 {
		name := fmt.Sprintf("p%d", i)
		body := minimalPoolBody()
		body["tags"] = bigTags(name)
		e.readyPool(t, "c1", name, body)
		pools = append(pools, strings.ToLower(poolPath("c1", name)))
	}
	for _, tc := range []struct {
		name, path string
		want       []string
	}{
		{"clusters_by_resource_group", "/subscriptions/" + testSub + "/resourceGroups/rg/providers/Microsoft.RedHatOpenShift/hcpOpenShiftClusters", clusters},
		{"clusters_by_subscription", "/subscriptions/" + testSub + "/providers/Microsoft.RedHatOpenShift/hcpOpenShiftClusters", clusters},
		{"node_pools", strings.TrimSuffix(poolPath("c1", "x"), "/x"), pools},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ids, pages := listAll(t, e, tc.path, pageBytes)
			if strings.Join(ids, "\n") != strings.Join(tc.want, "\n") {
				t.Fatalf("listed\n  %s\nwant\n  %s", strings.Join(ids, "\n  "), strings.Join(tc.want, "\n  "))
			}
			if want := (len(tc.want) + 1) / 2; pages != want { // two resources a page
				t.Fatalf("%d pages, want %d", pages, want)
			}
		})
	}
	t.Run("the_last_answered_and_an_earlier_deleted_between_pages", func(t *testing.T) {
		// The first page lists c0 and c1 and ends after c1's node pools (they share the prefix);
		// the last of them and c0 go before the next page is asked for, which must start at c2.
		path := "/subscriptions/" + testSub + "/resourceGroups/rg/providers/Microsoft.RedHatOpenShift/hcpOpenShiftClusters"
		first := e.do("GET", path, nil, nil)
		var page struct {
			Value []struct {
				ID string `json:"id"`
			} `json:"value"`
			NextLink string `json:"nextLink"`
		}
		if err := json.Unmarshal(first.body, &page); err != nil || len(page.Value) != 2 || page.NextLink == "" {
			t.Fatalf("first page %d: %.300s", first.code, first.body)
		}
		for _, p := range []string{poolPath("c1", "p4"), clusterPath("rg", "c0")} {
			_, doc := e.resource(p)
			if err := e.store.Delete(context.Background(), doc.PartitionKey, doc.ID, doc.ETag); err != nil {
				t.Fatal(err)
			}
		}
		ids, _ := listAll(t, e, strings.TrimPrefix(page.NextLink, e.http.URL), pageBytes)
		if strings.Join(ids, "\n") != strings.Join(clusters[2:], "\n") {
			t.Fatalf("after the first page listed\n  %s\nwant\n  %s", strings.Join(ids, "\n  "), strings.Join(clusters[2:], "\n  "))
		}
	})
	t.Run("a_store_page_read_again_shorter", func(t *testing.T) {
		// Store pages of 4, one cluster a page. After c0 and c1 are listed from the store page
		// [c0 c1 c2 c3], three clusters whose IDs sort first are created: the store page read again
		// is [a0 a1 a2 c0], c1 has moved to the next store page, and must not be listed again there.
		small := newEnv(t, func(c *Config) { c.PageBytes = 300; c.PageSize = 4 })
		var want []string
		for _, name := range []string{"c0", "c1", "c2", "c3", "c4"} {
			small.readyCluster(t, name)
		}
		path := "/subscriptions/" + testSub + "/resourceGroups/rg/providers/Microsoft.RedHatOpenShift/hcpOpenShiftClusters?api-version=" + testVersion
		var ids []string
		for pages := 0; path != ""; pages++ {
			if pages > 20 {
				t.Fatal("nextLink does not end")
			}
			if pages == 2 {
				for _, name := range []string{"a0", "a1", "a2"} {
					small.readyCluster(t, name)
				}
			}
			resp := small.do("GET", path, nil, nil)
			var page struct {
				Value []struct {
					ID string `json:"id"`
				} `json:"value"`
				NextLink string `json:"nextLink"`
			}
			if err := json.Unmarshal(resp.body, &page); resp.code != 200 || err != nil {
				t.Fatalf("page %d: %d %.300s", pages, resp.code, resp.body)
			}
			for _, v := range page.Value {
				ids = append(ids, strings.ToLower(v.ID[strings.LastIndex(v.ID, "/")+1:]))
			}
			path = strings.TrimPrefix(page.NextLink, small.http.URL)
		}
		want = []string{"c0", "c1", "a0", "a1", "a2", "c2", "c3", "c4"}
		if strings.Join(ids, ",") != strings.Join(want, ",") {
			t.Fatalf("listed %v, want %v", ids, want)
		}
	})
	t.Run("a_resource_larger_than_a_page_gets_one", func(t *testing.T) {
		small := newEnv(t, func(c *Config) { c.PageBytes = 300 })
		var want []string
		for _, name := range []string{"a", "b", "c"} {
			small.readyCluster(t, name)
			want = append(want, strings.ToLower(clusterPath("rg", name)))
		}
		ids, pages := listAll(t, small, "/subscriptions/"+testSub+"/resourceGroups/rg/providers/Microsoft.RedHatOpenShift/hcpOpenShiftClusters", 300)
		if strings.Join(ids, "\n") != strings.Join(want, "\n") || pages != len(want) {
			t.Fatalf("%d pages listed %v", pages, ids)
		}
	})
}

// listAll follows a list's nextLinks from path (a nextLink itself, or a list path without its
// query), and returns the IDs listed and the number of
// pages; a page of more than one item over pageBytes fails the test.
func listAll(t *testing.T, e *env, path string, pageBytes int) (ids []string, pages int) {
	t.Helper()
	next := e.http.URL + path
	if !strings.Contains(path, "?") {
		next += "?api-version=" + testVersion
	}
	for ; next != ""; pages++ {
		if pages > 20 {
			t.Fatal("nextLink does not end")
		}
		resp := e.do("GET", strings.TrimPrefix(next, e.http.URL), nil, nil)
		if resp.code != 200 {
			t.Fatalf("status %d: %s", resp.code, resp.body)
		}
		var page struct {
			Value    []json.RawMessage `json:"value"`
			NextLink string            `json:"nextLink"`
		}
		if err := json.Unmarshal(resp.body, &page); err != nil {
			t.Fatal(err)
		}
		size := 0
		for _, v := range page.Value {
			size += len(v) + 1
			var item struct {
				ID string `json:"id"`
			}
			json.Unmarshal(v, &item)
			ids = append(ids, strings.ToLower(item.ID))
		}
		if len(page.Value) > 1 && size > pageBytes {
			t.Errorf("page %d: %d items of %d bytes, over %d", pages, len(page.Value), size, pageBytes)
		}
		next = page.NextLink
	}
	return ids, pages
}

// TestPageCursor pins the $skipToken of a page cut by size: it reads back as written, a
// store's own token passes through, a malformed one is an invalid continuation, and the next
// page starts after the last answered document, or after as many as were answered less that
// one when it has been deleted since.
func TestPageCursor(t *testing.T) {
	for _, c := range []pageCursor{{store: "abc_-1"}, {store: "", served: []uint64{1, 2}}, {store: "eyJwIjoi", served: []uint64{idHash("a.b.c"), ^uint64(0)}}} {
		got, err := parsePageCursor(c.String())
		if err != nil || got.store != c.store || !slices.Equal(got.served, c.served) {
			t.Errorf("%+v: read back as %+v, %v", c, got, err)
		}
	}
	tooMany := pageCursor{store: "t", served: make([]uint64, maxServed+1)}.String()
	for _, bad := range []string{".", "a.", "a.YQ", "a.!!", "a.AAAAAAAAAAA.x", tooMany} {
		if _, err := parsePageCursor(bad); err == nil || !strings.Contains(err.Error(), docstore.ErrInvalidContinuation.Error()) {
			t.Errorf("%.40q: %v, want an invalid continuation", bad, err)
		}
	}
	docs := func(ids ...string) []*docstore.Document {
		var out []*docstore.Document
		for _, id := range ids {
			out = append(out, &docstore.Document{ID: id})
		}
		return out
	}
	ids := func(ds []*docstore.Document) string {
		var out []string
		for _, d := range ds {
			out = append(out, d.ID)
		}
		return strings.Join(out, ",")
	}
	// The first page of the store page [a b c d] answered a and b.
	ab := pageCursor{store: "t"}.after(docs("a", "b"))
	for _, tc := range []struct {
		name   string
		cursor pageCursor
		page   []*docstore.Document
		want   string
	}{
		{"store_page_start", pageCursor{store: "t"}, docs("a", "b", "c"), "a,b,c"},
		{"after_the_answered", ab, docs("a", "b", "c", "d"), "c,d"},
		{"one_inserted_before", ab, docs("a", "a2", "b", "c"), "a2,c"},
		{"one_inserted_after", ab, docs("a", "b", "b2", "c"), "b2,c"},
		{"last_answered_deleted", ab, docs("a", "c", "d"), "c,d"},
		{"answered_deleted", ab, docs("c", "d"), "c,d"},
		{"answered_and_next_deleted", ab, docs("a", "d"), "d"},
		// The review's cases: the count the cursor carried before skipped d, or listed a again.
		{"answered_and_next_deleted_page_moves_on", ab, docs("d", "e", "f"), "d,e,f"},
		{"answered_deleted_one_inserted_first", ab, docs("x", "a", "d"), "x,d"},
		{"all_gone", ab, docs("a", "b"), ""},
		{"second_cut_keeps_the_first", ab.after(docs("c")), docs("a", "b", "c", "d"), "d"},
		// The store page read again came back as [x a]: b stands first in the next store page.
		{"into_the_next_store_page", ab.into("t2", docs("x", "a")), docs("b", "c", "d"), "c,d"},
		{"into_with_nothing_served", pageCursor{store: "t"}.into("t2", docs("a")), docs("b", "c"), "b,c"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := ids(tc.cursor.unserved(tc.page)); got != tc.want {
				t.Fatalf("unserved %q, want %q", got, tc.want)
			}
		})
	}
}
