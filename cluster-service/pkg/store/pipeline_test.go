package store

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"

	"google.golang.org/protobuf/proto"

	csv1 "github.com/openhcp/openhcp/cluster-service/api/v1"
	"github.com/openhcp/openhcp/cluster-service/pkg/placement"
)

// TestWritesPipelinedOrLocked: a create, and a status write of a cluster or a node pool, do the
// same as pipelined writes as locked ones (SetPipelinedWrites): a create's event is the stored
// cluster, revision, spec revision and times included; a status write moves the revision, stores
// the status with the transaction's time, records the event at the same revision with the same
// document as the stored row, refuses a stale revision, and leaves an identical status unwritten.
func TestWritesPipelinedOrLocked(t *testing.T) {
	ctx := context.Background()
	s := open(t, newDSN(t))
	register(t, s, "mc-1", 10)
	for i, pipelined := range []bool{false, true} {
		name := map[bool]string{false: "locked", true: "pipelined"}[pipelined]
		t.Run(name, func(t *testing.T) {
			s.SetPipelinedWrites(pipelined)
			defer s.SetPipelinedWrites(false)
			cl, created, err := s.CreateCluster(ctx, newCluster(csid(10+i), armID(name)), placement.LeastLoaded{})
			if err != nil || !created || cl.Shard != "mc-1" || cl.SpecRevision != cl.Revision {
				t.Fatalf("CreateCluster = %+v, %v, %v", cl, created, err)
			}
			created1, err := s.EventsAfter(ctx, cl.Revision-1, 10)
			if err != nil || len(created1) != 1 {
				t.Fatalf("events after the create: %+v, %v", created1, err)
			}
			sameCluster(t, "the create's event", created1[0].Cluster, cl)
			again, created, err := s.CreateCluster(ctx, newCluster(csid(90+i), armID(name)), placement.LeastLoaded{})
			if err != nil || created || again.ID != cl.ID {
				t.Fatalf("CreateCluster again = %+v, %v, %v; want the first, not created", again, created, err)
			}
			np, _, err := s.NodePools().Create(ctx, newPool(csid(20+i), cl.ID, armID(name)+"/nodePools/a"))
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
			sameCluster(t, "UpdateStatus's answer", written, stored)
			evs, err := s.EventsAfter(ctx, cl.Revision, 10)
			if err != nil || len(evs) != 1 || evs[0].Revision != written.Revision {
				t.Fatalf("events after %d: %+v, %v", cl.Revision, evs, err)
			}
			sameCluster(t, "the status write's event", evs[0].Cluster, stored)
			if _, err := s.UpdateStatus(ctx, cl.ID, cl.Revision, st); !errors.Is(err, ErrConflict) {
				t.Fatalf("write at a stale revision: %v, want ErrConflict", err)
			}
			same, err := s.UpdateStatus(ctx, cl.ID, written.Revision, st)
			if err != nil || same.Revision != written.Revision {
				t.Fatalf("identical status: revision %d → %+v, %v", written.Revision, same, err)
			}

			pst := &csv1.NodePoolStatus{State: csv1.NodePoolState_NODE_POOL_STATE_READY, Replicas: 2}
			pool, err := s.NodePools().UpdateStatus(ctx, np.ID, np.Revision, pst)
			if err != nil || pool.Revision <= written.Revision || pool.Status.GetReplicas() != 2 {
				t.Fatalf("UpdateNodePoolStatus = %+v, %v", pool, err)
			}
			storedPool, err := s.NodePools().Get(ctx, np.ID)
			if err != nil || storedPool.Revision != pool.Revision || !storedPool.UpdateTime.Equal(pool.UpdateTime) {
				t.Fatalf("stored pool %+v (%v), returned %+v", storedPool, err, pool)
			}
			pevs, err := s.NodePools().EventsAfter(ctx, pool.Revision-1, 10)
			if err != nil || len(pevs) != 1 || pevs[0].Object.Revision != pool.Revision || pevs[0].Object.Status.GetReplicas() != 2 ||
				!pevs[0].Object.UpdateTime.Equal(pool.UpdateTime) || pevs[0].Object.SpecRevision != storedPool.SpecRevision ||
				!proto.Equal(pevs[0].Object.Status, storedPool.Status) {
				t.Fatalf("node pool events after %d: %+v, %v", pool.Revision-1, pevs, err)
			}
			if _, err := s.NodePools().UpdateStatus(ctx, np.ID, np.Revision, pst); !errors.Is(err, ErrConflict) {
				t.Fatalf("pool write at a stale revision: %v, want ErrConflict", err)
			}
		})
	}
}

// sameCluster fails unless got and want are the same stored cluster: every field that events
// carry (secrets are not in events).
func sameCluster(t *testing.T, what string, got, want *Cluster) {
	t.Helper()
	if got.ID != want.ID || got.ARMResourceID != want.ARMResourceID || got.Shard != want.Shard || got.Namespace != want.Namespace ||
		got.Deleting != want.Deleting || got.Revision != want.Revision || got.SpecRevision != want.SpecRevision ||
		!got.CreateTime.Equal(want.CreateTime) || !got.UpdateTime.Equal(want.UpdateTime) ||
		!proto.Equal(got.Spec, want.Spec) || !proto.Equal(got.Status, want.Status) {
		t.Fatalf("%s:\n got %+v\nwant %+v", what, got, want)
	}
}

// TestWatcherMissesNoCommitWhilePipelinedAndLockedWritesMix: the ordering contract with both
// kinds of write at once, as in a rolling upgrade of Cluster Service: one store makes pipelined
// creates, another locked ones, and a watcher follows EventsAfter as fast as it can meanwhile.
// A create's event is never replaced, so one the watcher skipped (a revision that committed
// after the watcher had passed it) would be missing at the end. Without the write lock in a
// pipelined write's pipeline this fails.
func TestWatcherMissesNoCommitWhilePipelinedAndLockedWritesMix(t *testing.T) {
	ctx := context.Background()
	dsn := newDSN(t)
	pipelined, locked := open(t, dsn), open(t, dsn)
	pipelined.SetPipelinedWrites(true)
	register(t, pipelined, "mc-1", 1<<20)
	const writers, perWriter = 4, 60
	var wg sync.WaitGroup
	errs := make(chan error, 2*writers)
	for w := range 2 * writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s := pipelined
			if w%2 == 1 {
				s = locked
			}
			for i := range perWriter {
				n := 1000 + w*perWriter + i
				if _, _, err := s.CreateCluster(ctx, newCluster(csid(n), armID(fmt.Sprint("mix", n))), placement.LeastLoaded{}); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	seen := map[string]bool{}
	var cursor int64
	for finished := false; ; {
		select {
		case <-done:
			finished = true
		default:
		}
		evs, err := pipelined.EventsAfter(ctx, cursor, 1000)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range evs {
			seen[e.Cluster.ID] = true
			cursor = e.Revision
		}
		if finished && len(evs) == 0 {
			break
		}
	}
	close(errs)
	for err := range errs {
		t.Fatalf("create: %v", err)
	}
	all, err := pipelined.ListClusters(ctx, ListOptions{})
	if err != nil || len(all) != 2*writers*perWriter {
		t.Fatalf("clusters = %d (%v), want %d", len(all), err, 2*writers*perWriter)
	}
	var missed []string
	for _, c := range all {
		if !seen[c.ID] {
			missed = append(missed, fmt.Sprintf("%s (revision %d)", c.ID, c.Revision))
		}
	}
	if len(missed) > 0 {
		t.Fatalf("the watcher never saw %d of %d creates: %v", len(missed), len(all), missed)
	}
}

// TestReservationsSpreadABurst: creates placed at the same moment from counts read at the same
// moment spread as the policy means, because each one counts those still in flight.
func TestReservationsSpreadABurst(t *testing.T) {
	ctx := context.Background()
	shards := []placement.Shard{{Name: "mc-1", Status: csv1.ShardStatus_SHARD_STATUS_ACTIVE, MaxClusters: 10},
		{Name: "mc-2", Status: csv1.ShardStatus_SHARD_STATUS_ACTIVE, MaxClusters: 10}}
	var r reservations
	var releases []func()
	got := map[string]int{}
	for i := range 4 {
		shard, release, err := r.choose(ctx, placement.LeastLoaded{}, placement.Request{ClusterID: csid(i)}, shards)
		if err != nil {
			t.Fatal(err)
		}
		got[shard]++
		releases = append(releases, release)
	}
	if got["mc-1"] != 2 || got["mc-2"] != 2 {
		t.Fatalf("4 creates in flight at once went %v, want 2 and 2", got)
	}
	for _, release := range releases {
		release()
	}
	if len(r.inFlight) != 0 {
		t.Fatalf("in flight after every release: %v", r.inFlight)
	}
	full := []placement.Shard{{Name: "mc-1", Status: csv1.ShardStatus_SHARD_STATUS_ACTIVE, MaxClusters: 1}}
	_, release, err := r.choose(ctx, placement.LeastLoaded{}, placement.Request{ClusterID: csid(9)}, full)
	if err != nil {
		t.Fatal(err)
	}
	defer release()
	if _, _, err := r.choose(ctx, placement.LeastLoaded{}, placement.Request{ClusterID: csid(10)}, full); err == nil {
		t.Fatal("a shard with one slot took a second create while the first was in flight")
	}
}
