package pgserver_test

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/openhcp/openhcp/internal/pgserver/pgservertest"
)

// TestKilledServerRestartsWithItsData crashes the postmaster (SIGKILL to its whole process
// group, as a host crash would) and starts it again: the same port answers, and a row committed
// before the crash is still there.
func TestKilledServerRestartsWithItsData(t *testing.T) {
	s := pgservertest.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	dsn := pgservertest.NewDatabase(t, s)
	exec := func(sql string) error {
		c, err := pgx.Connect(ctx, dsn)
		if err != nil {
			return err
		}
		defer c.Close(ctx)
		_, err = c.Exec(ctx, sql)
		return err
	}
	if err := exec("CREATE TABLE kept (x int); INSERT INTO kept VALUES (42)"); err != nil {
		t.Fatalf("write before the crash: %v", err)
	}
	if err := s.Restart(ctx); err == nil {
		t.Fatal("Restart of a running server succeeded, want an error saying it still runs")
	}
	killed := s.Kill()
	if err := exec("SELECT 1"); err == nil {
		t.Fatalf("the server still answers after Kill (pid %d)", killed)
	}
	if err := s.Restart(ctx); err != nil {
		t.Fatalf("restart after the crash: %v", err)
	}
	if s.PID() == killed {
		t.Fatalf("PID after restart is the killed one, %d", killed)
	}
	c, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatalf("connect after restart: %v", err)
	}
	defer c.Close(ctx)
	var x int
	if err := c.QueryRow(ctx, "SELECT x FROM kept").Scan(&x); err != nil || x != 42 {
		t.Fatalf("row after restart: %d, %v; want 42", x, err)
	}
}
