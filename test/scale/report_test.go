package scale

import (
	"fmt"
	"math"
	"os"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/openhcp/openhcp/test/internal/benchreport"
)

// report is one JSON file of docs/perf-data, in the shape tooling/cmd/benchplot reads (the
// same fields as test/e2e's whole-path benchmarks), plus P5's per-checkpoint details, which
// benchplot ignores.
type report struct {
	benchreport.Header
	XLabel string `json:"xLabel,omitempty"`
	// Chart "values": benchplot draws each point's value (in YUnit) against x, log scale.
	Chart       string       `json:"chart,omitempty"`
	YUnit       string       `json:"yUnit,omitempty"`
	Points      []point      `json:"points"`
	Checkpoints []checkpoint `json:"checkpoints,omitempty"`
	Notes       []string     `json:"notes,omitempty"`
}

// point: x (offeredPerSecond, the field benchplot reads as x) is the number of hosted clusters.
type point struct {
	Series  string  `json:"series"`
	Offered float64 `json:"offeredPerSecond"`
	N       int     `json:"n"`
	Errors  int     `json:"errors"`
	P50ms   float64 `json:"p50Ms,omitempty"`
	P99ms   float64 `json:"p99Ms,omitempty"`
	MaxMs   float64 `json:"maxMs,omitempty"`
	Value   float64 `json:"value,omitempty"`
}

func newReport(name, title, command string) *report {
	return &report{Header: benchreport.NewHeader(name, title, command), XLabel: "hosted clusters, all Succeeded"}
}

// write writes the JSON to $BENCH_OUT/<benchmark>.json (default docs/perf-data). P5 writes after
// every checkpoint, so a run cut short keeps what it measured.
func (r *report) write(b *testing.B) {
	r.LoadEnd = benchreport.LoadAvg()
	path, err := benchreport.Write(r.Benchmark+".json", r)
	if err != nil {
		b.Fatal(err)
	}
	b.Logf("wrote %s", path)
}

// latency summarises repeated timings of one measurement at one size.
func latency(series string, clusters int, samples []time.Duration, errs int) point {
	sort.Slice(samples, func(i, j int) bool { return samples[i] < samples[j] })
	p := point{Series: series, Offered: float64(clusters), N: len(samples) + errs, Errors: errs}
	if len(samples) > 0 {
		p.P50ms, p.P99ms, p.MaxMs = ms(pct(samples, 50)), ms(pct(samples, 99)), ms(samples[len(samples)-1])
	}
	return p
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// pct is the p-th percentile of sorted samples (nearest rank).
func pct(sorted []time.Duration, p int) time.Duration { return benchreport.Percentile(sorted, p) }

// growth describes how values grow with the cluster count between successive checkpoints:
// the increase per 1,000 clusters of each interval (equal increments: linear; rising: worse)
// and the exponent k of value ∝ clusters^k from the first to the last checkpoint.
func growth(name, unit string, xs []int, vs []float64) string {
	if len(xs) < 2 || len(xs) != len(vs) {
		return ""
	}
	var parts []string
	for i := 1; i < len(xs); i++ {
		parts = append(parts, fmt.Sprintf("%d→%d: %+.3g %s per 1,000 clusters", xs[i-1], xs[i], (vs[i]-vs[i-1])/float64(xs[i]-xs[i-1])*1000, unit))
	}
	exp := "n/a"
	if vs[0] > 0 && vs[len(vs)-1] > 0 {
		exp = fmt.Sprintf("%.2f", math.Log(vs[len(vs)-1]/vs[0])/math.Log(float64(xs[len(xs)-1])/float64(xs[0])))
	}
	return fmt.Sprintf("%s: %s; exponent %s from %d to %d clusters (1 = proportional)", name, strings.Join(parts, "; "), exp, xs[0], xs[len(xs)-1])
}

// envInts reads a comma-separated list of positive integers, or def.
func envInts(b *testing.B, name string, def []int) []int {
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	var out []int
	for _, s := range strings.Split(v, ",") {
		i, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil || i <= 0 {
			b.Fatalf("%s=%q: want positive integers separated by commas", name, v)
		}
		out = append(out, i)
	}
	return out
}

func envInt(b *testing.B, name string, def int) int { return envInts(b, name, []int{def})[0] }

// envDuration reads a Go duration; 0 is allowed (off).
func envDuration(b *testing.B, name string, def time.Duration) time.Duration {
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	d, err := time.ParseDuration(v)
	if err != nil || d < 0 {
		b.Fatalf("%s=%q: want a duration such as 45m (0: no limit)", name, v)
	}
	return d
}

// envIntervals reads "mgmt-2=60s,mgmt-3=30s": a duration per management cluster name.
func envIntervals(b *testing.B, name string) map[string]time.Duration {
	v := os.Getenv(name)
	if v == "" {
		return nil
	}
	out := map[string]time.Duration{}
	for _, kv := range strings.Split(v, ",") {
		k, d, ok := strings.Cut(strings.TrimSpace(kv), "=")
		dur, err := time.ParseDuration(d)
		if !ok || k == "" || err != nil || dur <= 0 {
			b.Fatalf("%s=%q: want mgmt-N=<duration> separated by commas", name, v)
		}
		out[k] = dur
	}
	return out
}
