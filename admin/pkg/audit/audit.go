// Package audit owns the admin API's audit log: an append-only table in PostgreSQL. Install
// creates it as its owner and grants the admin service's login INSERT and SELECT only; Open
// refuses to run as a login that could change or remove a record. Every admin call writes a
// record before it takes effect (Log.Append); the API reads them back with Log.Query.
package audit

import (
	"context"
	"crypto/rand"
	"embed"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/openhcp/openhcp/admin/pkg/adminapi"
	"github.com/openhcp/openhcp/internal/docstore/postgres"
	"github.com/openhcp/openhcp/internal/pgmigrate"
)

// Outcomes. A refused call has one record (Unauthenticated or Forbidden, or Invalid for a
// request refused before it was authorized); an allowed call has two: Allowed, written before
// the handler runs, and Completed with the HTTP status it answered.
const (
	Unauthenticated = "unauthenticated"
	Forbidden       = "forbidden"
	Allowed         = "allowed"
	Completed       = "completed"
)

// Table is the audit table's name.
const Table = "admin_audit"

// Entry is one audit record; its wire form is the admin API's (adminapi.AuditEntry).
// Person and Group are the SRE (empty when the caller had no SRE identity); Subject is the
// certificate subject the caller presented, if any, so a refused caller is named too. Route is
// the route pattern ("POST /admin/v1/shards/{name}/cordon"), Path the path asked for, Status
// the HTTP status answered (0 on an Allowed record: not answered yet).
type Entry = adminapi.AuditEntry

// migrations are the admin database's schema: the audit log and the revocation list
// (admin/pkg/revocation), one set because one schema_migrations table records them.
//
//go:embed migrations/*.sql
var migrations embed.FS

// migrationLockKey serialises two installers of the admin database.
const migrationLockKey int64 = 0x0ad1_0001

// Install migrates the admin database (internal/pgmigrate) as conn's user, who owns the
// tables (a role the service cannot log in as: the superuser locally, a migration job's owner
// role in Azure), and lets serviceRole connect, insert into and read the audit table, and
// nothing else. A trigger refuses updates, deletes and truncation even to the owner, so the log
// is append-only twice over. Install is idempotent; the grants are not a migration because the
// service's role is the installer's choice.
func Install(ctx context.Context, conn *pgx.Conn, serviceRole string) error {
	if err := pgmigrate.RunConn(ctx, conn, migrations, "migrations", migrationLockKey, "admin database"); err != nil {
		return fmt.Errorf("install audit table: %w", err)
	}
	role := pgx.Identifier{serviceRole}.Sanitize()
	var db string
	if err := conn.QueryRow(ctx, "SELECT current_database()").Scan(&db); err != nil {
		return fmt.Errorf("install audit table: %w", err)
	}
	stmts := []string{
		"REVOKE ALL ON admin_audit FROM " + role,
		"GRANT SELECT, INSERT ON admin_audit TO " + role,
		// Pruning deletes only records older than the retention (migration 0003).
		"GRANT EXECUTE ON FUNCTION admin_audit_prune() TO " + role,
		// The portal's form key: made once, then read (migration 0004).
		"REVOKE ALL ON admin_portal_key FROM " + role,
		"GRANT SELECT, INSERT ON admin_portal_key TO " + role,
		"GRANT CONNECT ON DATABASE " + pgx.Identifier{db}.Sanitize() + " TO " + role,
		"GRANT USAGE ON SCHEMA public TO " + role,
	}
	return pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error {
		for _, q := range stmts {
			if _, err := tx.Exec(ctx, q); err != nil {
				return fmt.Errorf("install audit table: %s: %w", strings.Fields(q)[0]+" "+strings.Fields(q)[1], err)
			}
		}
		return nil
	})
}

// Log is the audit log as the admin service sees it: append and read.
type Log struct {
	pool *pgxpool.Pool
	// loss is the pool's rule for PostgreSQL restarts (postgres.ConnLoss): the pool pings the
	// connections it held from before a loss, and a read that met a dead one runs once more.
	loss *postgres.ConnLoss
}

// Open connects as the admin service's login and checks that it may append and read the audit
// table and may neither change nor remove a record, nor own the table (an owner could grant
// itself back what Install withheld). A login with more rights is refused: an audit log the
// audited service can rewrite is no audit log.
//
// The pool outlives a PostgreSQL restart (postgres.ConnLoss): once a call has met a dead
// connection, the pool checks each connection it held from before before handing it out, so
// the revocation list, approvals and sessions that share it answer too.
func Open(ctx context.Context, dsn string) (*Log, error) {
	cfg, err := pgxpool.ParseConfig(dsn)
	if err != nil {
		return nil, fmt.Errorf("open audit log: parse DSN: %w", err)
	}
	loss := &postgres.ConnLoss{}
	loss.Guard(cfg)
	cfg.ConnConfig.Tracer = lossTracer{loss}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("open audit log: %w", err)
	}
	if err := checkPrivileges(ctx, pool); err != nil {
		pool.Close()
		return nil, err
	}
	return &Log{pool: pool, loss: loss}, nil
}

// lossTracer tells loss of every statement on the pool that met a dead connection, whichever
// store sent it: the revocation list, approvals and sessions share the pool but not the Log,
// and the pool must check its other connections after their loss too.
type lossTracer struct{ loss *postgres.ConnLoss }

func (lossTracer) TraceQueryStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceQueryStartData) context.Context {
	return ctx
}

func (t lossTracer) TraceQueryEnd(_ context.Context, _ *pgx.Conn, d pgx.TraceQueryEndData) {
	t.loss.Seen(d.Err)
}

func checkPrivileges(ctx context.Context, pool *pgxpool.Pool) error {
	var (
		user                         string
		owner                        *string
		sel, ins, upd, del, trunc, o bool
	)
	err := pool.QueryRow(ctx, `SELECT current_user,
		(SELECT tableowner FROM pg_tables WHERE schemaname = 'public' AND tablename = 'admin_audit')`).Scan(&user, &owner)
	if err != nil {
		return fmt.Errorf("open audit log: %w", err)
	}
	if owner == nil {
		return fmt.Errorf("open audit log: table %s does not exist (install it first, as its owner: audit.Install)", Table)
	}
	err = pool.QueryRow(ctx, `SELECT
		has_table_privilege('admin_audit', 'SELECT'), has_table_privilege('admin_audit', 'INSERT'),
		has_table_privilege('admin_audit', 'UPDATE'), has_table_privilege('admin_audit', 'DELETE'),
		has_table_privilege('admin_audit', 'TRUNCATE'),
		pg_has_role(current_user, (SELECT tableowner FROM pg_tables WHERE schemaname = 'public' AND tablename = 'admin_audit'), 'MEMBER')`).
		Scan(&sel, &ins, &upd, &del, &trunc, &o)
	if err != nil {
		return fmt.Errorf("open audit log: check privileges: %w", err)
	}
	switch {
	case o:
		return fmt.Errorf("open audit log: login %q owns %s (or is a member of its owner %q); the admin service must log in as a role that may only insert and read", user, Table, *owner)
	case upd || del || trunc:
		return fmt.Errorf("open audit log: login %q may update, delete or truncate %s; grant it SELECT and INSERT only", user, Table)
	case !sel || !ins:
		return fmt.Errorf("open audit log: login %q needs SELECT and INSERT on %s", user, Table)
	}
	return nil
}

// Pool is the connection pool, shared with the revocation list in the same database.
func (l *Log) Pool() *pgxpool.Pool { return l.pool }

// Close releases the connections.
func (l *Log) Close() { l.pool.Close() }

// Ping checks the database.
func (l *Log) Ping(ctx context.Context) error { return l.pool.Ping(ctx) }

// Append writes e and returns it with its ID and time. The caller acts only once Append has
// returned without error. A record is never written twice: after a lost connection the insert
// runs again only if pgx says it was not sent (postgres.ConnLoss.Retry); otherwise Append
// fails, having written nothing or a record the caller never learns of, and the call it audits
// is refused.
//
// Every string of e is stored as Storable makes it, so a caller's NUL or invalid UTF-8 (in a
// path, a target, a reason) is recorded, escaped, instead of failing the record.
func (l *Log) Append(ctx context.Context, e Entry) (Entry, error) {
	for _, f := range []*string{&e.RequestID, &e.CorrelationID, &e.Person, &e.Group, &e.Subject, &e.Method, &e.Route, &e.Path, &e.Target, &e.Reason, &e.Outcome} {
		*f = Storable(*f)
	}
	err := l.loss.Retry(ctx, false, func() error {
		return l.pool.QueryRow(ctx, `INSERT INTO admin_audit
		(request_id, correlation_id, person, grp, subject, method, route, path, target, reason, outcome, status)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12) RETURNING id, at`,
			e.RequestID, e.CorrelationID, e.Person, e.Group, e.Subject, e.Method, e.Route, e.Path, e.Target, e.Reason, e.Outcome, e.Status,
		).Scan(&e.ID, &e.Time)
	})
	if err != nil {
		return e, fmt.Errorf("append audit record: %w", err)
	}
	return e, nil
}

// Storable is s as PostgreSQL's text takes it, which refuses NUL and invalid UTF-8: each NUL
// and each byte that is not part of valid UTF-8 is written as the four characters \xNN (its
// hex value), everything else is kept. Nothing the caller sent is lost, and a record keeps
// what a malformed request was, byte for byte; a string already storable is returned as is.
func Storable(s string) string {
	if utf8.ValidString(s) && strings.IndexByte(s, 0) < 0 {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		if r == 0 || r == utf8.RuneError && n == 1 {
			fmt.Fprintf(&b, `\x%02x`, s[i])
		} else {
			b.WriteString(s[i : i+n])
		}
		i += n
	}
	return b.String()
}

// Filter selects records; zero fields match everything. Records come newest first.
type Filter struct {
	Person, Group, Outcome, Target, CorrelationID, Method string
	// RoutePrefix matches the start of the route pattern ("GET /admin/v1/clusters").
	RoutePrefix  string
	Since, Until time.Time
	// Limit is the page size (default 100, at most 1000).
	Limit int
	// PageToken is the NextPageToken of the previous page.
	PageToken string
}

// ErrInvalidPageToken is returned for a page token Query did not issue.
var ErrInvalidPageToken = errors.New("invalid page token")

// Query returns one page of records matching f, newest first, and the token of the next page
// ("" on the last).
func (l *Log) Query(ctx context.Context, f Filter) ([]Entry, string, error) {
	var (
		where []string
		args  []any
	)
	add := func(cond string, v any) {
		args = append(args, v)
		where = append(where, strings.ReplaceAll(cond, "?", "$"+strconv.Itoa(len(args))))
	}
	// Each value as Append stored it (Storable), the target's before it is lower-cased, which
	// would turn a byte that is not UTF-8 into U+FFFD.
	for _, c := range []struct{ col, v string }{
		{"person", Storable(f.Person)}, {"grp", Storable(f.Group)}, {"outcome", Storable(f.Outcome)}, {"lower(target)", strings.ToLower(Storable(f.Target))},
		{"correlation_id", Storable(f.CorrelationID)}, {"method", Storable(f.Method)},
	} {
		if c.v != "" {
			add(c.col+" = ?", c.v)
		}
	}
	if f.RoutePrefix != "" {
		add("starts_with(route, ?)", Storable(f.RoutePrefix))
	}
	if !f.Since.IsZero() {
		add("at >= ?", f.Since)
	}
	if !f.Until.IsZero() {
		add("at < ?", f.Until)
	}
	if f.PageToken != "" {
		before, err := strconv.ParseInt(f.PageToken, 10, 64)
		if err != nil || before <= 0 {
			return nil, "", ErrInvalidPageToken
		}
		add("id < ?", before)
	}
	limit := f.Limit
	if limit <= 0 {
		limit = 100
	}
	limit = min(limit, 1000)
	q := `SELECT id, at, request_id, correlation_id, person, grp, subject, method, route, path, target, reason, outcome, status FROM admin_audit`
	if len(where) > 0 {
		q += " WHERE " + strings.Join(where, " AND ")
	}
	q += " ORDER BY id DESC LIMIT " + strconv.Itoa(limit+1)
	var out []Entry
	err := l.loss.Retry(ctx, true, func() error {
		rows, err := l.pool.Query(ctx, q, args...)
		if err != nil {
			return err
		}
		out, err = pgx.CollectRows(rows, func(row pgx.CollectableRow) (Entry, error) {
			var e Entry
			err := row.Scan(&e.ID, &e.Time, &e.RequestID, &e.CorrelationID, &e.Person, &e.Group, &e.Subject, &e.Method, &e.Route, &e.Path, &e.Target, &e.Reason, &e.Outcome, &e.Status)
			return e, err
		})
		return err
	})
	if err != nil {
		return nil, "", fmt.Errorf("query audit log: %w", err)
	}
	next := ""
	if len(out) > limit {
		out = out[:limit]
		next = strconv.FormatInt(out[limit-1].ID, 10)
	}
	return out, next, nil
}

// Retention is how long a record is kept; the schema defines it (admin_audit_retention()).
func (l *Log) Retention(ctx context.Context) (time.Duration, error) {
	var secs float64
	err := l.loss.Retry(ctx, true, func() error {
		return l.pool.QueryRow(ctx, "SELECT extract(epoch FROM admin_audit_retention())").Scan(&secs)
	})
	if err != nil {
		return 0, fmt.Errorf("read audit retention: %w", err)
	}
	return time.Duration(secs * float64(time.Second)), nil
}

// Prune deletes the records older than the retention and returns how many it deleted. The
// service's login may not delete records; admin_audit_prune() does it as the table's owner,
// and the table's trigger refuses it any younger record.
func (l *Log) Prune(ctx context.Context) (int64, error) {
	var n int64
	// A write: run again only if it was not sent (a prune that ran twice would do no harm, but
	// the rule is ConnLoss's, one for every write).
	err := l.loss.Retry(ctx, false, func() error { return l.pool.QueryRow(ctx, "SELECT admin_audit_prune()").Scan(&n) })
	if err != nil {
		return 0, fmt.Errorf("prune audit log: %w", err)
	}
	return n, nil
}

// PortalFormKey returns the region's key of the SRE portal's form tokens: the first caller
// makes it (32 random bytes), every later one, on any replica, reads the same. The admin
// database holds it beside the audit log because every replica shares that database.
func (l *Log) PortalFormKey(ctx context.Context) ([]byte, error) {
	fresh := make([]byte, 32)
	if _, err := rand.Read(fresh); err != nil {
		return nil, fmt.Errorf("portal form key: %w", err)
	}
	err := l.loss.Retry(ctx, false, func() error {
		_, err := l.pool.Exec(ctx, "INSERT INTO admin_portal_key (id, key) VALUES (1, $1) ON CONFLICT (id) DO NOTHING", fresh)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("portal form key: store: %w", err)
	}
	var key []byte
	err = l.loss.Retry(ctx, true, func() error { return l.pool.QueryRow(ctx, "SELECT key FROM admin_portal_key WHERE id = 1").Scan(&key) })
	if err != nil {
		return nil, fmt.Errorf("portal form key: read: %w", err)
	}
	return key, nil
}
