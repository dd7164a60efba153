package operations

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/openhcp/openhcp/internal/api"
)

// Metrics are the backend's operation metrics. A nil *Metrics records nothing.
type Metrics struct {
	inFlight  prometheus.Gauge
	durations *prometheus.HistogramVec
	updates   prometheus.Counter
	events    prometheus.Counter
}

// NewMetrics registers the metrics with reg.
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		inFlight: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "backend_operations_in_flight", Help: "Active ARM operations the backend is driving.",
		}),
		durations: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "backend_operation_duration_seconds",
			Help:    "Time from an operation's start to its terminal state, by request and outcome.",
			Buckets: prometheus.ExponentialBuckets(1, 2, 14),
		}, []string{"request", "status"}),
		updates: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "backend_document_updates_total", Help: "Operation and resource document updates written.",
		}),
		events: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "backend_cluster_events_total", Help: "Cluster Service watch events received.",
		}),
	}
	reg.MustRegister(m.inFlight, m.durations, m.updates, m.events)
	return m
}

func (m *Metrics) setInFlight(n int) {
	if m != nil {
		m.inFlight.Set(float64(n))
	}
}

func (m *Metrics) finished(r api.OperationRequest, s api.ProvisioningState, d time.Duration) {
	if m != nil {
		m.durations.WithLabelValues(string(r), string(s)).Observe(d.Seconds())
	}
}

func (m *Metrics) observeUpdate() {
	if m != nil {
		m.updates.Inc()
	}
}

func (m *Metrics) observeEvent() {
	if m != nil {
		m.events.Inc()
	}
}
