package upgrade

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/openhcp/openhcp/dev-infrastructure/localregion"
)

// previousRelease is the commit whose frontend, backend and Cluster Service the region starts
// with: the previous release (47c3556), whose clients already ask for each service's name, as
// today's certificates name only their service. A release from before the certificates named
// only services (22a4ead and earlier) cannot verify them (docs/architecture.md, Rolling upgrades).
// OPENHCP_UPGRADE_FROM overrides it.
const previousRelease = "47c35563ca98afe371e2209df910d94d12200685"

// upgradedServices are the services a rolling upgrade replaces, in the order it replaces them:
// the model's owner first, its clients after (docs/architecture.md, Rolling upgrades).
var upgradedServices = []string{localregion.ServiceClusterService, localregion.ServiceBackend, localregion.ServiceFrontend}

var servicePackages = map[string]string{
	localregion.ServiceFrontend:       "./frontend/cmd/frontend",
	localregion.ServiceBackend:        "./backend/cmd/backend",
	localregion.ServiceClusterService: "./cluster-service/cmd/cluster-service",
}

// buildRelease builds the upgraded services of commit into a cache directory keyed by the full
// commit hash (~/.cache/openhcp/upgrade/<commit>), from a detached worktree under a temporary
// directory, with the toolchain that runs this test. A cached build is reused.
func buildRelease(ctx context.Context, root, commit string) (map[string]string, string, error) {
	full, err := git(ctx, root, "rev-parse", "--verify", commit+"^{commit}")
	if err != nil {
		return nil, "", err
	}
	cache, err := os.UserCacheDir()
	if err != nil {
		return nil, "", fmt.Errorf("find the cache directory: %w", err)
	}
	out := filepath.Join(cache, "openhcp", "upgrade", full)
	bins := map[string]string{}
	cached := true
	for _, name := range upgradedServices {
		bins[name] = filepath.Join(out, name)
		if _, err := os.Stat(bins[name]); err != nil {
			cached = false
		}
	}
	if cached {
		return bins, full, nil
	}
	tmp, err := os.MkdirTemp("", "openhcp-release-")
	if err != nil {
		return nil, "", err
	}
	defer os.RemoveAll(tmp)
	src := filepath.Join(tmp, "src")
	if _, err := git(ctx, root, "worktree", "add", "--detach", src, full); err != nil {
		return nil, "", err
	}
	defer func() {
		_, _ = git(context.WithoutCancel(ctx), root, "worktree", "remove", "--force", src)
	}()
	// Build into a fresh directory beside the cache entry and rename it into place, so an
	// interrupted build is never taken for a cached one.
	if err := os.MkdirAll(filepath.Dir(out), 0o755); err != nil {
		return nil, "", err
	}
	staging, err := os.MkdirTemp(filepath.Dir(out), "partial-")
	if err != nil {
		return nil, "", err
	}
	defer os.RemoveAll(staging)
	args := []string{"build", "-o", staging + "/"}
	for _, name := range upgradedServices {
		args = append(args, servicePackages[name])
	}
	cmd := exec.CommandContext(ctx, "go", args...)
	cmd.Dir = src
	if b, err := cmd.CombinedOutput(); err != nil {
		return nil, "", fmt.Errorf("build %s at %s: %w\n%s", strings.Join(upgradedServices, ", "), full, err, b)
	}
	_ = os.RemoveAll(out)
	if err := os.Rename(staging, out); err != nil {
		return nil, "", fmt.Errorf("cache the build of %s: %w", full, err)
	}
	return bins, full, nil
}

func git(ctx context.Context, dir string, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "git", args...)
	cmd.Dir = dir
	b, err := cmd.CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("git %s: %w\n%s", strings.Join(args, " "), err, b)
	}
	return strings.TrimSpace(string(b)), nil
}
