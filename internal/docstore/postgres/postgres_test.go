package postgres_test

import (
	"context"
	"fmt"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/openhcp/openhcp/internal/docstore"
	"github.com/openhcp/openhcp/internal/docstore/postgres"
	"github.com/openhcp/openhcp/internal/docstore/storetest"
	"github.com/openhcp/openhcp/internal/pgserver/pgservertest"
)

// server is one PostgreSQL for the package; each test gets a fresh database.
var server pgservertest.Shared

func TestMain(m *testing.M) { server.Main(m) }

func open(t *testing.T, o postgres.Options) (*postgres.Store, string) {
	t.Helper()
	dsn := pgservertest.NewDatabase(t, server.Get(t))
	s, err := postgres.Open(context.Background(), dsn, o)
	if err != nil {
		t.Fatalf("open store: %v", err)
	}
	t.Cleanup(s.Close)
	return s, dsn
}

func TestConformance(t *testing.T) {
	storetest.Run(t, func(t *testing.T) docstore.Store {
		s, _ := open(t, postgres.Options{})
		return s
	})
}

func TestMigrateIsIdempotent(t *testing.T) {
	_, dsn := open(t, postgres.Options{})
	// A second replica starting on the same database applies nothing and keeps the data.
	s2, err := postgres.Open(context.Background(), dsn, postgres.Options{})
	if err != nil {
		t.Fatalf("second open: %v", err)
	}
	defer s2.Close()
	c, err := pgx.Connect(context.Background(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close(context.Background())
	var n int
	if err := c.QueryRow(context.Background(), "SELECT count(*) FROM schema_migrations").Scan(&n); err != nil {
		t.Fatal(err)
	}
	files, err := filepath.Glob("migrations/*.sql")
	if err != nil || len(files) == 0 {
		t.Fatalf("migration files: %v %v", files, err)
	}
	if n != len(files) {
		t.Fatalf("schema_migrations has %d rows, want %d (one per migration)", n, len(files))
	}
}

func TestPurgeRemovesExpiredAndRecordsTombstone(t *testing.T) {
	s, _ := open(t, postgres.Options{PurgeInterval: -1})
	ctx := context.Background()
	d := &docstore.Document{PartitionKey: "p", ID: "op", Type: docstore.TypeOperation, Body: []byte(`{}`), TTL: 50 * time.Millisecond}
	created, err := s.Create(ctx, d)
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(200 * time.Millisecond)
	n, err := s.Purge(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if n != 1 {
		t.Fatalf("purged %d documents, want 1", n)
	}
	page, err := s.Changes(ctx, postgres.Checkpoint(created.Seq), 10)
	if err != nil {
		t.Fatal(err)
	}
	changes := page.Changes
	if len(changes) != 1 || !changes[0].Deleted || changes[0].Doc.ID != "op" {
		t.Fatalf("feed after purge = %+v, want one tombstone for op", changes)
	}
}

func TestPurgerRunsPeriodically(t *testing.T) {
	s, dsn := open(t, postgres.Options{PurgeInterval: 100 * time.Millisecond})
	ctx := context.Background()
	if _, err := s.Create(ctx, &docstore.Document{PartitionKey: "p", ID: "op", Type: docstore.TypeOperation, Body: []byte(`{}`), TTL: 10 * time.Millisecond}); err != nil {
		t.Fatal(err)
	}
	c, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close(ctx)
	deadline := time.Now().Add(10 * time.Second)
	for {
		var n int
		if err := c.QueryRow(ctx, "SELECT count(*) FROM documents").Scan(&n); err != nil {
			t.Fatal(err)
		}
		if n == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("expired document still stored after 10s")
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestFeedFollowerMissesNoCommit: writers create documents concurrently while a follower reads
// the change feed as fast as it can. A created document is never written again, so one the
// follower skipped (a seq that committed after the follower had passed it) would be missing at
// the end. The feed lock, held from each write's seq to its commit, prevents that; without it in
// write's pipeline this fails.
func TestFeedFollowerMissesNoCommit(t *testing.T) {
	s, _ := open(t, postgres.Options{PurgeInterval: -1})
	ctx := context.Background()
	const writers, perWriter = 8, 50
	var wg sync.WaitGroup
	errs := make(chan error, writers)
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range perWriter {
				// Half the writes are two-step transactions, half single creates.
				id := fmt.Sprintf("w%d-%d", w, i)
				var err error
				if i%2 == 0 {
					_, err = s.Transact(ctx, "p", []docstore.TxOp{
						{Kind: docstore.TxCreate, Doc: &docstore.Document{PartitionKey: "p", ID: id, Type: docstore.TypeResource, Body: []byte(`{}`)}},
						{Kind: docstore.TxCreate, Doc: &docstore.Document{PartitionKey: "p", ID: id + "-op", Type: docstore.TypeOperation, Body: []byte(`{}`)}},
					})
				} else {
					_, err = s.Create(ctx, &docstore.Document{PartitionKey: "p", ID: id, Type: docstore.TypeResource, Body: []byte(`{}`)})
				}
				if err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	seen := map[string]bool{}
	var checkpoint docstore.Checkpoint
	for finished := false; ; {
		select {
		case <-done:
			finished = true
		default:
		}
		page, err := s.Changes(ctx, checkpoint, 1000)
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range page.Changes {
			seen[c.Doc.ID] = true
		}
		checkpoint = page.Next
		if finished && len(page.Changes) == 0 {
			break
		}
	}
	close(errs)
	for err := range errs {
		t.Fatalf("write: %v", err)
	}
	want := writers * perWriter * 3 / 2
	page, err := s.Query(ctx, docstore.Query{Partition: "p", Limit: 2 * want})
	if err != nil || len(page.Documents) != want {
		t.Fatalf("documents = %d (%v), want %d", len(page.Documents), err, want)
	}
	var missed []string
	for _, d := range page.Documents {
		if !seen[d.ID] {
			missed = append(missed, fmt.Sprintf("%s (seq %d)", d.ID, d.Seq))
		}
	}
	if len(missed) > 0 {
		t.Fatalf("the follower never saw %d of %d documents: %v", len(missed), want, missed)
	}
}
