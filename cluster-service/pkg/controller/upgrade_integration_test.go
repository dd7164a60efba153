package controller_test

import (
	"strings"
	"testing"
	"time"

	configv1 "github.com/openshift/api/config/v1"
	hyperv1 "github.com/openshift/hypershift/api/hypershift/v1beta1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	csv1 "github.com/openhcp/openhcp/cluster-service/api/v1"
	"github.com/openhcp/openhcp/dev-infrastructure/mgmtcluster/hypershiftsim"
)

func upgradeState(s csv1.UpgradePolicyState) func(*csv1.Cluster, error) bool {
	return func(c *csv1.Cluster, err error) bool { return err == nil && c.GetStatus().GetUpgrade().GetState() == s }
}

// TestUpgradeAgainstMaestro upgrades a control plane and then a node pool along catalogue edges
// through the real Maestro to hypershift-sim, and fails an upgrade with the sim's fail-upgrade
// switch: the upgrade policies end COMPLETED / FAILED from HostedCluster and NodePool feedback
// only, and the HostedCluster's version history shows the upgrade.
func TestUpgradeAgainstMaestro(t *testing.T) {
	ctx, r, log := startAgainstMaestro(t, 10*time.Minute, hypershiftsim.Options{AvailableDelay: 2 * time.Second, UpgradeDelay: 3 * time.Second, DeleteDelay: time.Second, NodePoolReadyDelay: time.Second}, defaultStatusSync)
	cs := startClusterService(t, ctx, r, log)

	cl := newCluster(20, "upgrade")
	broken := newCluster(21, "broken")
	for _, c := range []*csv1.Cluster{cl, broken} {
		if _, err := cs.clusters.CreateCluster(ctx, &csv1.CreateClusterRequest{Cluster: c}); err != nil {
			t.Fatal(err)
		}
	}
	pool := &csv1.NodePool{Id: "000000000000000000000000000000b1", ClusterId: cl.Id, ArmResourceId: cl.ArmResourceId + "/nodePools/workers",
		Spec: &csv1.NodePoolSpec{VersionId: "4.19.16", Replicas: 1, Platform: &csv1.NodePoolPlatform{VmSize: "Standard_D8s_v3"}}}
	if _, err := cs.pools.CreateNodePool(ctx, &csv1.CreateNodePoolRequest{NodePool: pool}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, ctx, cs, cl.Id, "READY", 3*time.Minute, state(csv1.ClusterState_CLUSTER_STATE_READY))
	waitForPool(t, ctx, cs, pool.Id, "READY", 3*time.Minute, poolReadyWith(1))
	poolSpec := func(version string) *csv1.NodePoolSpec {
		return &csv1.NodePoolSpec{VersionId: version, Replicas: 1, Platform: &csv1.NodePoolPlatform{VmSize: "Standard_D8s_v3"}}
	}

	must(t, t.Run("node_pool_cannot_go_ahead_of_the_control_plane", func(t *testing.T) {
		_, err := cs.pools.UpdateNodePool(ctx, &csv1.UpdateNodePoolRequest{Id: pool.Id, Update: csv1.FullNodePoolUpdate(poolSpec("4.20"))})
		if status.Code(err) != codes.InvalidArgument || !strings.Contains(status.Convert(err).Message(), "ahead of the control plane version 4.19.17") {
			t.Fatalf("UpdateNodePool(4.20) = %v; want InvalidArgument: ahead of the control plane", err)
		}
	}))

	must(t, t.Run("control_plane_upgrade_completes_from_version_history", func(t *testing.T) {
		c, err := cs.clusters.UpdateCluster(ctx, &csv1.UpdateClusterRequest{Id: cl.Id, Update: &csv1.ClusterUpdate{VersionId: "4.20"}, OperationId: "op-upgrade"})
		if err != nil {
			t.Fatal(err)
		}
		if p := c.GetStatus().GetUpgrade(); p.GetState() != csv1.UpgradePolicyState_UPGRADE_POLICY_STATE_PENDING || p.GetToVersion() != "4.20.3" {
			t.Fatalf("upgrade policy %v; want PENDING to 4.20.3", p)
		}
		var states []csv1.UpgradePolicyState
		done := waitFor(t, ctx, cs, cl.Id, "upgraded", 3*time.Minute, func(c *csv1.Cluster, err error) bool {
			if err != nil {
				return false
			}
			if s := c.GetStatus().GetUpgrade().GetState(); len(states) == 0 || states[len(states)-1] != s {
				states = append(states, s)
			}
			return c.GetStatus().GetUpgrade().GetState() == csv1.UpgradePolicyState_UPGRADE_POLICY_STATE_COMPLETED
		})
		if st := done.GetStatus(); st.GetCurrentVersion() != "4.20.3" || done.GetSpec().GetVersionId() != "4.20.3" || st.GetUpgrade().GetOperationId() != "op-upgrade" {
			t.Fatalf("after the upgrade: spec %s, status %v", done.GetSpec().GetVersionId(), st)
		}
		if !containsState(states, csv1.UpgradePolicyState_UPGRADE_POLICY_STATE_STARTED) {
			t.Errorf("policy states seen %v; want STARTED before COMPLETED", states)
		}
		waitFor(t, ctx, cs, cl.Id, "READY", time.Minute, state(csv1.ClusterState_CLUSTER_STATE_READY))
		var hc hyperv1.HostedCluster
		if err := r.kube.Get(ctx, types.NamespacedName{Namespace: "ocm-dev-" + cl.Id, Name: "upgrade"}, &hc); err != nil {
			t.Fatal(err)
		}
		h := hc.Status.Version.History
		if hc.Spec.Release.Image != "quay.io/openshift-release-dev/ocp-release:4.20.3-multi" || len(h) != 2 ||
			h[0].Version != "4.20.3" || h[0].State != configv1.CompletedUpdate || h[1].Version != "4.19.17" || h[1].State != configv1.CompletedUpdate {
			t.Fatalf("HostedCluster release %s, history %+v", hc.Spec.Release.Image, h)
		}
		ps, err := cs.st.ListUpgradePolicies(ctx, cl.Id, "")
		if err != nil || len(ps) != 1 || ps[0].GetState() != csv1.UpgradePolicyState_UPGRADE_POLICY_STATE_COMPLETED {
			t.Fatalf("stored policies %v, %v", ps, err)
		}
	}))

	must(t, t.Run("node_pool_upgrade_along_an_edge_completes", func(t *testing.T) {
		if _, err := cs.pools.UpdateNodePool(ctx, &csv1.UpdateNodePoolRequest{Id: pool.Id, Update: csv1.FullNodePoolUpdate(poolSpec("4.20"))}); err != nil {
			t.Fatal(err)
		}
		np, _ := waitForPool(t, ctx, cs, pool.Id, "READY at 4.20.3", 3*time.Minute, func(np *csv1.NodePool, err error) bool {
			return err == nil && np.GetStatus().GetState() == csv1.NodePoolState_NODE_POOL_STATE_READY && np.GetStatus().GetCurrentVersion() == "4.20.3"
		})
		if np.GetSpec().GetVersionId() != "4.20.3" {
			t.Fatalf("pool spec version %s", np.GetSpec().GetVersionId())
		}
		deadline := time.Now().Add(time.Minute)
		for {
			ps, err := cs.st.ListUpgradePolicies(ctx, cl.Id, pool.Id)
			if err == nil && len(ps) == 1 && ps[0].GetState() == csv1.UpgradePolicyState_UPGRADE_POLICY_STATE_COMPLETED &&
				ps[0].GetFromVersion() == "4.19.16" && ps[0].GetToVersion() == "4.20.3" {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("node pool policies %v, %v; want one COMPLETED 4.19.16 → 4.20.3", ps, err)
			}
			time.Sleep(200 * time.Millisecond)
		}
		var kp hyperv1.NodePool
		if err := r.kube.Get(ctx, types.NamespacedName{Namespace: "ocm-dev-" + cl.Id, Name: "workers"}, &kp); err != nil {
			t.Fatal(err)
		}
		if kp.Spec.Release.Image != "quay.io/openshift-release-dev/ocp-release:4.20.3-multi" || kp.Status.Version != "4.20.3" {
			t.Fatalf("NodePool release %s, version %s", kp.Spec.Release.Image, kp.Status.Version)
		}
	}))

	must(t, t.Run("failing_upgrade_ends_failed_with_the_cvo_message", func(t *testing.T) {
		waitFor(t, ctx, cs, broken.Id, "READY", 3*time.Minute, state(csv1.ClusterState_CLUSTER_STATE_READY))
		var hc hyperv1.HostedCluster
		key := types.NamespacedName{Namespace: "ocm-dev-" + broken.Id, Name: "broken"}
		if err := r.kube.Get(ctx, key, &hc); err != nil {
			t.Fatal(err)
		}
		patch := client.MergeFrom(hc.DeepCopy())
		hc.Annotations = map[string]string{hypershiftsim.FailUpgradeAnnotation: "cluster operator etcd is degraded"}
		if err := r.kube.Patch(ctx, &hc, patch); err != nil {
			t.Fatal(err)
		}
		if _, err := cs.clusters.UpdateCluster(ctx, &csv1.UpdateClusterRequest{Id: broken.Id, Update: &csv1.ClusterUpdate{VersionId: "4.20"}, OperationId: "op-broken"}); err != nil {
			t.Fatal(err)
		}
		c := waitFor(t, ctx, cs, broken.Id, "upgrade FAILED", 3*time.Minute, upgradeState(csv1.UpgradePolicyState_UPGRADE_POLICY_STATE_FAILED))
		if p := c.GetStatus().GetUpgrade(); !strings.Contains(p.GetMessage(), "The upgrade from 4.19.17 to 4.20.3 failed: cluster operator etcd is degraded") {
			t.Fatalf("policy %v; want the CVO's message", p)
		}
		if c.GetStatus().GetCurrentVersion() != "4.19.17" {
			t.Fatalf("current version %s; want still 4.19.17", c.GetStatus().GetCurrentVersion())
		}
		if err := r.kube.Get(ctx, key, &hc); err != nil {
			t.Fatal(err)
		}
		if h := hc.Status.Version.History; len(h) != 2 || h[0].Version != "4.20.3" || h[0].State != configv1.PartialUpdate {
			t.Fatalf("history %+v; want 4.20.3 Partial", h)
		}
	}))
}

func containsState(states []csv1.UpgradePolicyState, s csv1.UpgradePolicyState) bool {
	for _, x := range states {
		if x == s {
			return true
		}
	}
	return false
}
