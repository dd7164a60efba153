package server

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"

	"google.golang.org/grpc/status"

	csv1 "github.com/openhcp/openhcp/cluster-service/api/v1"
	"github.com/openhcp/openhcp/cluster-service/pkg/store"
)

// TestCancelUpgradeWhileStatusIsWritten: the controller writes a cluster's status over and over
// (as the feedback heartbeat does) while an SRE cancels its pending upgrades; every cancel
// succeeds. The deterministic form of the race (read, status write, cancel) is the store's
// TestAdvanceUpgradeAfterStatusWrite; this one is the RPC an SRE calls.
func TestCancelUpgradeWhileStatusIsWritten(t *testing.T) {
	e := start(t)
	ctx := context.Background()
	e.register(t, "mc-1", 10)
	cl := e.clusterAt(t, 1, "busy", "4.19.16")

	writerCtx, stop := context.WithCancel(ctx)
	var wg sync.WaitGroup
	var writes int
	var writeErr error
	wg.Add(1)
	go func() {
		defer wg.Done()
		for n := 0; writerCtx.Err() == nil; n++ {
			cur, err := e.st.GetCluster(ctx, cl.GetId())
			if err != nil {
				writeErr = err
				return
			}
			st := &csv1.ClusterStatus{State: csv1.ClusterState_CLUSTER_STATE_READY, Message: fmt.Sprint(n), Upgrade: cur.Status.GetUpgrade()}
			if _, err := e.st.UpdateStatus(ctx, cur.ID, cur.Revision, st); err != nil && !errors.Is(err, store.ErrConflict) {
				writeErr = err
				return
			}
			writes++
		}
	}()
	const rounds = 20
	for i := range rounds {
		up, err := e.clusters.UpdateCluster(ctx, &csv1.UpdateClusterRequest{Id: cl.GetId(), Update: &csv1.ClusterUpdate{VersionId: "4.19.17"}})
		if err != nil {
			t.Fatalf("round %d: start an upgrade: %v", i, err)
		}
		p, err := e.upgrades.CancelUpgradePolicy(ctx, &csv1.CancelUpgradePolicyRequest{Id: up.GetStatus().GetUpgrade().GetId(), Reason: "CHG-2"})
		if err != nil {
			t.Fatalf("round %d: cancel while status is written: %v (%s)", i, err, status.Code(err))
		}
		if p.GetState() != csv1.UpgradePolicyState_UPGRADE_POLICY_STATE_FAILED {
			t.Fatalf("round %d: policy %v after the cancel", i, p)
		}
	}
	stop()
	wg.Wait()
	if writeErr != nil {
		t.Fatal(writeErr)
	}
	if writes < rounds {
		t.Fatalf("only %d status writes during %d cancels: the race was not exercised", writes, rounds)
	}
	t.Logf("%d cancels during %d status writes", rounds, writes)
}
