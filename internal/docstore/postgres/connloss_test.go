package postgres_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/openhcp/openhcp/internal/docstore"
	"github.com/openhcp/openhcp/internal/docstore/postgres"
)

// warmPool opens n connections in pool at once and returns them, so the pool holds n idle
// connections, as a serving process does.
func warmPool(ctx context.Context, t *testing.T, pool *pgxpool.Pool, n int) {
	t.Helper()
	conns := make([]*pgxpool.Conn, 0, n)
	for range n {
		c, err := pool.Acquire(ctx)
		if err != nil {
			t.Fatalf("acquire: %v", err)
		}
		conns = append(conns, c)
	}
	for _, c := range conns {
		c.Release()
	}
}

// terminateOthers ends every other backend of dsn's database, as a PostgreSQL restart does to a
// pool's connections: the pool still holds them and learns only when it next uses one.
func terminateOthers(ctx context.Context, t *testing.T, dsn string) int {
	t.Helper()
	c, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatalf("connect to terminate backends: %v", err)
	}
	defer c.Close(ctx)
	var n int
	if err := c.QueryRow(ctx, `SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity
WHERE datname = current_database() AND pid <> pg_backend_pid()`).Scan(&n); err != nil {
		t.Fatalf("terminate backends: %v", err)
	}
	return n
}

// TestStoreAnswersAfterItsConnectionsWereTerminated: once PostgreSQL is back, the store answers
// every call although each connection its pool held died with the old server. A read that meets
// a dead connection runs once more; after that, the pool checks each connection it held from
// before the loss before handing it out, so writes (which run again only where nothing was sent)
// do not meet one either.
func TestStoreAnswersAfterItsConnectionsWereTerminated(t *testing.T) {
	const pooled = 8
	calls := []struct {
		name string
		call func(ctx context.Context, s *postgres.Store) error
	}{
		{"get", func(ctx context.Context, s *postgres.Store) error { _, err := s.Get(ctx, "p", "d1"); return err }},
		{"query", func(ctx context.Context, s *postgres.Store) error {
			_, err := s.Query(ctx, docstore.Query{Partition: "p"})
			return err
		}},
		{"changes", func(ctx context.Context, s *postgres.Store) error { _, err := s.Changes(ctx, "", 10); return err }},
	}
	for _, first := range calls {
		t.Run(first.name+"_first_then_reads_and_writes_succeed", func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			s, dsn := open(t, postgres.Options{PurgeInterval: -1})
			if _, err := s.Create(ctx, &docstore.Document{PartitionKey: "p", ID: "d1", Type: docstore.TypeResource, Body: []byte(`{}`)}); err != nil {
				t.Fatal(err)
			}
			warmPool(ctx, t, s.Pool(), pooled)
			if n := terminateOthers(ctx, t, dsn); n < pooled {
				t.Fatalf("terminated %d backends, want at least the %d pooled", n, pooled)
			}
			if err := first.call(ctx, s); err != nil {
				t.Fatalf("%s, the first call after the connections died: %v", first.name, err)
			}
			// More calls than the pool held dead connections: none may meet one.
			for i := range pooled + 2 {
				for _, c := range calls {
					if err := c.call(ctx, s); err != nil {
						t.Fatalf("%s #%d after the loss was seen: %v", c.name, i, err)
					}
				}
				doc := &docstore.Document{PartitionKey: "p", ID: fmt.Sprintf("w%d", i), Type: docstore.TypeResource, Body: []byte(`{}`)}
				if _, err := s.Create(ctx, doc); err != nil {
					t.Fatalf("create #%d after the loss was seen: %v", i, err)
				}
			}
		})
	}
}
