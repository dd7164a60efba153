package controller

import (
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	csv1 "github.com/openhcp/openhcp/cluster-service/api/v1"
	"github.com/openhcp/openhcp/internal/armdoc"
	"github.com/openhcp/openhcp/internal/metricstest"

	"github.com/openhcp/openhcp/backend/pkg/metrics"
)

func TestStatusModes(t *testing.T) {
	for _, tc := range []struct {
		name       string
		cfg        Config
		wantEvents bool
	}{
		{name: "watch_mode_follows_the_feed_and_the_cluster_watch", cfg: Config{ResyncPeriod: time.Minute}, wantEvents: true},
		// No resync, no feed, no watch: only the poll can finish the operation.
		{name: "poll_mode_lists_operations_and_asks_cluster_service", cfg: Config{ResyncPeriod: time.Hour, StatusMode: ModePoll, PollInterval: time.Second}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t)
			reg := prometheus.NewRegistry()
			h.startWith(tc.cfg, metrics.New(reg))
			before := time.Now()
			csID, opID := h.createCluster("c01", 0)
			h.waitStatus(opID, armdoc.StateProvisioning, 10*time.Second)
			// The backend records an operation in its metrics just after the write the test
			// sees, so each metric is polled until it says what it should.
			waitMetric(t, "in-flight creates", 1, func() float64 {
				return metricstest.Sum(t, reg, "backend_operations_in_flight", "request", "Create")
			})
			// The stuck-operation alert reads time() minus the oldest start.
			oldest := metricstest.Sum(t, reg, "backend_operation_oldest_start_time_seconds", "request", "Create")
			if start := time.Unix(0, int64(oldest*1e9)); start.Before(before.Add(-time.Second)) || start.After(time.Now()) {
				t.Errorf("oldest create started at %v, want the operation's start (after %v)", start, before)
			}
			h.feedback(csID, &csv1.ClusterStatus{State: csv1.ClusterState_CLUSTER_STATE_READY})
			h.waitStatus(opID, armdoc.StateSucceeded, 10*time.Second)
			waitMetric(t, "in-flight creates after the end", 0, func() float64 {
				return metricstest.Sum(t, reg, "backend_operations_in_flight", "request", "Create")
			})
			waitMetric(t, "oldest start with no active operation (no series)", 0, func() float64 {
				return metricstest.Sum(t, reg, "backend_operation_oldest_start_time_seconds")
			})
			waitMetric(t, "succeeded durations observed", 1, func() float64 {
				return metricstest.Sum(t, reg, "backend_operation_duration_seconds", "status", "Succeeded")
			})
			// Accepted→Provisioning and Provisioning→Succeeded were both caused by CS state.
			if got := metricstest.Sum(t, reg, "backend_status_propagation_seconds"); got < 1 {
				t.Errorf("status propagation observations = %v, want at least 1", got)
			}
			events := metricstest.Sum(t, reg, "backend_cluster_events_total")
			if tc.wantEvents != (events > 0) {
				t.Errorf("cluster watch events = %v; want some: %v", events, tc.wantEvents)
			}
		})
	}
}

// waitMetric polls read until it returns want, for a deadline sized for a busy machine.
func waitMetric(t *testing.T, what string, want float64, read func() float64) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		got := read()
		if got == want {
			return
		}
		if time.Now().After(deadline) {
			t.Errorf("%s = %v, want %v", what, got, want)
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func newRegistry() *prometheus.Registry { return prometheus.NewRegistry() }
