package gateway

import (
	"net/http"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// metrics are the gateway's Prometheus metrics (names fixed: alert rules use them), on their
// own registry so tests never collide.
type metrics struct {
	reg      *prometheus.Registry
	active   prometheus.Gauge
	proxied  *prometheus.CounterVec
	refusals *prometheus.CounterVec
	// refusalsDropped counts refused requests answered without an audit record (refuse).
	refusalsDropped prometheus.Counter
	streams         prometheus.Gauge
	duration        prometheus.Histogram
}

func newMetrics() *metrics {
	m := &metrics{
		reg: prometheus.NewRegistry(),
		active: prometheus.NewGauge(prometheus.GaugeOpts{Name: "gateway_sessions_active",
			Help: "Break-glass sessions active and unexpired in the region, as this replica last read them."}),
		proxied: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "gateway_proxied_requests_total",
			Help: "Requests proxied to hosted kube-apiservers, by the HTTP status the SRE received."}, []string{"code"}),
		refusals: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "gateway_refusals_total",
			Help: "Requests refused before proxying, by reason (no-identity, browser-request, revoked-person, too-many-open, unknown-session, not-owner, not-group, session-<state>, unavailable, bad-credential, audit-unavailable: the audit log could not record it, so it was not sent)."},
			[]string{"reason"}),
		refusalsDropped: prometheus.NewCounter(prometheus.CounterOpts{Name: "gateway_audit_refusals_dropped_total",
			Help: "Refused requests answered without an audit record because their source, or all sources together, were past the rate of recorded refusals."}),
		streams: prometheus.NewGauge(prometheus.GaugeOpts{Name: "gateway_streams_open",
			Help: "Watches and upgraded streams (exec, attach, port-forward) open through this replica."}),
		duration: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "gateway_request_duration_seconds",
			Help: "Time from a request's arrival to the end of its answer (a watch's or stream's whole life).", Buckets: prometheus.ExponentialBuckets(0.001, 2, 20)}),
	}
	m.reg.MustRegister(m.active, m.proxied, m.refusals, m.refusalsDropped, m.streams, m.duration,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}

// MetricsHandler serves /metrics.
func (g *Gateway) MetricsHandler() http.Handler {
	return promhttp.HandlerFor(g.metrics.reg, promhttp.HandlerOpts{})
}
