package hypershiftsim

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/util/wait"
	ctrl "sigs.k8s.io/controller-runtime"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
)

// A hosted control plane's memory limit. HyperShift runs each hosted control plane's etcd and
// kube-apiserver in pods of their own, each with its own memory limit, so a customer who drives
// their control plane's memory up (etcd keeps its last 5000 raft entries in memory, whatever the
// space quota: 1 MiB objects that compaction frees again grow it by what is written) has that
// control plane OOM-killed and restarted, and no other. The sim runs every served control plane
// as children of one process, in one container under make deploy: the container's memory limit
// is shared, and the kubelet ends the whole container on an OOM (cgroup v2's memory.oom.group),
// every customer's control plane with it. So the sim is each control plane's OOM killer: every
// MemoryCheckInterval it reads the anonymous resident memory (RssAnon: the heap, which a limit
// bounds; etcd's database is a file mapping the kernel can drop) of each control plane's two
// processes, and when their sum is over MemoryLimitBytes it kills the larger with SIGKILL, as
// the kernel's OOM killer picks the largest task. The reconcile starts it again (an etcd killed
// takes its kube-apiserver along) after a backoff that grows while the plane keeps being
// killed, and the HostedAPIServer condition says why (StartFailed, naming the limit).
//
// What it does not do: a plane killed is down until it is started again (seconds, and longer
// while it keeps being killed, up to startRetryAfter's 30 s); a burst faster than the interval
// can overshoot by what it writes in one interval; the sim itself and the egress proxy are
// outside every plane's limit.

// DefaultHostedMemoryLimit is a hosted control plane's memory limit when HostedAPIOptions does
// not set one: about 280 MiB idle (docs/performance.md, "Hosted control planes"), and room for a
// customer who fills the default etcd quota (256 MiB) in the apiserver's watch cache and etcd's
// in-memory raft log.
const DefaultHostedMemoryLimit = 640 << 20

// Each process of a plane gets a share of the plane's limit as its Go runtime's soft limit
// (GOMEMLIMIT), as a pod's memory limit is usually handed to a Go program: without it the
// collector lets garbage grow each heap to about twice what is live before it runs, and the
// check could kill for garbage (seen without it: a kube-apiserver and etcd idle at 179 MiB held
// 160 MiB more after 18 MiB of objects were written; what the soft limits change is not
// measured). The apiserver, most of a plane idle and the holder of the
// watch cache, gets 60 %, etcd 30 %; the rest is what the runtimes hold outside the heap. A soft
// limit is not a bound: live memory over it is what the check kills for.
func apiserverGoMemLimit(plane int64) int64 { return plane * 6 / 10 }
func etcdGoMemLimit(plane int64) int64      { return plane * 3 / 10 }

// defaultMemoryCheckInterval is how often the planes' memory is read when HostedAPIOptions does
// not say: a quarter of a second, so a burst overshoots a plane's limit by what it writes in that
// time (reading two /proc files per process costs microseconds).
const defaultMemoryCheckInterval = 250 * time.Millisecond

var (
	hostedMemoryKills = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "hypershift_sim_hosted_memory_kills_total",
		Help: "Hosted control-plane processes the sim killed because their control plane's anonymous resident memory was over --hosted-memory-limit, by component (kube-apiserver, etcd).",
	}, []string{"component"})
	hostedMemoryBytes = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "hypershift_sim_hosted_memory_bytes",
		Help: "Anonymous resident memory of each served hosted control plane (its kube-apiserver and etcd), by control-plane namespace, at the last check.",
	}, []string{"namespace"})
)

func init() {
	ctrlmetrics.Registry.MustRegister(hostedMemoryKills, hostedMemoryBytes)
	// Zero series from the start: HostedControlPlaneOverMemory is increase() over them, which
	// sees nothing of a series whose first sample is the first kill's 1.
	for _, c := range []string{"kube-apiserver", "etcd"} {
		hostedMemoryKills.WithLabelValues(c)
	}
}

// planeProcess is one running process of a control plane, as its pid file names it.
type planeProcess struct {
	component string // "kube-apiserver" or "etcd"
	pid       int
	anon      int64 // RssAnon, bytes
}

// planeProcesses returns the running processes of the control plane in dir whose pid files
// name them: only a process of the sim's user whose command line carries the plane's mark
// (killOrphan's rule), so a stale pid file whose PID is now another process names nothing.
func planeProcesses(dir string) []planeProcess {
	var out []planeProcess
	for _, c := range []struct{ component, pidFile, mark string }{
		{"kube-apiserver", pidFile, apiserverMark(dir)},
		{"etcd", etcdPIDFile, etcdMark(dir)},
	} {
		pid, ok := markedPID(filepath.Join(dir, c.pidFile), c.mark)
		if !ok {
			continue
		}
		anon, err := anonRSS(pid)
		if err != nil {
			continue // exited meanwhile
		}
		out = append(out, planeProcess{component: c.component, pid: pid, anon: anon})
	}
	return out
}

// markedPID reads the PID a pid file names and reports whether it is a process of the sim's
// user whose command line has arg.
func markedPID(pidPath, arg string) (int, bool) {
	b, err := os.ReadFile(pidPath)
	if err != nil {
		return 0, false
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil || pid <= 1 || !ownProcess(pid) {
		return 0, false
	}
	cmdline, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cmdline")
	if err != nil || !bytes.Contains(cmdline, []byte(arg+"\x00")) {
		return 0, false
	}
	return pid, true
}

// anonRSS is a process's anonymous resident memory (RssAnon of /proc/<pid>/status), in bytes.
func anonRSS(pid int) (int64, error) {
	f, err := os.Open("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return 0, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		rest, ok := strings.CutPrefix(sc.Text(), "RssAnon:")
		if !ok {
			continue
		}
		kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
		if err != nil {
			return 0, fmt.Errorf("RssAnon of %d: %w", pid, err)
		}
		return kb << 10, nil
	}
	if err := sc.Err(); err != nil {
		return 0, err
	}
	return 0, fmt.Errorf("no RssAnon in /proc/%d/status", pid)
}

// watchMemory checks every served control plane's memory each interval until ctx ends.
func (h *hostedAPIServers) watchMemory(ctx context.Context) {
	wait.UntilWithContext(ctx, h.checkMemory, h.o.MemoryCheckInterval)
}

// checkMemory kills, in each control plane over the limit, its larger process, and records why
// for the plane's next reconcile.
func (h *hostedAPIServers) checkMemory(ctx context.Context) {
	h.mu.Lock()
	limit := h.o.MemoryLimitBytes
	servers := make([]*hostedAPIServer, 0, len(h.servers))
	for _, s := range h.servers {
		servers = append(servers, s)
	}
	h.mu.Unlock()
	for _, s := range servers {
		procs := planeProcesses(s.dir)
		var sum int64
		largest := -1
		for i, p := range procs {
			sum += p.anon
			if largest < 0 || p.anon > procs[largest].anon {
				largest = i
			}
		}
		// Set under h.mu, and only while the plane is served: remove deletes the series under
		// the same lock, so a check racing a removal leaves no series behind.
		h.mu.Lock()
		if h.servers[s.hcpNS] == s {
			hostedMemoryBytes.WithLabelValues(s.hcpNS).Set(float64(sum))
		}
		h.mu.Unlock()
		if sum <= limit || largest < 0 {
			continue
		}
		p := procs[largest]
		if err := syscall.Kill(p.pid, syscall.SIGKILL); err != nil {
			continue // exited meanwhile
		}
		why := fmt.Sprintf("%s was killed: the control plane's kube-apiserver and etcd held %d MiB of memory, over its limit of %d MiB (--hosted-memory-limit)",
			p.component, sum>>20, limit>>20)
		s.memoryKill.Store(&why)
		hostedMemoryKills.WithLabelValues(p.component).Inc()
		ctrl.LoggerFrom(ctx).Info("hosted control plane over its memory limit; killed its largest process", "namespace", s.hcpNS,
			"component", p.component, "pid", p.pid, "bytes", sum, "limitBytes", limit)
	}
}
