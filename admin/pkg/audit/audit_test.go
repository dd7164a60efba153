package audit

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/openhcp/openhcp/internal/pgserver"
	"github.com/openhcp/openhcp/internal/pgserver/pgservertest"
)

// installed starts a real PostgreSQL, installs the audit table as the superuser and returns
// the superuser's DSN and the DSN of the service login "adminsvc" (the test cluster trusts
// loopback logins, so the role needs no password here).
func installed(t *testing.T) (pg *pgserver.Server, superDSN, serviceDSN string) {
	t.Helper()
	pg = pgservertest.Start(t)
	superDSN = pgservertest.NewDatabase(t, pg)
	ctx := context.Background()
	c, err := pgx.Connect(ctx, superDSN)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close(ctx)
	if _, err := c.Exec(ctx, "DO $$ BEGIN IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'adminsvc') THEN CREATE ROLE adminsvc LOGIN; END IF; END $$"); err != nil {
		t.Fatal(err)
	}
	if err := Install(ctx, c, "adminsvc"); err != nil {
		t.Fatal(err)
	}
	// Idempotent: the launcher may install again on a restart.
	if err := Install(ctx, c, "adminsvc"); err != nil {
		t.Fatalf("second Install: %v", err)
	}
	// The schema is pgmigrate's: each migration applied once, recorded in schema_migrations.
	var versions []int32
	rows, err := c.Query(ctx, "SELECT version FROM schema_migrations ORDER BY version")
	if err == nil {
		versions, err = pgx.CollectRows(rows, pgx.RowTo[int32])
	}
	files, _ := migrations.ReadDir("migrations")
	want := make([]int32, len(files))
	for i := range want {
		want[i] = int32(i + 1)
	}
	if err != nil || !slices.Equal(versions, want) {
		t.Fatalf("schema_migrations %v (%v), want versions %v (one per file of migrations/)", versions, err, want)
	}
	return pg, superDSN, strings.Replace(superDSN, "postgres://postgres@", "postgres://adminsvc@", 1)
}

func TestServiceLoginMayOnlyAppendAndRead(t *testing.T) {
	_, superDSN, serviceDSN := installed(t)
	ctx := context.Background()
	l, err := Open(ctx, serviceDSN)
	if err != nil {
		t.Fatalf("Open as the service login: %v", err)
	}
	defer l.Close()
	e, err := l.Append(ctx, Entry{RequestID: "r1", CorrelationID: "c1", Person: "alice", Group: "sre-admin", Method: "POST",
		Route: "POST /admin/v1/shards/{name}/cordon", Path: "/admin/v1/shards/mgmt-1/cordon", Target: "mgmt-1", Reason: "disk", Outcome: Allowed})
	if err != nil {
		t.Fatalf("Append: %v", err)
	}
	if e.ID == 0 || e.Time.IsZero() {
		t.Fatalf("Append returned no ID or time: %+v", e)
	}

	svc, err := pgx.Connect(ctx, serviceDSN)
	if err != nil {
		t.Fatal(err)
	}
	defer svc.Close(ctx)
	// The service login is refused by the GRANTs themselves (42501), before any trigger runs.
	for _, q := range []string{
		"UPDATE admin_audit SET reason = 'rewritten'",
		"DELETE FROM admin_audit",
		"TRUNCATE admin_audit",
		"DROP TABLE admin_audit",
		"ALTER TABLE admin_audit DISABLE TRIGGER admin_audit_no_change",
		"DELETE FROM schema_migrations",
	} {
		t.Run(strings.Fields(q)[0]+"_refused_to_the_service", func(t *testing.T) {
			_, err := svc.Exec(ctx, q)
			var pgErr *pgconn.PgError
			if !errors.As(err, &pgErr) || (pgErr.Code != "42501" && pgErr.Code != "42000") {
				t.Fatalf("%s: want permission denied (42501), got %v", q, err)
			}
		})
	}
	// A GRANT by a non-owner is a warning ("no privileges were granted"), not an error: what
	// counts is that the privilege is still missing afterwards.
	if _, err := svc.Exec(ctx, "GRANT UPDATE, DELETE ON admin_audit TO adminsvc"); err != nil {
		t.Logf("self-grant: %v", err)
	}
	var canUpdate bool
	if err := svc.QueryRow(ctx, "SELECT has_table_privilege('admin_audit', 'UPDATE') OR has_table_privilege('admin_audit', 'DELETE')").Scan(&canUpdate); err != nil || canUpdate {
		t.Fatalf("the service granted itself UPDATE/DELETE: %v %v", canUpdate, err)
	}
	// Even the owner cannot change a record: the trigger refuses.
	super, err := pgx.Connect(ctx, superDSN)
	if err != nil {
		t.Fatal(err)
	}
	defer super.Close(ctx)
	for _, q := range []string{"UPDATE admin_audit SET reason = 'x'", "DELETE FROM admin_audit", "TRUNCATE admin_audit"} {
		if _, err := super.Exec(ctx, q); err == nil || !strings.Contains(err.Error(), "append-only") {
			t.Errorf("owner %s: want the append-only trigger to refuse, got %v", q, err)
		}
	}
	got, _, err := l.Query(ctx, Filter{})
	if err != nil || len(got) != 1 || got[0].Reason != "disk" {
		t.Fatalf("record after the refused changes: %+v, %v", got, err)
	}
}

func TestOpenRefusesALoginThatCouldRewriteTheLog(t *testing.T) {
	_, superDSN, serviceDSN := installed(t)
	ctx := context.Background()
	super, err := pgx.Connect(ctx, superDSN)
	if err != nil {
		t.Fatal(err)
	}
	defer super.Close(ctx)
	for _, tc := range []struct{ name, grant, revoke, want string }{
		{"update_privilege", "GRANT UPDATE ON admin_audit TO adminsvc", "REVOKE UPDATE ON admin_audit FROM adminsvc", "may update, delete or truncate"},
		{"delete_privilege", "GRANT DELETE ON admin_audit TO adminsvc", "REVOKE DELETE ON admin_audit FROM adminsvc", "may update, delete or truncate"},
		{"owner_membership", "GRANT postgres TO adminsvc", "REVOKE postgres FROM adminsvc", "owns"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := super.Exec(ctx, tc.grant); err != nil {
				t.Fatal(err)
			}
			defer super.Exec(ctx, tc.revoke)
			l, err := Open(ctx, serviceDSN)
			if err == nil {
				l.Close()
				t.Fatal("Open accepted a login that can rewrite the audit log")
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %q does not say %q", err, tc.want)
			}
		})
	}
	if _, err := Open(ctx, superDSN); err == nil || !strings.Contains(err.Error(), "owns") {
		t.Fatalf("Open as the table's owner: want refusal, got %v", err)
	}
}

func TestQueryFiltersAndPages(t *testing.T) {
	_, _, serviceDSN := installed(t)
	ctx := context.Background()
	l, err := Open(ctx, serviceDSN)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	for i := range 5 {
		person, outcome := "alice", Allowed
		if i%2 == 1 {
			person, outcome = "bob", Forbidden
		}
		if _, err := l.Append(ctx, Entry{RequestID: fmt.Sprint("r", i), CorrelationID: fmt.Sprint("c", i), Person: person, Group: "g",
			Method: "GET", Route: "GET /admin/v1/shards", Path: "/admin/v1/shards", Target: fmt.Sprint("T", i), Outcome: outcome}); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct {
		name string
		f    Filter
		want []string // request IDs, newest first
	}{
		{"all_newest_first", Filter{}, []string{"r4", "r3", "r2", "r1", "r0"}},
		{"by_person", Filter{Person: "bob"}, []string{"r3", "r1"}},
		{"by_outcome", Filter{Outcome: Allowed}, []string{"r4", "r2", "r0"}},
		{"by_target_case_insensitive", Filter{Target: "t2"}, []string{"r2"}},
		{"by_correlation", Filter{CorrelationID: "c3"}, []string{"r3"}},
		{"by_route_prefix", Filter{RoutePrefix: "GET /admin/v1/sh"}, []string{"r4", "r3", "r2", "r1", "r0"}},
		{"until_excludes_all", Filter{Until: time.Now().Add(-time.Hour)}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, _, err := l.Query(ctx, tc.f)
			if err != nil {
				t.Fatal(err)
			}
			var ids []string
			for _, e := range got {
				ids = append(ids, e.RequestID)
			}
			if fmt.Sprint(ids) != fmt.Sprint(tc.want) {
				t.Fatalf("got %v, want %v", ids, tc.want)
			}
		})
	}
	var all []string
	token := ""
	for {
		page, next, err := l.Query(ctx, Filter{Limit: 2, PageToken: token})
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range page {
			all = append(all, e.RequestID)
		}
		if next == "" {
			break
		}
		token = next
	}
	if fmt.Sprint(all) != "[r4 r3 r2 r1 r0]" {
		t.Fatalf("paging by 2 gave %v", all)
	}
	if _, _, err := l.Query(ctx, Filter{PageToken: "x"}); !errors.Is(err, ErrInvalidPageToken) {
		t.Fatalf("bad page token: %v", err)
	}
}
