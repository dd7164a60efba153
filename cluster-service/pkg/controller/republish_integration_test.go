package controller_test

import (
	"testing"
	"time"

	hyperv1 "github.com/openshift/hypershift/api/hypershift/v1beta1"
	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	csv1 "github.com/openhcp/openhcp/cluster-service/api/v1"
	"github.com/openhcp/openhcp/cluster-service/pkg/controller"
	"github.com/openhcp/openhcp/cluster-service/pkg/maestro"
	"github.com/openhcp/openhcp/cluster-service/pkg/manifests"
	"github.com/openhcp/openhcp/dev-infrastructure/mgmtcluster/hypershiftsim"
	"github.com/openhcp/openhcp/internal/metricstest"
)

// TestWorkBehindItsSpecIsRepublished drives the controller's republish rule (republish.go)
// against the real Maestro. The lag is made by killing the agent, which Cluster Service cannot
// tell from the lost update of docs/maestro.md (the status stays that of an older generation):
// the controller republishes with a doubling wait, a restarted controller carries on, and once
// the agent is back the update arrives and the republishing stops. (The race itself is
// reproduced in cluster-service/pkg/maestro, TestSpecUpdateWhileAgentWritesStatus.)
func TestWorkBehindItsSpecIsRepublished(t *testing.T) {
	ctx, r, log := startAgainstMaestro(t, 10*time.Minute, hypershiftsim.Options{AvailableDelay: time.Second, DeleteDelay: time.Second, NodePoolReadyDelay: time.Second}, defaultStatusSync)
	cs := startClusterService(t, ctx, r, log)
	cs.stopCtrl()
	const after = 4 * time.Second
	// startController runs a controller with a quick RepublishAfter and its own metrics.
	startController := func() (*prometheus.Registry, func()) {
		reg := prometheus.NewRegistry()
		return reg, runControllerWith(t, ctx, cs.st, cs.works, controller.Config{RepublishAfter: after, Registerer: reg}, log)
	}
	republishes := func(reg *prometheus.Registry) float64 {
		return metricstest.Sum(t, reg, "cluster_service_maestro_republishes_total")
	}
	reg, stop := startController()

	cl := newCluster(40, "behind")
	if _, err := cs.clusters.CreateCluster(ctx, &csv1.CreateClusterRequest{Cluster: cl}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, ctx, cs, cl.Id, "READY", 3*time.Minute, state(csv1.ClusterState_CLUSTER_STATE_READY))
	start := time.Now()
	// Normally none; an agent slower than `after` under a loaded machine may cost one.
	base := republishes(reg)
	t.Logf("republishes while the agent keeps up: %v", base)
	work := func() (gen, statusGen int64, mark string) {
		w, err := cs.works.Get(ctx, shard, manifests.WorkName(cl.Id))
		if err != nil {
			t.Fatal(err)
		}
		return w.Generation, maestro.StatusGeneration(w), w.Annotations[maestro.AnnotationRepublishedFrom]
	}

	r.agent.Kill()
	sent := time.Now()
	if _, err := cs.clusters.UpdateCluster(ctx, &csv1.UpdateClusterRequest{Id: cl.Id, Update: &csv1.ClusterUpdate{
		Autoscaling: &csv1.ClusterAutoscaling{MaxNodesTotal: ptr.To[int32](44)}}}); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, "a republish while the agent is away", 30*time.Second, func() bool { return republishes(reg) >= base+1 })
	firstAt := time.Since(sent)
	gen, statusGen, mark := work()
	if mark == "" || statusGen >= gen {
		t.Fatalf("after a republish: generation %d, status for %d, mark %q", gen, statusGen, mark)
	}
	// The wait doubles: 4 s, then 8 s, then 16 s. In 12 more seconds there is at most one more.
	time.Sleep(3 * after)
	if n := republishes(reg) - base; n > 2 {
		t.Errorf("%v republishes within %s of the update; the wait should double (2s, 4s, …)", n, time.Since(sent).Round(time.Second))
	}
	t.Logf("first republish %s after the update; %v within %s", firstAt.Round(time.Millisecond), republishes(reg), time.Since(sent).Round(time.Second))

	// A restarted controller starts afresh from what Maestro says and republishes again.
	stop()
	_, _, markBefore := work()
	reg, _ = startController()
	waitUntil(t, "a republish by the restarted controller", 30*time.Second, func() bool { return republishes(reg) >= 1 })
	if _, _, m := work(); m == markBefore {
		t.Errorf("the restarted controller's republish left the mark at %q", m)
	}

	// The agent comes back: the update arrives, and the republishing stops.
	if err := r.agent.Restart(ctx); err != nil {
		t.Fatal(err)
	}
	back := time.Now()
	waitUntil(t, "the update on the HostedCluster", time.Minute, func() bool {
		var hc hyperv1.HostedCluster
		err := r.kube.Get(ctx, types.NamespacedName{Namespace: "ocm-dev-" + cl.Id, Name: "behind"}, &hc)
		return err == nil && hc.Spec.Autoscaling.MaxNodesTotal != nil && *hc.Spec.Autoscaling.MaxNodesTotal == 44
	})
	waitUntil(t, "the status for the current generation", 30*time.Second, func() bool { g, sg, _ := work(); return sg == g })
	t.Logf("agent back: update applied and reported %s later", time.Since(back).Round(time.Millisecond))
	n := republishes(reg)
	time.Sleep(3 * after)
	if m := republishes(reg); m != n {
		t.Errorf("republishes went on after the agent caught up: %v → %v", n, m)
	}
	waitFor(t, ctx, cs, cl.Id, "READY with the update", time.Minute, state(csv1.ClusterState_CLUSTER_STATE_READY))
	t.Logf("from the first READY to the end: %s", time.Since(start).Round(time.Second))
}
