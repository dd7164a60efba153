package server

import (
	"context"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/openhcp/openhcp/admin/pkg/adminapi"
	csv1 "github.com/openhcp/openhcp/cluster-service/api/v1"
	csstore "github.com/openhcp/openhcp/cluster-service/pkg/store"
	"github.com/openhcp/openhcp/internal/armdoc"
)

// TestCancelNodePoolUpgradeWhileRolling: a node pool whose NodePool still reports an older
// version than its spec is rolling; cancel-upgrade refuses with a 409 that names the node pool,
// both versions and the pause that stops the rollout, and changes nothing.
func TestCancelNodePoolUpgradeWhileRolling(t *testing.T) {
	e := start(t)
	ctx := context.Background()
	clusterID, clusterARM, _ := seedCluster(t, e)
	poolID, poolARM := seedNodePool(t, e, clusterID, clusterARM)
	np, err := e.pools.GetNodePool(ctx, &csv1.GetNodePoolRequest{Id: poolID})
	if err != nil {
		t.Fatal(err)
	}
	// Play Cluster Service's controller: the NodePool reports the version it rolls from.
	if _, err := e.csdb.NodePools().UpdateStatus(ctx, poolID, np.GetRevision(), &csv1.NodePoolStatus{
		State: csv1.NodePoolState_NODE_POOL_STATE_UPDATING, CurrentVersion: "4.18.20"}); err != nil {
		t.Fatal(err)
	}
	before, err := e.pools.GetNodePool(ctx, &csv1.GetNodePoolRequest{Id: poolID})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ name, id, target string }{
		{"cluster_service_id", poolID, poolID},
		{"arm_id", poolARM, poolARM[1:]},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, ae, body := e.call(t, "alice", "POST", "/admin/v1/cancel-upgrade/"+strings.TrimPrefix(tc.id, "/"), `{"reason":"CHG-1"}`)
			if code != 409 || ae.Code != adminapi.CodeNotCancelable || ae.Target != tc.target {
				t.Fatalf("%d %+v, want 409 %s naming %s: %s", code, ae, adminapi.CodeNotCancelable, tc.target, body)
			}
			for _, want := range []string{"from 4.18.20 to 4.18.27", "cannot be canceled", "hcpctl cluster pause"} {
				if !strings.Contains(ae.Message, want) {
					t.Fatalf("message %q does not say %q", ae.Message, want)
				}
			}
		})
	}
	after, err := e.pools.GetNodePool(ctx, &csv1.GetNodePoolRequest{Id: poolID})
	if err != nil || after.GetRevision() != before.GetRevision() || after.GetSpec().GetVersionId() != "4.18.27" {
		t.Fatalf("a refused cancel changed the node pool: revision %d → %d, version %s (%v)", before.GetRevision(), after.GetRevision(), after.GetSpec().GetVersionId(), err)
	}
}

// TestCancelStartedControlPlaneUpgrade: once the control-plane upgrade has started (the
// HostedCluster has the new release), cancel-upgrade is 409 NotCancelable naming the cluster,
// saying why and that a pause stops it; the upgrade goes on.
func TestCancelStartedControlPlaneUpgrade(t *testing.T) {
	e := start(t)
	ctx := context.Background()
	clusterID, clusterARM, _ := seedCluster(t, e)
	setARMState(t, e, clusterARM, armdoc.StateSucceeded)
	if code, ae, body := e.call(t, "alice", "POST", "/admin/v1/upgrade/"+clusterID, `{"version":"4.20.3","reason":"CHG-1"}`); code != 200 {
		t.Fatalf("upgrade: %d %+v %s", code, ae, body)
	}
	c, err := e.clusters.GetCluster(ctx, &csv1.GetClusterRequest{Id: clusterID})
	if err != nil {
		t.Fatal(err)
	}
	// Play Cluster Service's upgrade controller: the policy starts.
	p := proto.Clone(c.GetStatus().GetUpgrade()).(*csv1.UpgradePolicy)
	from := p.GetState()
	p.State, p.Message = csv1.UpgradePolicyState_UPGRADE_POLICY_STATE_STARTED, "started"
	if _, err := e.csdb.AdvanceUpgrade(ctx, clusterID, csstore.Precondition{Revision: c.GetRevision()}, from, p, nil); err != nil {
		t.Fatal(err)
	}
	code, ae, body := e.call(t, "alice", "POST", "/admin/v1/cancel-upgrade/"+clusterID, `{"reason":"CHG-1 postponed"}`)
	if code != 409 || ae.Code != adminapi.CodeNotCancelable || ae.Target != clusterID ||
		!strings.Contains(ae.Message, "only a pending or scheduled upgrade can be canceled") || !strings.Contains(ae.Message, "hcpctl cluster pause") {
		t.Fatalf("%d %+v, want 409 NotCancelable naming %s: %s", code, ae, clusterID, body)
	}
	if got, err := e.clusters.GetCluster(ctx, &csv1.GetClusterRequest{Id: clusterID}); err != nil || got.GetStatus().GetUpgrade().GetState() != csv1.UpgradePolicyState_UPGRADE_POLICY_STATE_STARTED {
		t.Fatalf("the refused cancel changed the upgrade: %v %v", got.GetStatus().GetUpgrade(), err)
	}
}
