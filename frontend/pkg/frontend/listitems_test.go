package frontend

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
)

func keptBody(n int) json.RawMessage { return json.RawMessage(`"` + strings.Repeat("x", n-2) + `"`) }

func TestKeptListItemsAreBoundedByBytes(t *testing.T) {
	tests := []struct {
		name      string
		maxBytes  int
		bodies    []int // sizes of the items put, in order, each a new key
		wantItems int
	}{
		{name: "items_within_the_bound_are_all_kept", maxBytes: 10000, bodies: []int{100, 100, 100}, wantItems: 3},
		{name: "an_item_that_does_not_fit_drops_others_to_make_room", maxBytes: 2000, bodies: []int{500, 500, 500, 500, 500}, wantItems: 2},
		{name: "an_item_larger_than_the_bound_is_not_kept", maxBytes: 100, bodies: []int{200}, wantItems: 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			l := listItems{maxBytes: tc.maxBytes}
			var last listItemKey
			for i, n := range tc.bodies {
				last = listItemKey{partition: "p", id: fmt.Sprintf("c%d", i), version: "v"}
				l.put(last, listItem{etag: "e", csID: fmt.Sprintf("cs%d", i), body: keptBody(n)})
			}
			if len(l.items) != tc.wantItems {
				t.Fatalf("%d items kept, want %d", len(l.items), tc.wantItems)
			}
			sum := 0
			for k, it := range l.items {
				sum += it.size(k)
			}
			if sum != l.bytes || l.bytes > tc.maxBytes {
				t.Fatalf("kept %d bytes (counted %d), bound %d", sum, l.bytes, tc.maxBytes)
			}
			if _, ok := l.get(last); tc.wantItems > 0 && !ok {
				t.Fatal("the item just put was dropped")
			}
		})
	}
	t.Run("an_item_put_again_counts_once", func(t *testing.T) {
		l := listItems{maxBytes: 1500}
		k := listItemKey{partition: "p", id: "c", version: "v"}
		l.put(k, listItem{etag: "e1", body: keptBody(600)})
		l.put(k, listItem{etag: "e2", body: keptBody(600)})
		if it, ok := l.get(k); !ok || it.etag != "e2" || l.bytes != it.size(k) {
			t.Fatalf("kept %v (%v), %d bytes", it.etag, ok, l.bytes)
		}
	})
	t.Run("a_removed_cluster_takes_every_api_version_of_its_item", func(t *testing.T) {
		l := listItems{maxBytes: 10000}
		for _, v := range []string{"v1", "v2"} {
			l.put(listItemKey{partition: "p", id: "gone", version: v}, listItem{csID: "cs-gone", body: keptBody(10)})
		}
		stay := listItemKey{partition: "p", id: "stays", version: "v1"}
		l.put(stay, listItem{csID: "cs-stays", body: keptBody(10)})
		l.dropCluster("cs-gone")
		if _, ok := l.get(stay); len(l.items) != 1 || !ok || l.bytes != l.items[stay].size(stay) {
			t.Fatalf("after dropping cs-gone: %v, %d bytes", l.items, l.bytes)
		}
	})
}
