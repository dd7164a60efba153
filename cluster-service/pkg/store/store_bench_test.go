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

// benchStore opens a store on a fresh PostgreSQL for one benchmark, closed at its end.
func benchStore(b *testing.B) *Store {
	pg := pgservertest.Start(b)
	s, err := Open(context.Background(), pgservertest.NewDatabase(b, pg), slog.New(slog.DiscardHandler), envelopetest.Keyring(b))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(s.Close)
	return s
}

// BenchmarkCreateCluster measures creates through the global write lock (placement, revision,
// event) from parallel callers, the cost the serialised design pays.
func BenchmarkCreateCluster(b *testing.B) {
	s := benchStore(b)
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
	s := benchStore(b)
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

// BenchmarkContendedStatusWrites compares, in one run, a status write as a locked write (the
// write lock taken first and held for six round trips, the rule before 2026-11-25) and as a
// pipelined write (pipeline.go; SetPipelinedWrites): 8 writers, each writing the status of its
// own cluster as fast as it can for 2 s per round, the two alternating for 3 rounds. Every write
// holds the write lock, so what counts is writes/s and the p99.
// Run: cd cluster-service && go test ./pkg/store -run '^$' -bench ContendedStatusWrites -benchtime 1x
func BenchmarkContendedStatusWrites(b *testing.B) {
	s := benchStore(b)
	ctx := context.Background()
	var err error
	const writers = 8
	if _, err := s.RegisterShard(ctx, placement.Shard{Name: "mc-1", MaxClusters: writers}); err != nil {
		b.Fatal(err)
	}
	clusters := make([]*Cluster, writers)
	for w := range clusters {
		if clusters[w], _, err = s.CreateCluster(ctx, newCluster(fmt.Sprintf("%032d", w+1), armID(fmt.Sprint("w", w))), placement.LeastLoaded{}); err != nil {
			b.Fatal(err)
		}
	}
	modes := []string{"locked", "pipelined"}
	rate := contended(b, modes, writers, "writes", func(mode int) { s.SetPipelinedWrites(modes[mode] == "pipelined") }, func(r, w, i int) error {
		st := &csv1.ClusterStatus{State: csv1.ClusterState_CLUSTER_STATE_INSTALLING, Message: fmt.Sprint("round ", r, " step ", i)}
		next, err := s.UpdateStatus(ctx, clusters[w].ID, clusters[w].Revision, st)
		if err == nil {
			clusters[w] = next // each writer owns its cluster
		}
		return err
	})
	b.Logf("pipelined / locked writes/s: %.2f", rate["pipelined"]/rate["locked"])
}

// BenchmarkContendedCreates compares, in one run, CreateCluster as a locked write (eight round
// trips under the write lock, the rule before 2026-11-25) and as a pipelined write (none): 8
// writers, each creating new clusters over two shards as fast as it can for 2 s per round, the
// two alternating for 3 rounds. P1's PUTs queue on exactly this.
// Run: cd cluster-service && go test ./pkg/store -run '^$' -bench ContendedCreates -benchtime 1x
func BenchmarkContendedCreates(b *testing.B) {
	s := benchStore(b)
	ctx := context.Background()
	for _, name := range []string{"mc-1", "mc-2"} {
		if _, err := s.RegisterShard(ctx, placement.Shard{Name: name, MaxClusters: 1 << 30}); err != nil {
			b.Fatal(err)
		}
	}
	var n atomic.Int64
	modes := []string{"locked", "pipelined"}
	rate := contended(b, modes, 8, "creates", func(mode int) { s.SetPipelinedWrites(modes[mode] == "pipelined") }, func(_, _, _ int) error {
		i := n.Add(1)
		_, created, err := s.CreateCluster(ctx, newCluster(fmt.Sprintf("%032d", i), armID(fmt.Sprint("c", i))), placement.LeastLoaded{})
		if err == nil && !created {
			err = fmt.Errorf("cluster %d not created", i)
		}
		return err
	})
	b.Logf("pipelined / locked creates/s: %.2f", rate["pipelined"]/rate["locked"])
}

// contended runs op from writers goroutines as fast as they can for 2 s a round, the modes
// alternating (setMode(i) before mode i's round) for 3 rounds, and reports each mode's
// operations/s, p50 and p99 (unit names the operation). op(r, w, i) is writer w's i-th operation
// of round r. It returns each mode's rate.
func contended(b *testing.B, modes []string, writers int, unit string, setMode func(int), op func(r, w, i int) error) map[string]float64 {
	const rounds, roundTime = 3, 2 * time.Second
	type result struct {
		ops  int
		took time.Duration
		lat  []time.Duration
	}
	results := make([]result, len(modes))
	for range b.N {
		for r := range rounds {
			for m := range modes {
				setMode(m)
				res := &results[m]
				var mu sync.Mutex
				var wg sync.WaitGroup
				start := time.Now()
				for w := range writers {
					wg.Add(1)
					go func() {
						defer wg.Done()
						for i := 0; time.Since(start) < roundTime; i++ {
							t := time.Now()
							if err := op(r, w, i); err != nil {
								b.Error(err)
								return
							}
							d := time.Since(t)
							mu.Lock()
							res.ops++
							res.lat = append(res.lat, d)
							mu.Unlock()
						}
					}()
				}
				wg.Wait()
				res.took += time.Since(start)
			}
		}
	}
	ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
	rate := map[string]float64{}
	for m, name := range modes {
		res := results[m]
		if len(res.lat) == 0 {
			b.Fatalf("%s: no %s", name, unit)
		}
		sort.Slice(res.lat, func(i, j int) bool { return res.lat[i] < res.lat[j] })
		rate[name] = float64(res.ops) / res.took.Seconds()
		p50, p99 := res.lat[len(res.lat)/2], res.lat[len(res.lat)*99/100]
		b.Logf("%s: %d %s, %.0f %s/s, p50 %.2f ms, p99 %.2f ms", name, res.ops, unit, rate[name], unit, ms(p50), ms(p99))
		b.ReportMetric(rate[name], name+"-"+unit+"/s")
		b.ReportMetric(ms(p99), name+"-p99-ms")
	}
	return rate
}
