package store

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	csv1 "github.com/openhcp/openhcp/cluster-service/api/v1"
)

// Every kind (clusters, node pools, external auths, break-glass objects) keeps its own event
// log table, but all draw revisions from the one cluster_revision_seq and all share the shape
// (revision, <id column>, type, <document column>, create_time) with one event per object. The
// code that writes, reads, snapshots and compacts a log is therefore written once, here; what
// each kind keeps in its document, and how it decodes it, stays with the kind.

// eventLog names the table, key and document columns of one kind's event log. The names are
// constants of this package, never input, so building SQL from them is safe.
type eventLog struct {
	table, idColumn, docColumn string
	// what names one object in write errors ("prune events of node pool np1").
	what string
	// label names the log in read errors ("read node pool events", "node pool snapshot"); the
	// cluster log's is empty ("read events", "snapshot").
	label string
	// compactedColumn is its column of cluster_event_compaction; empty for a log whose events
	// are never pruned.
	compactedColumn string
}

var (
	clusterEventLog      = eventLog{"cluster_events", "cluster_id", "cluster", "cluster", "", "compacted_revision"}
	nodePoolEventLog     = eventLog{"node_pool_events", "node_pool_id", "node_pool", "node pool", "node pool", "node_pool_compacted_revision"}
	externalAuthEventLog = eventLog{"external_auth_events", "external_auth_id", "external_auth", "external auth", "external auth", "external_auth_compacted_revision"}
	breakGlassEventLog   = eventLog{"break_glass_events", "object_id", "object", "break-glass object", "break-glass", ""}
)

// named puts the log's label before a noun in error messages: "events" → "node pool events".
func (l eventLog) named(noun string) string { return strings.TrimSpace(l.label + " " + noun) }

// writeEvent keeps one event per object: it replaces the object's previous event with this one
// (UPSERTED or the DELETED tombstone) and wakes the watchers of l (the payload is l's table;
// PostgreSQL sends a transaction's identical notifications once).
func writeEvent(ctx context.Context, tx pgx.Tx, l eventLog, id string, revision int64, typ csv1.EventType, doc []byte) error {
	_, err := runSteps(ctx, tx, true, eventSteps(l, id, revision, typ, doc))
	return err
}

// eventSteps are writeEvent's statements.
func eventSteps(l eventLog, id string, revision int64, typ csv1.EventType, doc []byte) []sqlStep {
	t := "UPSERTED"
	if typ == csv1.EventType_EVENT_TYPE_DELETED {
		t = "DELETED"
	}
	return []sqlStep{
		{`DELETE FROM ` + l.table + ` WHERE ` + l.idColumn + ` = $1`, []any{id}, fmt.Sprintf("prune events of %s %s", l.what, id)},
		{`INSERT INTO ` + l.table + ` (revision, ` + l.idColumn + `, type, ` + l.docColumn + `) VALUES ($1, $2, $3, $4)`,
			[]any{revision, id, t, doc}, fmt.Sprintf("record event of %s %s", l.what, id)},
		{`SELECT pg_notify($1, $2)`, []any{notifyChannel, l.table}, "notify"},
	}
}

// writeUpsertEvents is writeEvent (UPSERTED) for many objects of l at once: ids[i] changed at
// revisions[i] into docs[i] (JSON). One batch of three statements whatever their number, and one
// notification.
func writeUpsertEvents(ctx context.Context, tx pgx.Tx, l eventLog, ids []string, revisions []int64, docs []string) error {
	if len(ids) == 0 {
		return nil
	}
	_, err := runSteps(ctx, tx, true, []sqlStep{
		{`DELETE FROM ` + l.table + ` WHERE ` + l.idColumn + ` = ANY($1)`, []any{ids}, fmt.Sprintf("prune events of %d %s objects", len(ids), l.what)},
		{`INSERT INTO ` + l.table + ` (revision, ` + l.idColumn + `, type, ` + l.docColumn + `)
			SELECT r, i, 'UPSERTED', d::jsonb FROM unnest($1::bigint[], $2::text[], $3::text[]) AS e(r, i, d)`,
			[]any{revisions, ids, docs}, fmt.Sprintf("record events of %d %s objects", len(ids), l.what)},
		{`SELECT pg_notify($1, $2)`, []any{notifyChannel, l.table}, "notify"},
	})
	return err
}

// sqlStep is one statement of a write and what it does, for errors.
type sqlStep struct {
	sql  string
	args []any
	what string
}

// runSteps executes steps in order in tx, as one batch (one round trip) or one by one, and
// returns each one's command tag. Every write holds the write lock until its commit, so each
// round trip saved shortens every other writer's wait (docs/performance.md).
func runSteps(ctx context.Context, tx pgx.Tx, batched bool, steps []sqlStep) ([]pgconn.CommandTag, error) {
	tags := make([]pgconn.CommandTag, 0, len(steps))
	if !batched {
		for _, st := range steps {
			tag, err := tx.Exec(ctx, st.sql, st.args...)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", st.what, err)
			}
			tags = append(tags, tag)
		}
		return tags, nil
	}
	var batch pgx.Batch
	for _, st := range steps {
		batch.Queue(st.sql, st.args...)
	}
	br := tx.SendBatch(ctx, &batch)
	for _, st := range steps {
		tag, err := br.Exec()
		if err != nil {
			br.Close()
			return nil, fmt.Errorf("%s: %w", st.what, err)
		}
		tags = append(tags, tag)
	}
	if err := br.Close(); err != nil {
		return nil, fmt.Errorf("%s: %w", steps[len(steps)-1].what, err)
	}
	return tags, nil
}

// eventsAfter reads up to limit events of l with a revision greater than after, in order, and
// decodes each document with decode (typ is UPSERTED or DELETED).
func eventsAfter[E any](ctx context.Context, q querier, l eventLog, after int64, limit int,
	decode func(rev int64, typ csv1.EventType, doc []byte) (E, error)) ([]E, error) {
	rows, err := q.Query(ctx, `SELECT revision, type, `+l.docColumn+` FROM `+l.table+` WHERE revision > $1
		ORDER BY revision LIMIT $2`, after, limit)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", l.named("events"), err)
	}
	defer rows.Close()
	var out []E
	for rows.Next() {
		var rev int64
		var t string
		var doc []byte
		if err := rows.Scan(&rev, &t, &doc); err != nil {
			return nil, fmt.Errorf("read %s: %w", l.named("events"), err)
		}
		typ := csv1.EventType_EVENT_TYPE_UPSERTED
		if t == "DELETED" {
			typ = csv1.EventType_EVENT_TYPE_DELETED
		}
		e, err := decode(rev, typ, doc)
		if err != nil {
			return nil, fmt.Errorf("decode %s %d: %w", l.named("event"), rev, err)
		}
		out = append(out, e)
	}
	return out, rows.Err()
}

// snapshot reads every object of a kind with query and the revision of l the read is
// consistent with, in one repeatable-read transaction; a watcher continues with the events after
// that revision.
func snapshot[T any](ctx context.Context, s *Store, l eventLog, query string, scan func(pgx.Row) (T, error)) ([]T, int64, error) {
	tx, err := s.pool.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly})
	if err != nil {
		return nil, 0, fmt.Errorf("%s: %w", l.named("snapshot"), err)
	}
	defer tx.Rollback(ctx) //nolint:errcheck
	rev, err := currentRevision(ctx, tx, l)
	if err != nil {
		return nil, 0, fmt.Errorf("%s revision: %w", l.named("snapshot"), err)
	}
	out, err := queryAll(ctx, tx, scan, query)
	if err != nil {
		return nil, 0, fmt.Errorf("%s: %w", l.named("snapshot"), err)
	}
	return out, rev, nil
}

// currentRevision is the revision of l's latest event (0 for an empty log).
func currentRevision(ctx context.Context, q querier, l eventLog) (int64, error) {
	var rev int64
	err := q.QueryRow(ctx, `SELECT coalesce(max(revision), 0) FROM `+l.table).Scan(&rev)
	return rev, err
}

// compactedRevision is the newest revision of l whose tombstone may have been pruned.
func compactedRevision(ctx context.Context, q querier, l eventLog) (int64, error) {
	var rev int64
	err := q.QueryRow(ctx, `SELECT `+l.compactedColumn+` FROM cluster_event_compaction`).Scan(&rev)
	return rev, err
}

// pruneTombstonesTx removes l's DELETED events recorded before `before`, raises l's compacted
// revision to the newest one removed, and returns how many it removed.
func pruneTombstonesTx(ctx context.Context, tx pgx.Tx, l eventLog, before time.Time) (int64, error) {
	var n int64
	var newest *int64
	if err := tx.QueryRow(ctx, `WITH gone AS (DELETE FROM `+l.table+` WHERE type = 'DELETED' AND create_time < $1 RETURNING revision)
		SELECT count(*), max(revision) FROM gone`, before).Scan(&n, &newest); err != nil {
		return 0, fmt.Errorf("prune %s: %w", l.named("tombstones"), err)
	}
	if newest == nil {
		return 0, nil
	}
	_, err := tx.Exec(ctx, `UPDATE cluster_event_compaction SET `+l.compactedColumn+` = greatest(`+l.compactedColumn+`, $1)`, *newest)
	return n, err
}

// queryAll runs sql and scans every row with scan. The rows are closed when it returns, so a
// caller inside a transaction may go on using it.
func queryAll[T any](ctx context.Context, q querier, scan func(pgx.Row) (T, error), sql string, args ...any) ([]T, error) {
	rows, err := q.Query(ctx, sql, args...)
	return scanAll(rows, err, scan)
}

// scanAll scans every row of rows (a query's answer with its error err) with scan and closes
// them.
func scanAll[T any](rows pgx.Rows, err error, scan func(pgx.Row) (T, error)) ([]T, error) {
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []T
	for rows.Next() {
		v, err := scan(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, rows.Err()
}
