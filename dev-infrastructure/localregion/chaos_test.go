package localregion

import (
	"context"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/openhcp/openhcp/dev-infrastructure/mgmtcluster"
)

// TestKillComponentCrashesAndTheSupervisorRestartsIt kills a supervised service through
// KillComponent: the PID it returns is gone, the supervisor starts a new process (counted in
// region.json's restarts), and RecoverComponent returns once that one is ready. A name the
// region does not have is refused.
func TestKillComponentCrashesAndTheSupervisorRestartsIt(t *testing.T) {
	dir := t.TempDir()
	r := &Region{crashes: make(chan Crash, 4), services: map[string]*service{}, cfg: Config{RegionFile: filepath.Join(dir, "region.json")}}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	spec := mgmtcluster.ProcSpec{Name: "sleeper", Path: "/bin/sleep", Args: []string{"300"}, LogDir: dir}
	readyCalls := 0
	if err := r.startService(ctx, spec, func(context.Context) error { readyCalls++; return nil }); err != nil {
		t.Fatal(err)
	}
	p, _ := r.Process("sleeper")
	t.Cleanup(func() { p.Stop(5 * time.Second) })

	if got := r.Components(); !slices.Equal(got, []string{"sleeper"}) {
		t.Fatalf("Components() = %v, want [sleeper]", got)
	}
	before, _ := r.ComponentPID("sleeper")
	killed, err := r.KillComponent("sleeper")
	if err != nil || killed != before {
		t.Fatalf("KillComponent = %d, %v; want the running pid %d", killed, err, before)
	}
	readyCalls = 0
	if err := r.RecoverComponent(ctx, "sleeper", killed); err != nil {
		t.Fatalf("RecoverComponent: %v", err)
	}
	after, _ := r.ComponentPID("sleeper")
	if after == killed || readyCalls == 0 {
		t.Fatalf("after recovery pid %d (killed %d), readiness checked %d times; want a new, ready process", after, killed, readyCalls)
	}
	if p.Restarts() != 1 {
		t.Fatalf("supervisor restarts = %d, want 1", p.Restarts())
	}
	if _, err := r.KillComponent("no-such-part"); err == nil {
		t.Fatal("KillComponent of an unknown name succeeded")
	}
}
