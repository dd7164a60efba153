package localregion

import (
	"bytes"
	"context"
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
	root, err := RepoRoot()
	if err != nil {
		return "", err
	}
	cmd := exec.CommandContext(ctx, filepath.Join(root, "hack", "tool.sh"), name, moduleDir, pkg, ldflags)
	cmd.Dir = root
	cmd.Stderr = os.Stderr
	var out bytes.Buffer
	cmd.Stdout = &out
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("build %s with hack/tool.sh: %w", name, err)
	}
	return strings.TrimSpace(out.String()), nil
}
