package scale

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/openhcp/openhcp/test/internal/procstat"
)

// procMem is one process of the region as /proc saw it at a checkpoint.
type procMem struct {
	Name string `json:"name"`
	PID  int    `json:"pid"`
	// RSSMB is VmRSS, HWMMB VmHWM (the peak RSS since the process started), PSSMB the
	// proportional set size (smaps_rollup: shared pages divided among their users, which is
	// what a sum over PostgreSQL's processes should add up).
	RSSMB float64 `json:"rssMB"`
	HWMMB float64 `json:"hwmMB"`
	PSSMB float64 `json:"pssMB"`
	// CPUSeconds is the user and system CPU time the process has used since it started
	// (/proc/<pid>/stat utime + stime), for steadyCPU.
	CPUSeconds float64 `json:"cpuSeconds"`
}

// regionProcesses lists every descendant of this process (the region's children, and theirs:
// PostgreSQL's backends) with its memory and CPU time, named after what it is (regionName).
func regionProcesses() ([]procMem, error) {
	out, err := regionTree()
	if err != nil {
		return nil, err
	}
	for i := range out {
		p := &out[i]
		if st, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", p.PID)); err == nil {
			p.RSSMB, p.HWMMB = kbField(string(st), "VmRSS:"), kbField(string(st), "VmHWM:")
		}
		if sm, err := os.ReadFile(fmt.Sprintf("/proc/%d/smaps_rollup", p.PID)); err == nil {
			p.PSSMB = kbField(string(sm), "Pss:")
		}
	}
	return out, nil
}

// regionTree is regionProcesses without the memory: names and CPU time only, which is all
// steadyCPU needs (smaps_rollup walks every mapping of a process, not free at this size).
func regionTree() ([]procMem, error) {
	procs, err := procstat.List()
	if err != nil {
		return nil, err
	}
	var out []procMem
	for _, p := range procstat.Descendants(procs, os.Getpid()) {
		if len(p.Args) == 0 {
			continue // a zombie
		}
		out = append(out, procMem{Name: regionName(p.Args), PID: p.PID, CPUSeconds: p.Own.Seconds()})
	}
	sort.Slice(out, func(i, j int) bool {
		return out[i].Name < out[j].Name || out[i].Name == out[j].Name && out[i].PID < out[j].PID
	})
	return out, nil
}

// kbField reads "<key> <n> kB" from a /proc file, in MB (10^6 bytes).
func kbField(s, key string) float64 {
	for _, l := range strings.Split(s, "\n") {
		if f := strings.Fields(l); len(f) >= 2 && f[0] == key {
			kb, _ := strconv.ParseFloat(f[1], 64)
			return kb * 1024 / 1e6
		}
	}
	return 0
}

// regionName names a region process from its command line: the binary (pinned tool builds
// carry a hash suffix, dropped here) and, for what runs once per cluster, which cluster it
// belongs to (the state directory in its flags: mgmt-N, or svc for the Maestro server's
// authorizer), or the Maestro agent's consumer.
func regionName(args []string) string {
	base := filepath.Base(args[0])
	kind := base
	for _, k := range []string{"kube-controller-manager", "kube-apiserver", "etcd", "maestro", "mosquitto", "postgres", "pgbouncer",
		"hypershift-sim", "cluster-service", "frontend", "backend", "admin"} {
		if base == k || strings.HasPrefix(base, k+"-") || strings.HasPrefix(base, k+".") {
			kind = k
			break
		}
	}
	flag := func(name string) string {
		for i, a := range args {
			if v, ok := strings.CutPrefix(a, name+"="); ok {
				return v
			}
			if a == name && i+1 < len(args) {
				return args[i+1]
			}
		}
		return ""
	}
	state := ""
	for _, a := range args {
		if i := strings.Index(a, "/state/"); i >= 0 {
			rest := a[i+len("/state/"):]
			if j := strings.IndexByte(rest, '/'); j > 0 {
				state = rest[:j]
				break
			}
		}
	}
	switch {
	case kind == "maestro" && len(args) > 1 && args[1] == "agent":
		return "maestro agent " + flag("--consumer-name")
	case kind == "maestro" && len(args) > 1 && args[1] == "server":
		return "maestro server"
	case kind == "postgres":
		if len(args) > 1 {
			return "postgres (postmaster)"
		}
		return "postgres (backend or worker)" // a forked child names itself, without flags
	case kind == "kube-apiserver" || kind == "etcd" || kind == "kube-controller-manager" || kind == "hypershift-sim":
		if state != "" {
			return kind + " " + state
		}
	}
	if strings.HasPrefix(args[0], "postgres:") {
		return "postgres (backend or worker)"
	}
	return kind
}

// steadyCPU is how much CPU each part of the region used over window, in percent of one core:
// the region's processes read twice, window apart. Processes of the same name are summed (two
// Maestro server instances; PostgreSQL's processes, into "postgres (every process)"), and a
// process counts only when it ran at both reads, so a PostgreSQL backend that came and went in
// between is missed (the region's services keep their connections).
func steadyCPU(ctx context.Context, window time.Duration) (map[string]float64, error) {
	before, err := regionTree()
	if err != nil {
		return nil, err
	}
	t := time.NewTimer(window)
	defer t.Stop()
	start := time.Now()
	select {
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-t.C:
	}
	after, err := regionTree()
	if err != nil {
		return nil, err
	}
	took := time.Since(start).Seconds()
	was := map[int]procMem{}
	for _, p := range before {
		was[p.PID] = p
	}
	out := map[string]float64{}
	for _, p := range after {
		b, ok := was[p.PID]
		if !ok || b.Name != p.Name {
			continue
		}
		name := p.Name
		if strings.HasPrefix(name, "postgres") {
			name = "postgres (every process)"
		}
		out[name] += (p.CPUSeconds - b.CPUSeconds) / took * 100
	}
	return out, nil
}
