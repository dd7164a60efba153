// Package postgres is the PostgreSQL implementation of docstore.Store: one documents table keyed by
// (partition_key, id) with JSONB bodies and ETags, a global sequence that orders the change feed,
// tombstones for deletes, and LISTEN/NOTIFY so followers sleep instead of polling.
package postgres

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/openhcp/openhcp/internal/backoff"
	"github.com/openhcp/openhcp/internal/docstore"
)

const (
	notifyChannel = "openhcp_documents"
	// feedLockKey serialises writers from the moment they take a sequence number until they
	// commit. Without it a reader could see seq 11 committed while seq 10 is still in flight,
	// advance its checkpoint past 10 and never see it. Writes are short, so the cost is small.
	feedLockKey int64 = 0x6f70656e68637001

	defaultPageSize = 100
	maxPageSize     = 1000
)

// Options tune the background work. The zero value is usable.
type Options struct {
	// PurgeInterval is how often expired documents and old tombstones are deleted (default 1m;
	// negative disables the purger, for tests that purge by hand).
	PurgeInterval time.Duration
	// TombstoneRetention is how long deletes stay in the change feed (default 7 days). A follower
	// whose checkpoint is older than this may miss deletes and must resync.
	TombstoneRetention time.Duration
	// FallbackPoll bounds how long WaitForChanges sleeps without a notification (default 30s), in
	// case the listener connection dropped a notification.
	FallbackPoll time.Duration
	Logger       *slog.Logger
	// ReadOnly is for a reader whose login may only SELECT (the admin API): no migrations (the
	// writers apply them) and no purger. Writes fail with the database's permission error.
	ReadOnly bool
}

func (o *Options) defaults() {
	if o.PurgeInterval == 0 {
		o.PurgeInterval = time.Minute
	}
	if o.TombstoneRetention <= 0 {
		o.TombstoneRetention = 7 * 24 * time.Hour
	}
	if o.FallbackPoll <= 0 {
		o.FallbackPoll = 30 * time.Second
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
}

// defaultMaxConns is the pool size Open uses unless the DSN sets pool_max_conns.
const defaultMaxConns = 16

// Store is a docstore.Store on PostgreSQL.
type Store struct {
	pool    *pgxpool.Pool
	ownPool bool
	opts    Options
	// loss keeps the pool from answering with a connection a PostgreSQL restart killed.
	loss *ConnLoss

	mu   sync.Mutex
	wake chan struct{} // closed and replaced on every notification

	cancel context.CancelFunc
	wg     sync.WaitGroup
}

var _ docstore.Store = (*Store)(nil)
var _ docstore.HeadQuerier = (*Store)(nil)

// Open connects to dsn, applies migrations and starts the listener and purger. Close releases
// everything it opened.
func Open(ctx context.Context, dsn string, o Options) (*Store, error) {
	cfg, err := pgxpool.ParseConfig(dsn)
	if err != nil {
		return nil, fmt.Errorf("open document store: parse DSN: %w", err)
	}
	// pgxpool's default is 4 connections on a 2-core machine, one of them the listener's, so
	// a burst of requests queued for a connection behind the writes that held the others while
	// they waited for the feed lock (P1, docs/performance.md). pool_max_conns in the DSN wins.
	if !strings.Contains(dsn, "pool_max_conns") {
		cfg.MaxConns = defaultMaxConns
	}
	loss := &ConnLoss{}
	loss.Guard(cfg)
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("open document store: %w", err)
	}
	s, err := newStore(ctx, pool, loss, o)
	if err != nil {
		pool.Close()
		return nil, err
	}
	s.ownPool = true
	return s, nil
}

// New uses an existing pool: it applies migrations and starts the listener and purger. Close
// stops them but leaves the pool open. Reads still run once more after a lost connection, but
// only a pool set up with a ConnLoss's Guard checks its other connections after one.
func New(ctx context.Context, pool *pgxpool.Pool, o Options) (*Store, error) {
	return newStore(ctx, pool, &ConnLoss{}, o)
}

func newStore(ctx context.Context, pool *pgxpool.Pool, loss *ConnLoss, o Options) (*Store, error) {
	o.defaults()
	if o.ReadOnly {
		o.PurgeInterval = -1
	} else if err := Migrate(ctx, pool); err != nil {
		return nil, err
	}
	bg, cancel := context.WithCancel(context.Background())
	s := &Store{pool: pool, opts: o, loss: loss, wake: make(chan struct{}), cancel: cancel}
	s.wg.Add(1)
	go s.listen(bg)
	if o.PurgeInterval > 0 {
		s.wg.Add(1)
		go s.purgeLoop(bg)
	}
	return s, nil
}

// Close stops the background work, and closes the pool if Open made it.
func (s *Store) Close() {
	s.cancel()
	s.wg.Wait()
	if s.ownPool {
		s.pool.Close()
	}
}

// Pool exposes the connection pool, for health checks.
func (s *Store) Pool() *pgxpool.Pool { return s.pool }

const liveClause = "(expires_at IS NULL OR expires_at > now())"

const docColumns = "partition_key, id, type, resource_id, body, etag, expires_at, seq"

func scanDoc(row pgx.Row) (*docstore.Document, error) {
	var d docstore.Document
	var body []byte
	var expires *time.Time
	if err := row.Scan(&d.PartitionKey, &d.ID, &d.Type, &d.ResourceID, &body, &d.ETag, &expires, &d.Seq); err != nil {
		return nil, err
	}
	d.Body = json.RawMessage(body)
	setExpiry(&d, expires)
	return &d, nil
}

// Get implements docstore.Store.
func (s *Store) Get(ctx context.Context, partition, id string) (*docstore.Document, error) {
	return s.get(ctx, docColumns, partition, id)
}

// GetUnlessETag implements docstore.HeadQuerier: Get's statement, its body NULL when the
// document's ETag is etag, so PostgreSQL neither renders nor sends a body the caller has.
func (s *Store) GetUnlessETag(ctx context.Context, partition, id, etag string) (*docstore.Document, error) {
	return s.get(ctx, docColumnsUnlessETag, partition, id, etag)
}

// get reads the live document partition/id with columns (docColumns or a variant whose extra
// arguments are args).
func (s *Store) get(ctx context.Context, columns, partition, id string, args ...any) (_ *docstore.Document, err error) {
	defer markUnavailable(&err)
	var d *docstore.Document
	err = s.loss.Retry(ctx, true, func() (err error) {
		d, err = scanDoc(s.pool.QueryRow(ctx,
			"SELECT "+columns+" FROM documents WHERE partition_key = $1 AND id = $2 AND "+liveClause,
			append([]any{partition, id}, args...)...))
		return err
	})
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, docstore.ErrNotFound
	}
	if err != nil {
		return nil, fmt.Errorf("get document %s/%s: %w", partition, id, err)
	}
	return d, nil
}

// docColumnsUnlessETag is docColumns with the body NULL when the ETag is $3.
const docColumnsUnlessETag = "partition_key, id, type, resource_id, CASE WHEN etag = $3 THEN NULL ELSE body END, etag, expires_at, seq"

// Create implements docstore.Store.
func (s *Store) Create(ctx context.Context, doc *docstore.Document) (_ *docstore.Document, err error) {
	defer markUnavailable(&err)
	if err := docstore.Check(doc); err != nil {
		return nil, err
	}
	var out *docstore.Document
	if err := s.write(ctx, create(doc, &out)); err != nil {
		return nil, err
	}
	return out, nil
}

// Replace implements docstore.Store.
func (s *Store) Replace(ctx context.Context, doc *docstore.Document, ifMatch string) (_ *docstore.Document, err error) {
	defer markUnavailable(&err)
	if err := docstore.Check(doc); err != nil {
		return nil, err
	}
	if ifMatch == "" {
		return nil, docstore.ErrETagRequired
	}
	var out *docstore.Document
	if err := s.write(ctx, replace(doc, ifMatch, &out)); err != nil {
		return nil, err
	}
	return out, nil
}

// Delete implements docstore.Store.
func (s *Store) Delete(ctx context.Context, partition, id, ifMatch string) (err error) {
	defer markUnavailable(&err)
	if ifMatch == "" {
		return docstore.ErrETagRequired
	}
	return s.write(ctx, del(partition, id, ifMatch))
}

// Transact implements docstore.Store. A failing step is reported as "step N (...)", wrapping the
// store error, so errors.Is still finds ErrPreconditionFailed and friends.
func (s *Store) Transact(ctx context.Context, partition string, ops []docstore.TxOp) (_ []*docstore.Document, err error) {
	defer markUnavailable(&err)
	// More than Cosmos holds in one batch is refused by every store, so a caller that fits one
	// fits the other.
	if err := docstore.CheckTransaction(partition, ops); err != nil {
		return nil, err
	}
	out := make([]*docstore.Document, len(ops))
	steps := make([]writeStep, len(ops))
	for i, op := range ops {
		switch op.Kind {
		case docstore.TxCreate:
			steps[i] = create(op.Doc, &out[i])
		case docstore.TxReplace:
			steps[i] = replace(op.Doc, op.IfMatch, &out[i])
		case docstore.TxDelete:
			steps[i] = del(partition, op.Doc.ID, op.IfMatch)
		}
		steps[i].step = fmt.Sprintf("transaction step %d (%s %s)", i, kindName(op.Kind), op.Doc.ID)
	}
	if err := s.write(ctx, steps...); err != nil {
		return nil, err
	}
	return out, nil
}

func kindName(k docstore.TxKind) string {
	switch k {
	case docstore.TxCreate:
		return "create"
	case docstore.TxReplace:
		return "replace"
	case docstore.TxDelete:
		return "delete"
	}
	return strconv.Itoa(int(k))
}

// writeStep is one statement of a write: written takes the row (nil: not needed),
// and none says why the statement applied to nothing (ErrAlreadyExists, ErrPreconditionFailed or
// ErrNotFound).
type writeStep struct {
	// ctes are the statement's common table expressions: the last, w, is the write, which
	// returns (seq, expires_at) if it applied.
	ctes    string
	args    []any
	written func(seq int64, expires *time.Time)
	none    func(ctx context.Context, q querier) error
	// what names the statement in its database errors: "create document p/id".
	what string
	// step, when set, names the step of a transaction in all its errors: "transaction step 1
	// (replace id)".
	step string
}

// fail is err as the step reports it.
func (st writeStep) fail(err error) error {
	if st.step != "" {
		return fmt.Errorf("%s: %w", st.step, err)
	}
	return err
}

// querier is what none needs: a pool or a connection.
type querier interface {
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

// write runs steps in one transaction that holds the feed lock and notifies followers on
// commit. The feed lock is held for no round trip to this process: the lock, every step and the
// notification go to the server as one pipeline, an implicit transaction that commits at its end,
// so once the lock is granted the server runs the rest at once and commits. A step whose
// condition does not hold fails at the server (docstore_write_refused, migration 0002), which
// rolls the whole transaction back there; that step's none then says why, read after the
// rollback without the lock (a concurrent change in between can only turn a "stale" into a
// "gone" or back, both answers to the same refused write).
func (s *Store) write(ctx context.Context, steps ...writeStep) error {
	return s.loss.Retry(ctx, false, func() error { return s.writeOnce(ctx, steps...) })
}

func (s *Store) writeOnce(ctx context.Context, steps ...writeStep) error {
	var batch pgx.Batch
	batch.Queue("SELECT pg_advisory_xact_lock($1)", feedLockKey)
	for _, st := range steps {
		batch.Queue(`WITH `+st.ctes+` SELECT coalesce((SELECT seq FROM w), docstore_write_refused()), (SELECT expires_at FROM w)`, st.args...)
	}
	batch.Queue("SELECT pg_notify($1, '')", notifyChannel)
	refused := -1
	br := s.pool.SendBatch(ctx, &batch)
	err := func() error {
		if _, err := br.Exec(); err != nil {
			return fmt.Errorf("take feed lock: %w", err)
		}
		for i, st := range steps {
			var seq int64
			var expires *time.Time
			err := br.QueryRow().Scan(&seq, &expires)
			var pgErr *pgconn.PgError
			if errors.As(err, &pgErr) && pgErr.Code == refusedCode {
				refused = i
				return nil
			}
			if err != nil {
				return st.fail(fmt.Errorf("%s: %w", st.what, err))
			}
			if st.written != nil {
				st.written(seq, expires)
			}
		}
		if _, err := br.Exec(); err != nil {
			return fmt.Errorf("notify: %w", err)
		}
		return nil
	}()
	if cerr := br.Close(); err == nil && refused < 0 && cerr != nil {
		err = fmt.Errorf("document store write: %w", cerr)
	}
	if err != nil || refused < 0 {
		return err
	}
	return steps[refused].fail(steps[refused].none(ctx, s.pool))
}

// refusedCode is the SQLSTATE of docstore_write_refused.
const refusedCode = "OH001"

// writeTx runs fn in a transaction that holds the feed lock and notifies followers on commit,
// for writes that are not a list of steps (Purge).
func (s *Store) writeTx(ctx context.Context, fn func(pgx.Tx) error) error {
	return pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, "SELECT pg_advisory_xact_lock($1)", feedLockKey); err != nil {
			return fmt.Errorf("take feed lock: %w", err)
		}
		if err := fn(tx); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, "SELECT pg_notify($1, '')", notifyChannel); err != nil {
			return fmt.Errorf("notify: %w", err)
		}
		return nil
	})
}

func newETag() string {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic(fmt.Sprintf("crypto/rand: %v", err))
	}
	return hex.EncodeToString(b[:])
}

// setExpiry fills ExpiresAt and the TTL left, so replacing a document as read keeps its expiry.
func setExpiry(d *docstore.Document, expires *time.Time) {
	if expires == nil {
		return
	}
	d.ExpiresAt = expires.UTC()
	d.TTL = max(time.Until(d.ExpiresAt), time.Microsecond)
}

func written(doc *docstore.Document, etag string, seq int64, expires *time.Time) *docstore.Document {
	out := *doc
	out.ResourceID = strings.ToLower(doc.ResourceID)
	out.ETag = etag
	out.Seq = seq
	out.ExpiresAt = time.Time{}
	if expires != nil {
		out.ExpiresAt = expires.UTC()
	}
	return &out
}

const expiresExpr = "CASE WHEN $7::bigint > 0 THEN now() + ($7::bigint * interval '1 microsecond') END"

// create is the step that creates doc, and sets *out to it as written. An expired document
// that the purger has not removed yet does not block it.
func create(doc *docstore.Document, out **docstore.Document) writeStep {
	etag := newETag()
	return writeStep{
		ctes: `w AS (
INSERT INTO documents (partition_key, id, type, resource_id, body, etag, expires_at, seq, updated_at)
VALUES ($1, $2, $3, $4, $5::jsonb, $6, ` + expiresExpr + `, nextval('document_seq'), now())
ON CONFLICT (partition_key, id) DO UPDATE SET
  type = EXCLUDED.type, resource_id = EXCLUDED.resource_id, body = EXCLUDED.body, etag = EXCLUDED.etag,
  expires_at = EXCLUDED.expires_at, seq = EXCLUDED.seq, updated_at = now()
WHERE documents.expires_at IS NOT NULL AND documents.expires_at <= now()
RETURNING seq, expires_at)`,
		args:    []any{doc.PartitionKey, doc.ID, doc.Type, strings.ToLower(doc.ResourceID), string(doc.Body), etag, doc.TTL.Microseconds()},
		written: func(seq int64, expires *time.Time) { *out = written(doc, etag, seq, expires) },
		none:    func(context.Context, querier) error { return docstore.ErrAlreadyExists },
		what:    fmt.Sprintf("create document %s/%s", doc.PartitionKey, doc.ID),
	}
}

// replace is the step that replaces doc if its etag is ifMatch, and sets *out to it as written.
func replace(doc *docstore.Document, ifMatch string, out **docstore.Document) writeStep {
	etag := newETag()
	return writeStep{
		ctes: `w AS (
UPDATE documents SET type = $3, resource_id = $4, body = $5::jsonb, etag = $6, expires_at = ` + expiresExpr + `,
  seq = nextval('document_seq'), updated_at = now()
WHERE partition_key = $1 AND id = $2 AND etag = $8 AND ` + liveClause + `
RETURNING seq, expires_at)`,
		args:    []any{doc.PartitionKey, doc.ID, doc.Type, strings.ToLower(doc.ResourceID), string(doc.Body), etag, doc.TTL.Microseconds(), ifMatch},
		written: func(seq int64, expires *time.Time) { *out = written(doc, etag, seq, expires) },
		none:    func(ctx context.Context, q querier) error { return missingOrStale(ctx, q, doc.PartitionKey, doc.ID) },
		what:    fmt.Sprintf("replace document %s/%s", doc.PartitionKey, doc.ID),
	}
}

// del is the step that deletes a document if its etag is ifMatch, recording its tombstone.
func del(partition, id, ifMatch string) writeStep {
	return writeStep{
		ctes: `d AS (
  DELETE FROM documents WHERE partition_key = $1 AND id = $2 AND etag = $3 AND ` + liveClause + `
  RETURNING partition_key, id, type, resource_id
), w AS (
INSERT INTO document_tombstones (seq, partition_key, id, type, resource_id)
SELECT nextval('document_seq'), partition_key, id, type, resource_id FROM d
RETURNING seq, NULL::timestamptz AS expires_at)`,
		args: []any{partition, id, ifMatch},
		none: func(ctx context.Context, q querier) error { return missingOrStale(ctx, q, partition, id) },
		what: fmt.Sprintf("delete document %s/%s", partition, id),
	}
}

// missingOrStale tells why a conditional write matched no row: ErrPreconditionFailed if the
// document is there, ErrNotFound if not.
func missingOrStale(ctx context.Context, q querier, partition, id string) error {
	var exists bool
	if err := q.QueryRow(ctx,
		"SELECT EXISTS (SELECT 1 FROM documents WHERE partition_key = $1 AND id = $2 AND "+liveClause+")",
		partition, id).Scan(&exists); err != nil {
		return fmt.Errorf("check document %s/%s: %w", partition, id, err)
	}
	if exists {
		return docstore.ErrPreconditionFailed
	}
	return docstore.ErrNotFound
}

type continuation struct {
	P string `json:"p"`
	I string `json:"i"`
}

func encodeContinuation(d *docstore.Document) string {
	b, _ := json.Marshal(continuation{P: d.PartitionKey, I: d.ID})
	return base64.RawURLEncoding.EncodeToString(b)
}

func decodeContinuation(s string) (continuation, error) {
	var c continuation
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil {
		return c, docstore.ErrInvalidContinuation
	}
	dec := json.NewDecoder(strings.NewReader(string(b)))
	dec.DisallowUnknownFields()
	// A NUL is no key of ours, and PostgreSQL cannot take it as a text parameter (the query
	// would fail, a 500 for the caller's bad token).
	if err := dec.Decode(&c); err != nil || c.I == "" || strings.ContainsRune(c.P+c.I, 0) {
		return c, docstore.ErrInvalidContinuation
	}
	return c, nil
}

// likePrefix escapes LIKE wildcards so a prefix matches literally.
func likePrefix(p string) string {
	r := strings.NewReplacer(`\`, `\\`, `%`, `\%`, `_`, `\_`)
	return r.Replace(p) + "%"
}

// Query implements docstore.Store. Pages are ordered by (partition, id); the continuation token is
// the key of the last document returned.
func (s *Store) Query(ctx context.Context, q docstore.Query) (_ docstore.Page, err error) {
	defer markUnavailable(&err)
	return s.queryPage(ctx, q, docColumns, scanDoc)
}

// headColumns are the columns of a document without its body.
const headColumns = "partition_key, id, type, resource_id, etag, expires_at, seq"

func scanHead(row pgx.Row) (*docstore.Document, error) {
	var d docstore.Document
	var expires *time.Time
	if err := row.Scan(&d.PartitionKey, &d.ID, &d.Type, &d.ResourceID, &d.ETag, &expires, &d.Seq); err != nil {
		return nil, err
	}
	setExpiry(&d, expires)
	return &d, nil
}

// QueryHeads implements docstore.HeadQuerier: the page Query would return, in the same order
// with the same continuation, with every document's Body left nil.
func (s *Store) QueryHeads(ctx context.Context, q docstore.Query) (_ docstore.Page, err error) {
	defer markUnavailable(&err)
	return s.queryPage(ctx, q, headColumns, scanHead)
}

// maxGetManyIDs is how many IDs one GetMany statement asks for; a longer list takes one statement
// per further maxGetManyIDs.
const maxGetManyIDs = 1000

// GetMany implements docstore.HeadQuerier: one statement per maxGetManyIDs IDs, each selecting
// only documents of type typ.
func (s *Store) GetMany(ctx context.Context, partition, typ string, ids []string) (_ []*docstore.Document, err error) {
	defer markUnavailable(&err)
	var out []*docstore.Document
	for chunk := range slices.Chunk(ids, maxGetManyIDs) {
		docs, err := s.queryRows(ctx, "SELECT "+docColumns+" FROM documents WHERE partition_key = $1 AND type = $2 AND id = ANY($3) AND "+liveClause,
			[]any{partition, typ, chunk}, scanDoc)
		if err != nil {
			return nil, fmt.Errorf("get %d documents in %s: %w", len(ids), partition, err)
		}
		out = append(out, docs...)
	}
	slices.SortFunc(out, func(a, b *docstore.Document) int { return strings.Compare(a.ID, b.ID) })
	return out, nil
}

// queryRows runs one read-only statement, retried over a lost connection, and scans each row.
func (s *Store) queryRows(ctx context.Context, sql string, args []any, scan func(pgx.Row) (*docstore.Document, error)) ([]*docstore.Document, error) {
	var out []*docstore.Document
	err := s.loss.Retry(ctx, true, func() error {
		out = nil
		rows, err := s.pool.Query(ctx, sql, args...)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			d, err := scan(rows)
			if err != nil {
				return err
			}
			out = append(out, d)
		}
		return rows.Err()
	})
	return out, err
}

func (s *Store) queryPage(ctx context.Context, q docstore.Query, columns string,
	scan func(pgx.Row) (*docstore.Document, error)) (docstore.Page, error) {
	limit := q.Limit
	if limit <= 0 {
		limit = defaultPageSize
	}
	if limit > maxPageSize {
		limit = maxPageSize
	}
	where := []string{liveClause}
	var args []any
	arg := func(v any) string {
		args = append(args, v)
		return "$" + strconv.Itoa(len(args))
	}
	if q.Partition != "" {
		where = append(where, "partition_key = "+arg(q.Partition))
	}
	if q.Type != "" {
		where = append(where, "type = "+arg(q.Type))
	}
	if q.ResourceIDPrefix != "" {
		where = append(where, "resource_id LIKE "+arg(likePrefix(strings.ToLower(q.ResourceIDPrefix)))+` ESCAPE '\'`)
	}
	if q.Continuation != "" {
		c, err := decodeContinuation(q.Continuation)
		if err != nil {
			return docstore.Page{}, err
		}
		if q.Partition != "" && c.P != q.Partition {
			return docstore.Page{}, docstore.ErrInvalidContinuation
		}
		where = append(where, "(partition_key, id) > ("+arg(c.P)+", "+arg(c.I)+")")
	}
	sql := "SELECT " + columns + " FROM documents WHERE " + strings.Join(where, " AND ") +
		" ORDER BY partition_key, id LIMIT " + arg(limit+1)
	docs, err := s.queryRows(ctx, sql, args, scan)
	if err != nil {
		return docstore.Page{}, fmt.Errorf("query documents: %w", err)
	}
	page := docstore.Page{Documents: docs}
	if len(page.Documents) > limit {
		page.Documents = page.Documents[:limit]
		page.Continuation = encodeContinuation(page.Documents[limit-1])
	}
	return page, nil
}

// Changes implements docstore.Store. The feed holds the latest version of each document (earlier
// versions of a document written several times since the checkpoint are not repeated) and a
// tombstone for each delete; both are ordered by seq.
func (s *Store) Changes(ctx context.Context, after docstore.Checkpoint, limit int) (_ docstore.ChangePage, err error) {
	defer markUnavailable(&err)
	if limit <= 0 {
		limit = defaultPageSize
	}
	checkpoint, err := seqOf(after)
	if err != nil {
		return docstore.ChangePage{}, err
	}
	var out []docstore.Change
	err = s.loss.Retry(ctx, true, func() error {
		out = nil
		rows, err := s.pool.Query(ctx, `
SELECT seq, false, partition_key, id, type, resource_id, body, etag, expires_at
  FROM documents WHERE seq > $1 AND `+liveClause+`
UNION ALL
SELECT seq, true, partition_key, id, type, resource_id, NULL, '', NULL
  FROM document_tombstones WHERE seq > $1
ORDER BY 1 LIMIT $2`, checkpoint, limit)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var c docstore.Change
			var d docstore.Document
			var body []byte
			var expires *time.Time
			if err := rows.Scan(&c.Seq, &c.Deleted, &d.PartitionKey, &d.ID, &d.Type, &d.ResourceID, &body, &d.ETag, &expires); err != nil {
				return err
			}
			d.Seq = c.Seq
			if body != nil {
				d.Body = json.RawMessage(body)
			}
			setExpiry(&d, expires)
			c.Doc = &d
			out = append(out, c)
		}
		return rows.Err()
	})
	if err != nil {
		return docstore.ChangePage{}, fmt.Errorf("read change feed after %d: %w", checkpoint, err)
	}
	next := after
	if len(out) > 0 {
		next = Checkpoint(out[len(out)-1].Seq)
	}
	return docstore.ChangePage{Changes: out, Next: next}, nil
}

// Checkpoint is the change feed position just after seq: PostgreSQL's checkpoint is the
// sequence number of the last change read, in decimal.
func Checkpoint(seq int64) docstore.Checkpoint {
	return docstore.Checkpoint(strconv.FormatInt(seq, 10))
}

// seqOf reads a checkpoint Checkpoint issued; the empty checkpoint is the start of the feed.
func seqOf(cp docstore.Checkpoint) (int64, error) {
	if cp == "" {
		return 0, nil
	}
	n, err := strconv.ParseInt(string(cp), 10, 64)
	if err != nil || n < 0 {
		return 0, fmt.Errorf("%w: %q", docstore.ErrInvalidCheckpoint, cp)
	}
	return n, nil
}

// WaitForChanges implements docstore.Store.
func (s *Store) WaitForChanges(ctx context.Context, after docstore.Checkpoint) error {
	checkpoint, err := seqOf(after)
	if err != nil {
		return err
	}
	for {
		// Take the wake channel before checking, so a notification between the check and the
		// wait is not lost.
		s.mu.Lock()
		wake := s.wake
		s.mu.Unlock()
		var has bool
		err := s.pool.QueryRow(ctx, `
SELECT EXISTS (SELECT 1 FROM documents WHERE seq > $1 AND `+liveClause+`)
    OR EXISTS (SELECT 1 FROM document_tombstones WHERE seq > $1)`, checkpoint).Scan(&has)
		if err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			return fmt.Errorf("check change feed after %d: %w", checkpoint, err)
		}
		if has {
			return nil
		}
		t := time.NewTimer(s.opts.FallbackPoll)
		select {
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-wake:
		case <-t.C:
		}
		t.Stop()
	}
}

func (s *Store) broadcast() {
	s.mu.Lock()
	close(s.wake)
	s.wake = make(chan struct{})
	s.mu.Unlock()
}

// listen keeps one dedicated connection LISTENing and wakes waiters on every notification. It
// reconnects with backoff; after each (re)connect it wakes everyone, as notifications may have
// been missed meanwhile.
func (s *Store) listen(ctx context.Context) {
	defer s.wg.Done()
	backoff.Reconnect(ctx, backoff.Policy{Initial: 100 * time.Millisecond, Max: 5 * time.Second}, func(ctx context.Context) (bool, error) {
		err := s.listenOnce(ctx)
		// The listener sees a restart first; the pool then checks what it held before.
		s.loss.Seen(err)
		s.broadcast()
		return false, err
	}, func(err error, wait time.Duration) {
		s.opts.Logger.Warn("document store listener lost its connection", "error", err, "retryIn", wait)
	})
}

func (s *Store) listenOnce(ctx context.Context) error {
	conn, err := pgx.ConnectConfig(ctx, s.pool.Config().ConnConfig.Copy())
	if err != nil {
		return err
	}
	defer conn.Close(context.Background())
	if _, err := conn.Exec(ctx, "LISTEN "+notifyChannel); err != nil {
		return err
	}
	s.broadcast()
	for {
		if _, err := conn.WaitForNotification(ctx); err != nil {
			return err
		}
		s.broadcast()
	}
}

func (s *Store) purgeLoop(ctx context.Context) {
	defer s.wg.Done()
	t := time.NewTicker(s.opts.PurgeInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if _, err := s.Purge(ctx); err != nil && ctx.Err() == nil {
			s.opts.Logger.Warn("purge expired documents", "error", err)
		}
	}
}

// Purge deletes expired documents, recording a tombstone for each so followers see them go, and
// drops tombstones older than the retention. It returns how many documents it deleted.
func (s *Store) Purge(ctx context.Context) (int64, error) {
	var n int64
	err := s.writeTx(ctx, func(tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, `
WITH d AS (
  DELETE FROM documents WHERE expires_at IS NOT NULL AND expires_at <= now()
  RETURNING partition_key, id, type, resource_id
)
INSERT INTO document_tombstones (seq, partition_key, id, type, resource_id)
SELECT nextval('document_seq'), partition_key, id, type, resource_id FROM d`)
		if err != nil {
			return fmt.Errorf("purge expired documents: %w", err)
		}
		n = tag.RowsAffected()
		if _, err := tx.Exec(ctx, "DELETE FROM document_tombstones WHERE deleted_at < now() - ($1::bigint * interval '1 microsecond')",
			s.opts.TombstoneRetention.Microseconds()); err != nil {
			return fmt.Errorf("purge old tombstones: %w", err)
		}
		return nil
	})
	return n, err
}
