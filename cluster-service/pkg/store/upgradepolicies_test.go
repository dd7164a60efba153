package store

import (
	"context"
	"errors"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	csv1 "github.com/openhcp/openhcp/cluster-service/api/v1"
	"github.com/openhcp/openhcp/cluster-service/pkg/placement"
)

// TestAdvanceUpgradeAfterStatusWrite: a caller read the cluster and its pending upgrade policy,
// then the controller wrote status (a feedback heartbeat) before the caller advanced the policy.
// A cancel, guarded by the policy's state alone, succeeds and keeps that status; the same cancel
// again, from the same stale read, conflicts on the policy's state; a step conditional on the
// revision read (the controller's) conflicts.
func TestAdvanceUpgradeAfterStatusWrite(t *testing.T) {
	ctx := context.Background()
	s := open(t, newDSN(t))
	register(t, s, "mc-1", 10)
	const (
		pending = csv1.UpgradePolicyState_UPGRADE_POLICY_STATE_PENDING
		failed  = csv1.UpgradePolicyState_UPGRADE_POLICY_STATE_FAILED
		started = csv1.UpgradePolicyState_UPGRADE_POLICY_STATE_STARTED
	)
	for i, tc := range []struct {
		name   string
		pre    func(read *Cluster) Precondition
		to     csv1.UpgradePolicyState
		spec   bool // the step writes a spec (STARTED)
		twice  bool // advance again from the same read
		want   error
		second error
	}{
		{name: "cancel_succeeds_and_keeps_the_status", pre: func(*Cluster) Precondition { return Precondition{} }, to: failed, twice: true, second: ErrConflict},
		{name: "cancel_on_spec_revision_succeeds", pre: func(c *Cluster) Precondition { return Precondition{SpecRevision: c.SpecRevision} }, to: failed},
		{name: "step_on_the_revision_read_conflicts", pre: func(c *Cluster) Precondition { return Precondition{Revision: c.Revision} }, to: started, spec: true, want: ErrConflict},
	} {
		t.Run(tc.name, func(t *testing.T) {
			id := csid(10 + i)
			if _, _, err := s.CreateCluster(ctx, newCluster(id, armID(tc.name)), placement.LeastLoaded{}); err != nil {
				t.Fatal(err)
			}
			p := &csv1.UpgradePolicy{Id: csid(100 + i), ClusterId: id, Type: csv1.UpgradeType_UPGRADE_TYPE_CONTROL_PLANE,
				State: pending, FromVersion: "4.19.7", ToVersion: "4.20.3", NextRun: timestamppb.New(time.Now())}
			read, err := s.UpdateCluster(ctx, id, Precondition{}, func(*Cluster, *csv1.UpgradePolicy, ClusterChildren) (ClusterChange, error) {
				return ClusterChange{Upgrade: p}, nil
			})
			if err != nil {
				t.Fatal(err)
			}
			st := proto.Clone(read.Status).(*csv1.ClusterStatus)
			st.State, st.FeedbackGeneration = csv1.ClusterState_CLUSTER_STATE_READY, 7
			written, err := s.UpdateStatus(ctx, id, read.Revision, st)
			if err != nil {
				t.Fatal(err)
			}
			next := proto.Clone(p).(*csv1.UpgradePolicy)
			next.State = tc.to
			var spec *csv1.ClusterSpec
			if tc.spec {
				spec = proto.Clone(read.Spec).(*csv1.ClusterSpec)
				spec.VersionId = "4.20.3"
			}
			out, err := s.AdvanceUpgrade(ctx, id, tc.pre(read), pending, next, spec)
			if !errors.Is(err, tc.want) {
				t.Fatalf("AdvanceUpgrade after a status write = %v; want %v", err, tc.want)
			}
			cur, gerr := s.GetCluster(ctx, id)
			if gerr != nil {
				t.Fatal(gerr)
			}
			if tc.want != nil {
				if cur.Revision != written.Revision || cur.Status.GetUpgrade().GetState() != pending || cur.Spec.GetVersionId() != "4.19.7" {
					t.Fatalf("a refused step changed the cluster: revision %d (was %d), %v", cur.Revision, written.Revision, cur)
				}
				return
			}
			if out.Status.GetUpgrade().GetState() != tc.to || out.Status.GetFeedbackGeneration() != 7 ||
				out.Status.GetState() != csv1.ClusterState_CLUSTER_STATE_READY || out.Revision <= written.Revision {
				t.Fatalf("after the step: revision %d (status written at %d), status %v", out.Revision, written.Revision, out.Status)
			}
			if tc.twice {
				if _, err := s.AdvanceUpgrade(ctx, id, tc.pre(read), pending, next, nil); !errors.Is(err, tc.second) {
					t.Fatalf("the same step again = %v; want %v", err, tc.second)
				}
			}
		})
	}
}
