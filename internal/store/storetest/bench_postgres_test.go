package storetest_test

import (
	"context"
	"testing"

	"github.com/openhcp/openhcp/internal/pgserver/pgservertest"
	"github.com/openhcp/openhcp/internal/store"
	"github.com/openhcp/openhcp/internal/store/postgres"
	"github.com/openhcp/openhcp/internal/store/storetest"
)

// BenchmarkPostgres runs the store benchmark against a throwaway PostgreSQL started for it.
// Results and the command that produced them are in docs/performance.md.
func BenchmarkPostgres(b *testing.B) {
	pg := pgservertest.Start(b)
	storetest.Benchmark(b, func(b *testing.B) store.Store {
		s, err := postgres.Open(context.Background(), pgservertest.NewDatabase(b, pg), postgres.Options{})
		if err != nil {
			b.Fatalf("open store: %v", err)
		}
		b.Cleanup(s.Close)
		return s
	}, storetest.BenchOptions{})
}
