package store

import (
	"context"
	"io/fs"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/openhcp/openhcp/internal/pgmigrate"
)

// TestSpecRevisionMigration: a row stored before migration 0009 gets spec_revision = its
// revision; afterwards the trigger moves spec_revision only when the spec changes.
func TestSpecRevisionMigration(t *testing.T) {
	ctx := context.Background()
	pool, err := pgxpool.New(ctx, newDSN(t))
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	// The schema as it was before 0009.
	before := fstest.MapFS{}
	entries, err := fs.ReadDir(migrationFS, "migrations")
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if e.Name() >= "0009" {
			continue
		}
		b, err := fs.ReadFile(migrationFS, "migrations/"+e.Name())
		if err != nil {
			t.Fatal(err)
		}
		before["migrations/"+e.Name()] = &fstest.MapFile{Data: b}
	}
	if err := pgmigrate.Run(ctx, pool, before, "migrations", migrationLockKey, "before 0009"); err != nil {
		t.Fatal(err)
	}
	if _, err := pool.Exec(ctx, `INSERT INTO clusters (id, arm_resource_id, arm_resource_id_orig, spec, status, state, namespace, revision, etcd_encryption_key, ssh_public_key)
		VALUES ('c1', 'arm', 'ARM', '{"versionId":"4.19.7"}', '{}', 'READY', 'ns', 42, '\x00', 'key')`); err != nil {
		t.Fatal(err)
	}
	if err := Migrate(ctx, pool); err != nil {
		t.Fatal(err)
	}
	specRev := func() (rev, spec int64) {
		t.Helper()
		if err := pool.QueryRow(ctx, `SELECT revision, spec_revision FROM clusters WHERE id = 'c1'`).Scan(&rev, &spec); err != nil {
			t.Fatal(err)
		}
		return rev, spec
	}
	if _, spec := specRev(); spec != 42 {
		t.Fatalf("old row: spec_revision %d, want its revision 42", spec)
	}
	for _, tc := range []struct {
		name, sql string
		want      int64
	}{
		{"status_write_keeps_it", `UPDATE clusters SET status = '{"state":"UPDATING"}', revision = 43 WHERE id = 'c1'`, 42},
		{"same_spec_keeps_it", `UPDATE clusters SET spec = '{"versionId":"4.19.7"}', revision = 44 WHERE id = 'c1'`, 42},
		{"spec_write_moves_it", `UPDATE clusters SET spec = '{"versionId":"4.20.1"}', revision = 45 WHERE id = 'c1'`, 45},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := pool.Exec(ctx, tc.sql); err != nil {
				t.Fatal(err)
			}
			if _, spec := specRev(); spec != tc.want {
				t.Fatalf("spec_revision %d after %s, want %d", spec, strings.Fields(tc.sql)[3], tc.want)
			}
		})
	}
}
