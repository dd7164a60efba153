package e2e

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
)

// cpusetRoot is the cgroup v1 cpuset hierarchy's root (this machine mounts cgroup v1 controllers
// with a v2 "unified" tree that has no cpuset controller).
const cpusetRoot = "/sys/fs/cgroup/cpuset"

// serviceSidePrograms are the programs of the service cluster (programName's names): what runs on
// the service side's own machines in production. PostgreSQL and PgBouncer are added by PID.
var serviceSidePrograms = map[string]bool{"frontend": true, "cluster-service": true, "backend": true,
	"maestro server": true, "mosquitto": true, "admin": true, "gateway": true}

// applyLayout, when BENCH_LAYOUT=cpuset, gives the service side CPU 0 to itself and puts every
// other process of the region (the management clusters, Prometheus) and this process (the load
// generator, ARM's side) on the other CPUs, with two cpusets, as production's separate machines
// would; the benchmark's cleanup moves every process back to the root cpuset and removes the
// groups, leaving the host as found. It returns a note for the report: "shared" (the default
// layout, everything on every CPU) or the CPUs each side got.
//
// Processes the region starts later (a restarted service, a new PostgreSQL backend) inherit the
// cpuset of their parent: PostgreSQL's backends follow the postmaster into the service side; a
// service the launcher restarts lands in this process's set, so the layout is for benchmarks
// that restart nothing.
func applyLayout(b *testing.B) string {
	switch os.Getenv("BENCH_LAYOUT") {
	case "", "shared":
		return "layout: shared (every process on every CPU)"
	case "cpuset":
	default:
		b.Fatalf("BENCH_LAYOUT=%q: want shared or cpuset", os.Getenv("BENCH_LAYOUT"))
	}
	if runtime.NumCPU() < 2 {
		b.Fatal("BENCH_LAYOUT=cpuset needs at least 2 CPUs")
	}
	if _, err := os.Stat(filepath.Join(cpusetRoot, "cpuset.cpus")); err != nil {
		b.Fatalf("BENCH_LAYOUT=cpuset needs the cgroup v1 cpuset hierarchy at %s (cgroup v2 is not supported here): %v", cpusetRoot, err)
	}
	mems, err := os.ReadFile(filepath.Join(cpusetRoot, "cpuset.mems"))
	if err != nil {
		b.Fatal(err)
	}
	service, rest := "0", fmt.Sprintf("1-%d", runtime.NumCPU()-1)
	if runtime.NumCPU() == 2 {
		rest = "1"
	}
	svcDir, restDir := filepath.Join(cpusetRoot, "openhcp-bench-service"), filepath.Join(cpusetRoot, "openhcp-bench-rest")
	b.Cleanup(func() {
		if err := removeCpusets(svcDir, restDir); err != nil {
			b.Errorf("restore the cpusets: %v", err)
		}
	})
	for _, g := range []struct{ dir, cpus string }{{svcDir, service}, {restDir, rest}} {
		if err := os.Mkdir(g.dir, 0o755); err != nil {
			b.Fatalf("cpuset %s: %v", g.dir, err)
		}
		// mems before cpus and tasks: a cpuset with no memory nodes admits no task.
		if err := os.WriteFile(filepath.Join(g.dir, "cpuset.mems"), mems, 0o644); err != nil {
			b.Fatalf("cpuset %s mems: %v", g.dir, err)
		}
		if err := os.WriteFile(filepath.Join(g.dir, "cpuset.cpus"), []byte(g.cpus), 0o644); err != nil {
			b.Fatalf("cpuset %s cpus: %v", g.dir, err)
		}
	}
	rp, err := readRegionProcs()
	if err != nil {
		b.Fatal(err)
	}
	counts := map[string]int{}
	for _, p := range rp.procs {
		dir := ""
		role := rp.role(p)
		switch {
		case p.PID == os.Getpid():
			dir = restDir
		case role == postmaster || role == pgBackend:
			dir = svcDir
		case role == program && (p.Comm == "pgbouncer" || serviceSidePrograms[programName(p)]):
			dir = svcDir
		case role == program:
			dir = restDir
		default:
			continue
		}
		if err := os.WriteFile(filepath.Join(dir, "cgroup.procs"), []byte(strconv.Itoa(p.PID)), 0o644); err != nil {
			b.Logf("move %d (%s) to %s: %v", p.PID, p.Comm, filepath.Base(dir), err)
			continue
		}
		counts[dir]++
	}
	return fmt.Sprintf("layout: cpuset, service side (frontend, Cluster Service, backend, Maestro server, broker, admin, gateway, PostgreSQL, PgBouncer: %d processes) on CPU %s; management clusters, Prometheus and the load generator (%d processes) on CPU %s",
		counts[svcDir], service, counts[restDir], rest)
}

// removeCpusets moves every process of the groups back into the root cpuset and removes them.
func removeCpusets(dirs ...string) error {
	var errs []error
	for _, dir := range dirs {
		raw, err := os.ReadFile(filepath.Join(dir, "cgroup.procs"))
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			errs = append(errs, err)
			continue
		}
		for _, pid := range strings.Fields(string(raw)) {
			if err := os.WriteFile(filepath.Join(cpusetRoot, "cgroup.procs"), []byte(pid), 0o644); err != nil {
				errs = append(errs, fmt.Errorf("move %s back: %w", pid, err))
			}
		}
		// A process forked into the group meanwhile (a new PostgreSQL backend) keeps it busy:
		// move again, a few times, before giving up.
		var rmErr error
		for try := 0; try < 5; try++ {
			if rmErr = os.Remove(dir); rmErr == nil {
				break
			}
			if raw, err := os.ReadFile(filepath.Join(dir, "cgroup.procs")); err == nil {
				for _, pid := range strings.Fields(string(raw)) {
					_ = os.WriteFile(filepath.Join(cpusetRoot, "cgroup.procs"), []byte(pid), 0o644)
				}
			}
		}
		if rmErr != nil {
			errs = append(errs, fmt.Errorf("remove %s: %w", dir, rmErr))
		}
	}
	return errors.Join(errs...)
}

// layoutNote applies BENCH_LAYOUT (applyLayout), notes it in rep, and in the cpuset layout writes
// rep to its own file (<benchmark>-cpuset.json), so the shared layout's stays beside it.
func layoutNote(b *testing.B, rep *benchReport) {
	note := applyLayout(b)
	rep.Notes = append(rep.Notes, note)
	if os.Getenv("BENCH_LAYOUT") == "cpuset" {
		rep.Benchmark += "-cpuset"
	}
}
