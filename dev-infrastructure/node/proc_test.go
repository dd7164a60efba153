package node

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// crashable is a process that logs its PID and runs until a file named crash appears in dir
// (then it removes it and exits with status 3) or it is killed.
func crashable(dir string) *exec.Cmd {
	cmd := exec.Command("sh", "-c", `echo "started $$"; while [ ! -e crash ]; do sleep 0.05; done; rm crash; echo "crashing $$"; exit 3`)
	cmd.Dir = dir
	return cmd
}

// startCrashable starts a crashable process in a fresh directory and stops it at cleanup.
func startCrashable(t *testing.T) (*proc, string) {
	t.Helper()
	dir := t.TempDir()
	p, err := startProc("crashable", filepath.Join(dir, "crashable.log"), func() *exec.Cmd { return crashable(dir) })
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.stop)
	waitUntil(t, "the first process's log line", func() error { return logHas(p, fmt.Sprintf("started %d", p.pid())) })
	return p, dir
}

func TestASupervisedProcessIsRestartedAfterEachCrashAndReported(t *testing.T) {
	for _, tc := range []struct {
		name    string
		crash   func(t *testing.T, p *proc, dir string)
		wantErr string
	}{
		{"killed with its process group", func(t *testing.T, p *proc, _ string) {
			if err := syscall.Kill(-p.pid(), syscall.SIGKILL); err != nil {
				t.Fatal(err)
			}
		}, "signal: killed"},
		{"exits by itself", func(t *testing.T, _ *proc, dir string) {
			if err := os.WriteFile(filepath.Join(dir, "crash"), nil, 0o600); err != nil {
				t.Fatal(err)
			}
		}, "exit status 3"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, dir := startCrashable(t)
			crashes := make(chan Crash, 10)
			p.supervise(RestartPolicy{Backoff: 10 * time.Millisecond, MaxBackoff: 40 * time.Millisecond, ResetAfter: time.Minute},
				func(c Crash) { crashes <- c })
			for i := 1; i <= 2; i++ {
				before := p.pid()
				tc.crash(t, p, dir)
				var c Crash
				select {
				case c = <-crashes:
				case <-time.After(30 * time.Second):
					t.Fatalf("crash %d: not reported within 30 s", i)
				}
				if c.Name != "crashable" || c.Restarts != i || c.Err == nil || !strings.Contains(c.Err.Error(), tc.wantErr) {
					t.Errorf("crash %d reported as %s, restarts %d, err %v; want crashable, %d, %q", i, c.Name, c.Restarts, c.Err, i, tc.wantErr)
				}
				if want := fmt.Sprintf("started %d", before); !strings.Contains(c.LogTail, want) {
					t.Errorf("crash %d: log tail %q lacks %q", i, c.LogTail, want)
				}
				if c.After < 10*time.Millisecond || c.After > 40*time.Millisecond {
					t.Errorf("crash %d: restart after %s, want within the policy's 10-40 ms", i, c.After)
				}
				waitUntil(t, "a new process", func() error {
					if now := p.pid(); now == before {
						return fmt.Errorf("still PID %d", now)
					}
					return logHas(p, fmt.Sprintf("started %d", p.pid()))
				})
			}
			if !p.running() || p.restartCount() != 2 {
				t.Errorf("after two crashes: running %v, restarts %d; want running, 2", p.running(), p.restartCount())
			}
			last := p.pid()
			p.stop()
			if p.running() {
				t.Fatal("running after stop")
			}
			if err := syscall.Kill(last, 0); !errors.Is(err, syscall.ESRCH) {
				t.Errorf("process %d after stop: %v; want it gone", last, err)
			}
			select {
			case c := <-crashes:
				t.Errorf("stop reported as a crash: %+v", c)
			default:
			}
		})
	}
}

func TestStopEndsAProcessForGoodDuringItsRestartDelay(t *testing.T) {
	p, _ := startCrashable(t)
	crashed := make(chan Crash, 1)
	p.supervise(RestartPolicy{Backoff: time.Hour, MaxBackoff: time.Hour, ResetAfter: time.Hour}, func(c Crash) { crashed <- c })
	pid := p.pid()
	if err := syscall.Kill(-pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	select {
	case <-crashed:
	case <-time.After(30 * time.Second):
		t.Fatal("crash not reported within 30 s")
	}
	stopped := make(chan struct{})
	go func() { p.stop(); close(stopped) }()
	select {
	case <-stopped:
	case <-time.After(30 * time.Second):
		t.Fatal("stop did not end the hour's restart delay within 30 s")
	}
	if p.running() || p.pid() != pid {
		t.Errorf("after stop: running %v, PID %d (was %d); want it ended, not restarted", p.running(), p.pid(), pid)
	}
}

func TestAnUnsupervisedProcessEndsAtItsFirstExit(t *testing.T) {
	p, dir := startCrashable(t)
	if err := os.WriteFile(filepath.Join(dir, "crash"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	select {
	case <-p.done:
	case <-time.After(30 * time.Second):
		t.Fatal("still running 30 s after its exit")
	}
	if p.restartCount() != 0 || p.err == nil {
		t.Errorf("restarts %d, err %v; want 0 and its exit status", p.restartCount(), p.err)
	}
}

func logHas(p *proc, s string) error {
	if tail := fileTail(p.logPath, 4000); !strings.Contains(tail, s) {
		return fmt.Errorf("log %q lacks %q", tail, s)
	}
	return nil
}

// waitUntil polls check every 20 ms until it succeeds, failing the test after 30 s.
func waitUntil(t *testing.T, what string, check func() error) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		err := check()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("waiting for %s: %v", what, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestAKillDuringTheBackoffWaitsForTheNextStart: a supervised process that crashed by itself
// is waiting out its backoff when a caller (the chaos harness's Restart of containerd) kills
// it: nothing runs to kill, so no signal may be sent (its PID was reaped and may be another
// process's), and the caller must learn of the next start from the start count, which the
// supervisor moves when it starts the process again. The crash count moves at the crash, before
// the backoff: a caller that waited for it to move after its kill waited for ever.
func TestAKillDuringTheBackoffWaitsForTheNextStart(t *testing.T) {
	p, dir := startCrashable(t)
	crashed := make(chan Crash, 10)
	p.supervise(RestartPolicy{Backoff: 2 * time.Second, MaxBackoff: 2 * time.Second, ResetAfter: time.Minute}, func(c Crash) { crashed <- c })
	first := p.pid()
	if err := os.WriteFile(filepath.Join(dir, "crash"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	select {
	case <-crashed:
	case <-time.After(30 * time.Second):
		t.Fatal("the crash was not reported within 30 s")
	}
	// In the backoff now: the crashed process has exited.
	pid, starts, err := p.killIfRunning()
	if err != nil || pid != first {
		t.Fatalf("killIfRunning during the backoff: pid %d, %v; want the exited %d and no signal sent", pid, err, first)
	}
	waitUntil(t, "the supervisor's next start", func() error {
		if n := p.startCount(); n <= starts {
			return fmt.Errorf("started again %d times, as before the kill", n)
		}
		return logHas(p, fmt.Sprintf("started %d", p.pid()))
	})
	if p.pid() == first {
		t.Errorf("still PID %d after the supervisor's start", first)
	}
}
