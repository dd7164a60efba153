// Package approval owns the two-person rule of admin break-glass: an sre-admin's request for a
// cluster-admin session waits until a different sre-admin approves it. Requests and
// approvals live beside the audit log and, like it, are append-only for the service (Install
// grants SELECT and INSERT only); the database itself refuses a self-approval.
package approval

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
)

// Window is how long a request waits for its approval; after it, it can no longer be approved.
const Window = time.Hour

var (
	// ErrNotFound: no such request.
	ErrNotFound = errors.New("no such break-glass request")
	// ErrAlreadyApproved: the request has its approval.
	ErrAlreadyApproved = errors.New("the break-glass request is already approved")
	// ErrSelfApproval: the approver is the requester.
	ErrSelfApproval = errors.New("a break-glass request cannot be approved by its requester")
	// ErrExpired: the request waited longer than Window.
	ErrExpired = errors.New("the break-glass request waited too long for an approval; ask again")
)

// Install grants serviceRole SELECT and INSERT on the requests and approvals. The tables are
// part of the admin database's schema, which audit.Install migrates: call that first.
func Install(ctx context.Context, conn *pgx.Conn, serviceRole string) error {
	role := pgx.Identifier{serviceRole}.Sanitize()
	return pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error {
		for _, t := range []string{"admin_breakglass_requests", "admin_breakglass_approvals"} {
			for _, q := range []string{"REVOKE ALL ON " + t + " FROM " + role, "GRANT SELECT, INSERT ON " + t + " TO " + role} {
				if _, err := tx.Exec(ctx, q); err != nil {
					return fmt.Errorf("install break-glass approvals (after audit.Install): %w", err)
				}
			}
		}
		return nil
	})
}

// Request is an admin break-glass request; ID is also the credential's ID at Cluster Service.
type Request struct {
	ID         string    `json:"id"`
	At         time.Time `json:"at"`
	Person     string    `json:"person"`
	Group      string    `json:"group"`
	ClusterID  string    `json:"clusterId"`
	TTLSeconds int32     `json:"ttlSeconds"`
	Reason     string    `json:"reason"`
	RequestID  string    `json:"requestId"`
	Approval   *Approval `json:"approval,omitempty"`
	Expires    time.Time `json:"approveBefore"`
}

// Approval is a second sre-admin's approval of a request.
type Approval struct {
	At        time.Time `json:"at"`
	Approver  string    `json:"approver"`
	Group     string    `json:"group"`
	Reason    string    `json:"reason"`
	RequestID string    `json:"requestId"`
}

// Store reads and appends requests and approvals.
type Store struct{ pool *pgxpool.Pool }

// New uses the admin service's pool (the audit log's database).
func New(pool *pgxpool.Pool) *Store { return &Store{pool: pool} }

// Check refuses a login that could update or delete requests or approvals.
func (s *Store) Check(ctx context.Context) error {
	for _, t := range []string{"admin_breakglass_requests", "admin_breakglass_approvals"} {
		var change bool
		err := s.pool.QueryRow(ctx, `SELECT has_table_privilege($1, 'UPDATE') OR has_table_privilege($1, 'DELETE') OR has_table_privilege($1, 'TRUNCATE')`, t).Scan(&change)
		if err != nil {
			return fmt.Errorf("open break-glass approvals: %w (install them first, as their owner: approval.Install)", err)
		}
		if change {
			return fmt.Errorf("open break-glass approvals: this login may update or delete %s; grant it SELECT and INSERT only", t)
		}
	}
	return nil
}

// Add records a new request.
func (s *Store) Add(ctx context.Context, r Request) (Request, error) {
	err := s.pool.QueryRow(ctx, `INSERT INTO admin_breakglass_requests (id, person, grp, cluster_id, ttl_seconds, reason, request_id)
		VALUES ($1, $2, $3, $4, $5, $6, $7) RETURNING at`, r.ID, r.Person, r.Group, r.ClusterID, r.TTLSeconds, r.Reason, r.RequestID).Scan(&r.At)
	if err != nil {
		return r, fmt.Errorf("record break-glass request %s: %w", r.ID, err)
	}
	r.Expires = r.At.Add(Window)
	return r, nil
}

const requestColumns = `r.id, r.at, r.person, r.grp, r.cluster_id, r.ttl_seconds, r.reason, r.request_id,
	a.at, a.approver, a.grp, a.reason, a.request_id`

func scan(row pgx.Row) (Request, error) {
	var r Request
	var at *time.Time
	var approver, grp, reason, reqID *string
	if err := row.Scan(&r.ID, &r.At, &r.Person, &r.Group, &r.ClusterID, &r.TTLSeconds, &r.Reason, &r.RequestID, &at, &approver, &grp, &reason, &reqID); err != nil {
		if errors.Is(err, pgx.ErrNoRows) {
			return r, ErrNotFound
		}
		return r, err
	}
	r.Expires = r.At.Add(Window)
	if at != nil {
		r.Approval = &Approval{At: *at, Approver: *approver, Group: *grp, Reason: *reason, RequestID: *reqID}
	}
	return r, nil
}

// Get returns one request with its approval, if any.
func (s *Store) Get(ctx context.Context, id string) (Request, error) {
	r, err := scan(s.pool.QueryRow(ctx, `SELECT `+requestColumns+` FROM admin_breakglass_requests r
		LEFT JOIN admin_breakglass_approvals a ON a.request = r.id WHERE r.id = $1`, id))
	if err != nil && !errors.Is(err, ErrNotFound) {
		return r, fmt.Errorf("read break-glass request %s: %w", id, err)
	}
	return r, err
}

// Pending returns the requests still waiting for an approval at now, oldest first.
func (s *Store) Pending(ctx context.Context, now time.Time) ([]Request, error) {
	rows, err := s.pool.Query(ctx, `SELECT `+requestColumns+` FROM admin_breakglass_requests r
		LEFT JOIN admin_breakglass_approvals a ON a.request = r.id WHERE a.request IS NULL AND r.at > $1 ORDER BY r.at`, now.Add(-Window))
	if err != nil {
		return nil, fmt.Errorf("read pending break-glass requests: %w", err)
	}
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (Request, error) { return scan(row) })
	if err != nil {
		return nil, fmt.Errorf("read pending break-glass requests: %w", err)
	}
	return out, nil
}

// Approve records a's approval of request id at now: ErrNotFound, ErrSelfApproval,
// ErrExpired, ErrAlreadyApproved.
func (s *Store) Approve(ctx context.Context, id string, a Approval, now time.Time) (Request, error) {
	r, err := s.Get(ctx, id)
	switch {
	case err != nil:
		return r, err
	case r.Approval != nil:
		return r, ErrAlreadyApproved
	case r.Person == a.Approver:
		return r, ErrSelfApproval
	case !now.Before(r.Expires):
		return r, ErrExpired
	}
	err = s.pool.QueryRow(ctx, `INSERT INTO admin_breakglass_approvals (request, approver, grp, reason, request_id) VALUES ($1, $2, $3, $4, $5) RETURNING at`,
		id, a.Approver, a.Group, a.Reason, a.RequestID).Scan(&a.At)
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) && pgErr.Code == "23505" { // unique_violation: approved meanwhile
		return r, ErrAlreadyApproved
	}
	if err != nil {
		return r, fmt.Errorf("approve break-glass request %s: %w", id, err)
	}
	r.Approval = &a
	return r, nil
}
