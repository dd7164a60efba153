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
// API's pool held to its database, as a PostgreSQL restart does. The first call may be refused
// (the dead connection it met may have carried its statement; it is then a 503 without data,
// never served unaudited); every call after it is served and audited once, although the pool
// held more dead connections than that.
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

	refused := 0
	for i := range pooled + 3 {
		cid := "cid-connloss-" + strings.Repeat("x", i)
		code, ae, body := e.call(t, "alice", "GET", "/admin/v1/shards", "", adminapi.HeaderCorrelationID, cid)
		if code == http.StatusOK {
			if recs := e.lastAudit(t, audit.Filter{CorrelationID: cid, Outcome: audit.Allowed}); len(recs) != 1 {
				t.Fatalf("call #%d served with %d Allowed records, want 1: %+v", i, len(recs), recs)
			}
			continue
		}
		if code != http.StatusServiceUnavailable || strings.Contains(string(body), "mgmt-1") {
			t.Fatalf("call #%d: status %d %+v, want 200, or 503 without data: %s", i, code, ae, body)
		}
		if refused++; refused > 1 || i > 0 {
			t.Fatalf("call #%d refused (%d so far, %+v): only the first call after the loss may meet a dead connection", i, refused, ae)
		}
	}
}
