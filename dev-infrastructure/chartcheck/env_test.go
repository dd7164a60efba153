package chartcheck

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// serviceCharts are the charts of our own binaries, which take every flag also from an
// environment variable <prefix><FLAG> (their --help says "(env NAME)"); the charts set them from
// a ConfigMap. A misspelt name would be ignored silently by the binary, so each is checked
// against the binary's own --help.
func serviceCharts() map[string]struct{ pkg, envPrefix string } {
	return map[string]struct{ pkg, envPrefix string }{
		"cluster-service/deploy":     {"./cluster-service/cmd/cluster-service", "CLUSTER_SERVICE_"},
		"frontend/deploy":            {"./frontend/cmd/frontend", "FRONTEND_"},
		"backend/deploy":             {"./backend/cmd/backend", "BACKEND_"},
		"backend/deploy/monitor":     {"./backend/cmd/monitor", "MONITOR_"},
		"backend/deploy/maintenance": {"./backend/cmd/maintenance", "MAINTENANCE_"},
		"admin/deploy":               {"./admin/cmd/admin", "ADMIN_"},
		"admin/deploy/gateway":       {"./admin/cmd/gateway", "GATEWAY_"},
	}
}

// checkEnvNames checks every environment variable with the binary's prefix that the rendered
// chart sets is one exe's -help lists.
func checkEnvNames(t *testing.T, exe, prefix string, rendered []byte) {
	t.Helper()
	// -help prints the flags with their environment variables (exit status 0 or 2 depending on
	// the flag package's error handling; the text is what counts).
	help, _ := exec.Command(exe, "-help").CombinedOutput()
	checked := 0
	for n := range mainContainer(t, rendered).env {
		if !strings.HasPrefix(n, prefix) {
			continue
		}
		checked++
		if !bytes.Contains(help, []byte("(env "+n+")")) {
			t.Errorf("the chart sets %s, which %s does not read (not in its -help)", n, exe)
		}
	}
	if checked == 0 {
		t.Fatalf("the chart sets no %s* variable: the check looked at nothing", prefix)
	}
}

// buildService builds the main package pkg (relative to root) into dir, once per dir.
func buildService(t *testing.T, root, dir, pkg string) string {
	t.Helper()
	exe := filepath.Join(dir, filepath.Base(pkg))
	if _, err := os.Stat(exe); err == nil {
		return exe
	}
	build := exec.Command("go", "build", "-o", exe, pkg)
	build.Dir = root
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build %s: %v\n%s", pkg, err, out)
	}
	return exe
}
