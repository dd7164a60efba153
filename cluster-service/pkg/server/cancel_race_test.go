package server

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

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
	var writes atomic.Int64
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
			writes.Add(1)
		}
	}()
	// The writer's first status is in before the first cancel, so that each cancel's write
	// has a status of the writer's to keep.
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		cur, err := e.st.GetCluster(ctx, cl.GetId())
		if err != nil {
			t.Fatal(err)
		}
		if cur.Status.GetState() == csv1.ClusterState_CLUSTER_STATE_READY {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the writer wrote no status")
		}
	}
	const rounds = 20
	for i := range rounds {
		// At least one status write of the writer's lands between two rounds, however busy the
		// machine (a fixed count at the end failed under load: 17 writes for 20 cancels).
		for seen, deadline := writes.Load(), time.Now().Add(30*time.Second); writes.Load() == seen; time.Sleep(time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("round %d: the writer wrote no status for 30 s", i)
			}
		}
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
		// The cancel's write keeps the status written since its read, and moves
		// status.upgrade with the policy row. The writer copies status.upgrade from its read,
		// so it too must leave the canceled policy in place once it reads after the cancel.
		row, err := e.st.GetUpgradePolicy(ctx, p.GetId())
		if err != nil {
			t.Fatal(err)
		}
		if !proto.Equal(row, p) {
			t.Fatalf("round %d: the cancel answered %v; the policy row is %v", i, p, row)
		}
		wantMessage := "The upgrade from 4.19.16 to 4.19.17 was canceled: CHG-2"
		if row.GetMessage() != wantMessage {
			t.Fatalf("round %d: policy message %q, want %q", i, row.GetMessage(), wantMessage)
		}
		got, err := e.st.GetCluster(ctx, cl.GetId())
		if err != nil {
			t.Fatal(err)
		}
		if !proto.Equal(got.Status.GetUpgrade(), row) {
			t.Fatalf("round %d: the cluster's status.upgrade %v; the policy row is %v", i, got.Status.GetUpgrade(), row)
		}
		if _, err := strconv.Atoi(got.Status.GetMessage()); got.Status.GetState() != csv1.ClusterState_CLUSTER_STATE_READY || err != nil {
			t.Fatalf("round %d: the status the writer wrote did not survive the cancel: state %s, message %q", i, got.Status.GetState(), got.Status.GetMessage())
		}
	}
	stop()
	wg.Wait()
	if writeErr != nil {
		t.Fatal(writeErr)
	}
	t.Logf("%d cancels during %d status writes", rounds, writes.Load())
}

// TestCancelUpgradeThatMovedOn: the controller moves the policy on between the cancel's read of
// it (PENDING) and the cancel's guarded write. The test holds the cluster's row (which the
// cancel's write locks first) in a transaction that moves the policy, lets the cancel read and
// reach that lock, and commits. A policy the controller STARTED can no longer be canceled: the
// answer is FailedPrecondition with its state, not Aborted (a "retry" that can never succeed).
// One it only SCHEDULED is still cancellable, and the cancel goes through. Seen failing first
// with Aborted in both cases.
func TestCancelUpgradeThatMovedOn(t *testing.T) {
	e := start(t)
	ctx := context.Background()
	e.register(t, "mc-1", 10)
	for i, tc := range []struct {
		to        csv1.UpgradePolicyState
		wantCode  codes.Code
		wantState csv1.UpgradePolicyState
	}{
		{to: csv1.UpgradePolicyState_UPGRADE_POLICY_STATE_STARTED, wantCode: codes.FailedPrecondition, wantState: csv1.UpgradePolicyState_UPGRADE_POLICY_STATE_STARTED},
		{to: csv1.UpgradePolicyState_UPGRADE_POLICY_STATE_SCHEDULED, wantCode: codes.OK, wantState: csv1.UpgradePolicyState_UPGRADE_POLICY_STATE_FAILED},
	} {
		t.Run(tc.to.String(), func(t *testing.T) {
			cl := e.clusterAt(t, 10+i, fmt.Sprintf("moved-%d", i), "4.19.16")
			up, err := e.clusters.UpdateCluster(ctx, &csv1.UpdateClusterRequest{Id: cl.GetId(), Update: &csv1.ClusterUpdate{VersionId: "4.19.17"}})
			if err != nil {
				t.Fatal(err)
			}
			policyID := up.GetStatus().GetUpgrade().GetId()
			if s := up.GetStatus().GetUpgrade().GetState(); s != csv1.UpgradePolicyState_UPGRADE_POLICY_STATE_PENDING {
				t.Fatalf("new policy %s, want PENDING", s)
			}
			conn, err := pgx.Connect(ctx, e.dsn)
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close(ctx)
			tx, err := conn.Begin(ctx)
			if err != nil {
				t.Fatal(err)
			}
			defer tx.Rollback(ctx) //nolint:errcheck
			watch, err := pgx.Connect(ctx, e.dsn)
			if err != nil {
				t.Fatal(err)
			}
			defer watch.Close(ctx)
			if _, err := tx.Exec(ctx, `SELECT 1 FROM clusters WHERE id = $1 FOR UPDATE`, cl.GetId()); err != nil {
				t.Fatal(err)
			}
			if _, err := tx.Exec(ctx, `UPDATE upgrade_policies SET state = $2 WHERE id = $1`, policyID, strings.TrimPrefix(tc.to.String(), "UPGRADE_POLICY_STATE_")); err != nil {
				t.Fatal(err)
			}
			type answer struct {
				p   *csv1.UpgradePolicy
				err error
			}
			done := make(chan answer, 1)
			go func() {
				p, err := e.upgrades.CancelUpgradePolicy(ctx, &csv1.CancelUpgradePolicyRequest{Id: policyID, Reason: "CHG-3"})
				done <- answer{p, err}
			}()
			// The cancel has read the policy (still PENDING to it) once it waits on the row lock.
			deadline := time.Now().Add(30 * time.Second)
			for {
				var waiting int
				if err := watch.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND datname = current_database()`).Scan(&waiting); err != nil {
					t.Fatal(err)
				}
				if waiting > 0 {
					break
				}
				if time.Now().After(deadline) {
					t.Fatal("the cancel never waited on the cluster's row")
				}
				time.Sleep(10 * time.Millisecond)
			}
			if err := tx.Commit(ctx); err != nil {
				t.Fatal(err)
			}
			var got answer
			select {
			case got = <-done:
			case <-time.After(30 * time.Second):
				t.Fatal("no answer from the cancel")
			}
			if code := status.Code(got.err); code != tc.wantCode {
				t.Fatalf("cancel of a policy moved to %s: %v (%s), want %s", tc.to, got.err, code, tc.wantCode)
			}
			if tc.wantCode == codes.FailedPrecondition && !strings.Contains(status.Convert(got.err).Message(), "is started; only a pending or scheduled upgrade can be canceled") {
				t.Fatalf("message %q does not say the upgrade's state", status.Convert(got.err).Message())
			}
			p, err := e.st.GetUpgradePolicy(ctx, policyID)
			if err != nil {
				t.Fatal(err)
			}
			if p.GetState() != tc.wantState {
				t.Fatalf("policy %s after the cancel, want %s", p.GetState(), tc.wantState)
			}
		})
	}
}
