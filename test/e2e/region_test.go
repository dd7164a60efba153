// Package e2e tests a launched local region as a user would drive it: ARM calls to the frontend,
// checks on the management clusters with a Kubernetes client, and faults injected into the
// running processes.
package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/openhcp/openhcp/dev-infrastructure/localregion"
	"github.com/openhcp/openhcp/dev-infrastructure/mgmtcluster"
)

// region is shared by the tests of this package: bringing one up takes tens of seconds.
var region *localregion.Region

func TestMain(m *testing.M) {
	os.Exit(runMain(m))
}

func runMain(m *testing.M) int {
	// OPENHCP_E2E_REGION_FILE attaches to a region already running (make run's or make deploy's
	// region.json) instead of starting one: the tests that need only its endpoints run against
	// it; those that need the launcher's own processes, PKI or files skip (needsOwnRegion).
	if file := os.Getenv(regionFileEnv); file != "" {
		return runAttached(m, file)
	}
	dir, err := os.MkdirTemp("", "openhcp-e2e-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	// Under root, PostgreSQL runs as the postgres user and must traverse this directory.
	_ = os.Chmod(dir, 0o755)
	defer os.RemoveAll(dir)
	// OPENHCP_E2E_CS_RESYNC sets Cluster Service's --resync-period (the region's default is
	// the dev-local 30 s; production's is 5m), for benchmarks that compare the two.
	csResync, err := envDuration("OPENHCP_E2E_CS_RESYNC")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	// OPENHCP_E2E_SERVICES_AT runs the frontend, backend and Cluster Service of another commit
	// (localregion.BuildRelease, cached by commit): make bench-cost measures its base this way,
	// in the same run as the tree's own build.
	services, err := servicesAt(ctx, os.Getenv("OPENHCP_E2E_SERVICES_AT"))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	start := time.Now()
	region, err = localregion.Up(ctx, localregion.Config{
		StateDir:           dir,
		ManagementClusters: 2,
		// OPENHCP_E2E_HOSTED_APISERVERS caps the real hosted kube-apiservers per management
		// cluster (0: the region's default; negative: none, for BenchmarkCost).
		Sim: localregion.SimConfig{AvailableDelay: 3 * time.Second, DeleteDelay: time.Second,
			HostedAPIServers: envNumber("OPENHCP_E2E_HOSTED_APISERVERS")},
		BackendResync: 5 * time.Second,
		// OPENHCP_E2E_AGENT_V raises the agents' log level: at 5 BenchmarkFeedbackModes reads
		// from their logs when each sent the status that first carried Available.
		AgentVerbosity: envNumber("OPENHCP_E2E_AGENT_V"),
		// OPENHCP_E2E_MAESTRO_SERVERS provisions that many Maestro server instances, for
		// BenchmarkFeedbackModes' maestro-servers=N modes.
		MaestroServers:       envNumber("OPENHCP_E2E_MAESTRO_SERVERS"),
		ClusterServiceResync: csResync,
		ServiceBinaries:      services,
		Progress:             os.Stderr,
	})
	if err != nil {
		fmt.Fprintf(os.Stderr, "bring up the region: %v\n", err)
		dumpLogs(filepath.Join(dir, "logs"))
		return 1
	}
	fmt.Fprintf(os.Stderr, "region up in %s\n", time.Since(start).Round(time.Millisecond))
	if httpClient, err = region.Info.Frontend.HTTPClient(30 * time.Second); err != nil {
		fmt.Fprintf(os.Stderr, "ARM client: %v\n", err)
		region.Stop()
		return 1
	}
	code := m.Run()
	if code != 0 {
		dumpLogs(region.Info.LogDir)
	}
	region.Stop()
	// OPENHCP_E2E_KEEP_LOGS copies the region's logs there before its state is removed, for
	// reading a benchmark's agent and server logs afterwards.
	if keep := os.Getenv("OPENHCP_E2E_KEEP_LOGS"); keep != "" {
		if err := os.CopyFS(keep, os.DirFS(region.Info.LogDir)); err != nil {
			fmt.Fprintf(os.Stderr, "keep the region's logs in %s: %v\n", keep, err)
		}
	}
	return code
}

// regionFileEnv names the region.json of a running region the tests attach to.
const regionFileEnv = "OPENHCP_E2E_REGION_FILE"

// runAttached runs the tests against the running region file describes; the region is left
// running. The settings that shape a region this package starts have no meaning here.
func runAttached(m *testing.M, file string) int {
	for _, env := range []string{"OPENHCP_E2E_CS_RESYNC", "OPENHCP_E2E_SERVICES_AT", "OPENHCP_E2E_HOSTED_APISERVERS",
		"OPENHCP_E2E_AGENT_V", "OPENHCP_E2E_MAESTRO_SERVERS", "OPENHCP_E2E_KEEP_LOGS"} {
		if os.Getenv(env) != "" {
			fmt.Fprintf(os.Stderr, "%s=%s: it shapes a region this package starts; with %s the region is someone else's\n", env, os.Getenv(env), regionFileEnv)
			return 1
		}
	}
	var err error
	if region, err = localregion.Attach(file); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	fmt.Fprintf(os.Stderr, "attached to the running region of %s (frontend %s); tests that need the launcher's own processes, PKI or files skip\n",
		file, region.Info.Frontend.URL)
	if httpClient, err = region.Info.Frontend.HTTPClient(30 * time.Second); err != nil {
		fmt.Fprintf(os.Stderr, "ARM client: %v\n", err)
		return 1
	}
	return m.Run()
}

// needsOwnRegion skips a test attached to someone else's region (OPENHCP_E2E_REGION_FILE):
// it needs what only the region TestMain starts has (why: its processes to kill or restart,
// its PKI to issue from, its logs or secrets to read).
func needsOwnRegion(tb testing.TB, why string) {
	tb.Helper()
	if region.Attached() {
		tb.Skipf("needs the region this package starts itself (%s); attached to %s=%s", why, regionFileEnv, region.RegionFile())
	}
}

// dumpLogs prints the tail of every log, so a CI failure can be diagnosed from its output. Our
// own services come last (CI output is read from its end): their logs say what a test waited for.
func dumpLogs(dir string) {
	entries, _ := os.ReadDir(dir)
	ours := func(name string) bool {
		for _, s := range []string{"cluster-service", "backend", "frontend"} {
			if strings.HasPrefix(name, s) {
				return true
			}
		}
		return false
	}
	sort.SliceStable(entries, func(i, j int) bool { return !ours(entries[i].Name()) && ours(entries[j].Name()) })
	for _, e := range entries {
		fmt.Fprintf(os.Stderr, "\n===== %s (tail) =====\n%s\n", e.Name(), mgmtcluster.FileTail(filepath.Join(dir, e.Name()), 3000))
	}
}

// envNumber is the number in the environment variable name, or 0 (the region's default)
// when it is unset or not a number.
func envNumber(name string) int {
	n, _ := strconv.Atoi(os.Getenv(name))
	return n
}

// envDuration is the duration in the environment variable name, or 0 (the region's default)
// when it is unset; anything else that is not a positive duration is an error.
func envDuration(name string) (time.Duration, error) {
	v := os.Getenv(name)
	if v == "" {
		return 0, nil
	}
	d, err := time.ParseDuration(v)
	if err != nil || d <= 0 {
		return 0, fmt.Errorf("%s=%q: want a positive duration such as 5m", name, v)
	}
	return d, nil
}

// servicesAt builds the services of commit for Config.ServiceBinaries; nil for "" (the tree's
// own build).
func servicesAt(ctx context.Context, commit string) (map[string]string, error) {
	if commit == "" {
		return nil, nil
	}
	root, err := mgmtcluster.RepoRoot()
	if err != nil {
		return nil, err
	}
	bins, full, err := localregion.BuildRelease(ctx, root, commit)
	if err != nil {
		return nil, fmt.Errorf("OPENHCP_E2E_SERVICES_AT=%s: %w", commit, err)
	}
	fmt.Fprintf(os.Stderr, "the frontend, backend and Cluster Service run commit %s\n", full)
	return bins, nil
}
