package store

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/openhcp/openhcp/cluster-service/pkg/placement"
)

// TestReadsAnswerAfterThePoolsConnectionsWereTerminated: a PostgreSQL restart kills every
// connection the pool holds, and the pool learns it only when it next uses one. The reads that
// follow at once (more of them than the pool held dead connections, each used a moment ago, so
// pgxpool's own ping of a connection idle for over a second does not apply) all answer: the
// read that meets a dead connection runs once more, and the pool then checks each connection
// it held from before the loss before handing it out.
func TestReadsAnswerAfterThePoolsConnectionsWereTerminated(t *testing.T) {
	const pooled = 8
	dsn := newDSN(t)
	s := open(t, dsn)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	register(t, s, "mgmt-1", 10)
	c1, _, err := s.CreateCluster(ctx, newCluster(csid(1), armID("one")), placement.LeastLoaded{})
	if err != nil {
		t.Fatal(err)
	}

	admin, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close(context.Background())
	listener := func() int {
		var pid int
		if err := admin.QueryRow(ctx, `SELECT coalesce(max(pid), 0) FROM pg_stat_activity
WHERE datname = current_database() AND query LIKE 'LISTEN %' AND pid <> pg_backend_pid()`).Scan(&pid); err != nil {
			t.Fatalf("find the listener: %v", err)
		}
		return pid
	}
	waitFor := func(what string, cond func() bool) {
		t.Helper()
		for !cond() {
			if ctx.Err() != nil {
				t.Fatalf("%s: not before the deadline", what)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	var first int
	waitFor("a listener", func() bool { first = listener(); return first != 0 })

	// Each pooled connection has served the reads below once, so they run as prepared statements.
	conns := make([]*pgxpool.Conn, 0, pooled)
	for range pooled {
		c, err := s.pool.Acquire(ctx)
		if err != nil {
			t.Fatal(err)
		}
		conns = append(conns, c)
		var id string
		if err := c.QueryRow(ctx, `SELECT `+clusterColumns+` FROM clusters WHERE id = $1`, c1.ID).Scan(&id, new(string), new([]byte), new([]byte),
			new(string), new(string), new(bool), new(int64), new(time.Time), new(time.Time), new([]byte), new(string), new(int64)); err != nil {
			t.Fatalf("warm a connection: %v", err)
		}
	}
	for _, c := range conns {
		c.Release()
	}
	var n int
	if err := admin.QueryRow(ctx, `SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity
WHERE datname = current_database() AND pid <> pg_backend_pid()`).Scan(&n); err != nil {
		t.Fatalf("terminate backends: %v", err)
	}
	if n <= pooled {
		t.Fatalf("terminated %d backends, want the %d pooled and the listener", n, pooled)
	}
	for i := range pooled + 2 {
		if _, err := s.GetCluster(ctx, c1.ID); err != nil {
			t.Fatalf("get cluster #%d after the connections died: %v", i, err)
		}
		if _, err := s.ListClusters(ctx, ListOptions{}); err != nil {
			t.Fatalf("list clusters #%d after the connections died: %v", i, err)
		}
	}
}
