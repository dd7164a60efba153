package metricstest

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus"
)

func TestSum(t *testing.T) {
	reg := prometheus.NewRegistry()
	c := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "c_total"}, []string{"kind", "outcome"})
	g := prometheus.NewGauge(prometheus.GaugeOpts{Name: "g"})
	h := prometheus.NewHistogram(prometheus.HistogramOpts{Name: "h"})
	reg.MustRegister(c, g, h)
	c.WithLabelValues("cluster", "ok").Add(2)
	c.WithLabelValues("cluster", "error").Add(3)
	c.WithLabelValues("node_pool", "ok").Add(5)
	g.Set(7)
	h.Observe(1)
	h.Observe(2)
	for _, tc := range []struct {
		name   string
		metric string
		labels []string
		want   float64
	}{
		{"every_series", "c_total", nil, 10},
		{"one_label", "c_total", []string{"kind", "cluster"}, 5},
		{"two_labels", "c_total", []string{"kind", "cluster", "outcome", "ok"}, 2},
		{"no_match", "c_total", []string{"kind", "credential"}, 0},
		{"gauge", "g", nil, 7},
		{"histogram_count", "h", nil, 2},
		{"absent_metric", "nope", nil, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Sum(t, reg, tc.metric, tc.labels...); got != tc.want {
				t.Fatalf("Sum(%s, %q) = %v, want %v", tc.metric, tc.labels, got, tc.want)
			}
		})
	}
}
