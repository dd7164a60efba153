package localregion

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"slices"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/openhcp/openhcp/internal/pki"
)

// TestRegionRestartsAndReportsAKilledPgBouncer starts the region's PostgreSQL and PgBouncer as
// Up does (startPostgres), SIGKILLs the bouncer's process group as the probe did under make run,
// and requires what every other child gets: a crash report counted in region.json, a new
// pgbouncer, and Maestro's login through it working again; Stop then leaves no pgbouncer.
func TestRegionRestartsAndReportsAKilledPgBouncer(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	dir, err := os.MkdirTemp("", "openhcp-localregion-bouncer-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	// Under root PostgreSQL and PgBouncer run as postgres and must traverse the directory.
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	r := &Region{cfg: Config{Progress: io.Discard, RegionFile: filepath.Join(dir, "region.json")}, logDir: filepath.Join(dir, "logs"),
		stateDir: filepath.Join(dir, "state"), crashes: make(chan Crash, 8), dbPasswords: map[string]string{}}
	for _, d := range []string{r.logDir, r.stateDir, r.secretsDir()} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if r.pki, err = pki.Create(filepath.Join(r.stateDir, "pki"), pki.Options{}); err != nil {
		t.Fatal(err)
	}
	if _, err := r.startPostgres(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(r.Stop)
	role, err := r.Info.Postgres.Role("maestro")
	if err != nil || !role.Pooled || r.bouncer == nil {
		t.Fatalf("maestro's login %+v (%v) does not lead through a bouncer", role, err)
	}
	query := func() error {
		cfg, err := pgx.ParseConfig(role.DSN)
		if err != nil {
			return err
		}
		cfg.Password = r.dbPasswords["maestro"]
		qctx, qcancel := context.WithTimeout(ctx, 10*time.Second)
		defer qcancel()
		c, err := pgx.ConnectConfig(qctx, cfg)
		if err != nil {
			return err
		}
		defer c.Close(ctx)
		var one int
		return c.QueryRow(qctx, "SELECT 1").Scan(&one)
	}
	if err := query(); err != nil {
		t.Fatalf("maestro through the bouncer before the crash: %v", err)
	}

	// The chaos tests' way in: the bouncer is a component KillComponent crashes and
	// RecoverComponent waits for.
	if !slices.Contains(r.Components(), BouncerComponent) {
		t.Fatalf("Components() = %v, want %s among them", r.Components(), BouncerComponent)
	}
	killed, err := r.KillComponent(BouncerComponent)
	if err != nil || killed != r.bouncer.PID() {
		t.Fatalf("KillComponent(%s) = %d, %v; want the running pid", BouncerComponent, killed, err)
	}
	select {
	case c := <-r.crashes:
		if c.Name != "pgbouncer" || c.Err == nil || c.Restarts != 1 {
			t.Errorf("crash = %+v, want pgbouncer's first, with how it exited", c)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("no crash reported for a killed pgbouncer")
	}
	rctx, rcancel := context.WithTimeout(ctx, 90*time.Second)
	defer rcancel()
	if err := r.RecoverComponent(rctx, BouncerComponent, killed); err != nil {
		t.Fatal(err)
	}
	var lastErr error
	for deadline := time.Now().Add(90 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		if r.bouncer.PID() != killed {
			if lastErr = query(); lastErr == nil {
				break
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("no working pgbouncer 90 s after the crash (pid %d, killed %d): %v", r.bouncer.PID(), killed, lastErr)
		}
	}
	var info Info
	if err := json.Unmarshal([]byte(readFile(r.cfg.RegionFile)), &info); err != nil || info.Restarts["pgbouncer"] != 1 {
		t.Fatalf("region.json restarts %v (%v), want pgbouncer counted once", info.Restarts, err)
	}

	restarted := r.bouncer.PID()
	r.Stop()
	if err := syscall.Kill(restarted, 0); !errors.Is(err, syscall.ESRCH) {
		t.Fatalf("pgbouncer (pid %d) is still there after the region stopped: %v", restarted, err)
	}
	select {
	case c := <-r.crashes:
		t.Fatalf("the region's stop was reported as a crash: %+v", c)
	case <-time.After(2 * time.Second):
	}
}
