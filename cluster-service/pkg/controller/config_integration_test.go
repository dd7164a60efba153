package controller_test

import (
	"reflect"
	"strings"
	"testing"
	"time"

	hyperv1 "github.com/openshift/hypershift/api/hypershift/v1beta1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	csv1 "github.com/openhcp/openhcp/cluster-service/api/v1"
	"github.com/openhcp/openhcp/dev-infrastructure/mgmtcluster/hypershiftsim"
)

// TestConfigurationAgainstMaestro creates a cluster with the create-only configuration and
// updates the updatable one through the real Maestro to hypershift-sim: the HostedCluster (and
// the NodePool, for the drain timeout) carries every value, and the cluster goes UPDATING →
// READY only once the agent reports the new spec and HyperShift has reconciled its generation.
func TestConfigurationAgainstMaestro(t *testing.T) {
	ctx, r, log := startAgainstMaestro(t, 10*time.Minute, hypershiftsim.Options{AvailableDelay: 2 * time.Second, DeleteDelay: time.Second, NodePoolReadyDelay: time.Second}, defaultStatusSync)
	cs := startClusterService(t, ctx, r, log)

	cl := newCluster(30, "configured")
	cl.Spec.ImageDigestMirrors = []*csv1.ImageDigestMirror{{Source: "quay.io/openshift-release-dev", Mirrors: []string{"mirror.example.com/ocp"}}}
	cl.Spec.IngressVisibility, cl.Spec.CryptoRestrictions, cl.Spec.DnsBaseDomainPrefix = "Private", "FIPS", "shop"
	if _, err := cs.clusters.CreateCluster(ctx, &csv1.CreateClusterRequest{Cluster: cl}); err != nil {
		t.Fatal(err)
	}
	pool := &csv1.NodePool{Id: "000000000000000000000000000000c1", ClusterId: cl.Id, ArmResourceId: cl.ArmResourceId + "/nodePools/workers",
		Spec: &csv1.NodePoolSpec{Replicas: 1, Platform: &csv1.NodePoolPlatform{VmSize: "Standard_D8s_v3"}}}
	if _, err := cs.pools.CreateNodePool(ctx, &csv1.CreateNodePoolRequest{NodePool: pool}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, ctx, cs, cl.Id, "READY", 3*time.Minute, state(csv1.ClusterState_CLUSTER_STATE_READY))
	hcKey := types.NamespacedName{Namespace: "ocm-dev-" + cl.Id, Name: "configured"}
	getHC := func(t *testing.T) *hyperv1.HostedCluster {
		t.Helper()
		var hc hyperv1.HostedCluster
		if err := r.kube.Get(ctx, hcKey, &hc); err != nil {
			t.Fatal(err)
		}
		return &hc
	}

	must(t, t.Run("create_configuration_is_on_the_hosted_cluster", func(t *testing.T) {
		hc := getHC(t)
		if !reflect.DeepEqual(hc.Spec.ImageContentSources, []hyperv1.ImageContentSource{{Source: "quay.io/openshift-release-dev", Mirrors: []string{"mirror.example.com/ocp"}}}) ||
			hc.Annotations[hyperv1.PrivateIngressControllerAnnotation] != "true" || !hc.Spec.FIPS ||
			hc.Spec.DNS.BaseDomainPrefix == nil || *hc.Spec.DNS.BaseDomainPrefix != "shop" {
			t.Fatalf("HostedCluster spec: mirrors %+v, annotations %v, fips %v, prefix %v", hc.Spec.ImageContentSources, hc.Annotations, hc.Spec.FIPS, hc.Spec.DNS.BaseDomainPrefix)
		}
	}))

	must(t, t.Run("update_reaches_the_hosted_cluster_and_node_pool_then_ready", func(t *testing.T) {
		before := getHC(t).Generation
		c, err := cs.clusters.UpdateCluster(ctx, &csv1.UpdateClusterRequest{Id: cl.Id, Update: &csv1.ClusterUpdate{
			Autoscaling:             &csv1.ClusterAutoscaling{MaxNodesTotal: ptr.To[int32](40), MaxNodeProvisionTimeSeconds: ptr.To[int32](600)},
			ApiAuthorizedCidrs:      &csv1.StringList{Values: []string{"192.0.2.0/24", "203.0.113.8/29"}},
			NodeDrainTimeoutMinutes: ptr.To[int32](30),
			ImageDigestMirrors:      &csv1.ImageDigestMirrors{},
		}})
		if err != nil {
			t.Fatal(err)
		}
		if c.GetStatus().GetState() != csv1.ClusterState_CLUSTER_STATE_UPDATING {
			t.Fatalf("state after UpdateCluster %s; want UPDATING in the same revision", c.GetStatus().GetState())
		}
		waitFor(t, ctx, cs, cl.Id, "READY after the update", 3*time.Minute, state(csv1.ClusterState_CLUSTER_STATE_READY))
		hc := getHC(t)
		a := hc.Spec.Autoscaling
		if a.MaxNodesTotal == nil || *a.MaxNodesTotal != 40 || a.MaxNodeProvisionTime != "600s" || hc.Spec.ImageContentSources != nil ||
			hc.Spec.Networking.APIServer == nil || !reflect.DeepEqual(hc.Spec.Networking.APIServer.AllowedCIDRBlocks, []hyperv1.CIDRBlock{"192.0.2.0/24", "203.0.113.8/29"}) {
			t.Fatalf("HostedCluster after READY: autoscaling %+v, apiServer %+v, mirrors %+v", a, hc.Spec.Networking.APIServer, hc.Spec.ImageContentSources)
		}
		if rs := hcCondition(hc, hyperv1.ReconciliationSucceeded); hc.Generation <= before || rs == nil || rs.ObservedGeneration != hc.Generation {
			t.Fatalf("generation %d (before %d), ReconciliationSucceeded %+v", hc.Generation, before, rs)
		}
		deadline := time.Now().Add(time.Minute)
		for {
			var np hyperv1.NodePool
			err := r.kube.Get(ctx, types.NamespacedName{Namespace: hcKey.Namespace, Name: "workers"}, &np)
			if err == nil && np.Spec.NodeDrainTimeout != nil && np.Spec.NodeDrainTimeout.Duration == 30*time.Minute {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("NodePool drain timeout %v (%v); want 30m", np.Spec.NodeDrainTimeout, err)
			}
			time.Sleep(200 * time.Millisecond)
		}
	}))

	must(t, t.Run("a_failing_reconcile_keeps_the_update_updating_until_it_succeeds", func(t *testing.T) {
		hc := getHC(t)
		patch := client.MergeFrom(hc.DeepCopy())
		hc.Annotations[hypershiftsim.FailReconcileAnnotation] = "cannot update the API server's allowed CIDR blocks"
		if err := r.kube.Patch(ctx, hc, patch); err != nil {
			t.Fatal(err)
		}
		if _, err := cs.clusters.UpdateCluster(ctx, &csv1.UpdateClusterRequest{Id: cl.Id, Update: &csv1.ClusterUpdate{
			ApiAuthorizedCidrs: &csv1.StringList{Values: []string{"198.51.100.0/24"}}}}); err != nil {
			t.Fatal(err)
		}
		c := waitFor(t, ctx, cs, cl.Id, "UPDATING with HyperShift's error", time.Minute, func(c *csv1.Cluster, err error) bool {
			return err == nil && c.GetStatus().GetState() == csv1.ClusterState_CLUSTER_STATE_UPDATING &&
				strings.Contains(c.GetStatus().GetMessage(), "cannot update the API server's allowed CIDR blocks")
		})
		// The agent has applied the new CIDRs; only HyperShift's verdict is missing.
		if got := getHC(t).Spec.Networking.APIServer.AllowedCIDRBlocks; !reflect.DeepEqual(got, []hyperv1.CIDRBlock{"198.51.100.0/24"}) {
			t.Fatalf("allowedCIDRBlocks %v while %q", got, c.GetStatus().GetMessage())
		}
		time.Sleep(3 * time.Second) // several feedback rounds: it must not turn READY
		if c, err := cs.clusters.GetCluster(ctx, &csv1.GetClusterRequest{Id: cl.Id}); err != nil || c.GetStatus().GetState() != csv1.ClusterState_CLUSTER_STATE_UPDATING {
			t.Fatalf("cluster %v (%v); want still UPDATING", c.GetStatus(), err)
		}
		hc = getHC(t)
		patch = client.MergeFrom(hc.DeepCopy())
		delete(hc.Annotations, hypershiftsim.FailReconcileAnnotation)
		if err := r.kube.Patch(ctx, hc, patch); err != nil {
			t.Fatal(err)
		}
		waitFor(t, ctx, cs, cl.Id, "READY once HyperShift reconciles", time.Minute, state(csv1.ClusterState_CLUSTER_STATE_READY))
	}))
}

func hcCondition(hc *hyperv1.HostedCluster, typ hyperv1.ConditionType) *metav1.Condition {
	return meta.FindStatusCondition(hc.Status.Conditions, string(typ))
}
