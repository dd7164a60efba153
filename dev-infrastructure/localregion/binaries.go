package localregion

import (
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"time"
)

// Our services whose binary a region can take from elsewhere (Config.ServiceBinaries): the
// ones a rolling upgrade replaces one at a time.
const (
	ServiceFrontend       = "frontend"
	ServiceBackend        = "backend"
	ServiceClusterService = "cluster-service"
)

// servicePath is the one place that says which binary runs a service: Config.ServiceBinaries'
// entry when there is one, else the launcher's own build in binDir.
func (r *Region) servicePath(name string) string {
	if p := r.cfg.ServiceBinaries[name]; p != "" {
		return p
	}
	return filepath.Join(r.binDir, name)
}

// checkServiceFlags fails, naming each flag, when the binary at path does not know a flag the
// launcher passes it: a binary from another commit whose flags changed. It reads the flags from
// the binary's own --help (the standard flag package's "  -name" lines). Only binaries from
// Config.ServiceBinaries are checked; the launcher's own build matches it by construction.
func checkServiceFlags(ctx context.Context, path string, args []string) error {
	known, err := binaryFlags(ctx, path)
	if err != nil {
		return err
	}
	var unknown []string
	for _, a := range args {
		if !strings.HasPrefix(a, "-") {
			continue
		}
		name := strings.TrimLeft(a, "-")
		name, _, _ = strings.Cut(name, "=")
		if !known[name] {
			unknown = append(unknown, "--"+name)
		}
	}
	if len(unknown) > 0 {
		return fmt.Errorf("%s does not know the flags %s that the launcher passes: the launcher must not pass a flag this release lacks (docs/architecture.md, Rolling upgrades)", path, strings.Join(unknown, ", "))
	}
	return nil
}

var helpFlagLine = regexp.MustCompile(`(?m)^\s+-{1,2}([A-Za-z0-9][A-Za-z0-9._-]*)`)

// binaryFlags runs path --help and returns the flag names it lists.
func binaryFlags(ctx context.Context, path string) (map[string]bool, error) {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	// --help exits non-zero with the standard flag package; its output is what counts.
	out, _ := exec.CommandContext(ctx, path, "--help").CombinedOutput()
	known := map[string]bool{}
	for _, m := range helpFlagLine.FindAllSubmatch(out, -1) {
		known[string(m[1])] = true
	}
	if len(known) == 0 {
		return nil, fmt.Errorf("read the flags of %s from its --help: none listed in %q", path, truncate(out, 400))
	}
	return known, nil
}

func truncate(b []byte, n int) string {
	if len(b) > n {
		return string(b[:n]) + "…"
	}
	return string(b)
}

// RestartBinary replaces a running service's binary: it stops the service (frontend, backend or
// cluster-service), starts the binary at path with the same command line and waits until it is
// ready. The new binary stays for later Restarts. This is one step of a rolling upgrade.
func (r *Region) RestartBinary(ctx context.Context, name, path string) error {
	r.mu.Lock()
	s, ok := r.services[name]
	r.mu.Unlock()
	if !ok {
		return fmt.Errorf("no service %q in this region", name)
	}
	if exited, _ := s.proc.Exited(); !exited {
		s.proc.Stop(10 * time.Second)
	}
	spec := s.spec
	spec.Path = path
	if err := r.startService(ctx, spec, s.ready); err != nil {
		return fmt.Errorf("replace %s's binary with %s: %w", name, path, err)
	}
	return nil
}

// OwnBinary is the path of the launcher's own build of a service: the current commit's.
func (r *Region) OwnBinary(name string) string { return filepath.Join(r.binDir, name) }
