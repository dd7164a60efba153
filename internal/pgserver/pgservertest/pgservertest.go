// Package pgservertest starts a throwaway PostgreSQL for a test and gives each caller a fresh
// database in it.
package pgservertest

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

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
