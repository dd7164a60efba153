package controller_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	hyperv1 "github.com/openshift/hypershift/api/hypershift/v1beta1"
	"github.com/prometheus/client_golang/prometheus"
	"google.golang.org/protobuf/proto"
	"k8s.io/apimachinery/pkg/types"
	workv1 "open-cluster-management.io/api/work/v1"

	csv1 "github.com/openhcp/openhcp/cluster-service/api/v1"
	"github.com/openhcp/openhcp/cluster-service/pkg/controller"
	"github.com/openhcp/openhcp/cluster-service/pkg/maestro"
	"github.com/openhcp/openhcp/cluster-service/pkg/manifests"
	"github.com/openhcp/openhcp/cluster-service/pkg/store"
	"github.com/openhcp/openhcp/dev-infrastructure/mgmtcluster/hypershiftsim"
)

// countingWorks is the real Maestro client, counting the Apply calls of each work.
type countingWorks struct {
	*maestro.Client
	mu      sync.Mutex
	applies map[string]int
}

func (w *countingWorks) Apply(ctx context.Context, consumer string, work *workv1.ManifestWork) error {
	w.mu.Lock()
	w.applies[work.Name]++
	w.mu.Unlock()
	return w.Client.Apply(ctx, consumer, work)
}

func (w *countingWorks) appliesOf(name string) int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.applies[name]
}

// reconcilesOf is how many reconciles of kind ("cluster", "node_pool") the controller
// registered on reg has finished, whatever their outcome.
func reconcilesOf(t *testing.T, reg *prometheus.Registry, kind string) int {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, mf := range mfs {
		if mf.GetName() != "cluster_service_reconciles_total" {
			continue
		}
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "kind" && l.GetValue() == kind {
					n += int(m.GetCounter().GetValue())
				}
			}
		}
	}
	return n
}

// poolLabels is n valid node labels of about 340 bytes each.
func poolLabels(n int) map[string]string {
	out := map[string]string{}
	for i := range n {
		out[fmt.Sprintf("%s.example.com/k%05d", strings.Repeat("p", 240), i)] = strings.Repeat("v", 63)
	}
	return out
}

// TestRefusedWorkIsErrorUntilTheSpecChanges: a spec stored over Maestro's work limit (straight
// into the store, as before Cluster Service's size rule, or past it) is refused by Maestro on
// every apply. Its node pool, or its cluster and the external auth in the cluster's work, turn
// ERROR ManifestWorkRefused with the work's size in the message, stamped with the refused
// spec's revision (so the backend fails the operation that wrote it); the work is not sent
// again while the spec is unchanged, however often the object is reconciled; a spec that fits
// is applied and the status leaves ERROR the normal way.
func TestRefusedWorkIsErrorUntilTheSpecChanges(t *testing.T) {
	ctx, r, log := startAgainstMaestro(t, 10*time.Minute, hypershiftsim.Options{AvailableDelay: 2 * time.Second, DeleteDelay: time.Second, NodePoolReadyDelay: time.Second}, defaultStatusSync)
	cs := startClusterService(t, ctx, r, log)
	// The same Cluster Service, with a controller whose applies are counted and which
	// reconciles everything every 2s: each resync is one more chance to send the work again.
	cs.stopCtrl()
	works := &countingWorks{Client: cs.works, applies: map[string]int{}}
	reg := prometheus.NewRegistry()
	cs.stopCtrl = runControllerWith(t, ctx, cs.st, works, controller.Config{ResyncPeriod: 2 * time.Second, ResyncAtOnce: true, Registerer: reg}, log)

	cl := newCluster(40, "refused")
	if _, err := cs.clusters.CreateCluster(ctx, &csv1.CreateClusterRequest{Cluster: cl}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, ctx, cs, cl.Id, "READY", 3*time.Minute, state(csv1.ClusterState_CLUSTER_STATE_READY))
	pool := &csv1.NodePool{Id: "000000000000000000000000000000c1", ClusterId: cl.Id, ArmResourceId: cl.ArmResourceId + "/nodePools/workers",
		Spec: &csv1.NodePoolSpec{Replicas: 2, Labels: map[string]string{"tier": "web"},
			Platform: &csv1.NodePoolPlatform{VmSize: "Standard_D8s_v3", OsDiskSizeGib: 128}}}
	if _, err := cs.pools.CreateNodePool(ctx, &csv1.CreateNodePoolRequest{NodePool: pool}); err != nil {
		t.Fatal(err)
	}
	waitForPool(t, ctx, cs, pool.Id, "READY with 2 replicas", 3*time.Minute, poolReadyWith(2))
	poolWork := manifests.NodePoolWorkName(pool.Id)

	must(t, t.Run("node_pool_over_the_limit_is_error_and_not_sent_again", func(t *testing.T) {
		stored, err := cs.st.GetCluster(ctx, cl.Id)
		if err != nil {
			t.Fatal(err)
		}
		over, err := cs.st.NodePools().Update(ctx, pool.Id, store.Precondition{}, func(_ *store.Cluster, cur *store.NodePool) (*csv1.NodePoolSpec, *csv1.UpgradePolicy, error) {
			spec := proto.Clone(cur.Spec).(*csv1.NodePoolSpec)
			spec.Labels = poolLabels(2000)
			return spec, nil, nil
		})
		if err != nil {
			t.Fatal(err)
		}
		w, err := manifests.BuildNodePool(manifests.Config{}, manifests.NodePool{ID: over.ID, ARMResourceID: over.ARMResourceID, Spec: over.Spec,
			Cluster: manifests.Cluster{ID: stored.ID, ARMResourceID: stored.ARMResourceID, Spec: stored.Spec}, WatchStatus: true})
		if err != nil {
			t.Fatal(err)
		}
		size := manifests.ManifestsSize(w)
		if size <= manifests.ManifestsLimit {
			t.Fatalf("2,000 labels make a work of %d bytes; the test wants one over %d", size, manifests.ManifestsLimit)
		}
		appliedBefore := works.appliesOf(poolWork)

		np, _ := waitForPool(t, ctx, cs, pool.Id, "ERROR", 2*time.Minute, func(np *csv1.NodePool, err error) bool {
			return err == nil && np.GetStatus().GetState() == csv1.NodePoolState_NODE_POOL_STATE_ERROR
		})
		st := np.GetStatus()
		wantMsg := fmt.Sprintf("the node pool's configuration would take %d bytes once deployed, over the limit of 512000", size)
		if st.GetErrorCode() != controller.ErrorCodeWorkRefused || !strings.Contains(st.GetMessage(), wantMsg) || !strings.Contains(st.GetMessage(), "Reduce the node pool's labels") {
			t.Fatalf("status = %v; want ERROR %s saying %q and what to reduce", st, controller.ErrorCodeWorkRefused, wantMsg)
		}
		if st.GetObservedRevision() != over.SpecRevision {
			t.Fatalf("observed_revision %d; want the refused spec's %d, so that its operation ends", st.GetObservedRevision(), over.SpecRevision)
		}

		// Five more reconciles of the pool (resyncs) with the spec unchanged send nothing.
		from := reconcilesOf(t, reg, "node_pool")
		deadline := time.Now().Add(time.Minute)
		for reconcilesOf(t, reg, "node_pool") < from+5 {
			if time.Now().After(deadline) {
				t.Fatalf("node pool reconciled %d times in a minute; want 5 (resync every 2s)", reconcilesOf(t, reg, "node_pool")-from)
			}
			time.Sleep(100 * time.Millisecond)
		}
		if n := works.appliesOf(poolWork) - appliedBefore; n != 1 {
			t.Fatalf("the refused work was applied %d times over %d reconciles; want once", n, reconcilesOf(t, reg, "node_pool")-from)
		}
		if np, err := cs.pools.GetNodePool(ctx, &csv1.GetNodePoolRequest{Id: pool.Id}); err != nil || np.GetStatus().GetState() != csv1.NodePoolState_NODE_POOL_STATE_ERROR {
			t.Fatalf("after the resyncs the pool is %v (%v); want still ERROR", np.GetStatus(), err)
		}
	}))

	must(t, t.Run("a_spec_that_fits_leaves_error", func(t *testing.T) {
		up, err := cs.pools.UpdateNodePool(ctx, &csv1.UpdateNodePoolRequest{Id: pool.Id,
			Update: &csv1.NodePoolUpdate{Labels: &csv1.StringMap{Values: map[string]string{"tier": "batch"}}}})
		if err != nil {
			t.Fatal(err)
		}
		np, seen := waitForPool(t, ctx, cs, pool.Id, "READY at the shrunk spec", 2*time.Minute, func(np *csv1.NodePool, err error) bool {
			return err == nil && np.GetStatus().GetState() == csv1.NodePoolState_NODE_POOL_STATE_READY && np.GetStatus().GetObservedRevision() >= up.GetSpecRevision()
		})
		t.Logf("states seen after the shrink: %v; spec_revision %d, observed_revision %d", seen, up.GetSpecRevision(), np.GetStatus().GetObservedRevision())
		if np.GetStatus().GetErrorCode() != "" || up.GetSpecRevision() == 0 {
			t.Fatalf("READY status keeps error_code %q (update at spec_revision %d)", np.GetStatus().GetErrorCode(), up.GetSpecRevision())
		}
		var kp hyperv1.NodePool
		if err := r.kube.Get(ctx, types.NamespacedName{Namespace: "ocm-dev-" + cl.Id, Name: "workers"}, &kp); err != nil || len(kp.Spec.NodeLabels) != 1 || kp.Spec.NodeLabels["tier"] != "batch" {
			t.Fatalf("NodePool on the management cluster: %d labels, tier %q (%v); want the shrunk spec's", len(kp.Spec.NodeLabels), kp.Spec.NodeLabels["tier"], err)
		}
	}))

	must(t, t.Run("external_auth_over_the_limit_fails_the_cluster_and_itself", func(t *testing.T) {
		spec := &csv1.ExternalAuthSpec{
			Issuer:  &csv1.TokenIssuer{Url: "https://login.microsoftonline.com/tenant/v2.0", Audiences: []string{"console-app"}},
			Clients: []*csv1.ExternalAuthClient{{ComponentName: "console", ComponentNamespace: "openshift-console", ClientId: "console-app", Type: "Confidential"}},
			ClaimMappings: &csv1.TokenClaimMappings{
				Username: &csv1.UsernameClaimMapping{Claim: "email", PrefixPolicy: "Prefix", Prefix: "entra:"},
				Groups:   &csv1.GroupsClaimMapping{Claim: "groups", Prefix: "entra:"},
			},
		}
		for i := range 8000 {
			spec.ValidationRules = append(spec.ValidationRules, &csv1.TokenClaimValidationRule{RequiredClaim: fmt.Sprintf("claim%05d", i), RequiredValue: "v"})
		}
		ea, _, err := cs.st.ExternalAuths().Create(ctx, &store.ExternalAuth{ID: "000000000000000000000000000000e1", ClusterID: cl.Id,
			ARMResourceID: cl.ArmResourceId + "/externalAuths/entra", Spec: spec})
		if err != nil {
			t.Fatal(err)
		}
		c := waitFor(t, ctx, cs, cl.Id, "ERROR", 2*time.Minute, state(csv1.ClusterState_CLUSTER_STATE_ERROR))
		if st := c.GetStatus(); st.GetErrorCode() != controller.ErrorCodeWorkRefused || !strings.Contains(st.GetMessage(), "over the limit of 512000") {
			t.Fatalf("cluster status = %v; want ERROR %s over the limit", st, controller.ErrorCodeWorkRefused)
		}
		deadline := time.Now().Add(time.Minute)
		for {
			got, err := cs.st.ExternalAuths().Get(ctx, ea.ID)
			if err != nil {
				t.Fatal(err)
			}
			if st := got.Status; st.GetState() == csv1.ExternalAuthState_EXTERNAL_AUTH_STATE_ERROR {
				if st.GetErrorCode() != controller.ErrorCodeWorkRefused || st.GetMessage() != c.GetStatus().GetMessage() || st.GetObservedRevision() != got.SpecRevision {
					t.Fatalf("external auth status = %v; want the cluster's ERROR at its spec revision %d", st, got.SpecRevision)
				}
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("external auth is %v after a minute; want ERROR", got.Status)
			}
			time.Sleep(100 * time.Millisecond)
		}
		clusterWork := manifests.WorkName(cl.Id)
		appliedBefore := works.appliesOf(clusterWork)
		from := reconcilesOf(t, reg, "cluster")
		for reconcilesOf(t, reg, "cluster") < from+5 {
			if time.Now().After(deadline.Add(time.Minute)) {
				t.Fatalf("cluster reconciled %d times; want 5 (resync every 2s)", reconcilesOf(t, reg, "cluster")-from)
			}
			time.Sleep(100 * time.Millisecond)
		}
		if n := works.appliesOf(clusterWork) - appliedBefore; n != 0 {
			t.Fatalf("the refused cluster work was applied %d more times with its spec unchanged; want none", n)
		}

		// Deleting the external auth takes it out of the work: the cluster's work is the one
		// applied before, and the cluster is READY again; the external auth goes.
		if _, err := cs.st.ExternalAuths().MarkDeleting(ctx, ea.ID); err != nil {
			t.Fatal(err)
		}
		waitFor(t, ctx, cs, cl.Id, "READY again", 2*time.Minute, state(csv1.ClusterState_CLUSTER_STATE_READY))
		deadline = time.Now().Add(2 * time.Minute)
		for {
			if _, err := cs.st.ExternalAuths().Get(ctx, ea.ID); err != nil {
				break
			}
			if time.Now().After(deadline) {
				t.Fatal("the deleted external auth is still stored after 2 minutes")
			}
			time.Sleep(100 * time.Millisecond)
		}
	}))
}
