// Package session owns SRE break-glass sessions: the one way an SRE reaches a hosted cluster,
// through the gateway (admin/pkg/gateway). A session names its person, cluster, access and
// lifetime; the admin API opens, activates and closes it, and the gateway reads it on every
// request. The session's credential (a kubeconfig of the cluster's SRE signer) is sealed with
// the region's session key (Key) before it reaches the database and is opened by the gateway
// only: it is never returned to the SRE.
package session

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/openhcp/openhcp/internal/docstore/postgres"
)

// States. Expired is never stored: a session whose expiry has passed is expired, whatever its
// stored state (Session.StateAt).
const (
	AwaitingApproval = "awaiting-approval"
	Active           = "active"
	Closed           = "closed"
	Expired          = "expired"
	Revoked          = "revoked"
)

// Access levels, as the admin API names them (adminapi.AccessReadOnly, adminapi.AccessAdmin).
const (
	AccessReadOnly = "read-only"
	AccessAdmin    = "admin"
)

// Table is the sessions' table (migration 0006 of the admin database).
const Table = "admin_breakglass_sessions"

var (
	// ErrNotFound: no such session.
	ErrNotFound = errors.New("no such break-glass session")
	// ErrEnded: the session is closed or revoked; it cannot change.
	ErrEnded = errors.New("the break-glass session has ended")
)

// Session is one break-glass session. ID is also the credential's ID at Cluster Service and,
// for admin access, the approval request's ID.
type Session struct {
	ID         string
	ClusterID  string
	Person     string
	Group      string
	Access     string
	Reason     string
	State      string // as stored; see StateAt
	Created    time.Time
	TTLSeconds int32
	Expires    time.Time
	ClosedAt   *time.Time
	ClosedBy   string
	// CloseReason says why the admin service ended the session itself (EndCluster); empty for
	// a person's close or revoke, whose reason the audit log keeps.
	CloseReason string
	// HasCredential reports whether the sealed credential is stored.
	HasCredential bool
}

// StateAt is the session's state at now: Expired once its expiry has passed while it was
// awaiting approval or active.
func (s Session) StateAt(now time.Time) string {
	if (s.State == Active || s.State == AwaitingApproval) && !now.Before(s.Expires) {
		return Expired
	}
	return s.State
}

// Live reports whether the session admits requests at now.
func (s Session) Live(now time.Time) bool { return s.StateAt(now) == Active && s.HasCredential }

// Install grants serviceRole what the admin API and the gateway need: read sessions, open
// them, and change their state, expiry, credential and closing. The table is part of the admin
// database's schema, which audit.Install migrates: call that first.
func Install(ctx context.Context, conn *pgx.Conn, serviceRole string) error {
	role := pgx.Identifier{serviceRole}.Sanitize()
	return pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error {
		for _, q := range []string{
			"REVOKE ALL ON " + Table + " FROM " + role,
			"GRANT SELECT, INSERT ON " + Table + " TO " + role,
			"GRANT UPDATE (state, expires, credential, closed_at, closed_by, close_reason) ON " + Table + " TO " + role,
		} {
			if _, err := tx.Exec(ctx, q); err != nil {
				return fmt.Errorf("install break-glass sessions (after audit.Install): %w", err)
			}
		}
		return nil
	})
}

// Store reads and writes sessions, sealing and opening credentials with its key.
type Store struct {
	pool *pgxpool.Pool
	key  *Key
	// loss decides, by postgres.ConnLoss's rule, whether a read that met a dead connection runs
	// once more (the gateway reads a session on every request). The pool's own guard
	// (audit.Open's) learns of the loss from the pool, so the second run gets a checked
	// connection.
	loss *postgres.ConnLoss
}

// New uses the admin service's pool (the audit log's database) and the region's session key.
func New(pool *pgxpool.Pool, key *Key) *Store {
	return &Store{pool: pool, key: key, loss: &postgres.ConnLoss{}}
}

// Check refuses a login that could delete sessions, or that may not read, open and end them.
func (s *Store) Check(ctx context.Context) error {
	var exists, del bool
	if err := s.pool.QueryRow(ctx, `SELECT to_regclass('public.`+Table+`') IS NOT NULL`).Scan(&exists); err != nil {
		return fmt.Errorf("open break-glass sessions: %w", err)
	}
	if !exists {
		return fmt.Errorf("open break-glass sessions: table %s does not exist (install it first, as its owner: session.Install)", Table)
	}
	var use bool
	err := s.pool.QueryRow(ctx, `SELECT has_table_privilege($1, 'DELETE') OR has_table_privilege($1, 'TRUNCATE'),
		has_table_privilege($1, 'SELECT') AND has_table_privilege($1, 'INSERT') AND has_column_privilege($1, 'state', 'UPDATE')`, Table).Scan(&del, &use)
	if err != nil {
		return fmt.Errorf("open break-glass sessions: %w", err)
	}
	switch {
	case del:
		return fmt.Errorf("open break-glass sessions: this login may delete sessions; grant it session.Install's privileges only")
	case !use:
		return fmt.Errorf("open break-glass sessions: this login may not read, open or end sessions (grant them as the table's owner: session.Install)")
	}
	return nil
}

// Ping checks the database.
func (s *Store) Ping(ctx context.Context) error { return s.pool.Ping(ctx) }

const columns = `id, cluster_id, person, grp, access, reason, state, created, ttl_seconds, expires, closed_at, closed_by, close_reason, credential IS NOT NULL`

func scan(row pgx.Row) (Session, error) {
	var s Session
	err := row.Scan(&s.ID, &s.ClusterID, &s.Person, &s.Group, &s.Access, &s.Reason, &s.State, &s.Created, &s.TTLSeconds, &s.Expires,
		&s.ClosedAt, &s.ClosedBy, &s.CloseReason, &s.HasCredential)
	if errors.Is(err, pgx.ErrNoRows) {
		return s, ErrNotFound
	}
	return s, err
}

// Open records a new session. With a kubeconfig (read-only access, whose credential is
// obtained first) it is active at once until sess.Expires; without one (admin access) it awaits
// an approval until sess.Expires (zero: TTL from now), and Activate follows the approval.
func (s *Store) Open(ctx context.Context, sess Session, kubeconfig []byte) (Session, error) {
	if sess.Access != AccessReadOnly && sess.Access != AccessAdmin {
		return sess, fmt.Errorf("open break-glass session %s: access %q is neither %s nor %s", sess.ID, sess.Access, AccessReadOnly, AccessAdmin)
	}
	state, expires := AwaitingApproval, &sess.Expires
	var sealed []byte
	if kubeconfig != nil {
		if sess.Expires.IsZero() {
			return sess, fmt.Errorf("open break-glass session %s: an active session needs its expiry", sess.ID)
		}
		var err error
		if sealed, err = s.key.Seal(sess.ID, kubeconfig); err != nil {
			return sess, fmt.Errorf("open break-glass session %s: %w", sess.ID, err)
		}
		state = Active
	}
	if sess.Expires.IsZero() {
		expires = nil
	}
	out, err := scan(s.pool.QueryRow(ctx, `INSERT INTO `+Table+` (id, cluster_id, person, grp, access, reason, state, ttl_seconds, expires, credential)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8::int, coalesce($9, clock_timestamp() + make_interval(secs => $8::int)), $10) RETURNING `+columns,
		sess.ID, sess.ClusterID, sess.Person, sess.Group, sess.Access, sess.Reason, state, sess.TTLSeconds, expires, sealed))
	if err != nil {
		return sess, fmt.Errorf("open break-glass session %s: %w", sess.ID, err)
	}
	return out, nil
}

// Activate stores the session's sealed credential and makes it active until expires (the
// credential's own expiry, or now+TTL).
func (s *Store) Activate(ctx context.Context, id string, kubeconfig []byte, expires time.Time) (Session, error) {
	if !possibleID(id) {
		return Session{}, ErrNotFound
	}
	sealed, err := s.key.Seal(id, kubeconfig)
	if err != nil {
		return Session{}, fmt.Errorf("activate break-glass session %s: %w", id, err)
	}
	out, err := scan(s.pool.QueryRow(ctx, `UPDATE `+Table+` SET state = $2, credential = $3, expires = $4
		WHERE id = $1 AND state IN ('awaiting-approval', 'active') RETURNING `+columns, id, Active, sealed, expires))
	if errors.Is(err, ErrNotFound) {
		return out, s.whyNot(ctx, id)
	}
	if err != nil {
		return out, fmt.Errorf("activate break-glass session %s: %w", id, err)
	}
	return out, nil
}

// End closes (Closed) or revokes (Revoked) a session, by whom. An ended session is ErrEnded.
func (s *Store) End(ctx context.Context, id, state, by string) (Session, error) {
	if state != Closed && state != Revoked {
		return Session{}, fmt.Errorf("end break-glass session %s: %q is not an end state", id, state)
	}
	if !possibleID(id) {
		return Session{}, ErrNotFound
	}
	out, err := scan(s.pool.QueryRow(ctx, `UPDATE `+Table+` SET state = $2, closed_by = $3
		WHERE id = $1 AND state IN ('awaiting-approval', 'active') RETURNING `+columns, id, state, by))
	if errors.Is(err, ErrNotFound) {
		return out, s.whyNot(ctx, id)
	}
	if err != nil {
		return out, fmt.Errorf("end break-glass session %s: %w", id, err)
	}
	return out, nil
}

// EndCluster revokes every session of cluster still awaiting approval or active, in one
// statement, by whom and why (the admin service's own act: the cluster was deleted), and
// returns how many it ended. Ended sessions keep their state, expired ones included (past their
// expiry: their record says they expired, not that the admin service revoked them later).
func (s *Store) EndCluster(ctx context.Context, clusterID, by, reason string) (int64, error) {
	tag, err := s.pool.Exec(ctx, `UPDATE `+Table+` SET state = $2, closed_by = $3, close_reason = $4
		WHERE cluster_id = $1 AND state IN ('awaiting-approval', 'active') AND expires > clock_timestamp()`, clusterID, Revoked, by, reason)
	if err != nil {
		return 0, fmt.Errorf("end the break-glass sessions of cluster %s: %w", clusterID, err)
	}
	return tag.RowsAffected(), nil
}

// whyNot tells a missing session (ErrNotFound) from one that ended (ErrEnded).
func (s *Store) whyNot(ctx context.Context, id string) error {
	if _, err := s.Get(ctx, id); err != nil {
		return err
	}
	return fmt.Errorf("break-glass session %s: %w", id, ErrEnded)
}

// possibleID says a session could have id: an ID is text (UTF-8 without NUL), which is all
// PostgreSQL's text takes. Any other, from a caller's URL (/sessions/a%00b/...), names no
// session: ErrNotFound, as a lookup of it would be, not a failed query.
func possibleID(id string) bool {
	return utf8.ValidString(id) && strings.IndexByte(id, 0) < 0
}

// Get reads one session, without its credential.
func (s *Store) Get(ctx context.Context, id string) (Session, error) {
	var out Session
	if !possibleID(id) {
		return out, ErrNotFound
	}
	err := s.loss.Retry(ctx, true, func() (err error) {
		out, err = scan(s.pool.QueryRow(ctx, `SELECT `+columns+` FROM `+Table+` WHERE id = $1`, id))
		return err
	})
	if err != nil && !errors.Is(err, ErrNotFound) {
		return out, fmt.Errorf("read break-glass session %s: %w", id, err)
	}
	return out, err
}

// Credential reads one session and opens its credential (nil while it has none). Only the
// gateway calls it.
func (s *Store) Credential(ctx context.Context, id string) (Session, []byte, error) {
	var sealed []byte
	var out Session
	if !possibleID(id) {
		return out, nil, ErrNotFound
	}
	err := s.loss.Retry(ctx, true, func() error {
		return s.pool.QueryRow(ctx, `SELECT `+columns+`, credential FROM `+Table+` WHERE id = $1`, id).Scan(
			&out.ID, &out.ClusterID, &out.Person, &out.Group, &out.Access, &out.Reason, &out.State, &out.Created, &out.TTLSeconds, &out.Expires,
			&out.ClosedAt, &out.ClosedBy, &out.CloseReason, &out.HasCredential, &sealed)
	})
	if errors.Is(err, pgx.ErrNoRows) {
		return out, nil, ErrNotFound
	}
	if err != nil {
		return out, nil, fmt.Errorf("read break-glass session %s: %w", id, err)
	}
	if sealed == nil {
		return out, nil, nil
	}
	kubeconfig, err := s.key.Open(id, sealed)
	if err != nil {
		return out, nil, fmt.Errorf("open the credential of break-glass session %s: %w", id, err)
	}
	return out, kubeconfig, nil
}

// Filter selects sessions; zero fields match everything. Ended ones (closed, revoked,
// expired at Now) are left out unless All.
type Filter struct {
	ClusterID, Person string
	All               bool
	Now               time.Time
}

// List returns the sessions matching f, newest first (at most 1000).
func (s *Store) List(ctx context.Context, f Filter) ([]Session, error) {
	var out []Session
	err := s.loss.Retry(ctx, true, func() error {
		rows, err := s.pool.Query(ctx, `SELECT `+columns+` FROM `+Table+`
		WHERE ($1 = '' OR cluster_id = $1) AND ($2 = '' OR person = $2)
		AND ($3 OR (state IN ('awaiting-approval', 'active') AND expires > $4))
		ORDER BY created DESC LIMIT 1000`, f.ClusterID, f.Person, f.All, f.Now)
		if err != nil {
			return err
		}
		out, err = pgx.CollectRows(rows, func(row pgx.CollectableRow) (Session, error) { return scan(row) })
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("list break-glass sessions: %w", err)
	}
	return out, nil
}

// States reads the sessions ids' stored states and expiries in one query (the gateway's check
// of its open streams). A session missing from the answer does not exist.
func (s *Store) States(ctx context.Context, ids []string) (map[string]Session, error) {
	out := make(map[string]Session, len(ids))
	if len(ids) == 0 {
		return out, nil
	}
	var list []Session
	err := s.loss.Retry(ctx, true, func() error {
		rows, err := s.pool.Query(ctx, `SELECT `+columns+` FROM `+Table+` WHERE id = ANY($1)`, ids)
		if err != nil {
			return err
		}
		list, err = pgx.CollectRows(rows, func(row pgx.CollectableRow) (Session, error) { return scan(row) })
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("read break-glass session states: %w", err)
	}
	for _, sess := range list {
		out[sess.ID] = sess
	}
	return out, nil
}

// CountActive is how many sessions are active and unexpired at now (the gateway's gauge).
func (s *Store) CountActive(ctx context.Context, now time.Time) (int, error) {
	var n int
	err := s.loss.Retry(ctx, true, func() error {
		return s.pool.QueryRow(ctx, `SELECT count(*) FROM `+Table+` WHERE state = 'active' AND expires > $1`, now).Scan(&n)
	})
	if err != nil {
		return 0, fmt.Errorf("count active break-glass sessions: %w", err)
	}
	return n, nil
}
