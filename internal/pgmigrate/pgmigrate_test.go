package pgmigrate_test

import (
	"context"
	"strings"
	"sync"
	"testing"
	"testing/fstest"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/openhcp/openhcp/internal/pgmigrate"
	"github.com/openhcp/openhcp/internal/pgserver/pgservertest"
)

func files(m map[string]string) fstest.MapFS {
	fsys := fstest.MapFS{}
	for name, sql := range m {
		fsys["m/"+name] = &fstest.MapFile{Data: []byte(sql)}
	}
	return fsys
}

func TestLoad(t *testing.T) {
	tests := []struct {
		name  string
		files map[string]string
		want  []int
		err   string
	}{
		{"ordered_by_version", map[string]string{"0010_b.sql": "", "0002_a.sql": ""}, []int{2, 10}, ""},
		{"no_version", map[string]string{"init.sql": ""}, nil, "positive version"},
		{"zero_version", map[string]string{"0000_a.sql": ""}, nil, "positive version"},
		{"not_sql", map[string]string{"0001_a.txt": ""}, nil, ".sql"},
		{"duplicate_version", map[string]string{"0001_a.sql": "", "1_b.sql": ""}, nil, "share version 1"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ms, err := pgmigrate.Load(files(tc.files), "m")
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err %v, want one saying %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var got []int
			for _, m := range ms {
				got = append(got, m.Version)
			}
			if len(got) != len(tc.want) || got[0] != tc.want[0] || got[len(got)-1] != tc.want[len(tc.want)-1] {
				t.Fatalf("versions %v, want %v", got, tc.want)
			}
		})
	}
}

// TestRun against the real PostgreSQL: concurrent runs apply each migration once, a re-run is a
// no-op, a failing migration leaves nothing behind, and a newer schema is refused.
func TestRun(t *testing.T) {
	if testing.Short() {
		t.Skip("starts PostgreSQL")
	}
	ctx := context.Background()
	pool, err := pgxpool.New(ctx, pgservertest.NewDatabase(t, pgservertest.Start(t)))
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	const key = 42
	v1 := files(map[string]string{"0001_a.sql": "CREATE TABLE a (id int)", "0002_b.sql": "INSERT INTO a VALUES (1)"})

	t.Run("concurrent_runs_apply_once", func(t *testing.T) {
		var wg sync.WaitGroup
		errs := make([]error, 4)
		for i := range errs {
			wg.Add(1)
			go func() { defer wg.Done(); errs[i] = pgmigrate.Run(ctx, pool, v1, "m", key, "test store") }()
		}
		wg.Wait()
		for _, err := range errs {
			if err != nil {
				t.Fatal(err)
			}
		}
		var rows int
		if err := pool.QueryRow(ctx, "SELECT count(*) FROM a").Scan(&rows); err != nil || rows != 1 {
			t.Fatalf("rows in a = %d (%v), want 1: the insert ran more than once", rows, err)
		}
	})
	t.Run("rerun_is_a_no_op", func(t *testing.T) {
		if err := pgmigrate.Run(ctx, pool, v1, "m", key, "test store"); err != nil {
			t.Fatal(err)
		}
		var rows int
		if err := pool.QueryRow(ctx, "SELECT count(*) FROM a").Scan(&rows); err != nil || rows != 1 {
			t.Fatalf("rows in a = %d (%v), want 1", rows, err)
		}
	})
	t.Run("a_failing_migration_leaves_nothing", func(t *testing.T) {
		bad := files(map[string]string{"0001_a.sql": "", "0002_b.sql": "", "0003_c.sql": "CREATE TABLE c (id int); SELECT no_such_column FROM a"})
		err := pgmigrate.Run(ctx, pool, bad, "m", key, "test store")
		if err == nil || !strings.Contains(err.Error(), "0003_c.sql") {
			t.Fatalf("err %v, want the failing file named", err)
		}
		var exists bool
		if err := pool.QueryRow(ctx, "SELECT to_regclass('c') IS NOT NULL OR EXISTS (SELECT 1 FROM schema_migrations WHERE version = 3)").Scan(&exists); err != nil || exists {
			t.Fatalf("half of migration 3 stayed (%v)", err)
		}
	})
	t.Run("a_newer_schema_is_refused", func(t *testing.T) {
		if _, err := pool.Exec(ctx, "INSERT INTO schema_migrations (version, name) VALUES (9, '0009_future.sql')"); err != nil {
			t.Fatal(err)
		}
		err := pgmigrate.Run(ctx, pool, v1, "m", key, "test store")
		if err == nil || !strings.Contains(err.Error(), "version 9") {
			t.Fatalf("err %v, want the unknown version 9 refused", err)
		}
	})
}
