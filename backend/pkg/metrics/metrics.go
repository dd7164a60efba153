// Package metrics holds the backend's operation metrics: in-flight operations and their ages,
// durations by outcome, status propagation, document writes, watch events, notifications and
// subscription cascades. The leader lease's metrics belong to package leader.
package metrics

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/openhcp/openhcp/internal/armdoc"
)

// Metrics are the backend's operation metrics. A nil *Metrics records nothing.
type Metrics struct {
	inFlight      *prometheus.GaugeVec
	oldest        *prometheus.GaugeVec
	durations     *prometheus.HistogramVec
	propagation   prometheus.Histogram
	updates       prometheus.Counter
	events        prometheus.Counter
	notifications *prometheus.CounterVec
	subDeletes    prometheus.Counter
	resends       prometheus.Counter
}

// New registers the metrics with reg.
func New(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		inFlight: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "backend_operations_in_flight", Help: "Active ARM operations the backend is driving, by request (Create, Update, Delete).",
		}, []string{"request"}),
		oldest: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "backend_operation_oldest_start_time_seconds",
			Help: "Start time (Unix seconds) of the oldest active operation, by request; no series while none is active. Alerts on stuck operations read time() minus this.",
		}, []string{"request"}),
		durations: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "backend_operation_duration_seconds",
			Help:    "Time from an operation's start to its terminal state, by request and outcome.",
			Buckets: prometheus.ExponentialBuckets(1, 2, 14),
		}, []string{"request", "status"}),
		propagation: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "backend_status_propagation_seconds",
			Help:    "Time from a Cluster Service state change (the cluster's update_time) to the operation document update it caused.",
			Buckets: prometheus.ExponentialBuckets(0.005, 2, 14),
		}),
		updates: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "backend_document_updates_total", Help: "Operation and resource document updates written.",
		}),
		events: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "backend_cluster_events_total", Help: "Cluster Service watch events received.",
		}),
		notifications: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "backend_notifications_total", Help: "ARM async notification attempts, by result (delivered, failed, abandoned).",
		}, []string{"result"}),
		subDeletes: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "backend_subscription_cascade_deletes_total", Help: "Resource deletes started because their subscription was Deleted.",
		}),
		resends: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "backend_delete_resends_total", Help: "Deletes sent to Cluster Service again because it held the object, not being deleted, past the frontend's grace.",
		}),
	}
	reg.MustRegister(m.inFlight, m.oldest, m.durations, m.propagation, m.updates, m.events, m.notifications, m.subDeletes, m.resends)
	return m
}

// SetInFlight publishes the active operations per request and the start of the oldest of each.
func (m *Metrics) SetInFlight(n map[armdoc.OperationRequest]int, oldest map[armdoc.OperationRequest]time.Time) {
	if m != nil {
		for req, v := range n {
			m.inFlight.WithLabelValues(string(req)).Set(float64(v))
			if start, ok := oldest[req]; ok {
				m.oldest.WithLabelValues(string(req)).Set(float64(start.UnixNano()) / 1e9)
			} else {
				m.oldest.DeleteLabelValues(string(req))
			}
		}
	}
}

// ClearInFlight zeroes the gauges when this replica stops processing.
func (m *Metrics) ClearInFlight() {
	if m != nil {
		m.inFlight.Reset()
		m.oldest.Reset()
	}
}

// Finished records an operation that ended with s after d.
func (m *Metrics) Finished(r armdoc.OperationRequest, s armdoc.ProvisioningState, d time.Duration) {
	if m != nil {
		m.durations.WithLabelValues(string(r), string(s)).Observe(d.Seconds())
	}
}

// ObservePropagation records how long a Cluster Service change took to reach the documents.
func (m *Metrics) ObservePropagation(d time.Duration) {
	if m != nil && d >= 0 {
		m.propagation.Observe(d.Seconds())
	}
}

// ObserveUpdate counts a document write.
func (m *Metrics) ObserveUpdate() {
	if m != nil {
		m.updates.Inc()
	}
}

// ObserveEvent counts a Cluster Service cluster watch event.
func (m *Metrics) ObserveEvent() {
	if m != nil {
		m.events.Inc()
	}
}

// Notified counts a notification attempt by result (delivered, failed, abandoned).
func (m *Metrics) Notified(result string) {
	if m != nil {
		m.notifications.WithLabelValues(result).Inc()
	}
}

// DeleteResent counts a delete the controller sent to Cluster Service again.
func (m *Metrics) DeleteResent() {
	if m != nil {
		m.resends.Inc()
	}
}

// CascadeDelete counts a delete started because its subscription was Deleted.
func (m *Metrics) CascadeDelete() {
	if m != nil {
		m.subDeletes.Inc()
	}
}
