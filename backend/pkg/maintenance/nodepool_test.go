package maintenance

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"google.golang.org/grpc"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	csv1 "github.com/openhcp/openhcp/cluster-service/api/v1"
	cscontroller "github.com/openhcp/openhcp/cluster-service/pkg/controller"
	csstore "github.com/openhcp/openhcp/cluster-service/pkg/store"
	"github.com/openhcp/openhcp/internal/pgserver/pgservertest"
)

// createNodePool creates a node pool of cluster (named name in ARM) at version and reports it
// READY there.
func (f *fleet) createNodePool(cluster, clusterName, name, version string) string {
	f.t.Helper()
	return f.createNodePoolIn(cluster, clusterName, name, "", version)
}

// createNodePoolIn is createNodePool with the pool's own channel group (empty: its cluster's).
func (f *fleet) createNodePoolIn(cluster, clusterName, name, group, version string) string {
	f.t.Helper()
	id := strings.ReplaceAll(uuid.NewString(), "-", "")
	rid := "/subscriptions/" + f.sub + "/resourceGroups/rg/providers/Microsoft.RedHatOpenShift/hcpOpenShiftClusters/" + clusterName + "/nodePools/" + name
	if _, err := f.cs.(clients).CreateNodePool(context.Background(), &csv1.CreateNodePoolRequest{NodePool: &csv1.NodePool{
		Id: id, ClusterId: cluster, ArmResourceId: rid,
		Spec: &csv1.NodePoolSpec{VersionId: version, ChannelGroup: group, Replicas: 2, Platform: &csv1.NodePoolPlatform{VmSize: "Standard_D8s_v3"}},
	}}); err != nil {
		f.t.Fatalf("create node pool: %v", err)
	}
	if err := f.reportNodePool(context.Background(), id, func(st *csv1.NodePoolStatus) {
		st.State, st.CurrentVersion, st.Replicas, st.Applied = csv1.NodePoolState_NODE_POOL_STATE_READY, version, 2, true
	}); err != nil {
		f.t.Fatal(err)
	}
	return id
}

// reportNodePool changes a node pool's stored status as Cluster Service's controller does from
// feedback.
func (f *fleet) reportNodePool(ctx context.Context, id string, change func(*csv1.NodePoolStatus)) error {
	for range 20 {
		np, err := f.db.NodePools().Get(ctx, id)
		if err != nil {
			return err
		}
		st := proto.Clone(np.Status).(*csv1.NodePoolStatus)
		if st == nil {
			st = &csv1.NodePoolStatus{}
		}
		change(st)
		if _, err = f.db.NodePools().UpdateStatus(ctx, id, np.Revision, st); err == nil {
			return nil
		} else if !errors.Is(err, csstore.ErrConflict) {
			return err
		}
	}
	return errors.New("node pool status update kept conflicting")
}

// runFakeNodePools is a fake of HyperShift rolling a node pool out to the version of its spec
// and of Maestro carrying its status back (not run here): a pool whose spec names another
// version than it runs reports READY at it; its upgrade policy then moves by Cluster Service's
// own rule (NextNodePoolUpgradeStep) and the store's AdvanceNodePoolUpgrade.
func (f *fleet) runFakeNodePools(t *testing.T, ids []string) {
	advance := func(ctx context.Context, id string) error {
		np, err := f.db.NodePools().Get(ctx, id)
		if err != nil {
			return err
		}
		if want := np.Spec.GetVersionId(); np.Status.GetCurrentVersion() != want {
			return f.reportNodePool(ctx, id, func(st *csv1.NodePoolStatus) {
				st.State, st.CurrentVersion = csv1.NodePoolState_NODE_POOL_STATE_READY, want
			})
		}
		p, err := f.db.ActiveNodePoolUpgrade(ctx, id)
		if err != nil || p == nil {
			return err
		}
		next, ok := cscontroller.NextNodePoolUpgradeStep(p, np.Status)
		if !ok {
			return nil
		}
		if _, err := f.db.AdvanceNodePoolUpgrade(ctx, p.GetState(), next); err != nil && !errors.Is(err, csstore.ErrConflict) {
			return err
		}
		return nil
	}
	runFakeLoop(t, "fake node pool", advanceEach(ids, advance))
}

// startUpgrade asks for a control-plane upgrade of cluster to version and moves its policy to
// STARTED the way Cluster Service's controller does: the spec names version, the control plane
// still runs the old one until a report says otherwise.
func (f *fleet) startUpgrade(cluster, version string) {
	f.t.Helper()
	if _, err := f.cs.UpdateCluster(context.Background(), &csv1.UpdateClusterRequest{Id: cluster, Update: &csv1.ClusterUpdate{VersionId: version}}); err != nil {
		f.t.Fatal(err)
	}
	f.advanceUpgrade(cluster, csv1.UpgradePolicyState_UPGRADE_POLICY_STATE_STARTED)
}

// advanceUpgrade moves cluster's upgrade policy by Cluster Service's own rule (NextUpgradeStep)
// until it is in state want.
func (f *fleet) advanceUpgrade(cluster string, want csv1.UpgradePolicyState) {
	f.t.Helper()
	ctx := context.Background()
	accept := func(group, from, to string) error { return nil }
	for range 10 {
		c, err := f.db.GetCluster(ctx, cluster)
		if err != nil {
			f.t.Fatal(err)
		}
		p := c.Status.GetUpgrade()
		if p.GetState() == want {
			return
		}
		step, _, ok := cscontroller.NextUpgradeStep(c.Spec, c.Status, p, time.Now(), accept)
		if !ok {
			f.t.Fatalf("upgrade policy %v does not move", p)
		}
		if step.Policy.NextRun == nil {
			step.Policy.NextRun = timestamppb.Now()
		}
		if _, err := f.db.AdvanceUpgrade(ctx, cluster, csstore.Precondition{Revision: c.Revision}, p.GetState(), step.Policy, step.Spec); err != nil {
			f.t.Fatal(err)
		}
	}
	f.t.Fatalf("the upgrade policy of %s did not reach %s", cluster, want)
}

// countingClusterService passes every call to the real Cluster Service and counts the node pool
// updates per pool, so a test sees how often an upgrade was asked for, not only its outcome.
type countingClusterService struct {
	ClusterService
	mu      sync.Mutex
	updates map[string]int
}

func (c *countingClusterService) UpdateNodePool(ctx context.Context, in *csv1.UpdateNodePoolRequest, opts ...grpc.CallOption) (*csv1.NodePool, error) {
	c.mu.Lock()
	c.updates[in.GetId()]++
	c.mu.Unlock()
	return c.ClusterService.UpdateNodePool(ctx, in, opts...)
}

func (c *countingClusterService) updated(pool string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.updates[pool]
}

func TestNodePoolZStreamUpgrade(t *testing.T) {
	pg := pgservertest.Start(t)
	ctx := context.Background()
	f := newFleet(t, pg)
	f.registerShard("mgmt-1", 10)
	ahead := f.createCluster("ahead", "4.19.17")     // the control plane already runs the target
	behind := f.createCluster("behind", "4.19.16")   // the control plane runs the pool's version
	rolling := f.createCluster("rolling", "4.19.16") // the control plane is upgrading to the target
	stuck := f.createCluster("stuck", "4.19.16")     // the control plane's upgrade to the target failed
	poolAhead := f.createNodePool(ahead, "ahead", "work", "4.19.16")
	poolCrash := f.createNodePool(ahead, "ahead", "crash", "4.19.16")
	poolMinor := f.createNodePool(ahead, "ahead", "minor", "4.19.16")
	poolBehind := f.createNodePool(behind, "behind", "work", "4.19.16")
	poolRolling := f.createNodePool(rolling, "rolling", "work", "4.19.16")
	poolStuck := f.createNodePool(stuck, "stuck", "work", "4.19.16")
	f.runFakeNodePools(t, []string{poolAhead, poolCrash, poolMinor, poolBehind, poolRolling, poolStuck})

	dsn := pgservertest.NewDatabase(t, pg)
	tasks := NewTasks(openStore(t, dsn))
	cs := &countingClusterService{ClusterService: f.cs, updates: map[string]int{}}
	tt := NodePoolZStreamUpgrade(cs, ZStreamConfig{Poll: 50 * time.Millisecond})
	runActuator(t, dsn, []TaskType{tt}, ActuatorConfig{Holder: "a", LeaseDuration: 10 * time.Second})

	policies := func(t *testing.T, cluster, pool string) []*csv1.UpgradePolicy {
		t.Helper()
		ps, err := f.cs.(clients).ListUpgradePolicies(ctx, &csv1.ListUpgradePoliciesRequest{ClusterId: cluster, NodePoolId: pool})
		if err != nil {
			t.Fatal(err)
		}
		return ps.GetUpgradePolicies()
	}
	poolVersion := func(t *testing.T, pool string) (spec, running string) {
		t.Helper()
		np, err := f.cs.GetNodePool(ctx, &csv1.GetNodePoolRequest{Id: pool})
		if err != nil {
			t.Fatal(err)
		}
		return np.GetSpec().GetVersionId(), np.GetStatus().GetCurrentVersion()
	}

	for _, tc := range []struct {
		name, cluster, pool, target string
		want                        State
		wantVersion, wantMessage    string
		wantPolicies                int
	}{
		{"a_pool_behind_its_control_plane_is_upgraded_to_the_z_stream", ahead, poolAhead, "4.19.17", StateSucceeded, "4.19.17", "all steps done", 1},
		{"a_target_ahead_of_the_control_plane_is_refused_and_nothing_requested", behind, poolBehind, "4.19.17", StateFailed, "4.19.16",
			"a node pool never runs ahead of its control plane", 0},
		{"a_target_of_another_minor_is_refused_as_not_a_z_stream", ahead, poolMinor, "4.20.3", StateFailed, "4.19.16", "is not a z-stream of the node pool's version 4.19.16", 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			id := "np-" + tc.pool
			if _, err := tasks.Create(ctx, &Task{ID: id, Cluster: tc.cluster, Type: TypeNodePoolZStreamUpgrade, RequestedBy: "test",
				Params: map[string]string{ParamNodePool: tc.pool, ParamToVersion: tc.target}}, time.Now()); err != nil {
				t.Fatal(err)
			}
			got := waitState(t, tasks, id, tc.want, 2*time.Minute)
			if !strings.Contains(got.Message, tc.wantMessage) {
				t.Fatalf("message %q; want it to contain %q", got.Message, tc.wantMessage)
			}
			if spec, running := poolVersion(t, tc.pool); spec != tc.wantVersion || running != tc.wantVersion {
				t.Fatalf("pool spec %s, running %s; want %s", spec, running, tc.wantVersion)
			}
			if n, asked := len(policies(t, tc.cluster, tc.pool)), cs.updated(tc.pool); n != tc.wantPolicies || asked != tc.wantPolicies {
				t.Fatalf("%d upgrade policies of the pool, %d updates asked; want %d of each", n, asked, tc.wantPolicies)
			}
		})
	}

	t.Run("a_crash_after_the_upgrade_request_resumes_without_a_second_request", func(t *testing.T) {
		// An actuator ran check and request-upgrade, then died before recording the step
		// reached: the stored task is back before request-upgrade with check's findings.
		task := &Task{ID: "np-crash", Cluster: ahead, Type: TypeNodePoolZStreamUpgrade, RequestedBy: "test",
			Params: map[string]string{ParamNodePool: poolCrash, ParamToVersion: "4.19.17"}}
		runSteps(t, tt.Steps[:2], task)
		if n := len(policies(t, ahead, poolCrash)); n != 1 {
			t.Fatalf("%d policies after the first request; want 1", n)
		}
		if _, err := tasks.Create(ctx, task, time.Now()); err != nil {
			t.Fatal(err)
		}
		got := waitState(t, tasks, task.ID, StateSucceeded, 2*time.Minute)
		if got.Data[DataOutcome] != "upgraded" {
			t.Fatalf("outcome %q; want upgraded", got.Data[DataOutcome])
		}
		ps := policies(t, ahead, poolCrash)
		if len(ps) != 1 || ps[0].GetState() != csv1.UpgradePolicyState_UPGRADE_POLICY_STATE_COMPLETED || cs.updated(poolCrash) != 1 {
			t.Fatalf("policies %v, %d updates asked; want one policy, COMPLETED, asked for once", ps, cs.updated(poolCrash))
		}
	})

	t.Run("a_pool_waits_for_its_control_plane_upgrading_to_the_target_then_follows", func(t *testing.T) {
		f.startUpgrade(rolling, "4.19.17")
		id := "np-rolling"
		if _, err := tasks.Create(ctx, &Task{ID: id, Cluster: rolling, Type: TypeNodePoolZStreamUpgrade, RequestedBy: "test",
			Params: map[string]string{ParamNodePool: poolRolling, ParamToVersion: "4.19.17"}}, time.Now()); err != nil {
			t.Fatal(err)
		}
		waitRunning(t, tasks, id, "the task waits for the control plane", "the control plane runs 4.19.16 and is upgrading to 4.19.17")
		if n := cs.updated(poolRolling); n != 0 {
			t.Fatalf("%d node pool updates asked while the control plane runs 4.19.16; want none", n)
		}
		f.report(rolling, func(st *csv1.ClusterStatus) {
			st.State, st.CurrentVersion = csv1.ClusterState_CLUSTER_STATE_READY, "4.19.17"
		})
		waitState(t, tasks, id, StateSucceeded, 2*time.Minute)
		if spec, running := poolVersion(t, poolRolling); spec != "4.19.17" || running != "4.19.17" || cs.updated(poolRolling) != 1 {
			t.Fatalf("pool spec %s, running %s, %d updates asked; want 4.19.17, asked once", spec, running, cs.updated(poolRolling))
		}
	})

	t.Run("a_pool_whose_control_plane_upgrade_to_the_target_failed_is_refused", func(t *testing.T) {
		f.startUpgrade(stuck, "4.19.17")
		f.report(stuck, func(st *csv1.ClusterStatus) {
			st.State = csv1.ClusterState_CLUSTER_STATE_UPDATING
			st.Conditions = []*csv1.Condition{{Type: "ClusterVersionFailing", Status: "True", Message: "Cluster operator etcd is degraded"}}
		})
		f.advanceUpgrade(stuck, csv1.UpgradePolicyState_UPGRADE_POLICY_STATE_FAILED)
		id := "np-stuck"
		if _, err := tasks.Create(ctx, &Task{ID: id, Cluster: stuck, Type: TypeNodePoolZStreamUpgrade, RequestedBy: "test",
			Params: map[string]string{ParamNodePool: poolStuck, ParamToVersion: "4.19.17"}}, time.Now()); err != nil {
			t.Fatal(err)
		}
		got := waitState(t, tasks, id, StateFailed, 2*time.Minute)
		if !strings.Contains(got.Message, "Cluster operator etcd is degraded") || cs.updated(poolStuck) != 0 {
			t.Fatalf("message %q, %d updates asked; want the control plane's failure and none", got.Message, cs.updated(poolStuck))
		}
	})
}
