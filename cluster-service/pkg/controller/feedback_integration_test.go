package controller_test

import (
	"context"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"google.golang.org/protobuf/proto"
	workv1 "open-cluster-management.io/api/work/v1"

	csv1 "github.com/openhcp/openhcp/cluster-service/api/v1"
	"github.com/openhcp/openhcp/cluster-service/pkg/controller"
	"github.com/openhcp/openhcp/cluster-service/pkg/manifests"
	"github.com/openhcp/openhcp/dev-infrastructure/mgmtcluster/hypershiftsim"
	"github.com/openhcp/openhcp/internal/metricstest"
)

// TestFeedbackIsWatchedDuringTransitions runs the agent with a status-sync interval of an hour,
// so status that changes after a work is applied (the HostedCluster becoming Available, a
// NodePool's nodes coming up) reaches Cluster Service only if the agent watches the object:
// a create, a node pool create and a scale each reach READY in seconds. After each, the work
// goes back to Poll once PollAfterSteady has passed, with the controller's resync an hour away.
func TestFeedbackIsWatchedDuringTransitions(t *testing.T) {
	ctx, r, log := startAgainstMaestro(t, 10*time.Minute, hypershiftsim.Options{AvailableDelay: 3 * time.Second, DeleteDelay: time.Second, NodePoolReadyDelay: 2 * time.Second}, time.Hour)
	cs := startClusterService(t, ctx, r, log)
	// Its own metrics: statuses taken from the watch's events (observed.go) are counted.
	cs.stopCtrl()
	reg := prometheus.NewRegistry()
	const pollAfter = 5 * time.Second
	runControllerWith(t, ctx, cs.st, cs.works, controller.Config{Registerer: reg, PollAfterSteady: pollAfter, ResyncPeriod: time.Hour}, log)

	// Without watched feedback each of these would wait for the hour-long poll.
	const soon = 90 * time.Second
	cl := newCluster(30, "watched")
	if _, err := cs.clusters.CreateCluster(ctx, &csv1.CreateClusterRequest{Cluster: cl}); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	waitFor(t, ctx, cs, cl.Id, "READY", soon, state(csv1.ClusterState_CLUSTER_STATE_READY))
	t.Logf("cluster READY %s after create (the sim makes it Available after 3 s)", time.Since(start).Round(100*time.Millisecond))
	stored, err := cs.st.GetCluster(ctx, cl.Id)
	if err != nil {
		t.Fatal(err)
	}
	workName := manifests.WorkName(cl.Id)
	waitForFeedback(t, ctx, cs, stored.Shard, workName, workv1.FeedbackPollType, pollAfter+soon/3)

	pool := &csv1.NodePool{Id: "000000000000000000000000000000b1", ClusterId: cl.Id, ArmResourceId: cl.ArmResourceId + "/nodePools/workers",
		Spec: &csv1.NodePoolSpec{Replicas: 1, Platform: &csv1.NodePoolPlatform{VmSize: "Standard_D8s_v3"}}}
	if _, err := cs.pools.CreateNodePool(ctx, &csv1.CreateNodePoolRequest{NodePool: pool}); err != nil {
		t.Fatal(err)
	}
	start = time.Now()
	waitForPool(t, ctx, cs, pool.Id, "READY with 1 replica", soon, poolReadyWith(1))
	t.Logf("node pool READY %s after create", time.Since(start).Round(100*time.Millisecond))
	poolWork := manifests.NodePoolWorkName(pool.Id)
	waitForFeedback(t, ctx, cs, stored.Shard, poolWork, workv1.FeedbackPollType, pollAfter+soon/3)

	cur, err := cs.pools.GetNodePool(ctx, &csv1.GetNodePoolRequest{Id: pool.Id})
	if err != nil {
		t.Fatal(err)
	}
	spec := proto.Clone(cur.GetSpec()).(*csv1.NodePoolSpec)
	spec.Replicas = 3
	if _, err := cs.pools.UpdateNodePool(ctx, &csv1.UpdateNodePoolRequest{Id: pool.Id, Update: csv1.FullNodePoolUpdate(spec), Revision: cur.Revision}); err != nil {
		t.Fatal(err)
	}
	start = time.Now()
	// The scale is a transition again: watched until READY, polled after.
	waitForFeedback(t, ctx, cs, stored.Shard, poolWork, workv1.FeedbackWatchType, soon)
	waitForPool(t, ctx, cs, pool.Id, "READY with 3 replicas", soon, poolReadyWith(3))
	t.Logf("node pool READY with 3 replicas %s after the scale", time.Since(start).Round(100*time.Millisecond))
	waitForFeedback(t, ctx, cs, stored.Shard, poolWork, workv1.FeedbackPollType, pollAfter+soon/3)

	// Each READY above followed a status event whose spec was the one applied: the reconcile
	// after it takes the status from the event, not from Maestro's REST API.
	fromWatch := metricstest.Sum(t, reg, "cluster_service_work_status_reads_total", "source", "watch")
	fromMaestro := metricstest.Sum(t, reg, "cluster_service_work_status_reads_total", "source", "maestro")
	t.Logf("work statuses taken from the watch: %v, read from Maestro: %v", fromWatch, fromMaestro)
	if fromWatch < 3 {
		t.Fatalf("%v work statuses taken from the watch's events, want at least one per READY (3)", fromWatch)
	}
}

// waitForFeedback waits until the work that Maestro holds for name on shard asks for want as the
// feedback scrape type of its HostedCluster or NodePool.
func waitForFeedback(t *testing.T, ctx context.Context, cs *clusterService, shard, name string, want workv1.FeedbackScrapeType, within time.Duration) {
	t.Helper()
	start := time.Now()
	deadline := start.Add(within)
	got := workv1.FeedbackScrapeType("")
	for time.Now().Before(deadline) {
		w, err := cs.works.Get(ctx, shard, name)
		if err != nil {
			t.Fatalf("get work %s: %v", name, err)
		}
		if got = manifests.FeedbackMode(w); got == want {
			t.Logf("work %s asks for %s feedback %s later", name, want, time.Since(start).Round(100*time.Millisecond))
			return
		}
		time.Sleep(200 * time.Millisecond)
	}
	t.Fatalf("work %s asks for %q feedback after %s, want %q", name, got, within, want)
}
