package localregion

import (
	"context"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/openhcp/openhcp/dev-infrastructure/mgmtcluster"
	"github.com/openhcp/openhcp/internal/pgserver"
	"github.com/openhcp/openhcp/internal/pki"
)

// regionWithDatabase is a Region for a test that starts some of the region's services as Up does: its
// directories and PKI under a new temporary directory (which PostgreSQL, run as postgres under
// root, can traverse), the pprof token, the binaries of pkgs (repository paths such as
// "./admin/cmd/gateway") built into its binDir, and a locked-down PostgreSQL serving the PKI's
// certificate. Everything stops when the test ends.
func regionWithDatabase(ctx context.Context, t *testing.T, pkgs ...string) (*Region, *pgserver.Server) {
	t.Helper()
	dir, err := os.MkdirTemp("", "openhcp-localregion-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	r := &Region{cfg: Config{Progress: io.Discard}, logDir: filepath.Join(dir, "logs"), stateDir: filepath.Join(dir, "state"),
		binDir: filepath.Join(dir, "bin"), services: map[string]*service{}, crashes: make(chan Crash, 8), dbPasswords: map[string]string{}}
	t.Cleanup(r.stopServices)
	for _, d := range []string{r.logDir, r.stateDir, r.binDir, r.secretsDir()} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if r.pki, err = pki.Create(filepath.Join(r.stateDir, "pki"), pki.Options{}); err != nil {
		t.Fatal(err)
	}
	if err := r.writePprofToken(); err != nil {
		t.Fatal(err)
	}
	root, err := mgmtcluster.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	build := exec.CommandContext(ctx, "go", append([]string{"build", "-o", r.binDir + "/"}, pkgs...)...)
	build.Dir = root
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build %v: %v\n%s", pkgs, err, out)
	}
	pgFiles := r.pki.MustFiles(pki.Postgres)
	pg, err := pgserver.Start(ctx, pgserver.Options{Dir: filepath.Join(dir, "pg"), TLS: &pgserver.TLSFiles{CertFile: pgFiles.Cert, KeyFile: pgFiles.Key}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pg.Stop)
	return r, pg
}
