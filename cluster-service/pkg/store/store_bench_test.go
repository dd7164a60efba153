package store

import (
	"context"
	"fmt"
	"log/slog"
	"sync/atomic"
	"testing"

	csv1 "github.com/openhcp/openhcp/cluster-service/api/v1"
	"github.com/openhcp/openhcp/cluster-service/pkg/placement"
	"github.com/openhcp/openhcp/internal/envelope/envelopetest"
	"github.com/openhcp/openhcp/internal/pgserver/pgservertest"
)

// BenchmarkCreateCluster measures creates through the global write lock (placement, revision,
// event) from parallel callers, the cost the serialised design pays.
func BenchmarkCreateCluster(b *testing.B) {
	pg := pgservertest.Start(b)
	s, err := Open(context.Background(), pgservertest.NewDatabase(b, pg), slog.New(slog.DiscardHandler), envelopetest.Keyring(b))
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	if _, err := s.RegisterShard(context.Background(), placement.Shard{Name: "mc-1", MaxClusters: 1 << 30}); err != nil {
		b.Fatal(err)
	}
	var n atomic.Int64
	b.SetParallelism(4)
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			i := n.Add(1)
			c := newCluster(fmt.Sprintf("%032d", i), armID(fmt.Sprint("bench", i)))
			if _, _, err := s.CreateCluster(context.Background(), c, placement.LeastLoaded{}); err != nil {
				b.Error(err)
				return
			}
		}
	})
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "creates/s")
}

// BenchmarkUpdateStatus measures the controller's status write.
func BenchmarkUpdateStatus(b *testing.B) {
	pg := pgservertest.Start(b)
	s, err := Open(context.Background(), pgservertest.NewDatabase(b, pg), slog.New(slog.DiscardHandler), envelopetest.Keyring(b))
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	ctx := context.Background()
	if _, err := s.RegisterShard(ctx, placement.Shard{Name: "mc-1", MaxClusters: 10}); err != nil {
		b.Fatal(err)
	}
	c, _, err := s.CreateCluster(ctx, newCluster(fmt.Sprintf("%032d", 1), armID("x")), placement.LeastLoaded{})
	if err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for i := range b.N {
		st := &csv1.ClusterStatus{State: csv1.ClusterState_CLUSTER_STATE_INSTALLING, Message: fmt.Sprint("step ", i)}
		if c, err = s.UpdateStatus(ctx, c.ID, c.Revision, st); err != nil {
			b.Fatal(err)
		}
	}
}
