package audit

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/openhcp/openhcp/admin/pkg/adminapi"
)

// TestRetentionPrunesOnlyOldRecords: the service login, which may not delete, prunes records
// older than the retention through admin_audit_prune, and nothing else; nobody, the owner
// included, can delete a younger record or backdate one to make it prunable.
func TestRetentionPrunesOnlyOldRecords(t *testing.T) {
	_, superDSN, serviceDSN := installed(t)
	ctx := context.Background()
	su, err := pgx.Connect(ctx, superDSN)
	if err != nil {
		t.Fatal(err)
	}
	defer su.Close(ctx)
	l, err := Open(ctx, serviceDSN)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()

	// Old records as a restore from a backup would write them: with the triggers off, which
	// only a superuser can do.
	insertAged := func(t *testing.T, age time.Duration, cid string) {
		t.Helper()
		tx, err := su.Begin(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer tx.Rollback(ctx) //nolint:errcheck
		if _, err := tx.Exec(ctx, "SET LOCAL session_replication_role = replica"); err != nil {
			t.Fatal(err)
		}
		if _, err := tx.Exec(ctx, `INSERT INTO admin_audit (at, request_id, correlation_id, person, grp, subject, method, route, path, target, reason, outcome, status)
			VALUES (clock_timestamp() - $1::interval, 'r', $2, '', '', '', 'GET', '/', '/', '', '', 'unauthenticated', 401)`, age.String(), cid); err != nil {
			t.Fatal(err)
		}
		if err := tx.Commit(ctx); err != nil {
			t.Fatal(err)
		}
	}
	retention, err := l.Retention(ctx)
	if err != nil || retention < 365*24*time.Hour {
		t.Fatalf("retention %v (%v), want at least a year", retention, err)
	}
	insertAged(t, retention+24*time.Hour, "expired")
	insertAged(t, retention-24*time.Hour, "kept-old")
	if _, err := l.Append(ctx, adminapi.AuditEntry{RequestID: "r", CorrelationID: "recent", Method: "GET", Route: "/", Path: "/", Outcome: Unauthenticated, Status: 401}); err != nil {
		t.Fatal(err)
	}
	count := func(t *testing.T, cid string) int {
		t.Helper()
		var n int
		if err := su.QueryRow(ctx, "SELECT count(*) FROM admin_audit WHERE correlation_id = $1", cid).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}

	t.Run("service_login_cannot_delete_directly", func(t *testing.T) {
		_, err := l.Pool().Exec(ctx, "DELETE FROM admin_audit")
		if err == nil || !strings.Contains(err.Error(), "permission denied") {
			t.Fatalf("DELETE as the service: %v", err)
		}
	})
	t.Run("owner_cannot_delete_a_record_younger_than_the_retention", func(t *testing.T) {
		_, err := su.Exec(ctx, "DELETE FROM admin_audit WHERE correlation_id IN ('kept-old', 'recent')")
		if err == nil || !strings.Contains(err.Error(), "append-only") {
			t.Fatalf("DELETE of young records as the owner: %v", err)
		}
	})
	t.Run("a_record_cannot_be_backdated", func(t *testing.T) {
		if _, err := l.Pool().Exec(ctx, `INSERT INTO admin_audit (at, request_id, correlation_id, person, grp, subject, method, route, path, target, reason, outcome, status)
			VALUES (now() - interval '10 years', 'r', 'backdated', '', '', '', 'GET', '/', '/', '', '', 'unauthenticated', 401)`); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("prune_deletes_exactly_the_expired_records", func(t *testing.T) {
		n, err := l.Prune(ctx)
		if err != nil || n != 1 {
			t.Fatalf("Prune: %d, %v; want 1", n, err)
		}
		for cid, want := range map[string]int{"expired": 0, "kept-old": 1, "recent": 1, "backdated": 1} {
			if got := count(t, cid); got != want {
				t.Errorf("%s: %d records, want %d", cid, got, want)
			}
		}
	})
}
