package localregion

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// releaseServices are the services BuildRelease builds, in the order a rolling upgrade
// replaces them: the model's owner first, its clients after (docs/architecture.md, Rolling
// upgrades).
var releaseServices = []string{ServiceClusterService, ServiceBackend, ServiceFrontend}

// ReleaseServices is the services BuildRelease builds, in rolling-upgrade order.
func ReleaseServices() []string { return append([]string(nil), releaseServices...) }

var servicePackages = map[string]string{
	ServiceFrontend:       "./frontend/cmd/frontend",
	ServiceBackend:        "./backend/cmd/backend",
	ServiceClusterService: "./cluster-service/cmd/cluster-service",
}

// BuildRelease builds the frontend, backend and Cluster Service of commit (anything git
// rev-parse takes) in the repository at root, for Config.ServiceBinaries: the rolling-upgrade
// test starts a region on a previous release's, and make bench-cost measures a base commit's
// beside the tree's own. The binaries go into a cache directory keyed by the full commit hash
// (~/.cache/openhcp/upgrade/<commit>), built from a detached worktree under a temporary
// directory with the toolchain on PATH; a cached build is reused. It returns the binaries by
// service name and the full commit hash.
func BuildRelease(ctx context.Context, root, commit string) (map[string]string, string, error) {
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
	for _, name := range releaseServices {
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
	for _, name := range releaseServices {
		args = append(args, servicePackages[name])
	}
	cmd := exec.CommandContext(ctx, "go", args...)
	cmd.Dir = src
	if b, err := cmd.CombinedOutput(); err != nil {
		return nil, "", fmt.Errorf("build %s at %s: %w\n%s", strings.Join(releaseServices, ", "), full, err, b)
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
