package store

import (
	"context"
	"errors"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	csv1 "github.com/openhcp/openhcp/cluster-service/api/v1"
	"github.com/openhcp/openhcp/cluster-service/pkg/placement"
)

func newPool(id, clusterID, arm string) *NodePool {
	return &NodePool{ID: id, ClusterID: clusterID, ARMResourceID: arm, Spec: &csv1.NodePoolSpec{Replicas: 2, VersionId: "4.19.7"}}
}

func TestNodePoolStore(t *testing.T) {
	ctx := context.Background()
	s := open(t, newDSN(t))
	register(t, s, "mc-1", 10)
	cl, _, err := s.CreateCluster(ctx, newCluster(csid(1), armID("one")), placement.LeastLoaded{})
	if err != nil {
		t.Fatal(err)
	}
	np, created, err := s.NodePools().Create(ctx, newPool(csid(100), cl.ID, armID("one")+"/nodePools/a"))
	if err != nil || !created || np.Status.State != csv1.NodePoolState_NODE_POOL_STATE_PENDING {
		t.Fatalf("CreateNodePool = %v, %v, %v", np, created, err)
	}

	t.Run("revisions_share_the_cluster_sequence", func(t *testing.T) {
		if np.Revision <= cl.Revision {
			t.Fatalf("pool revision %d not after cluster revision %d", np.Revision, cl.Revision)
		}
		next, err := s.UpdateStatus(ctx, cl.ID, cl.Revision, &csv1.ClusterStatus{State: csv1.ClusterState_CLUSTER_STATE_INSTALLING})
		if err != nil || next.Revision <= np.Revision {
			t.Fatalf("cluster write after the pool: revision %d, %v", next.Revision, err)
		}
	})
	t.Run("unknown_cluster_is_not_found", func(t *testing.T) {
		if _, _, err := s.NodePools().Create(ctx, newPool(csid(101), csid(9), armID("nine")+"/nodePools/a")); !errors.Is(err, ErrNotFound) {
			t.Fatalf("got %v, want ErrNotFound", err)
		}
	})
	t.Run("status_and_spec_writes_are_conditional", func(t *testing.T) {
		if _, err := s.NodePools().UpdateStatus(ctx, np.ID, np.Revision-1, &csv1.NodePoolStatus{}); !errors.Is(err, ErrConflict) {
			t.Fatalf("stale status write: %v", err)
		}
		if _, err := replaceNodePoolSpec(ctx, s, np.ID, np.Revision-1, &csv1.NodePoolSpec{Replicas: 3}); !errors.Is(err, ErrConflict) {
			t.Fatalf("stale spec write: %v", err)
		}
		same, err := replaceNodePoolSpec(ctx, s, np.ID, 0, np.Spec)
		if err != nil || same.Revision != np.Revision {
			t.Fatalf("identical spec: revision %d, %v; want unchanged %d", same.Revision, err, np.Revision)
		}
	})
	t.Run("a_spec_change_of_a_ready_pool_is_updating_in_the_same_revision", func(t *testing.T) {
		cur, err := s.NodePools().Get(ctx, np.ID)
		if err != nil {
			t.Fatal(err)
		}
		ready, err := s.NodePools().UpdateStatus(ctx, np.ID, cur.Revision, &csv1.NodePoolStatus{State: csv1.NodePoolState_NODE_POOL_STATE_READY, Replicas: 2})
		if err != nil {
			t.Fatal(err)
		}
		spec := proto.Clone(ready.Spec).(*csv1.NodePoolSpec)
		spec.Labels = map[string]string{"tier": "web"}
		got, err := replaceNodePoolSpec(ctx, s, np.ID, ready.Revision, spec)
		if err != nil {
			t.Fatal(err)
		}
		if got.Status.State != csv1.NodePoolState_NODE_POOL_STATE_UPDATING || got.Status.Replicas != 2 || got.Revision <= ready.Revision {
			t.Fatalf("after a spec change of a READY pool: state %v, replicas %d, revision %d (was %d); want UPDATING at the new revision",
				got.Status.State, got.Status.Replicas, got.Revision, ready.Revision)
		}
	})
	// An ERROR (Maestro refused its work, HyperShift found it invalid) speaks for the spec it
	// observed only: a new spec is UPDATING in the same revision, with the error code cleared, so
	// the update that fixes the pool is not failed by the old ERROR before the controller has
	// seen the new spec.
	t.Run("a_spec_change_of_a_failed_pool_is_updating_in_the_same_revision", func(t *testing.T) {
		cur, err := s.NodePools().Get(ctx, np.ID)
		if err != nil {
			t.Fatal(err)
		}
		failed, err := s.NodePools().UpdateStatus(ctx, np.ID, cur.Revision, &csv1.NodePoolStatus{State: csv1.NodePoolState_NODE_POOL_STATE_ERROR,
			ErrorCode: "ManifestWorkRefused", Message: "too large", ObservedRevision: cur.SpecRevision})
		if err != nil {
			t.Fatal(err)
		}
		spec := proto.Clone(failed.Spec).(*csv1.NodePoolSpec)
		spec.Labels = map[string]string{"tier": "db"}
		got, err := replaceNodePoolSpec(ctx, s, np.ID, failed.Revision, spec)
		if err != nil {
			t.Fatal(err)
		}
		if got.Status.State != csv1.NodePoolState_NODE_POOL_STATE_UPDATING || got.Status.ErrorCode != "" || got.Revision <= failed.Revision {
			t.Fatalf("after a spec change of an ERROR pool: state %v, code %q, revision %d (was %d); want UPDATING, no code, at the new revision",
				got.Status.State, got.Status.ErrorCode, got.Revision, failed.Revision)
		}
	})
	t.Run("cluster_delete_marks_pools_and_remove_waits_for_them", func(t *testing.T) {
		dc, err := s.MarkDeleting(ctx, cl.ID)
		if err != nil {
			t.Fatal(err)
		}
		got, err := s.NodePools().Get(ctx, np.ID)
		if err != nil || !got.Deleting || got.Status.State != csv1.NodePoolState_NODE_POOL_STATE_UNINSTALLING {
			t.Fatalf("pool of deleting cluster = %+v, %v", got, err)
		}
		if err := s.RemoveCluster(ctx, cl.ID, dc.Revision); !errors.Is(err, ErrConflict) {
			t.Fatalf("RemoveCluster with a pool left: %v, want ErrConflict", err)
		}
		if _, _, err := s.NodePools().Create(ctx, newPool(csid(102), cl.ID, armID("one")+"/nodePools/b")); !errors.Is(err, ErrDeleting) {
			t.Fatalf("create on a deleting cluster: %v, want ErrDeleting", err)
		}
		if err := s.NodePools().Remove(ctx, np.ID, got.Revision); err != nil {
			t.Fatal(err)
		}
		if err := s.RemoveCluster(ctx, cl.ID, dc.Revision); err != nil {
			t.Fatalf("RemoveCluster once the pool is gone: %v", err)
		}
	})
	t.Run("tombstones_are_pruned_and_compaction_recorded", func(t *testing.T) {
		evs, err := s.NodePools().EventsAfter(ctx, 0, 100)
		if err != nil || len(evs) != 1 || evs[0].Type != csv1.EventType_EVENT_TYPE_DELETED || evs[0].Object.ID != np.ID {
			t.Fatalf("events = %+v, %v; want the pool's tombstone only", evs, err)
		}
		n, err := s.PruneTombstones(ctx, time.Now().Add(time.Minute))
		if err != nil || n != 2 { // the pool's and the cluster's
			t.Fatalf("PruneTombstones = %d, %v; want 2", n, err)
		}
		if rev, err := s.NodePools().CompactedRevision(ctx); err != nil || rev != evs[0].Revision {
			t.Fatalf("node pool compacted revision = %d, %v; want %d", rev, err, evs[0].Revision)
		}
	})
}

// TestSpecRevisionAndObservedRevision: spec_revision moves only with the spec (the migration's
// trigger), status writes move revision but not spec_revision, the controller's status write is
// stamped with the spec_revision it was derived from, and a spec write keeps the old
// observed_revision (nothing has observed the new spec yet).
func TestSpecRevisionAndObservedRevision(t *testing.T) {
	ctx := context.Background()
	s := open(t, newDSN(t))
	register(t, s, "mc-1", 10)
	cl, _, err := s.CreateCluster(ctx, newCluster(csid(1), armID("one")), placement.LeastLoaded{})
	if err != nil {
		t.Fatal(err)
	}
	if cl.SpecRevision != cl.Revision {
		t.Fatalf("new cluster: spec_revision %d, revision %d; want equal", cl.SpecRevision, cl.Revision)
	}
	np, _, err := s.NodePools().Create(ctx, newPool(csid(100), cl.ID, armID("one")+"/nodePools/a"))
	if err != nil || np.SpecRevision != np.Revision {
		t.Fatalf("new pool: %+v, %v; want spec_revision = revision", np, err)
	}
	ready, err := s.NodePools().UpdateStatus(ctx, np.ID, np.Revision, &csv1.NodePoolStatus{State: csv1.NodePoolState_NODE_POOL_STATE_READY, Replicas: 2})
	if err != nil {
		t.Fatal(err)
	}
	if ready.Revision <= np.Revision || ready.SpecRevision != np.SpecRevision || ready.Status.ObservedRevision != np.SpecRevision {
		t.Fatalf("status write: revision %d, spec_revision %d, observed %d; want a new revision, spec_revision and observed %d",
			ready.Revision, ready.SpecRevision, ready.Status.ObservedRevision, np.SpecRevision)
	}
	again, err := s.NodePools().UpdateStatus(ctx, np.ID, ready.Revision, &csv1.NodePoolStatus{State: csv1.NodePoolState_NODE_POOL_STATE_READY, Replicas: 2})
	if err != nil || again.Revision != ready.Revision {
		t.Fatalf("the same derived status again: revision %d, %v; want unchanged %d", again.Revision, err, ready.Revision)
	}
	spec := proto.Clone(ready.Spec).(*csv1.NodePoolSpec)
	spec.Replicas = 5
	changed, err := replaceNodePoolSpec(ctx, s, np.ID, 0, spec)
	if err != nil {
		t.Fatal(err)
	}
	if changed.SpecRevision != changed.Revision || changed.SpecRevision <= ready.Revision || changed.Status.ObservedRevision != np.SpecRevision {
		t.Fatalf("spec write: revision %d, spec_revision %d, observed %d; want spec_revision = revision and observed still %d",
			changed.Revision, changed.SpecRevision, changed.Status.ObservedRevision, np.SpecRevision)
	}
	// A READY derived afterwards is about the new spec: observed reaches the update's revision,
	// which is the rule the backend ends an update with.
	after, err := s.NodePools().UpdateStatus(ctx, np.ID, changed.Revision, &csv1.NodePoolStatus{State: csv1.NodePoolState_NODE_POOL_STATE_READY, Replicas: 5})
	if err != nil || after.Status.ObservedRevision != changed.SpecRevision || after.SpecRevision != changed.SpecRevision {
		t.Fatalf("status after the spec write: %+v, %v", after, err)
	}
	// Events carry spec_revision (a watcher rebuilds the pool from them).
	evs, err := s.NodePools().EventsAfter(ctx, changed.Revision-1, 10)
	if err != nil || len(evs) == 0 || evs[len(evs)-1].Object.SpecRevision != changed.SpecRevision {
		t.Fatalf("events %+v, %v", evs, err)
	}
	// Clusters and external auths: a status write is stamped with the spec it reflects.
	cs, err := s.UpdateStatus(ctx, cl.ID, cl.Revision, &csv1.ClusterStatus{State: csv1.ClusterState_CLUSTER_STATE_INSTALLING})
	if err != nil || cs.Status.ObservedRevision != cl.SpecRevision || cs.SpecRevision != cl.SpecRevision {
		t.Fatalf("cluster status write: %+v, %v", cs, err)
	}
}

// replaceNodePoolSpec writes spec whole through UpdateNodePool (revision 0: unconditional), as
// a test's shorthand; the server always merges a partial update in decide.
func replaceNodePoolSpec(ctx context.Context, s *Store, id string, revision int64, spec *csv1.NodePoolSpec) (*NodePool, error) {
	return s.NodePools().Update(ctx, id, Precondition{Revision: revision}, func(*Cluster, *NodePool) (*csv1.NodePoolSpec, *csv1.UpgradePolicy, error) { return spec, nil, nil })
}
