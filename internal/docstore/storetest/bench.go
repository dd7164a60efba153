package storetest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/openhcp/openhcp/internal/docstore"
)

// BenchOptions size the benchmark workload.
type BenchOptions struct {
	// Ops is how many operations each latency run times, one at a time (default 2000).
	Ops int
	// Workers is how many goroutines the throughput run uses (default 8).
	Workers int
	// Duration is how long each throughput run lasts (default 5s).
	Duration time.Duration
}

// Benchmark measures point read, conditional replace and a two-step transaction (create an
// operation + replace its resource, the frontend's write) on the store newStore returns.
// Each b.N iteration runs the whole fixed workload, so `-benchtime 1x` gives stable figures:
// p50/p99 latency of sequential calls, and throughput of Workers concurrent callers, each on
// its own documents (no ETag conflicts), reported with b.ReportMetric.
func Benchmark(b *testing.B, newStore func(b *testing.B) docstore.Store, o BenchOptions) {
	if o.Ops <= 0 {
		o.Ops = 2000
	}
	if o.Workers <= 0 {
		o.Workers = 8
	}
	if o.Duration <= 0 {
		o.Duration = 5 * time.Second
	}
	body := []byte(`{"resourceId":"/subscriptions/x/resourcegroups/rg/providers/microsoft.redhatopenshift/hcpopenshiftclusters/c","internalId":"2c7a9d0e","provisioningState":"Succeeded","location":"eastus","properties":{"version":{"id":"4.19","channelGroup":"stable"},"network":{"podCidr":"10.128.0.0/14","serviceCidr":"172.30.0.0/16","machineCidr":"10.0.0.0/16","hostPrefix":23},"api":{"visibility":"Public"}}}`)

	// op runs one operation on the worker's own documents and keeps their ETags current.
	type worker struct {
		s    docstore.Store
		pk   string
		res  *docstore.Document
		next int
	}
	setup := func(b *testing.B, s docstore.Store, w int) *worker {
		pk := fmt.Sprintf("00000000-0000-0000-0000-%012d", w)
		res, err := s.Create(context.Background(), &docstore.Document{PartitionKey: pk, ID: "/subscriptions/" + pk + "/c", Type: docstore.TypeResource, ResourceID: "/subscriptions/" + pk + "/c", Body: body})
		if err != nil {
			b.Fatalf("seed: %v", err)
		}
		return &worker{s: s, pk: pk, res: res}
	}
	kinds := []struct {
		name string
		op   func(ctx context.Context, w *worker) error
	}{
		{"point_read", func(ctx context.Context, w *worker) error {
			d, err := w.s.Get(ctx, w.pk, w.res.ID)
			if err == nil && d.ETag != w.res.ETag {
				err = errors.New("read a different version")
			}
			return err
		}},
		{"conditional_replace", func(ctx context.Context, w *worker) error {
			d := *w.res
			out, err := w.s.Replace(ctx, &d, w.res.ETag)
			if err == nil {
				w.res = out
			}
			return err
		}},
		{"transaction", func(ctx context.Context, w *worker) error {
			w.next++
			d := *w.res
			out, err := w.s.Transact(ctx, w.pk, []docstore.TxOp{
				{Kind: docstore.TxCreate, Doc: &docstore.Document{PartitionKey: w.pk, ID: fmt.Sprintf("op-%d", w.next), Type: docstore.TypeOperation, ResourceID: w.res.ResourceID, Body: []byte(`{"status":"Accepted","request":"Update"}`), TTL: 7 * 24 * time.Hour}},
				{Kind: docstore.TxReplace, Doc: &d, IfMatch: w.res.ETag},
			})
			if err == nil {
				w.res = out[1]
			}
			return err
		}},
	}
	for _, k := range kinds {
		b.Run(k.name, func(b *testing.B) {
			s := newStore(b)
			ctx := context.Background()
			var p50, p99, tput float64
			for i := 0; i < b.N; i++ {
				// Latency: one caller.
				w := setup(b, s, 1000+i)
				lat := make([]time.Duration, 0, o.Ops)
				for j := 0; j < o.Ops; j++ {
					t0 := time.Now()
					if err := k.op(ctx, w); err != nil {
						b.Fatalf("%s: %v", k.name, err)
					}
					lat = append(lat, time.Since(t0))
				}
				slices.Sort(lat)
				p50 = float64(lat[len(lat)*50/100].Microseconds())
				p99 = float64(lat[len(lat)*99/100].Microseconds())

				// Throughput: Workers callers for Duration.
				workers := make([]*worker, o.Workers)
				for n := range workers {
					workers[n] = setup(b, s, 2000+i*o.Workers+n)
				}
				var wg sync.WaitGroup
				counts := make([]int, o.Workers)
				errs := make([]error, o.Workers)
				deadline := time.Now().Add(o.Duration)
				start := time.Now()
				for n, w := range workers {
					wg.Add(1)
					go func() {
						defer wg.Done()
						for time.Now().Before(deadline) {
							if err := k.op(ctx, w); err != nil {
								errs[n] = err
								return
							}
							counts[n]++
						}
					}()
				}
				wg.Wait()
				elapsed := time.Since(start)
				if err := errors.Join(errs...); err != nil {
					b.Fatalf("%s under load: %v", k.name, err)
				}
				total := 0
				for _, c := range counts {
					total += c
				}
				tput = float64(total) / elapsed.Seconds()
			}
			b.ReportMetric(p50, "p50-µs")
			b.ReportMetric(p99, "p99-µs")
			b.ReportMetric(tput, "ops/s")
		})
	}
}
