package controller_test

import (
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	csv1 "github.com/openhcp/openhcp/cluster-service/api/v1"
	"github.com/openhcp/openhcp/cluster-service/pkg/controller"
	"github.com/openhcp/openhcp/dev-infrastructure/mgmtcluster/hypershiftsim"
	"github.com/openhcp/openhcp/internal/metricstest"
)

// TestSteadyClusterIsLeftAlone: once a cluster is READY and its work is back on polled
// feedback, nothing reconciles it until the resync (an hour here) or a new status event.
func TestSteadyClusterIsLeftAlone(t *testing.T) {
	ctx, r, log := startAgainstMaestro(t, 6*time.Minute, hypershiftsim.Options{AvailableDelay: time.Second, DeleteDelay: time.Second}, defaultStatusSync)
	cs := startClusterService(t, ctx, r, log)
	cs.stopCtrl()
	reg := prometheus.NewRegistry()
	const pollAfter = 3 * time.Second
	runControllerWith(t, ctx, cs.st, cs.works, controller.Config{Registerer: reg, PollAfterSteady: pollAfter, ResyncPeriod: time.Hour}, log)

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
