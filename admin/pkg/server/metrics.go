package server

import (
	"net/http"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// metrics are the admin service's Prometheus metrics, served on its own listener
// (--metrics-listen) like the frontend's. Each server has its own registry so tests never
// collide.
type metrics struct {
	reg           *prometheus.Registry
	requests      *prometheus.CounterVec
	duration      *prometheus.HistogramVec
	refusals      *prometheus.CounterVec
	auditFailures *prometheus.CounterVec
	// refusalsDropped counts refused calls answered without an audit record: their source,
	// or all sources together, were past their rate (refusallimit).
	refusalsDropped prometheus.Counter
}

func newMetrics() *metrics {
	m := &metrics{
		reg: prometheus.NewRegistry(),
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "admin_http_requests_total",
			Help: "Admin calls answered, by route pattern, method, status code and audit outcome (allowed, unauthenticated, forbidden, completed for a bad body, audit_unavailable).",
		}, []string{"route", "method", "code", "outcome"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "admin_http_request_duration_seconds",
			Help:    "Time to answer admin calls, by route pattern, method and status code.",
			Buckets: prometheus.ExponentialBuckets(0.001, 2, 15),
		}, []string{"route", "method", "code"}),
		refusals: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "admin_refusals_total",
			Help: "Admin calls refused for their caller: 401 (no SRE identity, revoked) or 403 (group lacks the permission).",
		}, []string{"code"}),
		auditFailures: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "admin_audit_write_failures_total",
			Help: "Audit records that could not be appended: stage before (the call was refused with 503) or after (the outcome record of a served call).",
		}, []string{"stage"}),
		refusalsDropped: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "admin_audit_refusals_dropped_total",
			Help: "Refused admin calls answered without an audit record because their source, or all sources together, were past the rate of recorded refusals.",
		}),
	}
	m.reg.MustRegister(m.requests, m.duration, m.refusals, m.auditFailures, m.refusalsDropped,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	// Zero series exist from the start, so a rate() over them works before the first failure.
	for _, c := range []string{"401", "403"} {
		m.refusals.WithLabelValues(c)
	}
	for _, s := range []string{"before", "after"} {
		m.auditFailures.WithLabelValues(s)
	}
	return m
}

// observe records one answered call.
func (m *metrics) observe(route, method string, code int, outcome string, d time.Duration) {
	c := strconv.Itoa(code)
	m.requests.WithLabelValues(route, method, c, outcome).Inc()
	m.duration.WithLabelValues(route, method, c).Observe(d.Seconds())
	if code == http.StatusUnauthorized || code == http.StatusForbidden {
		m.refusals.WithLabelValues(c).Inc()
	}
}

// MetricsHandler serves the admin service's metrics in the Prometheus text format.
func (s *Server) MetricsHandler() http.Handler {
	return promhttp.HandlerFor(s.metrics.reg, promhttp.HandlerOpts{Registry: s.metrics.reg})
}
