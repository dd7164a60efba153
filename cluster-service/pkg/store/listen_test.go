package store

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// TestListenerReconnectsAfterItsConnectionIsKilled: the cluster event listener's connection is
// terminated on the server, and the store LISTENs again on a new one (after its backoff).
func TestListenerReconnectsAfterItsConnectionIsKilled(t *testing.T) {
	dsn := newDSN(t)
	open(t, dsn)
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
}
