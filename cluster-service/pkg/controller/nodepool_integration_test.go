package controller_test

import (
	"context"
	"testing"
	"time"

	hyperv1 "github.com/openshift/hypershift/api/hypershift/v1beta1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	csv1 "github.com/openhcp/openhcp/cluster-service/api/v1"
	"github.com/openhcp/openhcp/dev-infrastructure/mgmtcluster/hypershiftsim"
)

// waitForPool polls GetNodePool until cond holds, and returns the states it saw on the way.
func waitForPool(t *testing.T, ctx context.Context, cs *clusterService, id, what string, timeout time.Duration,
	cond func(*csv1.NodePool, error) bool) (*csv1.NodePool, []csv1.NodePoolState) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	var seen []csv1.NodePoolState
	var last *csv1.NodePool
	var lastErr error
	for time.Now().Before(deadline) {
		last, lastErr = cs.pools.GetNodePool(ctx, &csv1.GetNodePoolRequest{Id: id})
		if lastErr == nil && (len(seen) == 0 || seen[len(seen)-1] != last.GetStatus().GetState()) {
			seen = append(seen, last.GetStatus().GetState())
		}
		if cond(last, lastErr) {
			return last, seen
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("node pool %s: not %s after %s; last %v, err %v; states seen %v", id, what, timeout, last, lastErr, seen)
	return nil, nil
}

func poolReadyWith(replicas int32) func(*csv1.NodePool, error) bool {
	return func(np *csv1.NodePool, err error) bool {
		return err == nil && np.GetStatus().GetState() == csv1.NodePoolState_NODE_POOL_STATE_READY && np.GetStatus().GetReplicas() == replicas
	}
}

func contains(states []csv1.NodePoolState, s csv1.NodePoolState) bool {
	for _, x := range states {
		if x == s {
			return true
		}
	}
	return false
}

// TestNodePoolLifecycleAgainstMaestro drives node pools through the real Maestro to the
// management cluster where hypershift-sim plays HyperShift's NodePool controller: a pool created
// with its cluster waits for the cluster's work, reaches READY with its replicas, scales, turns
// autoscaling on, is deleted, a pool's version update rolls out, and a cluster's deletion takes
// its pools first.
func TestNodePoolLifecycleAgainstMaestro(t *testing.T) {
	ctx, r, log := startAgainstMaestro(t, 10*time.Minute, hypershiftsim.Options{AvailableDelay: 3 * time.Second, DeleteDelay: time.Second, NodePoolReadyDelay: 2 * time.Second}, defaultStatusSync)
	cs := startClusterService(t, ctx, r, log)

	cl := newCluster(10, "pools")
	if _, err := cs.clusters.CreateCluster(ctx, &csv1.CreateClusterRequest{Cluster: cl}); err != nil {
		t.Fatal(err)
	}
	ns := "ocm-dev-" + cl.Id
	pool := &csv1.NodePool{Id: "000000000000000000000000000000a1", ClusterId: cl.Id, ArmResourceId: cl.ArmResourceId + "/nodePools/workers",
		Spec: &csv1.NodePoolSpec{Replicas: 2, Labels: map[string]string{"tier": "web"}, AutoRepair: true,
			Taints:   []*csv1.Taint{{Key: "dedicated", Value: "web", Effect: "NoSchedule"}},
			Platform: &csv1.NodePoolPlatform{VmSize: "Standard_D8s_v3", OsDiskSizeGib: 128}}}
	getKubePool := func(t *testing.T) (*hyperv1.NodePool, error) {
		var np hyperv1.NodePool
		err := r.kube.Get(ctx, types.NamespacedName{Namespace: ns, Name: "workers"}, &np)
		return &np, err
	}

	must(t, t.Run("created_with_its_cluster_reaches_ready_with_replicas", func(t *testing.T) {
		created, err := cs.pools.CreateNodePool(ctx, &csv1.CreateNodePoolRequest{NodePool: pool})
		if err != nil {
			t.Fatal(err)
		}
		if created.GetStatus().GetState() != csv1.NodePoolState_NODE_POOL_STATE_PENDING {
			t.Fatalf("new pool is %v, want PENDING", created.GetStatus().GetState())
		}
		np, seen := waitForPool(t, ctx, cs, pool.Id, "READY with 2 replicas", 3*time.Minute, poolReadyWith(2))
		if np.GetStatus().GetCurrentVersion() != "4.19.17" || !np.GetStatus().GetApplied() || len(np.GetStatus().GetConditions()) == 0 {
			t.Fatalf("status = %v", np.GetStatus())
		}
		if !contains(seen, csv1.NodePoolState_NODE_POOL_STATE_INSTALLING) {
			t.Errorf("states seen %v; want INSTALLING before READY", seen)
		}
		kp, err := getKubePool(t)
		if err != nil {
			t.Fatalf("NodePool on the management cluster: %v", err)
		}
		az := kp.Spec.Platform.Azure
		if kp.Spec.ClusterName != "pools" || kp.Spec.Replicas == nil || *kp.Spec.Replicas != 2 || az.VMSize != "Standard_D8s_v3" || az.OSDisk.SizeGiB != 128 ||
			kp.Spec.NodeLabels["tier"] != "web" || len(kp.Spec.Taints) != 1 || !kp.Spec.Management.AutoRepair || kp.Status.Replicas != 2 {
			t.Fatalf("NodePool = %+v / %+v", kp.Spec, kp.Status)
		}
	}))

	must(t, t.Run("scale_up_goes_through_and_status_follows", func(t *testing.T) {
		cur, err := cs.pools.GetNodePool(ctx, &csv1.GetNodePoolRequest{Id: pool.Id})
		if err != nil {
			t.Fatal(err)
		}
		spec := proto.Clone(cur.GetSpec()).(*csv1.NodePoolSpec)
		spec.Replicas = 4
		if _, err := cs.pools.UpdateNodePool(ctx, &csv1.UpdateNodePoolRequest{Id: pool.Id, Update: csv1.FullNodePoolUpdate(spec), Revision: cur.Revision}); err != nil {
			t.Fatal(err)
		}
		_, seen := waitForPool(t, ctx, cs, pool.Id, "READY with 4 replicas", 2*time.Minute, poolReadyWith(4))
		if !contains(seen, csv1.NodePoolState_NODE_POOL_STATE_UPDATING) {
			t.Errorf("states seen %v; want UPDATING while scaling", seen)
		}
		if kp, err := getKubePool(t); err != nil || *kp.Spec.Replicas != 4 || kp.Status.Replicas != 4 {
			t.Fatalf("NodePool after scale: %v %+v", err, kp.Status)
		}
	}))

	must(t, t.Run("enabling_autoscaling_goes_through", func(t *testing.T) {
		cur, err := cs.pools.GetNodePool(ctx, &csv1.GetNodePoolRequest{Id: pool.Id})
		if err != nil {
			t.Fatal(err)
		}
		spec := proto.Clone(cur.GetSpec()).(*csv1.NodePoolSpec)
		// Min above the current 4, so the autoscaler (the sim) has to add a node.
		spec.Replicas, spec.Autoscaling = 0, &csv1.NodePoolAutoscaling{Min: 5, Max: 8}
		if _, err := cs.pools.UpdateNodePool(ctx, &csv1.UpdateNodePoolRequest{Id: pool.Id, Update: csv1.FullNodePoolUpdate(spec)}); err != nil {
			t.Fatal(err)
		}
		np, _ := waitForPool(t, ctx, cs, pool.Id, "READY with 5 replicas", 2*time.Minute, poolReadyWith(5))
		if c := findCond(np.GetStatus().GetConditions(), "AutoscalingEnabled"); c == nil || c.GetStatus() != "True" {
			t.Errorf("AutoscalingEnabled = %v", c)
		}
		kp, err := getKubePool(t)
		if err != nil || kp.Spec.Replicas != nil || kp.Spec.AutoScaling == nil || kp.Spec.AutoScaling.Min != 5 || kp.Spec.AutoScaling.Max != 8 {
			t.Fatalf("NodePool after enabling autoscaling: %v replicas %v autoscaling %+v", err, kp.Spec.Replicas, kp.Spec.AutoScaling)
		}
	}))

	must(t, t.Run("delete_removes_the_nodepool_then_the_record", func(t *testing.T) {
		if _, err := cs.pools.DeleteNodePool(ctx, &csv1.DeleteNodePoolRequest{Id: pool.Id}); err != nil {
			t.Fatal(err)
		}
		waitForPool(t, ctx, cs, pool.Id, "gone", 2*time.Minute, func(_ *csv1.NodePool, err error) bool { return status.Code(err) == codes.NotFound })
		if _, err := getKubePool(t); !apierrors.IsNotFound(err) {
			t.Fatalf("NodePool after delete: %v", err)
		}
		c, err := cs.clusters.GetCluster(ctx, &csv1.GetClusterRequest{Id: cl.Id})
		if err != nil || c.GetStatus().GetState() != csv1.ClusterState_CLUSTER_STATE_READY {
			t.Fatalf("cluster after its pool's deletion: %v, %v", c.GetStatus(), err)
		}
	}))

	second := proto.Clone(pool).(*csv1.NodePool)
	second.Id, second.ArmResourceId = "000000000000000000000000000000a2", cl.ArmResourceId+"/nodePools/second"
	second.Spec.Replicas, second.Spec.VersionId = 1, "4.19.16"
	must(t, t.Run("version_update_rolls_out_to_the_nodepool", func(t *testing.T) {
		if _, err := cs.pools.CreateNodePool(ctx, &csv1.CreateNodePoolRequest{NodePool: second}); err != nil {
			t.Fatal(err)
		}
		np, _ := waitForPool(t, ctx, cs, second.Id, "READY", 2*time.Minute, poolReadyWith(1))
		if np.GetStatus().GetCurrentVersion() != "4.19.16" {
			t.Fatalf("pool runs %q, want 4.19.16", np.GetStatus().GetCurrentVersion())
		}
		spec := proto.Clone(np.GetSpec()).(*csv1.NodePoolSpec)
		spec.VersionId = "4.19.17"
		if _, err := cs.pools.UpdateNodePool(ctx, &csv1.UpdateNodePoolRequest{Id: second.Id, Update: csv1.FullNodePoolUpdate(spec)}); err != nil {
			t.Fatal(err)
		}
		_, seen := waitForPool(t, ctx, cs, second.Id, "READY at 4.19.17", 2*time.Minute, func(np *csv1.NodePool, err error) bool {
			return poolReadyWith(1)(np, err) && np.GetStatus().GetCurrentVersion() == "4.19.17"
		})
		if !contains(seen, csv1.NodePoolState_NODE_POOL_STATE_UPDATING) {
			t.Errorf("states seen %v; want UPDATING during the version rollout", seen)
		}
		var kp hyperv1.NodePool
		if err := r.kube.Get(ctx, types.NamespacedName{Namespace: ns, Name: "second"}, &kp); err != nil ||
			kp.Spec.Release.Image != "quay.io/openshift-release-dev/ocp-release:4.19.17-multi" || kp.Status.Version != "4.19.17" {
			t.Fatalf("NodePool after the version update: %v, image %q, version %q", err, kp.Spec.Release.Image, kp.Status.Version)
		}
		spec.VersionId = "4.19.16"
		if _, err := cs.pools.UpdateNodePool(ctx, &csv1.UpdateNodePoolRequest{Id: second.Id, Update: csv1.FullNodePoolUpdate(spec)}); status.Code(err) != codes.InvalidArgument {
			t.Fatalf("downgrade: %v, want InvalidArgument", err)
		}
	}))

	must(t, t.Run("deleting_the_cluster_deletes_its_pools_first", func(t *testing.T) {
		rev, err := cs.st.NodePools().CurrentRevision(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := cs.clusters.DeleteCluster(ctx, &csv1.DeleteClusterRequest{Id: cl.Id}); err != nil {
			t.Fatal(err)
		}
		waitFor(t, ctx, cs, cl.Id, "gone", 3*time.Minute, func(_ *csv1.Cluster, err error) bool { return status.Code(err) == codes.NotFound })
		if _, err := cs.pools.GetNodePool(ctx, &csv1.GetNodePoolRequest{Id: second.Id}); status.Code(err) != codes.NotFound {
			t.Fatalf("pool of the deleted cluster: %v", err)
		}
		w, err := cs.pools.WatchNodePools(ctx, &csv1.WatchNodePoolsRequest{SinceRevision: rev})
		if err != nil {
			t.Fatal(err)
		}
		for {
			ev, err := w.Recv()
			if err != nil {
				t.Fatal(err)
			}
			if ev.GetType() == csv1.EventType_EVENT_TYPE_BOOKMARK {
				t.Fatal("no DELETED node pool event before the bookmark")
			}
			if ev.GetType() == csv1.EventType_EVENT_TYPE_DELETED && ev.GetNodePool().GetId() == second.Id {
				break
			}
		}
	}))
}

func findCond(conds []*csv1.Condition, typ string) *csv1.Condition {
	for _, c := range conds {
		if c.GetType() == typ {
			return c
		}
	}
	return nil
}
