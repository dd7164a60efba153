package hypershiftsim

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
)

// memoryHogEnv makes the test binary a stand-in for a control plane's process: it holds this
// many MiB of touched heap, says so, and lives until its stdin closes.
const memoryHogEnv = "HYPERSHIFT_SIM_MEMORY_HOG_MIB"

var hogHeap []byte

// TestMemoryHogHelperProcess is a process of TestMemoryLimitKillsOnlyThePlaneOverIt.
func TestMemoryHogHelperProcess(t *testing.T) {
	mib, err := strconv.Atoi(os.Getenv(memoryHogEnv))
	if err != nil {
		t.Skip("helper process of TestMemoryLimitKillsOnlyThePlaneOverIt")
	}
	hogHeap = make([]byte, mib<<20)
	for i := 0; i < len(hogHeap); i += 4096 {
		hogHeap[i] = 1
	}
	fmt.Println("HOG_READY")
	_, _ = io.Copy(io.Discard, os.Stdin)
}

// hog is one stand-in process: a control plane's kube-apiserver or etcd, named by its mark.
type hog struct {
	cmd    *exec.Cmd
	stdin  io.Closer
	exited chan struct{} // closed once it has exited and been waited for
}

// startHog runs the test binary holding mib MiB with mark on its command line, and writes its
// PID to pidPath, as the sim does for the processes it starts.
func startHog(t *testing.T, mib int, mark, pidPath string) *hog {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestMemoryHogHelperProcess$", "-test.short", "-test.count=1", "--", mark)
	cmd.Env = append(os.Environ(), memoryHogEnv+"="+strconv.Itoa(mib))
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	h := &hog{cmd: cmd, stdin: stdin, exited: make(chan struct{})}
	t.Cleanup(func() {
		_ = h.stdin.Close()
		_ = cmd.Process.Kill()
		<-h.exited
	})
	ready := make(chan bool, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		said := false
		for sc.Scan() {
			if sc.Text() == "HOG_READY" && !said {
				said = true
				ready <- true
			}
		}
		if !said {
			ready <- false
		}
		_ = cmd.Wait()
		close(h.exited)
	}()
	select {
	case ok := <-ready:
		if !ok {
			t.Fatalf("the hog with %s exited before it held its memory", mark)
		}
	case <-time.After(2 * time.Minute):
		t.Fatalf("the hog with %s did not hold its memory in 2 minutes", mark)
	}
	if err := os.WriteFile(pidPath, []byte(strconv.Itoa(cmd.Process.Pid)), 0o600); err != nil {
		t.Fatal(err)
	}
	return h
}

// alive reports whether the hog still runs.
func (h *hog) alive() bool {
	select {
	case <-h.exited:
		return false
	default:
		return true
	}
}

// TestMemoryLimitKillsOnlyThePlaneOverIt: every served control plane runs in the sim's
// process tree (one container under make deploy), so one customer who drives their
// kube-apiserver's or etcd's memory up must lose that control plane's larger process, as
// HyperShift's pod limit would take it, and no other process of any plane. Before the limit,
// nothing bounded a plane: the container's limit ended every plane at once.
func TestMemoryLimitKillsOnlyThePlaneOverIt(t *testing.T) {
	if os.Getenv(memoryHogEnv) != "" {
		t.Skip("in the helper process")
	}
	dir := t.TempDir()
	h := newHostedAPIServers(HostedAPIOptions{Max: 2, Dir: filepath.Join(dir, "hosted"), LogDir: dir,
		APIServerPath: filepath.Join(dir, "no-such-kube-apiserver"), EtcdPath: filepath.Join(dir, "no-such-etcd")})
	start := func(ns string, apiserverMiB, etcdMiB int) (apiserver, etcd *hog) {
		s := h.server(ns, 1)
		if err := os.MkdirAll(s.dir, 0o700); err != nil {
			t.Fatal(err)
		}
		return startHog(t, apiserverMiB, apiserverMark(s.dir), filepath.Join(s.dir, pidFile)),
			startHog(t, etcdMiB, etcdMark(s.dir), filepath.Join(s.dir, etcdPIDFile))
	}
	calmAPI, calmEtcd := start("calm", 0, 0)
	greedyAPI, greedyEtcd := start("greedy", 16, 192)

	// The limit sits above what the calm plane holds (a test binary's own heap) by half of
	// what the greedy plane's etcd holds more, so only the greedy plane is over it.
	var calm int64
	for _, p := range planeProcesses(h.server("calm", 1).dir) {
		calm += p.anon
	}
	if len(planeProcesses(h.server("calm", 1).dir)) != 2 {
		t.Fatal("the calm plane's processes are not found by their pid files and marks")
	}
	h.mu.Lock()
	h.o.MemoryLimitBytes = calm + 96<<20
	h.mu.Unlock()
	before := testutil.ToFloat64(hostedMemoryKills.WithLabelValues("etcd"))
	h.checkMemory(context.Background())

	select {
	case <-greedyEtcd.exited:
	case <-time.After(time.Minute):
		t.Fatalf("the greedy plane's etcd (192 MiB over a plane limit of %d MiB) still runs", h.o.MemoryLimitBytes>>20)
	}
	for name, p := range map[string]*hog{"calm kube-apiserver": calmAPI, "calm etcd": calmEtcd, "greedy kube-apiserver": greedyAPI} {
		if !p.alive() {
			t.Errorf("the %s was killed too", name)
		}
	}
	if got := testutil.ToFloat64(hostedMemoryKills.WithLabelValues("etcd")) - before; got != 1 {
		t.Errorf("hypershift_sim_hosted_memory_kills_total{component=etcd} grew by %v, want 1", got)
	}

	// The next reconcile of the greedy plane says why it is down, and holds its start back.
	greedy := h.server("greedy", 1)
	rootCert, rootKey, err := newCA("root-ca.greedy", time.Now())
	if err != nil {
		t.Fatal(err)
	}
	st, err := h.ensure(context.Background(), "greedy", 1, hostedPKI{rootCert: rootCert, rootKey: rootKey, clientCABundle: rootCert})
	if err != nil {
		t.Fatal(err)
	}
	if st.ready || !st.failed || !strings.Contains(st.detail, "etcd was killed") || !strings.Contains(st.detail, "--hosted-memory-limit") {
		t.Errorf("state after the kill %+v, want failed, saying etcd was killed over --hosted-memory-limit", st)
	}
	greedy.mu.Lock()
	held := time.Until(greedy.retryAt)
	greedy.mu.Unlock()
	if held <= 0 {
		t.Errorf("the next start of a plane killed for its memory is not held back (retry in %v)", held)
	}

	// A second check kills nothing more: the calm plane is under the limit, and what is left
	// of the greedy one too.
	h.checkMemory(context.Background())
	if got := testutil.ToFloat64(hostedMemoryKills.WithLabelValues("etcd")) - before; got != 1 {
		t.Errorf("after a second check, kills grew by %v, want 1", got)
	}
	if !calmAPI.alive() || !calmEtcd.alive() {
		t.Error("the calm plane lost a process at the second check")
	}
}

// TestPlaneProcessesNeedTheirMark: a pid file that names a process without the plane's mark
// (a PID reused after the sim was killed) names nothing the limit could kill.
func TestPlaneProcessesNeedTheirMark(t *testing.T) {
	if os.Getenv(memoryHogEnv) != "" {
		t.Skip("in the helper process")
	}
	dir := t.TempDir()
	other := startHog(t, 0, "--unrelated", filepath.Join(dir, pidFile))
	if err := os.WriteFile(filepath.Join(dir, etcdPIDFile), []byte("not a pid"), 0o600); err != nil {
		t.Fatal(err)
	}
	if got := planeProcesses(dir); len(got) != 0 {
		t.Errorf("planeProcesses = %+v, want none: the pid file's process lacks the plane's mark", got)
	}
	if !other.alive() {
		t.Error("the unrelated process exited")
	}
	if _, err := anonRSS(1 << 30); err == nil || !errors.Is(err, os.ErrNotExist) {
		t.Errorf("anonRSS of no process: %v, want not found", err)
	}
}
