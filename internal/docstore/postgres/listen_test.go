package postgres_test

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/openhcp/openhcp/internal/docstore"
	"github.com/openhcp/openhcp/internal/docstore/postgres"
)

// TestListenerReconnectsAfterItsConnectionIsKilled: the listener's connection is terminated on
// the server; the store LISTENs again on a new connection (after its backoff), and a waiter
// sees the next write without the fallback poll (an hour here).
func TestListenerReconnectsAfterItsConnectionIsKilled(t *testing.T) {
	s, dsn := open(t, postgres.Options{PurgeInterval: -1, FallbackPoll: time.Hour})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	admin, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close(context.Background())
	listener := func() int {
		var pid int
		err := admin.QueryRow(ctx, `SELECT coalesce(max(pid), 0) FROM pg_stat_activity
WHERE datname = current_database() AND query LIKE 'LISTEN %' AND pid <> pg_backend_pid()`).Scan(&pid)
		if err != nil {
			t.Fatal(err)
		}
		return pid
	}
	waitFor := func(what string, cond func() bool) {
		t.Helper()
		for !cond() {
			if ctx.Err() != nil {
				t.Fatalf("%s: not within the deadline", what)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	var first int
	waitFor("first listener", func() bool { first = listener(); return first != 0 })
	if _, err := admin.Exec(ctx, "SELECT pg_terminate_backend($1)", first); err != nil {
		t.Fatal(err)
	}
	waitFor("listener on a new connection", func() bool { pid := listener(); return pid != 0 && pid != first })

	doc, err := s.Create(ctx, &docstore.Document{PartitionKey: "p", ID: "before", Type: docstore.TypeResource, Body: []byte(`{}`)})
	if err != nil {
		t.Fatal(err)
	}
	woken := make(chan error, 1)
	go func() { woken <- s.WaitForChanges(ctx, doc.Seq) }()
	if _, err := s.Create(ctx, &docstore.Document{PartitionKey: "p", ID: "after", Type: docstore.TypeResource, Body: []byte(`{}`)}); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-woken:
		if err != nil {
			t.Fatalf("WaitForChanges: %v", err)
		}
	case <-ctx.Done():
		t.Fatal("the waiter was not woken by the write after the listener reconnected")
	}
}
