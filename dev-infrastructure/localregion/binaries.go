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

// compatibleArgs returns args without the flags the binary at path does not know, and those
// flags. A binary from Config.ServiceBinaries is a previous release's: a flag the current
// launcher passes that it lacks is one added since, which that release's own deployment never
// passed, so it starts without it, as it would there. The caller reports every flag left out
// (Progress, Region.FlagsLeftOut) so it is never silent. The flags known are read from the
// binary's own --help (the standard flag package's "  -name" lines).
func compatibleArgs(ctx context.Context, path string, args []string) (kept, left []string, err error) {
	known, err := binaryFlags(ctx, path)
	if err != nil {
		return nil, nil, err
	}
	for i := 0; i < len(args); i++ {
		a := args[i]
		if !strings.HasPrefix(a, "-") {
			kept = append(kept, a)
			continue
		}
		name, _, hasValue := strings.Cut(strings.TrimLeft(a, "-"), "=")
		if known[name] {
			kept = append(kept, a)
			continue
		}
		left = append(left, "--"+name)
		// "--flag value": the value goes with it (the launcher passes no positional arguments).
		if !hasValue && i+1 < len(args) && !strings.HasPrefix(args[i+1], "-") {
			i++
		}
	}
	return kept, left, nil
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

// FlagsLeftOut lists the flags the launcher passes that a service's binary did not know, so it
// started without them (compatibleArgs); nil for the launcher's own build.
func (r *Region) FlagsLeftOut(name string) []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	if s, ok := r.services[name]; ok {
		return append([]string(nil), s.leftOut...)
	}
	return nil
}
