package node

import (
	"context"
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"
)

func TestContainerdRunsInTheNamespaceWithCRIAndStopsByPID(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	c, dir := startTestContainerd(ctx, t)

	out, err := c.Ctr(ctx, "plugins", "ls")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"io.containerd.grpc.v1", "cri", "overlayfs"} {
		found := false
		for _, line := range strings.Split(string(out), "\n") {
			if strings.Contains(line, want) && strings.HasSuffix(strings.TrimSpace(line), "ok") {
				found = true
			}
		}
		if !found {
			t.Errorf("plugin %q not loaded ok:\n%s", want, out)
		}
	}
	pid := c.proc.cmd.Process.Pid
	if err := c.Stop(); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Kill(pid, 0); err == nil {
		t.Fatalf("containerd (pid %d) still runs after Stop", pid)
	}
	if mounts, _ := os.ReadFile("/proc/self/mountinfo"); strings.Contains(string(mounts), dir) {
		t.Fatalf("mounts left under %s after Stop", dir)
	}
}

func TestContainerdRestartKillsItAndAnswersAgainOnTheSameSocket(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	c, _ := startTestContainerd(ctx, t)
	before := c.proc.cmd.Process.Pid
	killed, err := c.Restart(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if killed != before {
		t.Errorf("Restart killed pid %d, containerd was %d", killed, before)
	}
	if err := syscall.Kill(before, 0); err == nil {
		t.Errorf("the old containerd (pid %d) still runs after Restart", before)
	}
	if after := c.proc.cmd.Process.Pid; after == before || syscall.Kill(after, 0) != nil {
		t.Errorf("after Restart containerd is pid %d (was %d), want a new running process", after, before)
	}
	if _, err := c.Ctr(ctx, "version"); err != nil {
		t.Errorf("the restarted containerd does not answer on %s: %v", c.Socket, err)
	}
	if _, err := c.TaskPID(ctx, "no-such-container"); err == nil {
		t.Error("TaskPID of an unknown container answered a PID")
	}
}

// A crashed containerd is started again like the node's other components (make deploy's node
// supervises it once it is up): the crash is reported with its name and the new containerd
// answers on the same socket. Restart of a supervised containerd lets the supervisor start it and
// returns once the new one answers (it used to wait for an exit for good, which never comes).
func TestASupervisedContainerdIsStartedAgainAfterACrash(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	c, _ := startTestContainerd(ctx, t)
	crashes := make(chan Crash, 10)
	c.supervise(RestartPolicy{Backoff: 10 * time.Millisecond, MaxBackoff: 40 * time.Millisecond, ResetAfter: time.Minute},
		func(cr Crash) { crashes <- cr })
	answersAsANewProcess := func(before int) {
		t.Helper()
		waitUntil(t, "a new containerd answering", func() error {
			if now := c.proc.pid(); now == before || syscall.Kill(now, 0) != nil {
				return fmt.Errorf("containerd is pid %d (was %d)", now, before)
			}
			_, err := c.Ctr(ctx, "version")
			return err
		})
	}

	before := c.proc.pid()
	if err := syscall.Kill(before, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	select {
	case cr := <-crashes:
		if cr.Name != "containerd" || cr.Err == nil || !strings.Contains(cr.Err.Error(), "signal: killed") {
			t.Errorf("crash reported as %s, err %v; want containerd, signal: killed", cr.Name, cr.Err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("containerd's crash was not reported within 30 s")
	}
	answersAsANewProcess(before)

	before = c.proc.pid()
	rctx, rcancel := context.WithTimeout(ctx, 30*time.Second)
	defer rcancel()
	killed, err := c.Restart(rctx)
	if err != nil {
		t.Fatalf("Restart of a supervised containerd: %v", err)
	}
	if killed != before {
		t.Errorf("Restart killed pid %d, containerd was %d", killed, before)
	}
	answersAsANewProcess(before)
}

// startTestContainerd starts containerd in a network namespace of its own for a test (skipped
// where namespaces or the binaries are missing), stopped and removed when the test ends; dir is
// its state directory.
func startTestContainerd(ctx context.Context, t *testing.T) (c *Containerd, dir string) {
	t.Helper()
	requireNetns(t)
	for _, bin := range []string{"containerd", "ctr", "runc"} {
		if _, err := exec.LookPath(bin); err != nil {
			t.Skipf("%s is not installed; run make deps", bin)
		}
	}
	ns, err := CreateNetns(ctx, "openhcp-test-", netip.MustParseAddr("10.250.0.1"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ns.Delete(context.Background()) })
	dir = t.TempDir()
	c, err = StartContainerd(ctx, ns, dir, "openhcp.local/pause:test")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Stop() })
	return c, dir
}
