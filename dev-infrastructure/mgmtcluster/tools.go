package mgmtcluster

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// toolBinary returns a pinned tool built by hack/tool.sh from its own module (GOWORK=off). The
// script caches builds by their inputs, so this is instant after the first build; the build's
// progress goes to stderr.
func toolBinary(ctx context.Context, name, moduleDir, pkg, ldflags string) (string, error) {
	return hackOutput(ctx, "tool.sh", name, moduleDir, pkg, ldflags)
}

// MosquittoShareGuardPlugin returns the broker's share_guard plugin
// (dev-infrastructure/mosquitto-share-guard), compiled by hack/mosquitto-plugin.sh into the tool
// cache on first use; it needs a C compiler and Debian's mosquitto-dev (make deps).
func MosquittoShareGuardPlugin(ctx context.Context) (string, error) {
	return hackOutput(ctx, "mosquitto-plugin.sh")
}

// hackOutput runs hack/<script> from the repository root and returns what it printed, trimmed.
func hackOutput(ctx context.Context, script string, args ...string) (string, error) {
	root, err := RepoRoot()
	if err != nil {
		return "", err
	}
	cmd := exec.CommandContext(ctx, filepath.Join(root, "hack", script), args...)
	cmd.Dir = root
	cmd.Stderr = os.Stderr
	var out bytes.Buffer
	cmd.Stdout = &out
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("hack/%s %s: %w", script, strings.Join(args, " "), err)
	}
	return strings.TrimSpace(out.String()), nil
}

// RepoRoot finds the repository root: $OPENHCP_ROOT, or the nearest directory upwards holding
// go.work.
func RepoRoot() (string, error) {
	if r := os.Getenv("OPENHCP_ROOT"); r != "" {
		return r, nil
	}
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.work")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("cannot find the repository root (no go.work above the working directory); set OPENHCP_ROOT")
		}
		dir = parent
	}
}

// MaestroBinary returns the pinned Maestro build from the tool cache, building it on first use.
func MaestroBinary(ctx context.Context) (string, error) {
	return toolBinary(ctx, "maestro", "dev-infrastructure/maestro", "github.com/openhcp/openhcp/dev-infrastructure/maestro/cmd/maestro", "")
}

// KubectlBinary returns the pinned kubectl from the tool cache (built like the apiserver: same
// module, same ldflags), building it on first use.
func KubectlBinary(ctx context.Context) (string, error) {
	return toolBinary(ctx, "kubectl", kubeToolsModule, "k8s.io/kubernetes/cmd/kubectl", kubeAPIServerLDFlag)
}
