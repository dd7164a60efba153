package e2e

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/openhcp/openhcp/dev-infrastructure/mgmtcluster"
)

// readmeBlock returns the first ```sh block after heading in the README.
func readmeBlock(t *testing.T, root, heading string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, after, ok := strings.Cut(string(b), "\n"+heading+"\n")
	if !ok {
		t.Fatalf("README.md has no %q", heading)
	}
	_, block, ok := strings.Cut(after, "```sh\n")
	if !ok {
		t.Fatalf("README.md's %q has no ```sh block", heading)
	}
	block, _, ok = strings.Cut(block, "\n```")
	if !ok {
		t.Fatalf("README.md's %q block does not end", heading)
	}
	return block
}

// TestReadmeTryIt runs the README's "Try it" commands, as written, against the running region:
// a new user's first steps (subscription, cluster, node pool, upgrade, credential, kubectl on the
// hosted API server, revocation, delete) must work on a fresh machine. The block runs in a
// scratch directory that sees the checkout's docs, Makefile and tools, so the files it writes
// land there.
func TestReadmeTryIt(t *testing.T) {
	root, err := mgmtcluster.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	block := readmeBlock(t, root, "## Try it")
	dir := t.TempDir()
	for _, n := range []string{"docs", "Makefile", "hack", "dev-infrastructure"} {
		if err := os.Symlink(filepath.Join(root, n), filepath.Join(dir, n)); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", "-euo", "pipefail", "-c", block)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "REGION_FILE="+region.RegionFile())
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err = cmd.Run()
	t.Logf("README's Try it:\n%s", out.String())
	if err != nil {
		t.Fatalf("the README's commands failed: %v", err)
	}
	for _, want := range []string{`"provisioningState": "Succeeded"`, "default ", "refused, as it should be"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("the README's commands did not print %q", want)
		}
	}
	if n, want := strings.Count(out.String(), `{"status":"Succeeded"}`), strings.Count(block, "| wait_op"); n != want || want < 7 {
		t.Errorf("%d operations Succeeded, the block waits on %d", n, want)
	}
}
