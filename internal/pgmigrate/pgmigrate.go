// Package pgmigrate applies a service's embedded PostgreSQL migrations: the one runner every
// store of the region (the document store, Cluster Service's store) uses.
//
// Migrations are files NNNN_name.sql (a positive version, unique). Each runs in its own
// transaction together with its row in schema_migrations, so a crash leaves it applied or not,
// never half; a session advisory lock (one key per store) makes replicas that start together wait
// for each other; a re-run applies only what is missing; and a database that holds a version
// this binary does not know (a newer binary migrated it) is refused rather than run against.
package pgmigrate

import (
	"context"
	"fmt"
	"io/fs"
	"path"
	"sort"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// Migration is one file: its version, file name and SQL.
type Migration struct {
	Version int
	Name    string
	SQL     string
}

// Load reads the migrations in dir of fsys, in version order.
func Load(fsys fs.FS, dir string) ([]Migration, error) {
	entries, err := fs.ReadDir(fsys, dir)
	if err != nil {
		return nil, fmt.Errorf("read migrations: %w", err)
	}
	var out []Migration
	seen := map[int]string{}
	for _, e := range entries {
		num, _, ok := strings.Cut(e.Name(), "_")
		v, err := strconv.Atoi(num)
		if !ok || err != nil || v <= 0 || !strings.HasSuffix(e.Name(), ".sql") {
			return nil, fmt.Errorf("migration %s: the name must be <positive version>_<name>.sql", e.Name())
		}
		if prev, dup := seen[v]; dup {
			return nil, fmt.Errorf("migrations %s and %s share version %d", prev, e.Name(), v)
		}
		seen[v] = e.Name()
		b, err := fs.ReadFile(fsys, path.Join(dir, e.Name()))
		if err != nil {
			return nil, fmt.Errorf("read migration %s: %w", e.Name(), err)
		}
		out = append(out, Migration{Version: v, Name: e.Name(), SQL: string(b)})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Version < out[j].Version })
	return out, nil
}

// Run applies the migrations in dir of fsys that the database has not recorded, under the
// session advisory lock lockKey. what names the store in errors.
func Run(ctx context.Context, pool *pgxpool.Pool, fsys fs.FS, dir string, lockKey int64, what string) error {
	ms, err := Load(fsys, dir)
	if err != nil {
		return fmt.Errorf("migrate %s: %w", what, err)
	}
	c, err := pool.Acquire(ctx)
	if err != nil {
		return fmt.Errorf("migrate %s: acquire a connection: %w", what, err)
	}
	defer c.Release()
	return runOn(ctx, c.Conn(), ms, lockKey, what)
}

// RunConn is Run on one connection (a migration job's, or a superuser's that installs a
// schema another login uses).
func RunConn(ctx context.Context, conn *pgx.Conn, fsys fs.FS, dir string, lockKey int64, what string) error {
	ms, err := Load(fsys, dir)
	if err != nil {
		return fmt.Errorf("migrate %s: %w", what, err)
	}
	return runOn(ctx, conn, ms, lockKey, what)
}

func runOn(ctx context.Context, conn *pgx.Conn, ms []Migration, lockKey int64, what string) error {
	if _, err := conn.Exec(ctx, `SELECT pg_advisory_lock($1)`, lockKey); err != nil {
		return fmt.Errorf("migrate %s: take the migration lock: %w", what, err)
	}
	defer conn.Exec(context.WithoutCancel(ctx), `SELECT pg_advisory_unlock($1)`, lockKey) //nolint:errcheck

	if _, err := conn.Exec(ctx, `CREATE TABLE IF NOT EXISTS schema_migrations (
  version integer PRIMARY KEY, name text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())`); err != nil {
		return fmt.Errorf("migrate %s: create schema_migrations: %w", what, err)
	}
	rows, err := conn.Query(ctx, `SELECT version FROM schema_migrations`)
	if err != nil {
		return fmt.Errorf("migrate %s: read schema_migrations: %w", what, err)
	}
	applied, err := pgx.CollectRows(rows, pgx.RowTo[int32])
	if err != nil {
		return fmt.Errorf("migrate %s: read schema_migrations: %w", what, err)
	}
	done := map[int]bool{}
	for _, v := range applied {
		done[int(v)] = true
	}
	known := map[int]bool{}
	for _, m := range ms {
		known[m.Version] = true
	}
	for v := range done {
		if !known[v] {
			return fmt.Errorf("migrate %s: the database has schema version %d, which this binary does not know: a newer binary migrated it", what, v)
		}
	}
	for _, m := range ms {
		if done[m.Version] {
			continue
		}
		err := pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error {
			if _, err := tx.Exec(ctx, m.SQL); err != nil {
				return err
			}
			_, err := tx.Exec(ctx, `INSERT INTO schema_migrations (version, name) VALUES ($1, $2)`, m.Version, m.Name)
			return err
		})
		if err != nil {
			return fmt.Errorf("migrate %s: apply %s: %w", what, m.Name, err)
		}
	}
	return nil
}
