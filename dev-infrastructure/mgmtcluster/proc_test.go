package mgmtcluster

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// crashTwiceScript exits 3 on its first two runs (counted in a file) and then stays up.
const crashTwiceScript = `n=$(cat runs 2>/dev/null || echo 0); n=$((n+1)); echo $n > runs; echo "run $n"
if [ $n -le 2 ]; then echo "disk on fire" >&2; exit 3; fi; exec sleep 60`

func fastPolicy(onCrash func(ProcessCrash)) RestartPolicy {
	return RestartPolicy{Backoff: 10 * time.Millisecond, MaxBackoff: 40 * time.Millisecond, ResetAfter: time.Minute, OnCrash: onCrash}
}

// waitUntil polls cond until it holds or a generous deadline passes.
func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestSupervisedProcess(t *testing.T) {
	for _, tc := range []struct {
		name string
		// end ends the process for good once it is up after its crashes.
		end func(p *Process)
	}{
		{"restarted_after_each_crash_then_stopped", func(p *Process) { p.Stop(5 * time.Second) }},
		{"restarted_after_each_crash_then_killed_for_good", func(p *Process) { p.Kill() }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			var mu sync.Mutex
			var crashes []ProcessCrash
			p, err := StartProcess(context.Background(), ProcSpec{Name: "crasher", Path: "/bin/sh", Args: []string{"-c", crashTwiceScript}, Dir: dir, LogDir: dir})
			if err != nil {
				t.Fatal(err)
			}
			p.Supervise(fastPolicy(func(c ProcessCrash) { mu.Lock(); crashes = append(crashes, c); mu.Unlock() }))
			waitUntil(t, "the third run", func() bool {
				b, _ := os.ReadFile(filepath.Join(dir, "runs"))
				return strings.TrimSpace(string(b)) == "3" && p.Restarts() == 2
			})
			if exited, err := p.Exited(); exited {
				t.Fatalf("a supervised process that crashed twice is down for good: %v", err)
			}
			mu.Lock()
			got := append([]ProcessCrash(nil), crashes...)
			mu.Unlock()
			if len(got) != 2 {
				t.Fatalf("%d crashes reported, want 2: %+v", len(got), got)
			}
			for i, c := range got {
				if c.Name != "crasher" || c.Restarts != i+1 || c.Err == nil || !strings.Contains(c.Err.Error(), "exit status 3") ||
					!strings.Contains(c.LogTail, "disk on fire") || c.After <= 0 {
					t.Errorf("crash %d = %+v", i, c)
				}
			}
			// 10ms then 20ms, each lengthened by jitter by up to half (internal/backoff).
			if got[0].After < 10*time.Millisecond || got[0].After > 15*time.Millisecond ||
				got[1].After < 20*time.Millisecond || got[1].After > 30*time.Millisecond {
				t.Errorf("backoff %s then %s, want 10-15ms then, doubled, 20-30ms", got[0].After, got[1].After)
			}
			pid := p.PID()
			tc.end(p)
			select {
			case <-p.Done():
			case <-time.After(30 * time.Second):
				t.Fatal("Done not closed after the process was ended")
			}
			time.Sleep(100 * time.Millisecond) // longer than the backoff: a wrong restart would show
			if b, _ := os.ReadFile(filepath.Join(dir, "runs")); strings.TrimSpace(string(b)) != "3" {
				t.Fatalf("the process ran again after it was ended: runs=%s", b)
			}
			if alive(pid) {
				t.Fatalf("pid %d still runs", pid)
			}
		})
	}
}

func TestUnsupervisedProcessStaysDown(t *testing.T) {
	dir := t.TempDir()
	p, err := StartProcess(context.Background(), ProcSpec{Name: "crasher", Path: "/bin/sh", Args: []string{"-c", crashTwiceScript}, Dir: dir, LogDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	select {
	case <-p.Done():
	case <-time.After(30 * time.Second):
		t.Fatal("an unsupervised child that exited is not reported done")
	}
	if exited, err := p.Exited(); !exited || err == nil || p.Restarts() != 0 {
		t.Fatalf("exited %v err %v restarts %d", exited, err, p.Restarts())
	}
}

func TestStopDuringRestartBackoffEndsForGood(t *testing.T) {
	dir := t.TempDir()
	crashed := make(chan struct{}, 4)
	p, err := StartProcess(context.Background(), ProcSpec{Name: "crasher", Path: "/bin/sh", Args: []string{"-c", "exit 1"}, Dir: dir, LogDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	p.Supervise(RestartPolicy{Backoff: time.Hour, MaxBackoff: time.Hour, ResetAfter: time.Hour, OnCrash: func(ProcessCrash) { crashed <- struct{}{} }})
	select {
	case <-crashed:
	case <-time.After(30 * time.Second):
		t.Fatal("no crash reported")
	}
	stopped := make(chan struct{})
	go func() { p.Stop(5 * time.Second); close(stopped) }()
	select {
	case <-stopped:
	case <-time.After(30 * time.Second):
		t.Fatal("Stop waited out an hour's backoff")
	}
	if exited, _ := p.Exited(); !exited {
		t.Fatal("not done after Stop")
	}
}

func alive(pid int) bool {
	_, err := os.Stat(filepath.Join("/proc", strconv.Itoa(pid)))
	if err != nil {
		return false
	}
	b, _ := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	// a zombie is dead for our purposes
	return !strings.Contains(string(b), ") Z ")
}

// TestProcessLogIsBounded: a child whose output someone else drives (a hosted kube-apiserver
// logs about 700 bytes for each failed call of its customer's webhook, and a customer made it
// write 445 kB/s) must not fill the disk its log is on (under make deploy the sim pod's
// emptyDir, whose sizeLimit evicts the pod and every hosted cluster's data with it). With
// LogMaxBytes the log and its one predecessor hold at most twice that, the newest output kept,
// across a supervised restart too.
func TestProcessLogIsBounded(t *testing.T) {
	dir := t.TempDir()
	const max = 64 << 10
	// 1 MiB in lines of 1 KiB, then a last line.
	script := `i=0; line=$(head -c 1023 /dev/zero | tr '\0' x); while [ $i -lt 1024 ]; do echo "$line"; i=$((i+1)); done; echo the-end`
	p, err := StartProcess(context.Background(), ProcSpec{Name: "chatty", Path: "/bin/sh", Args: []string{"-c", script}, LogDir: dir, LogMaxBytes: max})
	if err != nil {
		t.Fatal(err)
	}
	select {
	case <-p.Done():
	case <-time.After(time.Minute):
		p.Kill()
		t.Fatal("the chatty child did not finish in a minute")
	}
	var total int64
	for _, name := range []string{"chatty.log", "chatty.log.1"} {
		fi, err := os.Stat(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		if fi.Size() > max {
			t.Errorf("%s is %d bytes, over the bound %d", name, fi.Size(), max)
		}
		if fi.Mode().Perm() != LogFileMode {
			t.Errorf("%s has mode %o, want %o", name, fi.Mode().Perm(), LogFileMode)
		}
		total += fi.Size()
	}
	if !strings.Contains(p.LogTail(100), "the-end") {
		t.Errorf("the log's tail lost the newest output: %q", p.LogTail(100))
	}
	if total < max {
		t.Errorf("the log and its predecessor hold %d bytes, want at least the bound %d of the newest output", total, max)
	}
}
