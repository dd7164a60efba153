package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/openhcp/openhcp/test/internal/procstat"
)

// putMode is one of P1's PUT modes compared in one run (P1_PUT_MODES): whether the management
// clusters are paused during the step, and the region variant flags it runs with
// (restartRegionWith).
type putMode struct {
	label  string
	paused bool
	flags  []string
}

// parsePutModes reads P1_PUT_MODES: modes separated by ";", each "running" or "paused" and then
// region variant flags, e.g. "running;paused;paused;running" or
// "paused --store-pipelined-writes=true;paused". Empty: the one default mode (running, the
// region's own flags).
func parsePutModes(v string) ([]putMode, error) {
	if strings.TrimSpace(v) == "" {
		return []putMode{{}}, nil
	}
	var modes []putMode
	for _, text := range strings.Split(v, ";") {
		words := strings.Fields(text)
		if len(words) == 0 || words[0] != "running" && words[0] != "paused" {
			return nil, fmt.Errorf("P1_PUT_MODES: mode %q: want running or paused, then flags", text)
		}
		modes = append(modes, putMode{label: strings.Join(words, " "), paused: words[0] == "paused", flags: words[1:]})
	}
	return modes, nil
}

// putModeFlags is every variant flag the modes use, for restoring the region after them.
func putModeFlags(modes []putMode) []string {
	var flags []string
	for _, m := range modes {
		flags = append(flags, m.flags...)
	}
	return flags
}

// managementDirs are the state directories of the region's management clusters: every process
// of a management cluster (etcd, kube-apiserver, kube-controller-manager, the Maestro agent,
// hypershift-sim) names its own on its command line, and no other process does.
func managementDirs() []string {
	state := filepath.Join(filepath.Dir(region.Info.LogDir), "state")
	var dirs []string
	for _, mc := range region.Info.ManagementClusters {
		dirs = append(dirs, filepath.Join(state, mc.Name)+string(filepath.Separator))
	}
	return dirs
}

// managementProcesses lists the live processes of the region's management clusters (managementDirs).
func managementProcesses() ([]procstat.Proc, error) {
	procs, err := procstat.List()
	if err != nil {
		return nil, fmt.Errorf("the management clusters' processes: %w", err)
	}
	dirs := managementDirs()
	var out []procstat.Proc
	for _, p := range procs {
		if p.PID == os.Getpid() {
			continue
		}
		for _, d := range dirs {
			if p.Mentions(d) {
				out = append(out, p)
				break
			}
		}
	}
	// Every management cluster runs at least etcd, a kube-apiserver, an agent and the simulator.
	if len(out) < 4*len(dirs) {
		return nil, fmt.Errorf("the management clusters' processes: found %d in %v, want at least %d", len(out), dirs, 4*len(dirs))
	}
	return out, nil
}

// pauseManagementClusters stops every process of the region's management clusters (SIGSTOP), as
// if they ran on machines of their own, as they do in production: the service side (frontend,
// Cluster Service, backend, the Maestro servers, the broker and PostgreSQL) then has this
// machine's cores to itself. The returned function continues them (SIGCONT); call it within
// seconds: the agents' MQTT keep-alive is longer than that, so none is disconnected.
func pauseManagementClusters(b *testing.B) (resume func()) {
	procs, err := managementProcesses()
	if err != nil {
		b.Fatalf("pause the management clusters: %v", err)
	}
	var stopped []int
	for _, p := range procs {
		if err := syscall.Kill(p.PID, syscall.SIGSTOP); err != nil {
			b.Logf("pause %d (%s): %v", p.PID, p.Comm, err)
			continue
		}
		stopped = append(stopped, p.PID)
	}
	return func() {
		for _, pid := range stopped {
			if err := syscall.Kill(pid, syscall.SIGCONT); err != nil {
				b.Errorf("continue %d: %v", pid, err)
			}
		}
	}
}

// niceManagementClusters sets the nice value of every thread of every process of the region's
// management clusters to n (0 is the default; 19 the least priority), so that they take the CPU
// the service side leaves, as if they had cores of their own, while still doing their work. A
// thread they start later inherits it from the thread that starts it. It says how many threads
// it set.
func niceManagementClusters(n int) (int, error) {
	procs, err := managementProcesses()
	if err != nil {
		return 0, err
	}
	threads := 0
	for _, p := range procs {
		tasks, err := os.ReadDir(fmt.Sprintf("/proc/%d/task", p.PID))
		if err != nil {
			continue // the process exited
		}
		for _, t := range tasks {
			tid, err := strconv.Atoi(t.Name())
			if err != nil {
				continue
			}
			if err := syscall.Setpriority(syscall.PRIO_PROCESS, tid, n); err != nil {
				return threads, fmt.Errorf("nice %d of thread %d of %s: %w", n, tid, p.Comm, err)
			}
			threads++
		}
	}
	return threads, nil
}

// usage is what a load step's notes say the machine did during it: the CPU of the region's
// programs, PostgreSQL and this benchmark, the machine's own account (/proc/stat), and how long
// each program waited on a run queue for a CPU.
type usage struct {
	start   time.Time
	cpu     map[string]time.Duration
	db      dbCPU
	self    time.Duration
	sched   map[string]procstat.Sched
	machine machineCPU
}

func startUsage(b *testing.B) usage {
	return usage{start: time.Now(), cpu: regionCPU(), db: databaseCPU(b), self: selfCPU(), sched: regionSched(), machine: readMachineCPU()}
}

// end says what the step used since u, with requests the number of requests it sent.
func (u usage) end(b *testing.B, requests int) string {
	cpu, db, self, sched, machine, took := regionCPU(), databaseCPU(b), selfCPU(), regionSched(), readMachineCPU(), time.Since(u.start)
	return fmt.Sprintf("CPU: %s; %s; this benchmark's process %.2f s; the machine %s; request path (frontend, cluster-service, PostgreSQL) %s. Run queues (waited for a CPU / ran): %s",
		regionCPUSince(u.cpu, cpu, took), db.since(u.db), (self - u.self).Seconds(), machine.since(u.machine),
		requestPathCPU(u.cpu, cpu, u.db, db, requests), regionSchedSince(u.sched, sched))
}

// machineCPU is the first line of /proc/stat, in USER_HZ ticks: the whole machine's time in each
// state since boot, over all its CPUs.
type machineCPU struct{ busy, idle, steal int64 }

// readMachineCPU reads machineCPU; zero when /proc/stat cannot be read.
func readMachineCPU() machineCPU {
	raw, err := os.ReadFile("/proc/stat")
	if err != nil {
		return machineCPU{}
	}
	f := strings.Fields(strings.SplitN(string(raw), "\n", 2)[0])
	var m machineCPU
	// cpu user nice system idle iowait irq softirq steal guest guest_nice
	for i, v := range f[1:] {
		n, _ := strconv.ParseInt(v, 10, 64)
		switch i {
		case 3, 4:
			m.idle += n
		case 7:
			m.steal += n
		case 0, 1, 2, 5, 6:
			m.busy += n
		}
	}
	return m
}

// since says how busy the machine's CPUs were from before to m, in cores.
func (m machineCPU) since(before machineCPU) string {
	total := float64(m.busy + m.idle + m.steal - before.busy - before.idle - before.steal)
	if total <= 0 {
		return "not read"
	}
	cores := float64(runtime.NumCPU())
	return fmt.Sprintf("%.2f of %d cores busy (%.2f idle, %.2f stolen by the hypervisor)",
		cores*float64(m.busy-before.busy)/total, runtime.NumCPU(), cores*float64(m.idle-before.idle)/total, cores*float64(m.steal-before.steal)/total)
}

// requestPathCPU is the CPU the frontend, Cluster Service and PostgreSQL used between two
// readings, per request of the step. It is an upper bound on what one request costs them: after
// a PUT, Cluster Service's controller starts on the new cluster within the same window, and
// PostgreSQL also serves the Maestro servers and the backend.
func requestPathCPU(before, after map[string]time.Duration, dbBefore, dbAfter dbCPU, requests int) string {
	if requests == 0 || dbAfter.postgres == 0 {
		return "not read"
	}
	var total time.Duration
	parts := []string{}
	for _, name := range []string{"frontend", "cluster-service"} {
		d := after[name] - before[name]
		total += d
		parts = append(parts, fmt.Sprintf("%s %.2f ms", name, float64(d.Microseconds())/1000/float64(requests)))
	}
	db := dbAfter.postgres - dbBefore.postgres
	total += db
	parts = append(parts, fmt.Sprintf("PostgreSQL %.2f ms", float64(db.Microseconds())/1000/float64(requests)))
	return fmt.Sprintf("%.2f ms of CPU per request (%s), so at most %.0f requests/s on this machine's %d cores",
		float64(total.Microseconds())/1000/float64(requests), strings.Join(parts, ", "), float64(runtime.NumCPU())*float64(requests)/total.Seconds(), runtime.NumCPU())
}

// waitRegionIdle waits, at most max, until the region's processes and PostgreSQL together use
// less than cores over a 2-second window, and says how long that took.
func waitRegionIdle(b *testing.B, cores float64, max time.Duration) string {
	total := func() time.Duration {
		var t time.Duration
		for _, d := range regionCPU() {
			t += d
		}
		return t + databaseCPU(b).postgres
	}
	start := time.Now()
	for {
		before, at := total(), time.Now()
		time.Sleep(2 * time.Second)
		used := (total() - before).Seconds() / time.Since(at).Seconds()
		if used < cores {
			return fmt.Sprintf("region at rest (%.2f cores) after %s", used, time.Since(start).Round(time.Second))
		}
		if time.Since(start) > max {
			return fmt.Sprintf("region still busy (%.2f cores) after %s", used, time.Since(start).Round(time.Second))
		}
	}
}
