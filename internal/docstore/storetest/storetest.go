// Package storetest is the conformance suite every docstore.Store implementation must pass. Each
// subtest gets a fresh, empty store from the caller's constructor.
package storetest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/openhcp/openhcp/internal/docstore"
)

// Options adapt the suite to a backend under test.
type Options struct {
	// Skip names cases (or "case/subcase") the target cannot pass, each with the reason, which
	// the skip reports. It exists for test doubles of a backend, such as an emulator with known
	// gaps; a real backend must pass every case.
	Skip map[string]string
}

// Run runs the whole suite. newStore must return an empty store and arrange its cleanup.
func Run(t *testing.T, newStore func(t *testing.T) docstore.Store) {
	RunWithOptions(t, newStore, Options{})
}

// skips is the skip list of the suite that is running; the suite does not run in parallel.
var (
	skips    map[string]string
	skipRoot string
)

// skipIfListed skips t when its name below the suite's root is in the skip list.
func skipIfListed(t *testing.T) {
	t.Helper()
	name := strings.TrimPrefix(t.Name(), skipRoot+"/")
	if why, ok := skips[name]; ok {
		t.Skipf("skipped on this target: %s", why)
	}
}

// RunWithOptions runs the suite with o.
func RunWithOptions(t *testing.T, newStore func(t *testing.T) docstore.Store, o Options) {
	skips, skipRoot = o.Skip, t.Name()
	defer func() { skips, skipRoot = nil, "" }()
	tests := []struct {
		name string
		fn   func(t *testing.T, s docstore.Store)
	}{
		{"crud_round_trip", testCRUD},
		{"write_results_carry_their_feed_position", testWriteSeq},
		{"create_existing_id_returns_already_exists", testCreateExisting},
		{"stale_etag_returns_precondition_failed", testStaleETag},
		{"replace_and_delete_without_etag_are_refused", testETagRequired},
		{"missing_document_returns_not_found", testMissing},
		{"partitions_are_independent", testPartitions},
		{"query_filters_by_partition_type_and_prefix", testQueryFilters},
		{"query_pages_through_many_documents", testPagination},
		{"query_pages_across_partitions", testPaginationAcrossPartitions},
		{"query_rejects_foreign_continuation", testBadContinuation},
		{"transaction_applies_all_steps", testTransactOK},
		{"transaction_failing_step_leaves_nothing_written", testTransactAtomic},
		{"transaction_without_etag_or_across_partitions_is_refused", testTransactRefused},
		{"transaction_holds_max_steps_and_refuses_more", testTransactMaxSteps},
		{"change_feed_orders_and_resumes_including_deletes", testFeed},
		{"wait_for_changes_wakes_on_write", testWait},
		{"ttl_expired_documents_are_invisible", testTTL},
		{"concurrent_replaces_have_exactly_one_winner_per_round", testConcurrency},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			skipIfListed(t)
			s := newStore(t)
			tc.fn(t, s)
		})
	}
}

const part = "00000000-0000-0000-0000-000000000001"

func ctx(t *testing.T) context.Context {
	c, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	return c
}

func rid(name string) string {
	return "/subscriptions/" + part + "/resourcegroups/rg/providers/microsoft.redhatopenshift/hcpopenshiftclusters/" + name
}

func doc(partition, id, typ, resourceID string, body any) *docstore.Document {
	b, err := json.Marshal(body)
	if err != nil {
		panic(err)
	}
	return &docstore.Document{PartitionKey: partition, ID: id, Type: typ, ResourceID: resourceID, Body: b}
}

func bodyOf(t *testing.T, d *docstore.Document) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(d.Body, &m); err != nil {
		t.Fatalf("body of %s is not a JSON object: %v (%s)", d.ID, err, d.Body)
	}
	return m
}

func mustCreate(t *testing.T, s docstore.Store, d *docstore.Document) *docstore.Document {
	t.Helper()
	out, err := s.Create(ctx(t), d)
	if err != nil {
		t.Fatalf("create %s: %v", d.ID, err)
	}
	return out
}

func wantErr(t *testing.T, what string, err, want error) {
	t.Helper()
	if !errors.Is(err, want) {
		t.Fatalf("%s: got error %v, want %v", what, err, want)
	}
}

func testCRUD(t *testing.T, s docstore.Store) {
	c := ctx(t)
	created := mustCreate(t, s, doc(part, rid("a"), docstore.TypeResource, rid("a"), map[string]any{"n": 1.0}))
	if created.ETag == "" {
		t.Fatalf("create returned no etag")
	}
	got, err := s.Get(c, part, rid("a"))
	if err != nil {
		t.Fatalf("get: %v", err)
	}
	if got.ETag != created.ETag || got.Type != docstore.TypeResource || got.ResourceID != rid("a") {
		t.Fatalf("get returned %+v; want etag %s, type resource, resource id %s", got, created.ETag, rid("a"))
	}
	if !reflect.DeepEqual(bodyOf(t, got), map[string]any{"n": 1.0}) {
		t.Fatalf("body = %s", got.Body)
	}

	upd := doc(part, rid("a"), docstore.TypeResource, rid("a"), map[string]any{"n": 2.0})
	replaced, err := s.Replace(c, upd, created.ETag)
	if err != nil {
		t.Fatalf("replace: %v", err)
	}
	if replaced.ETag == created.ETag {
		t.Fatalf("replace kept etag %s; every write must get a new one", replaced.ETag)
	}
	got, err = s.Get(c, part, rid("a"))
	if err != nil {
		t.Fatalf("get after replace: %v", err)
	}
	if got.ETag != replaced.ETag || bodyOf(t, got)["n"] != 2.0 {
		t.Fatalf("after replace got etag %s body %s; want etag %s n=2", got.ETag, got.Body, replaced.ETag)
	}

	if err := s.Delete(c, part, rid("a"), replaced.ETag); err != nil {
		t.Fatalf("delete: %v", err)
	}
	_, err = s.Get(c, part, rid("a"))
	wantErr(t, "get after delete", err, docstore.ErrNotFound)
	// The ID is free again.
	mustCreate(t, s, doc(part, rid("a"), docstore.TypeResource, rid("a"), map[string]any{"n": 3.0}))
}

func testCreateExisting(t *testing.T, s docstore.Store) {
	first := mustCreate(t, s, doc(part, "op1", docstore.TypeOperation, rid("a"), map[string]any{"v": "first"}))
	_, err := s.Create(ctx(t), doc(part, "op1", docstore.TypeOperation, rid("a"), map[string]any{"v": "second"}))
	wantErr(t, "second create", err, docstore.ErrAlreadyExists)
	got, err := s.Get(ctx(t), part, "op1")
	if err != nil {
		t.Fatal(err)
	}
	if got.ETag != first.ETag || bodyOf(t, got)["v"] != "first" {
		t.Fatalf("failed create changed the document: %s", got.Body)
	}
}

func testStaleETag(t *testing.T, s docstore.Store) {
	c := ctx(t)
	v1 := mustCreate(t, s, doc(part, "x", docstore.TypeResource, rid("x"), map[string]any{"v": 1}))
	v2, err := s.Replace(c, doc(part, "x", docstore.TypeResource, rid("x"), map[string]any{"v": 2}), v1.ETag)
	if err != nil {
		t.Fatal(err)
	}
	_, err = s.Replace(c, doc(part, "x", docstore.TypeResource, rid("x"), map[string]any{"v": 3}), v1.ETag)
	wantErr(t, "replace with stale etag", err, docstore.ErrPreconditionFailed)
	err = s.Delete(c, part, "x", v1.ETag)
	wantErr(t, "delete with stale etag", err, docstore.ErrPreconditionFailed)
	got, err := s.Get(c, part, "x")
	if err != nil {
		t.Fatal(err)
	}
	if got.ETag != v2.ETag || bodyOf(t, got)["v"] != 2.0 {
		t.Fatalf("stale writes changed the document: etag %s body %s", got.ETag, got.Body)
	}
}

func testETagRequired(t *testing.T, s docstore.Store) {
	c := ctx(t)
	v1 := mustCreate(t, s, doc(part, "x", docstore.TypeResource, rid("x"), map[string]any{"v": 1}))
	_, err := s.Replace(c, doc(part, "x", docstore.TypeResource, rid("x"), map[string]any{"v": 2}), "")
	wantErr(t, "replace without etag", err, docstore.ErrETagRequired)
	err = s.Delete(c, part, "x", "")
	wantErr(t, "delete without etag", err, docstore.ErrETagRequired)
	got, err := s.Get(c, part, "x")
	if err != nil {
		t.Fatal(err)
	}
	if got.ETag != v1.ETag {
		t.Fatalf("refused writes changed the document")
	}
}

func testMissing(t *testing.T, s docstore.Store) {
	c := ctx(t)
	_, err := s.Get(c, part, "nope")
	wantErr(t, "get", err, docstore.ErrNotFound)
	_, err = s.Replace(c, doc(part, "nope", docstore.TypeResource, "", map[string]any{}), "etag")
	wantErr(t, "replace", err, docstore.ErrNotFound)
	err = s.Delete(c, part, "nope", "etag")
	wantErr(t, "delete", err, docstore.ErrNotFound)
}

func testPartitions(t *testing.T, s docstore.Store) {
	c := ctx(t)
	other := "00000000-0000-0000-0000-000000000002"
	a := mustCreate(t, s, doc(part, "same", docstore.TypeSubscription, "", map[string]any{"p": 1}))
	b := mustCreate(t, s, doc(other, "same", docstore.TypeSubscription, "", map[string]any{"p": 2}))
	if err := s.Delete(c, part, "same", a.ETag); err != nil {
		t.Fatal(err)
	}
	got, err := s.Get(c, other, "same")
	if err != nil {
		t.Fatalf("document in the other partition: %v", err)
	}
	if got.ETag != b.ETag {
		t.Fatalf("other partition's document changed")
	}
	// An ETag from one partition is not valid in another.
	_, err = s.Replace(c, doc(other, "same", docstore.TypeSubscription, "", map[string]any{}), a.ETag)
	wantErr(t, "replace with another partition's etag", err, docstore.ErrPreconditionFailed)
}

func ids(docs []*docstore.Document) []string {
	out := []string{}
	for _, d := range docs {
		out = append(out, d.PartitionKey+"|"+d.ID)
	}
	return out
}

func testQueryFilters(t *testing.T, s docstore.Store) {
	c := ctx(t)
	other := "00000000-0000-0000-0000-000000000002"
	mustCreate(t, s, doc(part, rid("c1"), docstore.TypeResource, rid("c1"), map[string]any{}))
	mustCreate(t, s, doc(part, rid("c1")+"/nodepools/np1", docstore.TypeResource, rid("c1")+"/nodepools/np1", map[string]any{}))
	mustCreate(t, s, doc(part, rid("c10"), docstore.TypeResource, rid("c10"), map[string]any{}))
	mustCreate(t, s, doc(part, rid("c_2"), docstore.TypeResource, rid("c_2"), map[string]any{}))
	mustCreate(t, s, doc(part, rid("cx2"), docstore.TypeResource, rid("cx2"), map[string]any{}))
	mustCreate(t, s, doc(part, "op-1", docstore.TypeOperation, rid("c1"), map[string]any{}))
	otherRID := "/subscriptions/" + other + "/resourcegroups/rg/providers/microsoft.redhatopenshift/hcpopenshiftclusters/c1"
	mustCreate(t, s, doc(other, otherRID, docstore.TypeResource, otherRID, map[string]any{}))
	mustCreate(t, s, doc(other, "op-2", docstore.TypeOperation, otherRID, map[string]any{}))

	all := func(q docstore.Query) []string {
		t.Helper()
		var out []string
		for {
			p, err := s.Query(c, q)
			if err != nil {
				t.Fatalf("query %+v: %v", q, err)
			}
			for _, d := range p.Documents {
				out = append(out, d.ID)
			}
			if p.Continuation == "" {
				return out
			}
			q.Continuation = p.Continuation
		}
	}
	for _, tc := range []struct {
		name string
		q    docstore.Query
		want []string
	}{
		{"cluster_and_children", docstore.Query{Partition: part, Type: docstore.TypeResource, ResourceIDPrefix: rid("c1")},
			[]string{rid("c1"), rid("c1") + "/nodepools/np1", rid("c10")}},
		{"children_only", docstore.Query{Partition: part, Type: docstore.TypeResource, ResourceIDPrefix: rid("c1") + "/"},
			[]string{rid("c1") + "/nodepools/np1"}},
		{"underscore_is_literal", docstore.Query{Partition: part, ResourceIDPrefix: rid("c_")}, []string{rid("c_2")}},
		{"operations_of_partition", docstore.Query{Partition: part, Type: docstore.TypeOperation}, []string{"op-1"}},
		// Across partitions the order is the backend's (Cosmos cannot ORDER BY there), so those
		// results are compared sorted.
		{"operations_across_partitions", docstore.Query{Type: docstore.TypeOperation}, []string{"op-1", "op-2"}},
		{"resources_across_partitions_by_prefix", docstore.Query{Type: docstore.TypeResource, ResourceIDPrefix: otherRID}, []string{otherRID}},
		{"no_match", docstore.Query{Partition: part, ResourceIDPrefix: rid("zzz")}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			skipIfListed(t)
			got := all(tc.q)
			if tc.q.Partition == "" {
				sort.Strings(got)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("got %q, want %q", got, tc.want)
			}
		})
	}
}

func testPagination(t *testing.T, s docstore.Store) {
	c := ctx(t)
	const n = 137
	want := map[string]bool{}
	for i := 0; i < n; i++ {
		id := rid(fmt.Sprintf("c%03d", i))
		mustCreate(t, s, doc(part, id, docstore.TypeResource, id, map[string]any{"i": i}))
		want[id] = true
	}
	mustCreate(t, s, doc(part, "op", docstore.TypeOperation, rid("c000"), map[string]any{}))
	seen := map[string]bool{}
	q := docstore.Query{Partition: part, Type: docstore.TypeResource, Limit: 10}
	pages := 0
	var last string
	for {
		p, err := s.Query(c, q)
		if err != nil {
			t.Fatalf("page %d: %v", pages, err)
		}
		pages++
		if len(p.Documents) > 10 {
			t.Fatalf("page %d has %d documents, limit 10", pages, len(p.Documents))
		}
		for _, d := range p.Documents {
			if seen[d.ID] {
				t.Fatalf("document %s returned twice", d.ID)
			}
			if d.ID <= last {
				t.Fatalf("documents out of order: %s after %s", d.ID, last)
			}
			last = d.ID
			seen[d.ID] = true
		}
		if p.Continuation == "" {
			break
		}
		q.Continuation = p.Continuation
		if pages > 100 {
			t.Fatal("pagination does not end")
		}
	}
	if !reflect.DeepEqual(seen, want) {
		t.Fatalf("paged %d documents, want %d", len(seen), len(want))
	}
	if pages != 14 {
		t.Fatalf("got %d pages of 10 for %d documents, want 14", pages, n)
	}
}

func testBadContinuation(t *testing.T, s docstore.Store) {
	_, err := s.Query(ctx(t), docstore.Query{Partition: part, Continuation: "not-a-token!"})
	wantErr(t, "query with garbage continuation", err, docstore.ErrInvalidContinuation)
}

func testTransactOK(t *testing.T, s docstore.Store) {
	c := ctx(t)
	old := mustCreate(t, s, doc(part, "old", docstore.TypeOperation, rid("a"), map[string]any{}))
	res := mustCreate(t, s, doc(part, rid("a"), docstore.TypeResource, rid("a"), map[string]any{"state": "Succeeded"}))
	out, err := s.Transact(c, part, []docstore.TxOp{
		{Kind: docstore.TxReplace, Doc: doc(part, rid("a"), docstore.TypeResource, rid("a"), map[string]any{"state": "Deleting"}), IfMatch: res.ETag},
		{Kind: docstore.TxCreate, Doc: doc(part, "new", docstore.TypeOperation, rid("a"), map[string]any{"request": "Delete"})},
		{Kind: docstore.TxDelete, Doc: &docstore.Document{PartitionKey: part, ID: "old"}, IfMatch: old.ETag},
	})
	if err != nil {
		t.Fatalf("transact: %v", err)
	}
	if len(out) != 3 || out[0] == nil || out[1] == nil || out[2] != nil {
		t.Fatalf("transact returned %v; want [doc doc nil]", out)
	}
	got, err := s.Get(c, part, rid("a"))
	if err != nil || got.ETag != out[0].ETag || bodyOf(t, got)["state"] != "Deleting" {
		t.Fatalf("resource after transaction: %v %v", got, err)
	}
	got, err = s.Get(c, part, "new")
	if err != nil || got.ETag != out[1].ETag {
		t.Fatalf("created operation: %v %v", got, err)
	}
	_, err = s.Get(c, part, "old")
	wantErr(t, "deleted operation", err, docstore.ErrNotFound)
}

func testTransactAtomic(t *testing.T, s docstore.Store) {
	c := ctx(t)
	res := mustCreate(t, s, doc(part, rid("a"), docstore.TypeResource, rid("a"), map[string]any{"v": 1}))
	taken := mustCreate(t, s, doc(part, "taken", docstore.TypeOperation, rid("a"), map[string]any{"v": 1}))
	for _, tc := range []struct {
		name   string
		middle docstore.TxOp
		want   error
	}{
		{"create_of_existing_id", docstore.TxOp{Kind: docstore.TxCreate, Doc: doc(part, "taken", docstore.TypeOperation, "", map[string]any{})}, docstore.ErrAlreadyExists},
		{"replace_with_stale_etag", docstore.TxOp{Kind: docstore.TxReplace, Doc: doc(part, "taken", docstore.TypeOperation, "", map[string]any{"v": 2}), IfMatch: "stale"}, docstore.ErrPreconditionFailed},
		{"delete_of_missing", docstore.TxOp{Kind: docstore.TxDelete, Doc: &docstore.Document{PartitionKey: part, ID: "missing"}, IfMatch: "x"}, docstore.ErrNotFound},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := s.Transact(c, part, []docstore.TxOp{
				{Kind: docstore.TxCreate, Doc: doc(part, "first-"+tc.name, docstore.TypeOperation, rid("a"), map[string]any{})},
				{Kind: docstore.TxReplace, Doc: doc(part, rid("a"), docstore.TypeResource, rid("a"), map[string]any{"v": 2}), IfMatch: res.ETag},
				tc.middle,
				{Kind: docstore.TxCreate, Doc: doc(part, "last-"+tc.name, docstore.TypeOperation, rid("a"), map[string]any{})},
			})
			wantErr(t, "transaction", err, tc.want)
			for _, id := range []string{"first-" + tc.name, "last-" + tc.name} {
				_, err := s.Get(c, part, id)
				wantErr(t, "document "+id+" of a failed transaction", err, docstore.ErrNotFound)
			}
			got, err := s.Get(c, part, rid("a"))
			if err != nil || got.ETag != res.ETag || bodyOf(t, got)["v"] != 1.0 {
				t.Fatalf("failed transaction replaced the resource: %v %v", got, err)
			}
			got, err = s.Get(c, part, "taken")
			if err != nil || got.ETag != taken.ETag {
				t.Fatalf("failed transaction changed %q: %v %v", "taken", got, err)
			}
		})
	}
}

func testTransactRefused(t *testing.T, s docstore.Store) {
	c := ctx(t)
	res := mustCreate(t, s, doc(part, "r", docstore.TypeResource, rid("r"), map[string]any{}))
	_, err := s.Transact(c, part, []docstore.TxOp{
		{Kind: docstore.TxCreate, Doc: doc(part, "n1", docstore.TypeOperation, "", map[string]any{})},
		{Kind: docstore.TxReplace, Doc: doc(part, "r", docstore.TypeResource, rid("r"), map[string]any{"v": 1})},
	})
	wantErr(t, "replace step without etag", err, docstore.ErrETagRequired)
	_, err = s.Transact(c, part, []docstore.TxOp{
		{Kind: docstore.TxCreate, Doc: doc(part, "n2", docstore.TypeOperation, "", map[string]any{})},
		{Kind: docstore.TxCreate, Doc: doc("another-partition", "n3", docstore.TypeOperation, "", map[string]any{})},
	})
	if err == nil {
		t.Fatal("transaction across partitions succeeded")
	}
	for _, id := range []string{"n1", "n2"} {
		_, err := s.Get(c, part, id)
		wantErr(t, "document of refused transaction", err, docstore.ErrNotFound)
	}
	if got, _ := s.Get(c, part, "r"); got == nil || got.ETag != res.ETag {
		t.Fatal("refused transaction changed the resource")
	}
}

// testTransactMaxSteps: MaxTransactSteps steps are one transaction in every store, and one more
// is refused whole, so code that fits one store fits the other.
func testTransactMaxSteps(t *testing.T, s docstore.Store) {
	c := ctx(t)
	creates := func(prefix string, n int) []docstore.TxOp {
		ops := make([]docstore.TxOp, n)
		for i := range ops {
			ops[i] = docstore.TxOp{Kind: docstore.TxCreate, Doc: doc(part, fmt.Sprintf("%s-%03d", prefix, i), docstore.TypeOperation, rid(prefix), map[string]any{})}
		}
		return ops
	}
	if _, err := s.Transact(c, part, creates("fits", docstore.MaxTransactSteps)); err != nil {
		t.Fatalf("transaction of %d steps: %v", docstore.MaxTransactSteps, err)
	}
	_, err := s.Transact(c, part, creates("over", docstore.MaxTransactSteps+1))
	wantErr(t, "transaction of one step too many", err, docstore.ErrTooManySteps)
	// Read back by a query, not a Get: the Cosmos emulator answers a Get of a missing document
	// with a 500 (docs/storage.md).
	for _, tc := range []struct {
		prefix string
		want   int
	}{{"fits", docstore.MaxTransactSteps}, {"over", 0}} {
		n, q := 0, docstore.Query{Partition: part, Type: docstore.TypeOperation, ResourceIDPrefix: rid(tc.prefix)}
		for {
			page, err := s.Query(c, q)
			if err != nil {
				t.Fatalf("query documents of the %q transaction: %v", tc.prefix, err)
			}
			n += len(page.Documents)
			if page.Continuation == "" {
				break
			}
			q.Continuation = page.Continuation
		}
		if n != tc.want {
			t.Errorf("the %q transaction left %d documents, want %d", tc.prefix, n, tc.want)
		}
	}
}

func testFeed(t *testing.T, s docstore.Store) {
	c := ctx(t)
	start, err := s.Changes(c, "", 1000)
	if err != nil {
		t.Fatal(err)
	}
	if len(start.Changes) != 0 {
		t.Fatalf("fresh store has %d changes", len(start.Changes))
	}
	a := mustCreate(t, s, doc(part, "a", docstore.TypeResource, rid("a"), map[string]any{"v": 1}))
	b := mustCreate(t, s, doc(part, "b", docstore.TypeOperation, rid("b"), map[string]any{"v": 1}))
	cdoc := mustCreate(t, s, doc("p2", "c", docstore.TypeResource, "", map[string]any{"v": 1}))
	a2, err := s.Replace(c, doc(part, "a", docstore.TypeResource, rid("a"), map[string]any{"v": 2}), a.ETag)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Delete(c, part, "b", b.ETag); err != nil {
		t.Fatal(err)
	}

	all, err := s.Changes(c, "", 1000)
	if err != nil {
		t.Fatal(err)
	}
	changes := all.Changes
	// Order is by seq; each document appears with its latest state; the delete is a tombstone.
	type view struct {
		key     string
		deleted bool
		etag    string
	}
	var got []view
	var prev int64
	for _, ch := range changes {
		if ch.Seq <= prev {
			t.Fatalf("feed not in increasing seq order: %d after %d", ch.Seq, prev)
		}
		prev = ch.Seq
		got = append(got, view{ch.Doc.PartitionKey + "|" + ch.Doc.ID, ch.Deleted, ch.Doc.ETag})
	}
	want := []view{{"p2|c", false, cdoc.ETag}, {part + "|a", false, a2.ETag}, {part + "|b", true, ""}}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("feed = %+v\nwant %+v", got, want)
	}
	if changes[2].Doc.Type != docstore.TypeOperation || changes[2].Doc.ResourceID != rid("b") {
		t.Fatalf("tombstone lost its type or resource ID: %+v", changes[2].Doc)
	}
	if bodyOf(t, changes[1].Doc)["v"] != 2.0 {
		t.Fatalf("feed carries stale body %s", changes[1].Doc.Body)
	}

	// Follow the checkpoints, in pages of one.
	var cp docstore.Checkpoint
	var resumed []string
	for {
		page, err := s.Changes(c, cp, 1)
		if err != nil {
			t.Fatal(err)
		}
		if len(page.Changes) > 1 {
			t.Fatalf("limit 1 returned %d changes", len(page.Changes))
		}
		cp = page.Next
		if len(page.Changes) == 0 {
			break
		}
		resumed = append(resumed, page.Changes[0].Doc.ID)
	}
	if !reflect.DeepEqual(resumed, []string{"c", "a", "b"}) {
		t.Fatalf("followed feed = %q, want [c a b]", resumed)
	}
	// A checkpoint resumes: from the one after the first page, the rest follows.
	first, err := s.Changes(c, "", 1)
	if err != nil {
		t.Fatal(err)
	}
	rest, err := s.Changes(c, first.Next, 100)
	if err != nil {
		t.Fatal(err)
	}
	var restIDs []string
	for _, ch := range rest.Changes {
		restIDs = append(restIDs, ch.Doc.ID)
	}
	if !reflect.DeepEqual(restIDs, []string{"a", "b"}) {
		t.Fatalf("feed after the first change = %q, want [a b]", restIDs)
	}

	// A later write shows up after the last checkpoint, and only it.
	mustCreate(t, s, doc(part, "d", docstore.TypeResource, "", map[string]any{}))
	later, err := s.Changes(c, cp, 100)
	if err != nil {
		t.Fatal(err)
	}
	if len(later.Changes) != 1 || later.Changes[0].Doc.ID != "d" {
		t.Fatalf("changes after checkpoint %q = %+v, want just d", cp, later.Changes)
	}
}

func testWait(t *testing.T, s docstore.Store) {
	c := ctx(t)
	mustCreate(t, s, doc(part, "first", docstore.TypeResource, "", map[string]any{}))
	changes, err := s.Changes(c, "", 100)
	if err != nil || len(changes.Changes) != 1 {
		t.Fatalf("changes: %v %v", changes, err)
	}
	cp := changes.Next

	// Pending changes: returns at once.
	quick, cancel := context.WithTimeout(c, 5*time.Second)
	defer cancel()
	if err := s.WaitForChanges(quick, ""); err != nil {
		t.Fatalf("wait with pending changes: %v", err)
	}

	// Nothing new: blocks until the context ends.
	short, cancel2 := context.WithTimeout(c, 300*time.Millisecond)
	defer cancel2()
	if err := s.WaitForChanges(short, cp); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("wait without changes returned %v, want deadline exceeded", err)
	}

	// A write wakes a waiter.
	done := make(chan error, 1)
	go func() {
		wc, cancel := context.WithTimeout(c, 20*time.Second)
		defer cancel()
		done <- s.WaitForChanges(wc, cp)
	}()
	select {
	case err := <-done:
		t.Fatalf("wait returned before any write: %v", err)
	case <-time.After(200 * time.Millisecond):
	}
	mustCreate(t, s, doc(part, "second", docstore.TypeResource, "", map[string]any{}))
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("wait after write: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("write did not wake the waiter within 10s")
	}
}

func testTTL(t *testing.T, s docstore.Store) {
	c := ctx(t)
	d := doc(part, "op", docstore.TypeOperation, rid("a"), map[string]any{"v": 1})
	d.TTL = time.Second
	created := mustCreate(t, s, d)
	if created.ExpiresAt.IsZero() {
		t.Fatal("create with TTL returned no ExpiresAt")
	}
	if until := time.Until(created.ExpiresAt); until <= 0 || until > 5*time.Second {
		t.Fatalf("ExpiresAt %s is not about 1s away", created.ExpiresAt)
	}
	keep := mustCreate(t, s, doc(part, "keep", docstore.TypeOperation, rid("a"), map[string]any{}))
	if !keep.ExpiresAt.IsZero() {
		t.Fatalf("document without TTL has ExpiresAt %s", keep.ExpiresAt)
	}
	read, err := s.Get(c, part, "op")
	if err != nil {
		t.Fatalf("get before expiry: %v", err)
	}
	if read.TTL <= 0 || read.TTL > time.Second {
		t.Fatalf("read TTL = %s, want the time left (0, 1s]", read.TTL)
	}
	// Replacing the document as read keeps its expiry.
	read.Body = []byte(`{"v":2}`)
	replaced, err := s.Replace(c, read, read.ETag)
	if err != nil {
		t.Fatal(err)
	}
	if diff := replaced.ExpiresAt.Sub(created.ExpiresAt); diff < -100*time.Millisecond || diff > 100*time.Millisecond {
		t.Fatalf("replace of the read document moved expiry by %s", diff)
	}
	time.Sleep(time.Until(created.ExpiresAt) + 300*time.Millisecond)

	_, err = s.Get(c, part, "op")
	wantErr(t, "get after expiry", err, docstore.ErrNotFound)
	_, err = s.Replace(c, doc(part, "op", docstore.TypeOperation, "", map[string]any{}), created.ETag)
	wantErr(t, "replace after expiry", err, docstore.ErrNotFound)
	p, err := s.Query(c, docstore.Query{Partition: part, Type: docstore.TypeOperation})
	if err != nil {
		t.Fatal(err)
	}
	if got := ids(p.Documents); !reflect.DeepEqual(got, []string{part + "|keep"}) {
		t.Fatalf("query after expiry = %q, want only keep", got)
	}
	// The expired ID can be reused.
	mustCreate(t, s, doc(part, "op", docstore.TypeOperation, rid("a"), map[string]any{"v": 2}))
}

func testConcurrency(t *testing.T, s docstore.Store) {
	c := ctx(t)
	const writers, rounds = 8, 5
	cur := mustCreate(t, s, doc(part, "hot", docstore.TypeResource, "", map[string]any{"round": 0}))
	for round := 1; round <= rounds; round++ {
		var wg sync.WaitGroup
		results := make([]*docstore.Document, writers)
		errs := make([]error, writers)
		startLine := make(chan struct{})
		for w := 0; w < writers; w++ {
			wg.Add(1)
			go func(w int) {
				defer wg.Done()
				<-startLine
				results[w], errs[w] = s.Replace(c, doc(part, "hot", docstore.TypeResource, "", map[string]any{"round": round, "writer": w}), cur.ETag)
			}(w)
		}
		close(startLine)
		wg.Wait()
		winners := 0
		var winner *docstore.Document
		for w := 0; w < writers; w++ {
			switch {
			case errs[w] == nil:
				winners++
				winner = results[w]
			case errors.Is(errs[w], docstore.ErrPreconditionFailed):
			default:
				t.Fatalf("round %d writer %d: unexpected error %v", round, w, errs[w])
			}
		}
		if winners != 1 {
			t.Fatalf("round %d: %d winners, want exactly 1", round, winners)
		}
		got, err := s.Get(c, part, "hot")
		if err != nil {
			t.Fatal(err)
		}
		if got.ETag != winner.ETag || bodyOf(t, got)["round"] != float64(round) {
			t.Fatalf("round %d: stored %s (etag %s), winner etag %s", round, got.Body, got.ETag, winner.ETag)
		}
		cur = got
	}
}

// testWriteSeq checks that every write reports its position in the change feed, and that the
// feed reports the same position.
func testWriteSeq(t *testing.T, s docstore.Store) {
	c := ctx(t)
	created := mustCreate(t, s, doc(part, "a", docstore.TypeResource, rid("a"), map[string]any{"n": 1}))
	if created.Seq <= 0 {
		t.Fatalf("create returned seq %d; want a positive feed position", created.Seq)
	}
	replaced, err := s.Replace(c, doc(part, "a", docstore.TypeResource, rid("a"), map[string]any{"n": 2}), created.ETag)
	if err != nil {
		t.Fatal(err)
	}
	if replaced.Seq <= created.Seq {
		t.Fatalf("replace seq %d not after create seq %d", replaced.Seq, created.Seq)
	}
	out, err := s.Transact(c, part, []docstore.TxOp{{Kind: docstore.TxCreate, Doc: doc(part, "b", docstore.TypeOperation, rid("a"), map[string]any{})}})
	if err != nil {
		t.Fatal(err)
	}
	if out[0].Seq <= replaced.Seq {
		t.Fatalf("transaction seq %d not after replace seq %d", out[0].Seq, replaced.Seq)
	}
	changes, err := s.Changes(c, "", 100)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]int64{}
	for _, ch := range changes.Changes {
		got[ch.Doc.ID] = ch.Seq
	}
	if got["a"] != replaced.Seq || got["b"] != out[0].Seq {
		t.Fatalf("feed positions %v; want a=%d b=%d", got, replaced.Seq, out[0].Seq)
	}
}

// testPaginationAcrossPartitions pages a cross-partition query: every document exactly once.
func testPaginationAcrossPartitions(t *testing.T, s docstore.Store) {
	c := ctx(t)
	want := map[string]bool{}
	for p := 1; p <= 3; p++ {
		partition := fmt.Sprintf("00000000-0000-0000-0000-00000000000%d", p)
		for i := 0; i < 20; i++ {
			id := fmt.Sprintf("op-%d-%02d", p, i)
			mustCreate(t, s, doc(partition, id, docstore.TypeOperation, "", map[string]any{}))
			want[partition+"|"+id] = true
		}
		mustCreate(t, s, doc(partition, "res", docstore.TypeResource, "", map[string]any{}))
	}
	seen := map[string]bool{}
	q := docstore.Query{Type: docstore.TypeOperation, Limit: 7}
	for pages := 1; ; pages++ {
		p, err := s.Query(c, q)
		if err != nil {
			t.Fatalf("page %d: %v", pages, err)
		}
		if len(p.Documents) > 7 {
			t.Fatalf("page %d has %d documents, limit 7", pages, len(p.Documents))
		}
		for _, k := range ids(p.Documents) {
			if seen[k] {
				t.Fatalf("document %s returned twice", k)
			}
			seen[k] = true
		}
		if p.Continuation == "" {
			break
		}
		if pages > 60 {
			t.Fatal("pagination does not end")
		}
		q.Continuation = p.Continuation
	}
	if !reflect.DeepEqual(seen, want) {
		t.Fatalf("paged %d operations across partitions, want %d", len(seen), len(want))
	}
}
