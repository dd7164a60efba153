package storetest_test

import (
	"context"
	"testing"

	"github.com/openhcp/openhcp/internal/docstore"
	"github.com/openhcp/openhcp/internal/docstore/postgres"
	"github.com/openhcp/openhcp/internal/docstore/storetest"
	"github.com/openhcp/openhcp/internal/pgserver/pgservertest"
)

// BenchmarkPostgres runs the store benchmark against a throwaway PostgreSQL started for it.
// Results and the command that produced them are in docs/performance.md.
func BenchmarkPostgres(b *testing.B) {
	pg := pgservertest.Start(b)
	storetest.Benchmark(b, func(b *testing.B) docstore.Store {
		s, err := postgres.Open(context.Background(), pgservertest.NewDatabase(b, pg), postgres.Options{})
		if err != nil {
			b.Fatalf("open store: %v", err)
		}
		b.Cleanup(s.Close)
		return s
	}, storetest.BenchOptions{})
}
