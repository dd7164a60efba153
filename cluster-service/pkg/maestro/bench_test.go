package maestro_test

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	workv1 "open-cluster-management.io/api/work/v1"

	"github.com/openhcp/openhcp/cluster-service/pkg/maestro"
)

// BenchmarkApplyToApplied measures what Cluster Service sees through this client against the
// real chain: the time from Apply to the first Watch event saying Applied, for works of about
// 31 KB (a ConfigMap, server-side applied), paced at 20/s and then as a burst from 8 writers.
// Compare with bare Maestro (DESIGN §3.4): ~75 ms at 20/s, ~62 creates/s at most.
func BenchmarkApplyToApplied(b *testing.B) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	defer cancel()
	r := startRegion(b, ctx, regionOptions{})
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	client, err := maestro.New(ctx, maestro.Config{GRPCAddr: r.server.GRPCAddr, RESTURL: r.server.RESTURL}, log)
	if err != nil {
		b.Fatal(err)
	}
	defer client.Close()
	events, err := client.Watch(ctx, consumer)
	if err != nil {
		b.Fatal(err)
	}
	appliedAt := newArrivals(events)
	payload := strings.Repeat("x", 30*1024)
	mk := func(name string) *workv1.ManifestWork {
		cm := &corev1.ConfigMap{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"}, Data: map[string]string{"blob": payload}}
		return &workv1.ManifestWork{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: workv1.ManifestWorkSpec{
			Workload: workv1.ManifestsTemplate{Manifests: []workv1.Manifest{manifest(b, cm)}},
			ManifestConfigs: []workv1.ManifestConfigOption{{
				ResourceIdentifier: workv1.ResourceIdentifier{Resource: "configmaps", Name: name, Namespace: "default"},
				UpdateStrategy:     &workv1.UpdateStrategy{Type: workv1.UpdateStrategyTypeServerSideApply},
			}},
		}}
	}
	// Warm the path (agent subscription, informers) so the first work does not count its start-up.
	if err := client.Apply(ctx, consumer, mk("warmup")); err != nil {
		b.Fatal(err)
	}
	appliedAt.wait(b, "warmup", time.Minute)

	for i := 0; i < b.N; i++ {
		const n = 200
		// Paced: one Apply every 50 ms.
		starts := make([]time.Time, n)
		var names []string
		tick := time.NewTicker(50 * time.Millisecond)
		var applyDur []time.Duration
		for j := 0; j < n; j++ {
			<-tick.C
			name := fmt.Sprintf("paced-%d-%d", i, j)
			names = append(names, name)
			starts[j] = time.Now()
			if err := client.Apply(ctx, consumer, mk(name)); err != nil {
				b.Fatal(err)
			}
			applyDur = append(applyDur, time.Since(starts[j]))
		}
		tick.Stop()
		var lat []time.Duration
		for j, name := range names {
			lat = append(lat, appliedAt.wait(b, name, 2*time.Minute).Sub(starts[j]))
		}
		report(b, "paced20_applied", lat)
		report(b, "paced20_apply_call", applyDur)

		// Burst: 8 writers, as fast as Maestro takes them.
		start := time.Now()
		var wg sync.WaitGroup
		errs := make(chan error, n)
		for w := 0; w < 8; w++ {
			wg.Add(1)
			go func(w int) {
				defer wg.Done()
				for j := w; j < n; j += 8 {
					if err := client.Apply(ctx, consumer, mk(fmt.Sprintf("burst-%d-%d", i, j))); err != nil {
						errs <- err
						return
					}
				}
			}(w)
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			b.Fatal(err)
		}
		published := time.Since(start)
		var last time.Time
		for j := 0; j < n; j++ {
			if at := appliedAt.wait(b, fmt.Sprintf("burst-%d-%d", i, j), 5*time.Minute); at.After(last) {
				last = at
			}
		}
		b.ReportMetric(float64(n)/published.Seconds(), "burst_applies/s")
		b.ReportMetric(float64(n)/last.Sub(start).Seconds(), "burst_applied/s")
	}
}

func report(b *testing.B, name string, d []time.Duration) {
	sort.Slice(d, func(i, j int) bool { return d[i] < d[j] })
	ms := func(x time.Duration) float64 { return float64(x) / float64(time.Millisecond) }
	b.ReportMetric(ms(d[len(d)/2]), name+"_p50_ms")
	b.ReportMetric(ms(d[len(d)*95/100]), name+"_p95_ms")
	b.ReportMetric(ms(d[len(d)-1]), name+"_max_ms")
}

// arrivals records when each work was first reported Applied.
type arrivals struct {
	mu   sync.Mutex
	at   map[string]time.Time
	cond *sync.Cond
}

func newArrivals(events <-chan maestro.WorkEvent) *arrivals {
	a := &arrivals{at: map[string]time.Time{}}
	a.cond = sync.NewCond(&a.mu)
	go func() {
		for ev := range events {
			if ev.Type == watch.Deleted || !meta.IsStatusConditionTrue(ev.Work.Status.Conditions, workv1.WorkApplied) {
				continue
			}
			now := time.Now()
			a.mu.Lock()
			if _, ok := a.at[ev.Work.Name]; !ok {
				a.at[ev.Work.Name] = now
				a.cond.Broadcast()
			}
			a.mu.Unlock()
		}
	}()
	return a
}

func (a *arrivals) wait(b *testing.B, name string, timeout time.Duration) time.Time {
	deadline := time.Now().Add(timeout)
	go func() { time.Sleep(timeout); a.cond.Broadcast() }()
	a.mu.Lock()
	defer a.mu.Unlock()
	for {
		if at, ok := a.at[name]; ok {
			return at
		}
		if time.Now().After(deadline) {
			b.Fatalf("%s not Applied within %s", name, timeout)
		}
		a.cond.Wait()
	}
}
