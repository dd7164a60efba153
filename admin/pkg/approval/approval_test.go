package approval_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/openhcp/openhcp/admin/pkg/approval"
	"github.com/openhcp/openhcp/admin/pkg/audit"
	"github.com/openhcp/openhcp/internal/pgserver/pgservertest"
)

// TestTwoPersonRule: a request is approved once, by someone else, within the window; the
// database itself refuses a self-approval, and the service's login may not change either table.
func TestTwoPersonRule(t *testing.T) {
	ctx := context.Background()
	dsn := pgservertest.NewDatabase(t, pgservertest.Start(t))
	su, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer su.Close(ctx)
	if _, err := su.Exec(ctx, "DO $$ BEGIN IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'adminsvc') THEN CREATE ROLE adminsvc LOGIN; END IF; END $$"); err != nil {
		t.Fatal(err)
	}
	if err := audit.Install(ctx, su, "adminsvc"); err != nil {
		t.Fatal(err)
	}
	if err := approval.Install(ctx, su, "adminsvc"); err != nil {
		t.Fatal(err)
	}
	pool, err := pgxpool.New(ctx, strings.Replace(dsn, "postgres://postgres@", "postgres://adminsvc@", 1))
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	s := approval.New(pool)
	if err := s.Check(ctx); err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	add := func(id string) {
		if _, err := s.Add(ctx, approval.Request{ID: id, Person: "alice", Group: "sre-admin", ClusterID: "c", TTLSeconds: 3600, Reason: "r"}); err != nil {
			t.Fatal(err)
		}
	}
	add("r1")
	add("r2")
	for _, tc := range []struct {
		name, id, approver string
		at                 time.Time
		want               error
	}{
		{"requester_is_refused", "r1", "alice", now, approval.ErrSelfApproval},
		{"unknown_request", "r9", "carol", now, approval.ErrNotFound},
		{"after_the_window", "r2", "carol", now.Add(approval.Window + time.Minute), approval.ErrExpired},
		{"second_sre_admin_approves", "r1", "carol", now, nil},
		{"only_once", "r1", "dave", now, approval.ErrAlreadyApproved},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, err := s.Approve(ctx, tc.id, approval.Approval{Approver: tc.approver, Group: "sre-admin", Reason: "ok"}, tc.at)
			if !errors.Is(err, tc.want) {
				t.Fatalf("err = %v, want %v", err, tc.want)
			}
			if tc.want == nil && (r.Approval == nil || r.Approval.Approver != tc.approver) {
				t.Fatalf("approval %+v", r.Approval)
			}
		})
	}
	if _, err := pool.Exec(ctx, `INSERT INTO admin_breakglass_approvals (request, approver, grp, reason, request_id) VALUES ('r2', 'alice', 'sre-admin', 'x', '')`); err == nil {
		t.Fatal("the database accepted a self-approval")
	}
	for _, q := range []string{`UPDATE admin_breakglass_approvals SET approver = 'alice'`, `DELETE FROM admin_breakglass_requests`, `UPDATE admin_breakglass_requests SET person = 'mallory'`} {
		if _, err := pool.Exec(ctx, q); err == nil {
			t.Errorf("the service login may %s", q)
		}
	}
	if p, err := s.Pending(ctx, now); err != nil || len(p) != 1 || p[0].ID != "r2" {
		t.Fatalf("pending %+v %v", p, err)
	}
}
