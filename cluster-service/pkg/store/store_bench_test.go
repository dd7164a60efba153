package store

import (
	"context"
	"fmt"
	"log/slog"
	"sort"
	"sync"
	"sync/atomic"
	"testing"
	"time"

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

// BenchmarkContendedStatusWrites compares, in one run, a status write's statements sent one by
// one, with writeEvent's three as one batch (batchEventWrites, 2026-11-23), and with the whole
// write as two batches (2026-11-24: lockedRead, then the update with its
// event; Store.SetBatchedStatusWrites): 8 writers, each writing the status of its own cluster as fast as it can for 2 s per
// round, the modes alternating for 3 rounds. Every write holds the write lock until its commit,
// so what counts is writes/s and the p99.
// Run: cd cluster-service && go test ./pkg/store -run '^$' -bench ContendedStatusWrites -benchtime 1x
func BenchmarkContendedStatusWrites(b *testing.B) {
	pg := pgservertest.Start(b)
	s, err := Open(context.Background(), pgservertest.NewDatabase(b, pg), slog.New(slog.DiscardHandler), envelopetest.Keyring(b))
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	defer func() { batchEventWrites = true }()
	ctx := context.Background()
	const writers, rounds, roundTime = 8, 3, 2 * time.Second
	if _, err := s.RegisterShard(ctx, placement.Shard{Name: "mc-1", MaxClusters: writers}); err != nil {
		b.Fatal(err)
	}
	clusters := make([]*Cluster, writers)
	for w := range clusters {
		if clusters[w], _, err = s.CreateCluster(ctx, newCluster(fmt.Sprintf("%032d", w+1), armID(fmt.Sprint("w", w))), placement.LeastLoaded{}); err != nil {
			b.Fatal(err)
		}
	}
	type result struct {
		writes int
		took   time.Duration
		lat    []time.Duration
	}
	modes := []struct {
		name           string
		events, status bool
	}{{"one-by-one", false, false}, {"event-batched", true, false}, {"batched", true, true}}
	results := map[string]*result{}
	for range b.N {
		for r := range rounds {
			for _, m := range modes {
				batchEventWrites = m.events
				s.SetBatchedStatusWrites(m.status)
				res := results[m.name]
				if res == nil {
					res = &result{}
					results[m.name] = res
				}
				var mu sync.Mutex
				var wg sync.WaitGroup
				start := time.Now()
				for w := range writers {
					wg.Add(1)
					go func() {
						defer wg.Done()
						c := clusters[w]
						for i := 0; time.Since(start) < roundTime; i++ {
							st := &csv1.ClusterStatus{State: csv1.ClusterState_CLUSTER_STATE_INSTALLING, Message: fmt.Sprint("round ", r, " step ", i)}
							t := time.Now()
							next, err := s.UpdateStatus(ctx, c.ID, c.Revision, st)
							if err != nil {
								b.Error(err)
								return
							}
							d := time.Since(t)
							c = next
							mu.Lock()
							res.writes++
							res.lat = append(res.lat, d)
							mu.Unlock()
						}
						clusters[w] = c
					}()
				}
				wg.Wait()
				res.took += time.Since(start)
			}
		}
	}
	ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
	rate := map[string]float64{}
	for _, m := range modes {
		res := results[m.name]
		sort.Slice(res.lat, func(i, j int) bool { return res.lat[i] < res.lat[j] })
		rate[m.name] = float64(res.writes) / res.took.Seconds()
		p50, p99 := res.lat[len(res.lat)/2], res.lat[len(res.lat)*99/100]
		b.Logf("%s: %d writes, %.0f writes/s, p50 %.2f ms, p99 %.2f ms", m.name, res.writes, rate[m.name], ms(p50), ms(p99))
		b.ReportMetric(rate[m.name], m.name+"-writes/s")
		b.ReportMetric(ms(p99), m.name+"-p99-ms")
	}
	b.Logf("batched / one-by-one writes/s: %.2f; batched / event-batched: %.2f", rate["batched"]/rate["one-by-one"], rate["batched"]/rate["event-batched"])
}
