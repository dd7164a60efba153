// Package pgservertest starts a throwaway PostgreSQL for a test and gives each caller a fresh
// database in it.
package pgservertest

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/openhcp/openhcp/internal/pgserver"
)

// Start starts a PostgreSQL cluster that lives as long as the test. Its directory is made
// world-traversable because, under root, the server runs as the postgres user.
func Start(tb testing.TB) *pgserver.Server {
	tb.Helper()
	dir, err := os.MkdirTemp("", "openhcp-pg-")
	if err != nil {
		tb.Fatalf("temp dir for postgres: %v", err)
	}
	if err := os.Chmod(dir, 0o755); err != nil {
		tb.Fatalf("chmod %s: %v", dir, err)
	}
	s, err := pgserver.Start(context.Background(), pgserver.Options{Dir: filepath.Join(dir, "pg")})
	if err != nil {
		os.RemoveAll(dir)
		tb.Fatalf("start postgres: %v", err)
	}
	tb.Cleanup(func() {
		s.Stop()
		os.RemoveAll(dir)
	})
	return s
}

// Shared is a PostgreSQL cluster for a whole test binary: every test that asks for one gets
// the one started by the first (each then takes its own database with NewDatabase). It
// outlives the test that started it; the package's TestMain must end with Main (or call Stop
// after m.Run), which stops it and removes its directory.
type Shared struct {
	once     sync.Once
	server   *pgserver.Server
	cleanups []func()
}

// Get returns the shared cluster, starting it on first use; it fails tb if it cannot start.
func (s *Shared) Get(tb testing.TB) *pgserver.Server {
	tb.Helper()
	s.once.Do(func() { s.server = Start(keepTB{tb, s}) })
	if s.server == nil {
		tb.Fatal("the shared postgres did not start")
	}
	return s.server
}

// Stop stops the cluster and removes its directory (nothing when it never started).
func (s *Shared) Stop() {
	for i := len(s.cleanups) - 1; i >= 0; i-- {
		s.cleanups[i]()
	}
	s.cleanups = nil
}

// Main runs the package's tests, then Stop, and exits with their status: a TestMain of
// `func TestMain(m *testing.M) { shared.Main(m) }`.
func (s *Shared) Main(m *testing.M) {
	code := m.Run()
	s.Stop()
	os.Exit(code)
}

// keepTB hands Start's cleanups to Shared instead of the test that started it.
type keepTB struct {
	testing.TB
	s *Shared
}

func (k keepTB) Cleanup(f func()) { k.s.cleanups = append(k.s.cleanups, f) }

var dbSeq atomic.Int64

// NewDatabase creates a uniquely named database on s and returns its DSN.
func NewDatabase(tb testing.TB, s *pgserver.Server) string {
	tb.Helper()
	name := fmt.Sprintf("t%d_%s", dbSeq.Add(1), strings.ToLower(sanitize(tb.Name())))
	if len(name) > 60 {
		name = name[:60]
	}
	dsn, err := s.CreateDatabase(context.Background(), name)
	if err != nil {
		tb.Fatalf("create database: %v", err)
	}
	return dsn
}

func sanitize(s string) string {
	return strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' {
			return r
		}
		return '_'
	}, s)
}

// KillListener terminates, on the server, the connection of dsn's database that LISTENs (a
// store's listener) and waits until another connection LISTENs in its place: what a store does
// when PostgreSQL drops its listener. It fails tb if no listener is found, or none comes back,
// before ctx ends.
func KillListener(ctx context.Context, tb testing.TB, dsn string) {
	tb.Helper()
	admin, err := pgx.Connect(ctx, dsn)
	if err != nil {
		tb.Fatalf("connect to find the listener: %v", err)
	}
	defer admin.Close(context.Background())
	listener := func() int {
		var pid int
		if err := admin.QueryRow(ctx, `SELECT coalesce(max(pid), 0) FROM pg_stat_activity
WHERE datname = current_database() AND query LIKE 'LISTEN %' AND pid <> pg_backend_pid()`).Scan(&pid); err != nil {
			tb.Fatalf("find the listener: %v", err)
		}
		return pid
	}
	waitFor := func(what string, cond func() bool) {
		tb.Helper()
		for !cond() {
			if ctx.Err() != nil {
				tb.Fatalf("%s: none before the deadline", what)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	var first int
	waitFor("a listener", func() bool { first = listener(); return first != 0 })
	if _, err := admin.Exec(ctx, "SELECT pg_terminate_backend($1)", first); err != nil {
		tb.Fatalf("terminate the listener: %v", err)
	}
	waitFor("a listener on a new connection", func() bool { pid := listener(); return pid != 0 && pid != first })
}
