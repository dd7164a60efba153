package main

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/openshift-online/maestro/pkg/handlers"
	"github.com/openshift-online/maestro/pkg/services"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

var installBundleMetricsOnce = sync.OnceValue(installBundleMetrics)

// TestBundleMetricsHaveNoBundleID observes upstream's three per-bundle metrics for 100 bundle
// IDs, as upstream's services package does, and reads them from upstream's /metrics handler:
// no series carries an `id`, each is the sum of what was observed, and the process keeps one
// child per remaining label set.
func TestBundleMetricsHaveNoBundleID(t *testing.T) {
	if err := installBundleMetricsOnce(); err != nil {
		t.Fatalf("install: %v", err)
	}
	const ids = 100
	tests := []struct {
		name    string
		family  string
		labels  map[string]string // the series to read, without `id`
		observe func(id string, i int)
		vec     func() prometheus.Collector
		// wanted for the series: a counter's value, or a histogram's count, sum and cumulative buckets
		value   float64
		count   uint64
		sum     float64
		buckets []uint64
	}{
		{
			name:   "processed_total_sums_every_bundle_per_action",
			family: "resource_processed_total",
			labels: map[string]string{"action": "update"},
			observe: func(id string, i int) {
				processedVec.With(prometheus.Labels{"id": id, "action": "update"}).Add(float64(i%3 + 1))
			},
			vec:   func() prometheus.Collector { return processedVec },
			value: sumOf(ids, func(i int) float64 { return float64(i%3 + 1) }),
		},
		{
			name:   "first_status_latency_sums_every_bundle_per_consumer",
			family: "resource_first_status_latency_seconds",
			labels: map[string]string{"consumer": "mc-1", "source": "cluster-service"},
			observe: func(id string, i int) {
				services.RecordResourceFirstStatusLatencyMetric(id, "mc-1", "cluster-service", time.Duration(i)*time.Second)
			},
			vec:     func() prometheus.Collector { return firstStatusVec },
			count:   ids,
			sum:     sumOf(ids, func(i int) float64 { return float64(i) }),
			buckets: []uint64{6, 31, 100, 100, 100}, // le 5, 30, 120, 600, +Inf over 0..99 s
		},
		{
			name:   "status_event_processing_latency_sums_every_bundle_per_instance",
			family: "resource_status_event_processing_latency_seconds",
			labels: map[string]string{"consumer": "mc-1", "source": "cluster-service", "server_instance_id": "maestro-0"},
			observe: func(id string, i int) {
				services.RecordResourceTimeToStatusProcessed(id, "mc-1", "cluster-service", "maestro-0", float64(i)/10)
			},
			vec:     func() prometheus.Collector { return statusProcessingVec },
			count:   ids,
			sum:     sumOf(ids, func(i int) float64 { return float64(i) / 10 }),
			buckets: []uint64{1, 2, 6, 11, 51, 100}, // le 0.05, 0.1, 0.5, 1, 5, +Inf over 0.0..9.9 s
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for i := range ids {
				tt.observe(fmt.Sprintf("bundle-%03d", i), i)
			}
			families := scrape(t)
			f, ok := families[tt.family]
			if !ok {
				t.Fatalf("/metrics has no %s", tt.family)
			}
			var found *dto.Metric
			for _, m := range f.GetMetric() {
				for _, l := range m.GetLabel() {
					if l.GetName() == "id" {
						t.Fatalf("%s has a series with id=%q", tt.family, l.GetValue())
					}
				}
				if hasLabels(m, tt.labels) {
					if found != nil {
						t.Fatalf("%s has two series with labels %v", tt.family, tt.labels)
					}
					found = m
				}
			}
			if found == nil {
				t.Fatalf("%s has no series with labels %v", tt.family, tt.labels)
			}
			if tt.buckets == nil {
				if got := found.GetCounter().GetValue(); got != tt.value {
					t.Errorf("%s%v = %v, want %v", tt.family, tt.labels, got, tt.value)
				}
			} else {
				h := found.GetHistogram()
				if h.GetSampleCount() != tt.count || !near(h.GetSampleSum(), tt.sum) {
					t.Errorf("%s%v count %d sum %v, want %d and %v", tt.family, tt.labels, h.GetSampleCount(), h.GetSampleSum(), tt.count, tt.sum)
				}
				var got []uint64
				for _, b := range h.GetBucket() {
					got = append(got, b.GetCumulativeCount())
				}
				if fmt.Sprint(got) != fmt.Sprint(tt.buckets) {
					t.Errorf("%s%v buckets %v, want %v", tt.family, tt.labels, got, tt.buckets)
				}
			}
			if n := testutil.CollectAndCount(tt.vec()); n != 1 {
				t.Errorf("the process keeps %d series of %s after %d bundles, want 1", n, tt.family, ids)
			}
		})
	}
}

// scrape reads /metrics through upstream's handler, as its metrics server serves it.
func scrape(t *testing.T) map[string]*dto.MetricFamily {
	t.Helper()
	rec := httptest.NewRecorder()
	req := httptest.NewRequest(http.MethodGet, "/metrics", nil)
	req.Header.Set("Accept", "text/plain")
	handlers.NewPrometheusMetricsHandler().Handler().ServeHTTP(rec, req)
	if rec.Code != http.StatusOK {
		t.Fatalf("/metrics: %d %s", rec.Code, rec.Body)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	families, err := p.TextToMetricFamilies(rec.Body)
	if err != nil {
		t.Fatalf("parse /metrics: %v", err)
	}
	return families
}

func hasLabels(m *dto.Metric, want map[string]string) bool {
	n := 0
	for _, l := range m.GetLabel() {
		if v, ok := want[l.GetName()]; ok && v == l.GetValue() {
			n++
		}
	}
	return n == len(want)
}

func sumOf(n int, f func(int) float64) float64 {
	var s float64
	for i := range n {
		s += f(i)
	}
	return s
}

func near(a, b float64) bool { d := a - b; return d < 1e-9 && d > -1e-9 }

// TestWithoutBundleIDSumsPerRemainingLabels reads a registry through withoutBundleID: a
// per-bundle family's series that differ only by `id` are summed, those that differ otherwise
// stay apart, and a family not in bundleFamilies keeps its `id`.
func TestWithoutBundleIDSumsPerRemainingLabels(t *testing.T) {
	reg := prometheus.NewRegistry()
	processed := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "resource_processed_total"}, []string{"id", "action"})
	latency := prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "resource_first_status_latency_seconds", Buckets: []float64{1, 10}}, []string{"id", "consumer"})
	other := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "other_total"}, []string{"id"})
	reg.MustRegister(processed, latency, other)
	for i := range 100 {
		id := fmt.Sprintf("bundle-%03d", i)
		processed.WithLabelValues(id, []string{"create", "update"}[i%2]).Inc()
		latency.WithLabelValues(id, []string{"mc-1", "mc-2"}[i%2]).Observe(float64(i % 20))
		other.WithLabelValues(id).Inc()
	}
	families, err := withoutBundleID{reg}.Gather()
	if err != nil {
		t.Fatalf("gather: %v", err)
	}
	got := map[string]string{}
	for _, f := range families {
		for _, m := range f.GetMetric() {
			var labels []string
			for _, l := range m.GetLabel() {
				labels = append(labels, l.GetName()+"="+l.GetValue())
			}
			key := f.GetName() + fmt.Sprint(labels)
			if h := m.GetHistogram(); h != nil {
				var b []uint64
				for _, x := range h.GetBucket() {
					b = append(b, x.GetCumulativeCount())
				}
				got[key] = fmt.Sprintf("count %d sum %v buckets %v", h.GetSampleCount(), h.GetSampleSum(), b)
			} else {
				got[key] = fmt.Sprint(m.GetCounter().GetValue())
			}
		}
	}
	tests := []struct {
		name, series, want string
	}{
		// even i: 0,2,..,18 five times each; odd i: 1,3,..,19 five times each.
		{"counter_summed_per_action", "resource_processed_total[action=create]", "50"},
		{"counter_kept_apart_per_action", "resource_processed_total[action=update]", "50"},
		{"histogram_summed_per_consumer", "resource_first_status_latency_seconds[consumer=mc-1]", "count 50 sum 450 buckets [5 30]"},
		{"histogram_kept_apart_per_consumer", "resource_first_status_latency_seconds[consumer=mc-2]", "count 50 sum 500 buckets [5 25]"},
		{"other_family_keeps_its_id", "other_total[id=bundle-042]", "1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got[tt.series] != tt.want {
				t.Errorf("%s = %q, want %q", tt.series, got[tt.series], tt.want)
			}
		})
	}
	if n := len(got); n != 4+100 {
		t.Errorf("%d series served, want 4 per-bundle ones and 100 of other_total: %v", n, got)
	}
}
