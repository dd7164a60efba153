package audit

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// terminatePool opens n connections of l's pool at once, so the pool holds n idle ones as a
// serving admin API does, then ends every backend of the database but the caller's, as a
// PostgreSQL restart does: the pool still holds the dead connections and learns only when it
// next uses one. It returns how many backends it ended.
func terminatePool(ctx context.Context, t *testing.T, l *Log, superDSN string, n int) int {
	t.Helper()
	var held []interface{ Release() }
	for range n {
		c, err := l.Pool().Acquire(ctx)
		if err != nil {
			t.Fatalf("acquire: %v", err)
		}
		held = append(held, c)
	}
	for _, c := range held {
		c.Release()
	}
	c, err := pgx.Connect(ctx, superDSN)
	if err != nil {
		t.Fatalf("connect to terminate backends: %v", err)
	}
	defer c.Close(ctx)
	var ended int
	if err := c.QueryRow(ctx, `SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity
WHERE datname = current_database() AND pid <> pg_backend_pid()`).Scan(&ended); err != nil {
		t.Fatalf("terminate backends: %v", err)
	}
	return ended
}

// records counts the audit records of a request, read as the superuser.
func records(ctx context.Context, t *testing.T, superDSN, requestID string) int {
	t.Helper()
	c, err := pgx.Connect(ctx, superDSN)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close(ctx)
	var n int
	if err := c.QueryRow(ctx, "SELECT count(*) FROM admin_audit WHERE request_id = $1", requestID).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// TestLogAnswersAfterItsConnectionsWereTerminated: once PostgreSQL is back, the audit log
// answers although every connection its pool held died with the old server. A read that meets
// a dead connection runs once more; after it, the pool checks each connection it held from
// before the loss, so appends do not meet one. An append is never written twice: the first
// one after the loss may fail (the statement may have reached the server), and then it wrote
// nothing, so the admin API refuses the call it audits.
func TestLogAnswersAfterItsConnectionsWereTerminated(t *testing.T) {
	const pooled = 4
	entry := func(id string) Entry {
		return Entry{RequestID: id, CorrelationID: "c", Person: "alice", Group: "sre-admin", Method: "POST",
			Route: "POST /admin/v1/shards/{name}/cordon", Path: "/admin/v1/shards/mgmt-1/cordon", Target: "mgmt-1", Outcome: Allowed}
	}
	for _, tc := range []struct {
		name string
		// first is the first call after the loss; mayFail says it may be refused.
		first   func(ctx context.Context, l *Log) error
		mayFail bool
	}{
		{"query_first_succeeds_then_appends_and_reads_succeed", func(ctx context.Context, l *Log) error {
			_, _, err := l.Query(ctx, Filter{Person: "alice"})
			return err
		}, false},
		{"retention_first_succeeds_then_appends_and_reads_succeed", func(ctx context.Context, l *Log) error {
			_, err := l.Retention(ctx)
			return err
		}, false},
		{"append_first_is_written_at_most_once_then_appends_and_reads_succeed", func(ctx context.Context, l *Log) error {
			_, err := l.Append(ctx, entry("first"))
			return err
		}, true},
		// The revocation list, approvals and sessions share the pool: a statement of theirs that
		// meets a dead connection makes the pool check the others too.
		{"another_store_on_the_pool_first_then_appends_and_reads_succeed", func(ctx context.Context, l *Log) error {
			var one int
			return l.Pool().QueryRow(ctx, "SELECT 1").Scan(&one)
		}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, superDSN, serviceDSN := installed(t)
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			l, err := Open(ctx, serviceDSN)
			if err != nil {
				t.Fatal(err)
			}
			defer l.Close()
			if n := terminatePool(ctx, t, l, superDSN, pooled); n < pooled {
				t.Fatalf("terminated %d backends, want at least the %d pooled", n, pooled)
			}
			err = tc.first(ctx, l)
			if err != nil && !tc.mayFail {
				t.Fatalf("first call after the connections died: %v", err)
			}
			if tc.mayFail && strings.HasPrefix(tc.name, "append_first") {
				want := 1
				if err != nil {
					want = 0 // refused: the SRE's call does not go ahead, and nothing was recorded
				}
				if got := records(ctx, t, superDSN, "first"); got != want {
					t.Fatalf("first append (err %v) wrote %d records, want %d", err, got, want)
				}
			}
			// More calls than the pool held dead connections: none may meet one.
			for i := range pooled + 2 {
				id := fmt.Sprintf("after-%d", i)
				if _, err := l.Append(ctx, entry(id)); err != nil {
					t.Fatalf("append #%d after the loss was seen: %v", i, err)
				}
				if got := records(ctx, t, superDSN, id); got != 1 {
					t.Fatalf("append #%d wrote %d records, want 1", i, got)
				}
				if _, _, err := l.Query(ctx, Filter{Person: "alice"}); err != nil {
					t.Fatalf("query #%d after the loss was seen: %v", i, err)
				}
				if _, err := l.Retention(ctx); err != nil {
					t.Fatalf("retention #%d after the loss was seen: %v", i, err)
				}
				var one int
				if err := l.Pool().QueryRow(ctx, "SELECT 1").Scan(&one); err != nil {
					t.Fatalf("another store's statement #%d after the loss was seen: %v", i, err)
				}
			}
		})
	}
}
