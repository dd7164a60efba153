package localregion

import (
	"context"
	"encoding/json"
	"github.com/openhcp/openhcp/dev-infrastructure/mgmtcluster"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestSuperviseRestartsACrashWithLogTailButNotAStop(t *testing.T) {
	dir := t.TempDir()
	r := &Region{crashes: make(chan Crash, 4), cfg: Config{RegionFile: filepath.Join(dir, "region.json")}}
	ctx := context.Background()

	crashing, err := mgmtcluster.StartProcess(ctx, mgmtcluster.ProcSpec{Name: "crasher", Path: "/bin/sh", Args: []string{"-c", "echo about to fail; echo disk on fire >&2; exit 3"}, LogDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	r.supervise(crashing)
	select {
	case c := <-r.crashes:
		if c.Name != "crasher" || c.Err == nil || !strings.Contains(c.Err.Error(), "exit status 3") {
			t.Errorf("crash = %+v, want crasher with exit status 3", c)
		}
		if !strings.Contains(c.LogTail, "disk on fire") {
			t.Errorf("crash log tail %q lacks the child's last words", c.LogTail)
		}
		// 1s, lengthened by jitter by up to half (internal/backoff).
		if c.Restarts != 1 || c.After < time.Second || c.After > 1500*time.Millisecond {
			t.Errorf("crash = %+v, want restart 1 after 1-1.5s", c)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no crash reported for a child that exited by itself")
	}
	// It is started again after its backoff, and crashes again: the second report counts 2.
	select {
	case c := <-r.crashes:
		if c.Restarts != 2 || c.After < 2*time.Second || c.After > 3*time.Second {
			t.Errorf("second crash = %+v, want restart 2 after 2-3s", c)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("a crashed child was not started again")
	}
	crashing.Stop(5 * time.Second)
	var info Info
	if err := json.Unmarshal([]byte(readFile(r.cfg.RegionFile)), &info); err != nil || info.Restarts["crasher"] < 2 {
		t.Fatalf("region.json restarts %v (%v), want crasher counted twice", info.Restarts, err)
	}

	stopped, err := mgmtcluster.StartProcess(ctx, mgmtcluster.ProcSpec{Name: "sleeper", Path: "/bin/sleep", Args: []string{"60"}, LogDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	r.supervise(stopped)
	stopped.Stop(5 * time.Second)
	select {
	case c := <-r.crashes:
		t.Fatalf("a process stopped on purpose was reported as a crash: %+v", c)
	case <-time.After(500 * time.Millisecond):
	}
}

func TestStopEndsTheWholeProcessGroup(t *testing.T) {
	dir := t.TempDir()
	// The child starts a grandchild; Stop must end both, as the region promises nothing is left.
	p, err := mgmtcluster.StartProcess(context.Background(), mgmtcluster.ProcSpec{Name: "tree", Path: "/bin/sh", LogDir: dir,
		Args: []string{"-c", "sleep 60 & echo $! > " + dir + "/grandchild; wait"}})
	if err != nil {
		t.Fatal(err)
	}
	var pid string
	for i := 0; i < 50 && pid == ""; i++ {
		time.Sleep(50 * time.Millisecond)
		pid = strings.TrimSpace(readFile(dir + "/grandchild"))
	}
	if pid == "" {
		t.Fatal("grandchild did not start")
	}
	p.Stop(5 * time.Second)
	deadline := time.Now().Add(5 * time.Second)
	for processAlive(pid) {
		if time.Now().After(deadline) {
			t.Fatalf("grandchild %s still runs after Stop", pid)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func readFile(path string) string {
	b, _ := os.ReadFile(path)
	return string(b)
}

// processAlive reports whether pid exists and is not a zombie.
func processAlive(pid string) bool {
	b, err := os.ReadFile("/proc/" + pid + "/stat")
	if err != nil {
		return false
	}
	fields := strings.Fields(string(b))
	return len(fields) > 2 && fields[2] != "Z"
}
