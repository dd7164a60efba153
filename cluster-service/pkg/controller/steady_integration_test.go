package controller_test

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	ctrl "sigs.k8s.io/controller-runtime"

	csv1 "github.com/openhcp/openhcp/cluster-service/api/v1"
	"github.com/openhcp/openhcp/cluster-service/pkg/controller"
	"github.com/openhcp/openhcp/dev-infrastructure/mgmtcluster/hypershiftsim"
	"github.com/openhcp/openhcp/internal/metricstest"
)

// TestSteadyClusterIsLeftAlone: once a cluster is READY and its work is back on polled
// feedback, nothing reconciles it until the resync (an hour here) or a new status event.
func TestSteadyClusterIsLeftAlone(t *testing.T) {
	if testing.Short() {
		t.Skip("starts postgres, mosquitto, maestro, etcd, kube-apiserver, maestro agent and hypershift-sim")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 6*time.Minute)
	defer cancel()
	ctrl.SetLogger(logr.Discard())
	r := startRegion(t, ctx, hypershiftsim.Options{AvailableDelay: time.Second, DeleteDelay: time.Second})
	cs := startClusterService(t, ctx, r, slog.New(slog.DiscardHandler))
	cs.stopCtrl()
	reg := prometheus.NewRegistry()
	const pollAfter = 3 * time.Second
	runControllerWith(t, ctx, cs.st, cs.works, controller.Config{Registerer: reg, PollAfterSteady: pollAfter, ResyncPeriod: time.Hour}, slog.New(slog.DiscardHandler))

	cl := newCluster(50, "steady")
	if _, err := cs.clusters.CreateCluster(ctx, &csv1.CreateClusterRequest{Cluster: cl}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, ctx, cs, cl.Id, "READY", 2*time.Minute, state(csv1.ClusterState_CLUSTER_STATE_READY))
	time.Sleep(pollAfter + 15*time.Second) // the switch to Poll, and the agent's report on it
	before := metricstest.Sum(t, reg, "cluster_service_reconciles_total", "kind", "cluster")
	time.Sleep(30 * time.Second)
	after := metricstest.Sum(t, reg, "cluster_service_reconciles_total", "kind", "cluster")
	t.Logf("reconciles of the steady cluster in 30 s: %v (before the window: %v)", after-before, before)
	if after-before > 2 {
		t.Errorf("a steady cluster was reconciled %v times in 30 s; want at most one status event's worth", after-before)
	}
}
