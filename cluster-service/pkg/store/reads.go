package store

import (
	"context"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/openhcp/openhcp/internal/docstore/postgres"
)

// readPool is the pool as the store's reads outside a transaction use it: a read that met a
// connection a PostgreSQL restart killed runs once more, on a connection the pool has checked
// (postgres.ConnLoss owns that rule). Writes use the pool itself, in transactions, and are not
// run again: one whose connection died may have committed.
type readPool struct {
	pool *pgxpool.Pool
	loss *postgres.ConnLoss
}

var _ querier = readPool{}

// Query runs sql; a lost connection shows either at once (a statement not yet prepared on that
// connection) or as the first row's error, so the first row is read here, inside the retry.
func (r readPool) Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error) {
	var rows pgx.Rows
	err := r.loss.Retry(ctx, true, func() (err error) {
		rows, err = r.pool.Query(ctx, sql, args...)
		if err != nil {
			return err
		}
		if rows.Next() {
			rows = &firstRowRead{Rows: rows}
			return nil
		}
		return rows.Err()
	})
	return rows, err
}

// QueryRow runs sql when the row is scanned, and once more if that met a lost connection.
func (r readPool) QueryRow(ctx context.Context, sql string, args ...any) pgx.Row {
	return retriedRow{r: r, ctx: ctx, sql: sql, args: args}
}

type retriedRow struct {
	r    readPool
	ctx  context.Context
	sql  string
	args []any
}

func (q retriedRow) Scan(dest ...any) error {
	return q.r.loss.Retry(q.ctx, true, func() error { return q.r.pool.QueryRow(q.ctx, q.sql, q.args...).Scan(dest...) })
}

// firstRowRead is rows whose first row readPool.Query has already moved to.
type firstRowRead struct {
	pgx.Rows
	served bool
}

func (f *firstRowRead) Next() bool {
	if !f.served {
		f.served = true
		return true
	}
	return f.Rows.Next()
}
