package store

import (
	"context"
	"errors"
	"testing"

	csv1 "github.com/openhcp/openhcp/cluster-service/api/v1"
	"github.com/openhcp/openhcp/cluster-service/pkg/placement"
)

// TestStatusWritesBatchedOrNot: a status write of a cluster or a node pool does the same with
// its statements in two batches as one by one (SetBatchedStatusWrites): it moves the revision,
// stores the status with the transaction's time, records the event at the same revision,
// refuses a stale revision, and leaves an identical status unwritten.
func TestStatusWritesBatchedOrNot(t *testing.T) {
	ctx := context.Background()
	s := open(t, newDSN(t))
	register(t, s, "mc-1", 10)
	for i, batched := range []bool{false, true} {
		name := map[bool]string{false: "one_by_one", true: "batched"}[batched]
		t.Run(name, func(t *testing.T) {
			s.SetBatchedStatusWrites(batched)
			defer s.SetBatchedStatusWrites(false)
			cl, _, err := s.CreateCluster(ctx, newCluster(csid(10+i), armID(name)), placement.LeastLoaded{})
			if err != nil {
				t.Fatal(err)
			}
			np, _, err := s.CreateNodePool(ctx, newPool(csid(20+i), cl.ID, armID(name)+"/nodePools/a"))
			if err != nil {
				t.Fatal(err)
			}

			st := &csv1.ClusterStatus{State: csv1.ClusterState_CLUSTER_STATE_INSTALLING, Message: name}
			written, err := s.UpdateStatus(ctx, cl.ID, cl.Revision, st)
			if err != nil || written.Revision <= np.Revision || written.Status.GetMessage() != name {
				t.Fatalf("UpdateStatus = %+v, %v; want a revision after %d", written, err, np.Revision)
			}
			stored, err := s.GetCluster(ctx, cl.ID)
			if err != nil || stored.Revision != written.Revision || !stored.UpdateTime.Equal(written.UpdateTime) || stored.Status.GetMessage() != name {
				t.Fatalf("stored %+v (%v), returned %+v", stored, err, written)
			}
			evs, err := s.EventsAfter(ctx, written.Revision-1, 10)
			if err != nil || len(evs) != 1 || evs[0].Revision != written.Revision || evs[0].Cluster.Status.GetMessage() != name ||
				!evs[0].Cluster.UpdateTime.Equal(written.UpdateTime) {
				t.Fatalf("events after %d: %+v, %v", written.Revision-1, evs, err)
			}
			if _, err := s.UpdateStatus(ctx, cl.ID, cl.Revision, st); !errors.Is(err, ErrConflict) {
				t.Fatalf("write at a stale revision: %v, want ErrConflict", err)
			}
			same, err := s.UpdateStatus(ctx, cl.ID, written.Revision, st)
			if err != nil || same.Revision != written.Revision {
				t.Fatalf("identical status: revision %d → %+v, %v", written.Revision, same, err)
			}

			pst := &csv1.NodePoolStatus{State: csv1.NodePoolState_NODE_POOL_STATE_READY, Replicas: 2}
			pool, err := s.UpdateNodePoolStatus(ctx, np.ID, np.Revision, pst)
			if err != nil || pool.Revision <= written.Revision || pool.Status.GetReplicas() != 2 {
				t.Fatalf("UpdateNodePoolStatus = %+v, %v", pool, err)
			}
			storedPool, err := s.GetNodePool(ctx, np.ID)
			if err != nil || storedPool.Revision != pool.Revision || !storedPool.UpdateTime.Equal(pool.UpdateTime) {
				t.Fatalf("stored pool %+v (%v), returned %+v", storedPool, err, pool)
			}
			pevs, err := s.NodePoolEventsAfter(ctx, pool.Revision-1, 10)
			if err != nil || len(pevs) != 1 || pevs[0].NodePool.Revision != pool.Revision || pevs[0].NodePool.Status.GetReplicas() != 2 {
				t.Fatalf("node pool events after %d: %+v, %v", pool.Revision-1, pevs, err)
			}
			if _, err := s.UpdateNodePoolStatus(ctx, np.ID, np.Revision, pst); !errors.Is(err, ErrConflict) {
				t.Fatalf("pool write at a stale revision: %v, want ErrConflict", err)
			}
		})
	}
}
