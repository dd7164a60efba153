package revocation_test

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/openhcp/openhcp/admin/pkg/audit"
	"github.com/openhcp/openhcp/admin/pkg/revocation"
	"github.com/openhcp/openhcp/internal/pgserver/pgservertest"
	"github.com/openhcp/openhcp/internal/pki"
)

// TestRevokedComparesNotBeforeWithTheRevocation states the rule: a certificate of a revoked
// person is refused when its NotBefore is before the revocation, whenever it was issued. The
// region's PKI backdates NotBefore by pki.Backdate, so a replacement issued at once (or up to
// pki.Backdate later) is refused for its whole life; one issued later works.
func TestRevokedComparesNotBeforeWithTheRevocation(t *testing.T) {
	ctx := context.Background()
	dsn := pgservertest.NewDatabase(t, pgservertest.Start(t))
	su, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer su.Close(ctx)
	if err := audit.Install(ctx, su, "postgres"); err != nil {
		t.Fatal(err)
	}
	pool, err := pgxpool.New(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	l := revocation.New(pool)
	rev, err := l.Revoke(ctx, "bob", "alice (sre-admin)", "leaked")
	if err != nil {
		t.Fatal(err)
	}
	at := rev.RevokedAt
	for _, tc := range []struct {
		name      string
		person    string
		notBefore time.Time
		revoked   bool
	}{
		{"the_leaked_certificate", "bob", at.Add(-time.Hour), true},
		{"a_replacement_issued_at_once", "bob", at.Add(-pki.Backdate), true},
		{"a_replacement_issued_just_under_the_backdate_later", "bob", at.Add(-time.Second), true},
		{"a_replacement_issued_the_backdate_after", "bob", at.Add(time.Second), false},
		{"another_person", "carol", at.Add(-time.Hour), false},
		// A name in other letter case is the same person: revoking "bob" refuses "Bob".
		{"the_person_in_other_letter_case", "Bob", at.Add(-time.Hour), true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := l.Revoked(ctx, tc.person, tc.notBefore)
			if err != nil || got != tc.revoked {
				t.Fatalf("Revoked(%s, NotBefore %s from the revocation) = %v, %v; want %v", tc.person, tc.notBefore.Sub(at), got, err, tc.revoked)
			}
		})
	}
}
