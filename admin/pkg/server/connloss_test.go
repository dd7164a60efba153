package server

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/openhcp/openhcp/admin/pkg/adminapi"
	"github.com/openhcp/openhcp/admin/pkg/audit"
)

// TestAdminAPIAnswersAfterTheAuditDatabaseConnectionsDied ends every connection the admin
// API's pool held to its database, as a PostgreSQL restart does. Every call is served and
// audited once, although the pool held more dead connections than one call uses: the first
// statement of a call, the revocation list's read, runs once more after meeting a dead
// connection, and from then on the pool checks its old connections before use. (Were an audit
// append the first to meet one, it would not be sent again and the call would be refused 503
// without data, never served unaudited: TestLogAnswersAfterItsConnectionsWereTerminated.)
func TestAdminAPIAnswersAfterTheAuditDatabaseConnectionsDied(t *testing.T) {
	e := start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	pool := e.log.Pool()
	pooled := int(pool.Config().MaxConns)
	held := make([]*pgxpool.Conn, 0, pooled)
	for range pooled {
		c, err := pool.Acquire(ctx)
		if err != nil {
			t.Fatalf("acquire: %v", err)
		}
		held = append(held, c)
	}
	for _, c := range held {
		c.Release()
	}
	su, err := pgx.Connect(ctx, e.auditSU)
	if err != nil {
		t.Fatal(err)
	}
	defer su.Close(ctx)
	var ended int
	if err := su.QueryRow(ctx, `SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity
WHERE datname = current_database() AND pid <> pg_backend_pid()`).Scan(&ended); err != nil {
		t.Fatalf("terminate backends: %v", err)
	}
	if ended < pooled {
		t.Fatalf("terminated %d backends, want at least the %d pooled", ended, pooled)
	}

	for i := range pooled + 3 {
		cid := "cid-connloss-" + strings.Repeat("x", i)
		code, ae, body := e.call(t, "alice", "GET", "/admin/v1/shards", "", adminapi.HeaderCorrelationID, cid)
		if code != http.StatusOK || !strings.Contains(string(body), "mgmt-1") {
			t.Fatalf("call #%d after the connections died: status %d %+v, want 200 with the shards: %s", i, code, ae, body)
		}
		if recs := e.lastAudit(t, audit.Filter{CorrelationID: cid, Outcome: audit.Allowed}); len(recs) != 1 {
			t.Fatalf("call #%d served with %d Allowed records, want 1: %+v", i, len(recs), recs)
		}
	}
}
