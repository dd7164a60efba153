package localregion

import (
	"context"
	"encoding/json"
	"errors"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/openhcp/openhcp/dev-infrastructure/mgmtcluster"
)

// fakeBouncer is a restartable whose process "exits" when the test says so.
type fakeBouncer struct {
	mu       sync.Mutex
	done     chan struct{}
	err      error
	stopped  chan struct{}
	restarts chan struct{} // one value per successful Restart
}

func newFakeBouncer() *fakeBouncer {
	return &fakeBouncer{done: make(chan struct{}), stopped: make(chan struct{}), restarts: make(chan struct{}, 8)}
}

func (f *fakeBouncer) Done() <-chan struct{} {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.done
}

func (f *fakeBouncer) Err() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.err
}

func (f *fakeBouncer) Stopped() <-chan struct{} { return f.stopped }
func (f *fakeBouncer) LogTail() string          { return "pgbouncer's last words" }

func (f *fakeBouncer) Restart(context.Context) error {
	f.mu.Lock()
	select {
	case <-f.stopped:
		f.mu.Unlock()
		return errors.New("stopped")
	default:
	}
	f.done, f.err = make(chan struct{}), nil
	f.mu.Unlock()
	f.restarts <- struct{}{}
	return nil
}

// crash ends the current process as SIGKILL would.
func (f *fakeBouncer) crash() {
	f.mu.Lock()
	f.err = errors.New("signal: killed")
	close(f.done)
	f.mu.Unlock()
}

// stop ends it on purpose, as pgserver.Bouncer.Stop: stopped first, then the exit.
func (f *fakeBouncer) stop() {
	close(f.stopped)
	f.mu.Lock()
	close(f.done)
	f.mu.Unlock()
}

// TestCrashedBouncerIsRestartedAndReportedButNotAStoppedOne: a PgBouncer that exits by itself
// is reported as every supervised child is (a Crash with its log tail, region.json's restarts
// under "pgbouncer") and started again after the same backoff; one stopped on purpose is not.
func TestCrashedBouncerIsRestartedAndReportedButNotAStoppedOne(t *testing.T) {
	dir := t.TempDir()
	r := &Region{crashes: make(chan Crash, 4), cfg: Config{RegionFile: filepath.Join(dir, "region.json")}}
	b := newFakeBouncer()
	superviseRestartable(BouncerComponent, b, mgmtcluster.DefaultRestartPolicy(r.reportCrash))

	b.crash()
	select {
	case c := <-r.crashes:
		if c.Name != "pgbouncer" || c.Err == nil || c.LogTail != "pgbouncer's last words" {
			t.Errorf("crash = %+v, want pgbouncer with its error and log tail", c)
		}
		// 1s, lengthened by jitter by up to half (internal/backoff), as for every child.
		if c.Restarts != 1 || c.After < time.Second || c.After > 1500*time.Millisecond {
			t.Errorf("crash = %+v, want restart 1 after 1-1.5s", c)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no crash reported for a bouncer that exited by itself")
	}
	select {
	case <-b.restarts:
	case <-time.After(10 * time.Second):
		t.Fatal("the crashed bouncer was not started again")
	}
	var info Info
	if err := json.Unmarshal([]byte(readFile(r.cfg.RegionFile)), &info); err != nil || info.Restarts["pgbouncer"] != 1 {
		t.Fatalf("region.json restarts %v (%v), want pgbouncer counted once", info.Restarts, err)
	}

	b.stop()
	select {
	case c := <-r.crashes:
		t.Fatalf("a bouncer stopped on purpose was reported as a crash: %+v", c)
	case <-b.restarts:
		t.Fatal("a bouncer stopped on purpose was started again")
	case <-time.After(2 * time.Second):
	}
}
