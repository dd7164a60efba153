// Package revocation owns the SRE revocation list: a person named here is refused by the admin
// API for every certificate issued (NotBefore) before the revocation, so a leaked SRE
// certificate stops working at once instead of at its expiry, while the person's next
// certificate works if its NotBefore is after the revocation (the region's PKI backdates
// NotBefore by pki.Backdate, so it is issued that long after the revocation). The list lives beside the audit log and, like it, is append-only for the
// service (Install grants SELECT and INSERT only): a revocation cannot be undone by the service
// it protects, only outlived by a new certificate.
package revocation

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/openhcp/openhcp/internal/docstore/postgres"
)

// Install grants serviceRole SELECT and INSERT on the revocation list. The table is part of
// the admin database's schema, which audit.Install migrates: call that first.
func Install(ctx context.Context, conn *pgx.Conn, serviceRole string) error {
	role := pgx.Identifier{serviceRole}.Sanitize()
	return pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error {
		for _, q := range []string{
			"REVOKE ALL ON admin_revocations FROM " + role,
			"GRANT SELECT, INSERT ON admin_revocations TO " + role,
		} {
			if _, err := tx.Exec(ctx, q); err != nil {
				return fmt.Errorf("install revocation list (after audit.Install): %w", err)
			}
		}
		return nil
	})
}

// Revocation is one entry.
type Revocation struct {
	ID        int64     `json:"id"`
	Person    string    `json:"person"`
	RevokedAt time.Time `json:"revokedAt"`
	RevokedBy string    `json:"revokedBy"`
	Reason    string    `json:"reason"`
}

// List reads and appends revocations.
type List struct {
	pool *pgxpool.Pool
	// loss decides, by postgres.ConnLoss's rule, whether a statement that met a dead connection
	// runs once more. The pool's own guard (audit.Open's) learns of the loss from the pool, so
	// the second run gets a checked connection.
	loss *postgres.ConnLoss
}

// New uses the admin service's pool (the audit log's database).
func New(pool *pgxpool.Pool) *List { return &List{pool: pool, loss: &postgres.ConnLoss{}} }

// Check refuses a login that could update or delete revocations (the service must not be able
// to undo one).
func (l *List) Check(ctx context.Context) error {
	var exists, change bool
	if err := l.pool.QueryRow(ctx, `SELECT to_regclass('public.admin_revocations') IS NOT NULL`).Scan(&exists); err != nil {
		return fmt.Errorf("open revocation list: %w", err)
	}
	if !exists {
		return fmt.Errorf("open revocation list: table admin_revocations does not exist (install it first, as its owner: revocation.Install)")
	}
	err := l.pool.QueryRow(ctx, `SELECT has_table_privilege('admin_revocations', 'UPDATE') OR has_table_privilege('admin_revocations', 'DELETE')
		OR has_table_privilege('admin_revocations', 'TRUNCATE')`).Scan(&change)
	if err != nil {
		return fmt.Errorf("open revocation list: %w", err)
	}
	if change {
		return fmt.Errorf("open revocation list: this login may update or delete revocations; grant it SELECT and INSERT only")
	}
	return nil
}

// Revoke refuses every certificate of person issued before now.
func (l *List) Revoke(ctx context.Context, person, by, reason string) (Revocation, error) {
	r := Revocation{Person: person, RevokedBy: by, Reason: reason}
	// A write: run again only if it was not sent, so a revocation is never recorded twice.
	err := l.loss.Retry(ctx, false, func() error {
		return l.pool.QueryRow(ctx, `INSERT INTO admin_revocations (person, revoked_by, reason) VALUES ($1, $2, $3) RETURNING id, revoked_at`,
			person, by, reason).Scan(&r.ID, &r.RevokedAt)
	})
	if err != nil {
		return r, fmt.Errorf("revoke %s: %w", person, err)
	}
	return r, nil
}

// Revoked reports whether a certificate of person issued at notBefore is revoked. Names are
// compared without regard to letter case: a revocation of "Alice" refuses "alice", since an
// operator who spells a leaked certificate's person otherwise must not revoke nothing.
func (l *List) Revoked(ctx context.Context, person string, notBefore time.Time) (bool, error) {
	var revoked bool
	err := l.loss.Retry(ctx, true, func() error {
		return l.pool.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM admin_revocations WHERE lower(person) = lower($1) AND revoked_at > $2)`, person, notBefore).Scan(&revoked)
	})
	if err != nil {
		return false, fmt.Errorf("check the revocation list: %w", err)
	}
	return revoked, nil
}

// All returns every revocation, newest first.
func (l *List) All(ctx context.Context) ([]Revocation, error) {
	var out []Revocation
	err := l.loss.Retry(ctx, true, func() error {
		rows, err := l.pool.Query(ctx, `SELECT id, person, revoked_at, revoked_by, reason FROM admin_revocations ORDER BY id DESC`)
		if err != nil {
			return err
		}
		out, err = pgx.CollectRows(rows, func(row pgx.CollectableRow) (Revocation, error) {
			var r Revocation
			err := row.Scan(&r.ID, &r.Person, &r.RevokedAt, &r.RevokedBy, &r.Reason)
			return r, err
		})
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("read the revocation list: %w", err)
	}
	return out, nil
}
