package postgres_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"testing"

	"github.com/openhcp/openhcp/internal/docstore"
	"github.com/openhcp/openhcp/internal/docstore/postgres"
)

func TestQueryHeadsPagesLikeQueryWithoutBodiesAndGetManyReadsCurrentBodies(t *testing.T) {
	ctx := context.Background()
	s, _ := open(t, postgres.Options{})
	const partition = "sub1"
	var ids []string
	for i := 0; i < 7; i++ {
		id := fmt.Sprintf("c%02d", i)
		ids = append(ids, id)
		if _, err := s.Create(ctx, &docstore.Document{PartitionKey: partition, ID: id, Type: "cluster",
			ResourceID: "/subscriptions/sub1/x/" + id, Body: json.RawMessage(`{"n":` + fmt.Sprint(i) + `}`)}); err != nil {
			t.Fatalf("create %s: %v", id, err)
		}
	}
	q := docstore.Query{Partition: partition, Type: "cluster", Limit: 3}
	qh := q
	for page := 0; ; page++ {
		full, err := s.Query(ctx, q)
		if err != nil {
			t.Fatalf("query page %d: %v", page, err)
		}
		heads, err := s.QueryHeads(ctx, qh)
		if err != nil {
			t.Fatalf("query heads page %d: %v", page, err)
		}
		if full.Continuation != heads.Continuation || len(full.Documents) != len(heads.Documents) {
			t.Fatalf("page %d: heads %d docs cont %q, query %d docs cont %q", page,
				len(heads.Documents), heads.Continuation, len(full.Documents), full.Continuation)
		}
		for i, h := range heads.Documents {
			f := full.Documents[i]
			if h.ID != f.ID || h.ETag != f.ETag || h.PartitionKey != f.PartitionKey || h.ResourceID != f.ResourceID {
				t.Fatalf("page %d item %d: head %+v, query %+v", page, i, h, f)
			}
			if h.Body != nil {
				t.Fatalf("page %d item %d: head carries a body %s", page, i, h.Body)
			}
		}
		if full.Continuation == "" {
			break
		}
		q.Continuation, qh.Continuation = full.Continuation, heads.Continuation
	}

	// A document replaced after the heads were read comes back from GetMany with its new ETag and
	// body; a deleted one is absent; unknown IDs are ignored.
	old, err := s.Get(ctx, partition, "c01")
	if err != nil {
		t.Fatal(err)
	}
	old.Body = json.RawMessage(`{"n":"new"}`)
	cur, err := s.Replace(ctx, old, old.ETag)
	if err != nil {
		t.Fatalf("replace: %v", err)
	}
	c2, _ := s.Get(ctx, partition, "c02")
	if err := s.Delete(ctx, partition, "c02", c2.ETag); err != nil {
		t.Fatalf("delete: %v", err)
	}
	got, err := s.GetMany(ctx, partition, "cluster", []string{"c01", "c02", "c04", "nope"})
	if err != nil {
		t.Fatalf("get many: %v", err)
	}
	byID := map[string]*docstore.Document{}
	for _, d := range got {
		byID[d.ID] = d
	}
	if len(byID) != 2 || byID["c01"] == nil || byID["c04"] == nil {
		t.Fatalf("get many returned %v, want c01 and c04", byID)
	}
	if byID["c01"].ETag != cur.ETag || string(byID["c01"].Body) != `{"n": "new"}` && string(byID["c01"].Body) != `{"n":"new"}` {
		t.Fatalf("c01 = etag %q body %s, want etag %q and the new body", byID["c01"].ETag, byID["c01"].Body, cur.ETag)
	}
	if string(byID["c04"].Body) != `{"n": 4}` && string(byID["c04"].Body) != `{"n":4}` {
		t.Fatalf("c04 body %s", byID["c04"].Body)
	}
}

func TestGetManyReadsOnlyItsTypeAndListsBeyondOneStatement(t *testing.T) {
	ctx := context.Background()
	s, _ := open(t, postgres.Options{})
	const partition = "sub1"
	create := func(id, typ string) {
		t.Helper()
		if _, err := s.Create(ctx, &docstore.Document{PartitionKey: partition, ID: id, Type: typ,
			ResourceID: "/subscriptions/sub1/x/" + id, Body: json.RawMessage(`{}`)}); err != nil {
			t.Fatalf("create %s: %v", id, err)
		}
	}
	// 2500 IDs asked (three statements' worth); documents at the start, the middle and the end
	// of the list, one of them of another type.
	var ids []string
	for i := range 2500 {
		ids = append(ids, fmt.Sprintf("id%04d", i))
	}
	for _, tc := range []struct {
		id, typ string
	}{{"id0000", docstore.TypeResource}, {"id1500", docstore.TypeResource}, {"id2499", docstore.TypeResource}, {"id2000", docstore.TypeOperation}} {
		create(tc.id, tc.typ)
	}
	got, err := s.GetMany(ctx, partition, docstore.TypeResource, ids)
	if err != nil {
		t.Fatalf("get many: %v", err)
	}
	var gotIDs []string
	for _, d := range got {
		if d.Type != docstore.TypeResource {
			t.Errorf("%s of type %q returned for a read of %q", d.ID, d.Type, docstore.TypeResource)
		}
		gotIDs = append(gotIDs, d.ID)
	}
	if want := "[id0000 id1500 id2499]"; fmt.Sprint(gotIDs) != want {
		t.Fatalf("get many of %d IDs returned %v, want %s (in ID order, no operation)", len(ids), gotIDs, want)
	}
	if got, err := s.GetMany(ctx, partition, docstore.TypeOperation, []string{"id0000", "id2000"}); err != nil || len(got) != 1 || got[0].ID != "id2000" {
		t.Fatalf("get many of operations: %v %v, want id2000 alone", got, err)
	}
}

func TestGetUnlessETagLeavesOutOnlyTheBodyOfAnUnchangedDocument(t *testing.T) {
	ctx := context.Background()
	s, _ := open(t, postgres.Options{})
	created, err := s.Create(ctx, &docstore.Document{PartitionKey: "sub1", ID: "c1", Type: "cluster",
		ResourceID: "/subscriptions/sub1/x/c1", Body: json.RawMessage(`{"n":1}`)})
	if err != nil {
		t.Fatal(err)
	}
	full, err := s.Get(ctx, "sub1", "c1")
	if err != nil {
		t.Fatal(err)
	}
	same := func(what string, d *docstore.Document) {
		t.Helper()
		if d.PartitionKey != full.PartitionKey || d.ID != full.ID || d.Type != full.Type || d.ResourceID != full.ResourceID ||
			d.ETag != full.ETag || d.Seq != full.Seq || d.TTL != full.TTL {
			t.Fatalf("%s: %+v, Get: %+v", what, d, full)
		}
	}
	unchanged, err := s.GetUnlessETag(ctx, "sub1", "c1", created.ETag)
	if err != nil {
		t.Fatal(err)
	}
	same("at its ETag", unchanged)
	if unchanged.Body != nil {
		t.Fatalf("at its ETag the body came: %s", unchanged.Body)
	}
	for _, etag := range []string{"another", `"` + created.ETag + `"`} {
		changed, err := s.GetUnlessETag(ctx, "sub1", "c1", etag)
		if err != nil {
			t.Fatal(err)
		}
		same("at ETag "+etag, changed)
		if string(changed.Body) != string(full.Body) {
			t.Fatalf("at ETag %s the body is %s, want %s", etag, changed.Body, full.Body)
		}
	}
	if _, err := s.GetUnlessETag(ctx, "sub1", "missing", created.ETag); !errors.Is(err, docstore.ErrNotFound) {
		t.Fatalf("a missing document: %v, want ErrNotFound", err)
	}
}
