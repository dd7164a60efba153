package pgserver_test

import (
	"context"
	"errors"
	"os"
	"syscall"
	"testing"
	"time"

	"github.com/openhcp/openhcp/internal/pgserver"
	"github.com/openhcp/openhcp/internal/pki"
)

// TestKilledBouncerRestartsOnItsOwnPortAndSocket crashes the bouncer (SIGKILL to its process
// group, as the OOM killer would) and starts it again with Restart: a new process serves the
// same port, or the same socket the killed one left behind, and Stop then leaves none.
func TestKilledBouncerRestartsOnItsOwnPortAndSocket(t *testing.T) {
	for _, tc := range []struct {
		name       string
		socketOnly bool
	}{
		{name: "tls", socketOnly: false},
		{name: "socket_only", socketOnly: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := startSecureWith(t, tc.socketOnly)
			b := startBouncer(t, c)
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			query := func() error {
				conn, err := connectVia(ctx, b, "othersvc", c.passwords["othersvc"], "other", "verify-full", c.pki.CAFile)
				if err != nil {
					return err
				}
				defer conn.Close(ctx)
				var one int
				return conn.QueryRow(ctx, "SELECT 1").Scan(&one)
			}
			if err := query(); err != nil {
				t.Fatalf("query before the crash: %v", err)
			}
			if err := b.Restart(ctx); err == nil {
				t.Fatal("Restart of a running bouncer succeeded, want an error saying it still runs")
			}
			killed := killBouncer(ctx, t, b)
			if b.Err() == nil {
				t.Error("Err of a killed bouncer is nil, want how it exited")
			}
			if tc.socketOnly {
				// A killed pgbouncer cannot remove its socket: Restart must cope with it.
				if _, err := os.Stat(b.SocketPath()); err != nil {
					t.Fatalf("the killed bouncer's socket file is gone (%v): this test would not see a stale one", err)
				}
			}
			if err := query(); err == nil {
				t.Fatal("a query through the killed bouncer succeeded")
			}
			if err := b.Restart(ctx); err != nil {
				t.Fatalf("restart after the crash: %v", err)
			}
			restarted := b.PID()
			if restarted == killed {
				t.Fatalf("PID after restart is the killed one, %d", killed)
			}
			if err := query(); err != nil {
				t.Fatalf("query through the restarted bouncer: %v", err)
			}
			b.Stop()
			select {
			case <-b.Done():
			default:
				t.Fatal("Done is open after Stop")
			}
			if err := syscall.Kill(restarted, 0); !errors.Is(err, syscall.ESRCH) {
				t.Fatalf("the restarted bouncer (pid %d) is still there after Stop: %v", restarted, err)
			}
			if err := b.Restart(ctx); err == nil {
				t.Fatalf("Restart after Stop started a bouncer (pid %d), want an error", b.PID())
			}
		})
	}
}

// TestReloadTLSWhileTheBouncerIsDown: a certificate rotation that comes while a crashed bouncer
// waits to be restarted is not an error (the region's rotation would stop there, leaving the
// broker and Maestro unreloaded): the files are written, and the restarted bouncer reads them.
func TestReloadTLSWhileTheBouncerIsDown(t *testing.T) {
	c := startSecure(t)
	b := startBouncer(t, c)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	killBouncer(ctx, t, b)
	renewed, err := c.pki.Renew(pki.Postgres)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.pg.ReloadTLS(ctx); err != nil {
		t.Fatal(err)
	}
	if err := b.ReloadTLS(); err != nil {
		t.Fatalf("ReloadTLS while the bouncer is down: %v, want nil (its restart reads the files)", err)
	}
	if err := b.Restart(ctx); err != nil {
		t.Fatalf("restart after the crash: %v", err)
	}
	if got, err := servedSerial(c, b.Port); err != nil || got != renewed.SerialNumber.String() {
		t.Fatalf("the restarted bouncer serves serial %s (%v), want the renewed %s", got, err, renewed.SerialNumber)
	}
}

// killBouncer SIGKILLs b's process group, as a crash would, waits until it has exited and
// returns the PID it killed.
func killBouncer(ctx context.Context, t *testing.T, b *pgserver.Bouncer) int {
	t.Helper()
	killed := b.PID()
	if err := syscall.Kill(-killed, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	select {
	case <-b.Done():
	case <-ctx.Done():
		t.Fatalf("the bouncer (pid %d) did not exit after SIGKILL", killed)
	}
	return killed
}
