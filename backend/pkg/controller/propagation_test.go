package controller

import (
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/prometheus/client_golang/prometheus"

	csv1 "github.com/openhcp/openhcp/cluster-service/api/v1"
	"github.com/openhcp/openhcp/internal/armdoc"
	"github.com/openhcp/openhcp/internal/metricstest"

	"github.com/openhcp/openhcp/backend/pkg/metrics"
)

// TestUnrecordedUpdateIsNoStatusPropagation: an update the backend sees before the frontend
// recorded Cluster Service's answer moves to Updating on no Cluster Service change at all
// (notRecorded), so it is no status propagation. Observed, it was the time since the object's
// last change: in a live region a node pool's PATCH read 428 s (the pool's age), and one such
// read keeps BackendStatusPropagationSlow's 99th percentile over 30 s for its 15 minutes.
func TestUnrecordedUpdateIsNoStatusPropagation(t *testing.T) {
	h, reg, csID := createdClusterC01(t)
	before := metricstest.Sum(t, reg, "backend_status_propagation_seconds")
	// The frontend has written the update (Accepted, no InternalRevision) and not yet recorded
	// its Cluster Service call; here it never does, so the update fails after the grace, a
	// write that is not Cluster Service's either.
	opID := uuid.NewString()
	h.writeOperation(h.resourceID("c01"), csID, opID, armdoc.OperationUpdate, armdoc.StateUpdating, 0, false)
	h.waitStatus(opID, armdoc.StateFailed, 10*time.Second)
	waitMetric(t, "update finished", 1, func() float64 {
		return metricstest.Sum(t, reg, "backend_operation_duration_seconds", "status", "Failed")
	})
	if got := metricstest.Sum(t, reg, "backend_status_propagation_seconds"); got != before {
		t.Fatalf("status propagation observations went from %v to %v for an update Cluster Service never saw", before, got)
	}
}

// TestUnsentDeleteIsNoStatusPropagation: a delete the backend reads before Cluster Service has
// received it (the frontend records the delete, then calls Cluster Service) moves to Deleting on
// no Cluster Service change (the object is not deleting: Resend), so it is no status
// propagation either. Observed, it was the time since the cluster's last change: under make
// deploy the delete at the end of a README-style run read 17.2 s and, in another run, 21.4 s
// (the time since the cluster's previous change), and one such read put
// BackendStatusPropagationSlow pending.
func TestUnsentDeleteIsNoStatusPropagation(t *testing.T) {
	h, reg, csID := createdClusterC01(t)
	before := metricstest.Sum(t, reg, "backend_status_propagation_seconds")
	// The frontend has recorded the delete and not yet called Cluster Service; here it never
	// does, so the backend sends the delete itself after the grace (a later reconcile than the
	// one that moved the operation to Deleting).
	delOp := uuid.NewString()
	h.writeOperation(h.resourceID("c01"), csID, delOp, armdoc.OperationDelete, armdoc.StateDeleting, 0, false)
	h.waitStatus(delOp, armdoc.StateDeleting, 10*time.Second)
	waitMetric(t, "the delete sent again", 1, func() float64 {
		return metricstest.Sum(t, reg, "backend_delete_resends_total")
	})
	if got := metricstest.Sum(t, reg, "backend_status_propagation_seconds"); got != before {
		t.Fatalf("status propagation observations went from %v to %v for a delete Cluster Service had not received", before, got)
	}
}

// createdClusterC01 starts a backend with a metrics registry of its own and has cluster c01's
// create end Succeeded on a READY status: what the propagation tests then write an operation on.
func createdClusterC01(t *testing.T) (*harness, *prometheus.Registry, string) {
	t.Helper()
	h := newHarness(t)
	reg := prometheus.NewRegistry()
	h.startWith(Config{ResyncPeriod: time.Minute, NotFoundGrace: time.Second}, metrics.New(reg))
	csID, createID := h.createCluster("c01", 0)
	h.feedback(csID, &csv1.ClusterStatus{State: csv1.ClusterState_CLUSTER_STATE_READY})
	h.waitStatus(createID, armdoc.StateSucceeded, 10*time.Second)
	waitMetric(t, "create finished", 1, func() float64 {
		return metricstest.Sum(t, reg, "backend_operation_duration_seconds", "status", "Succeeded")
	})
	return h, reg, csID
}
