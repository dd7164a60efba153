package controller_test

import (
	"context"
	"testing"
	"time"

	hyperv1 "github.com/openshift/hypershift/api/hypershift/v1beta1"
	"k8s.io/apimachinery/pkg/api/meta"

	csv1 "github.com/openhcp/openhcp/cluster-service/api/v1"
	"github.com/openhcp/openhcp/dev-infrastructure/mgmtcluster/hypershiftsim"
)

// TestStatusLostWhileMaestroServerAwayIsRecovered reproduces defect 2 of docs/reliability.md
// against the real Maestro: the agent reports a HostedCluster Available while the Maestro
// server is down, the pinned server never gets that status (nor asks for it again when it is
// back), and without help Cluster Service keeps the cluster INSTALLING for ever. The cluster must
// become READY after the server is back.
func TestStatusLostWhileMaestroServerAwayIsRecovered(t *testing.T) {
	ctx, r, log := startAgainstMaestro(t, 10*time.Minute, hypershiftsim.Options{AvailableDelay: 20 * time.Second, DeleteDelay: time.Second, NodePoolReadyDelay: time.Second}, defaultStatusSync)
	cs := startClusterService(t, ctx, r, log)

	cl := newCluster(41, "statuslost")
	if _, err := cs.clusters.CreateCluster(ctx, &csv1.CreateClusterRequest{Cluster: cl}); err != nil {
		t.Fatal(err)
	}
	// The agent has applied the work and reported it; the HostedCluster is not Available yet.
	waitFor(t, ctx, cs, cl.Id, "applied", 3*time.Minute, func(c *csv1.Cluster, err error) bool {
		return err == nil && c.GetStatus().GetApplied() && c.GetStatus().GetState() == csv1.ClusterState_CLUSTER_STATE_INSTALLING
	})
	r.maestro.Stop()
	stoppedAt := time.Now()
	// The HostedCluster becomes Available, and the agent reports it, while the server is away.
	deadline := time.Now().Add(3 * time.Minute)
	for !hostedClusterAvailable(ctx, t, r) {
		if time.Now().After(deadline) {
			t.Fatal("the HostedCluster did not become Available within 3 minutes")
		}
		time.Sleep(time.Second)
	}
	// Let the agent's status sync (every 2 s here) send the Available status to a broker
	// without the server: wait for several of its periods.
	for time.Since(stoppedAt) < 30*time.Second {
		time.Sleep(time.Second)
	}
	if err := r.maestro.Restart(ctx); err != nil {
		t.Fatalf("restart the Maestro server: %v", err)
	}
	t.Logf("Maestro server away %s", time.Since(stoppedAt).Round(time.Second))
	back := time.Now()
	waitFor(t, ctx, cs, cl.Id, "READY after the Maestro server came back", 4*time.Minute, func(c *csv1.Cluster, err error) bool {
		return err == nil && c.GetStatus().GetState() == csv1.ClusterState_CLUSTER_STATE_READY
	})
	t.Logf("READY %s after the Maestro server came back", time.Since(back).Round(time.Second))
}

// hostedClusterAvailable says whether a HostedCluster on the management cluster is Available.
func hostedClusterAvailable(ctx context.Context, t *testing.T, r *region) bool {
	t.Helper()
	var l hyperv1.HostedClusterList
	if err := r.kube.List(ctx, &l); err != nil {
		t.Logf("list HostedClusters: %v", err)
		return false
	}
	for _, hc := range l.Items {
		if meta.IsStatusConditionTrue(hc.Status.Conditions, string(hyperv1.HostedClusterAvailable)) {
			return true
		}
	}
	return false
}
