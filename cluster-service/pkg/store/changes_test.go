package store

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	csv1 "github.com/openhcp/openhcp/cluster-service/api/v1"
	"github.com/openhcp/openhcp/cluster-service/pkg/placement"
	"github.com/openhcp/openhcp/internal/pgserver/pgservertest"
)

// woken reports whether ch fires within wait.
func woken(ch <-chan struct{}, wait time.Duration) bool {
	select {
	case <-ch:
		return true
	case <-time.After(wait):
		return false
	}
}

// drain takes the wake-up the listener sends when it (re)connects, if it comes; it waits
// generously, since on a busy machine the listener may connect late.
func drain(ch <-chan struct{}) { woken(ch, 2*time.Second) }

// TestChangesWakeOnlyReadersOfTheWrittenLog: every event log has its own change feed, so a
// write wakes the readers of the log it wrote to and no other; a reader of every log woke once
// per write and read its own log for nothing (docs/performance.md, "CPU per operation").
// Both ways of writing (locked, pipelined) are run, as each sends its own NOTIFY.
func TestChangesWakeOnlyReadersOfTheWrittenLog(t *testing.T) {
	for _, pipelined := range []bool{false, true} {
		t.Run(map[bool]string{false: "locked_writes", true: "pipelined_writes"}[pipelined], func(t *testing.T) {
			changesPerLog(t, pipelined)
		})
	}
}

func changesPerLog(t *testing.T, pipelined bool) {
	dsn := newDSN(t)
	s := open(t, dsn)
	s.SetPipelinedWrites(pipelined)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	register(t, s, "mc1", 10)

	clusters, stopClusters := s.Changes()
	defer stopClusters()
	pools, stopPools := s.NodePools().Changes()
	defer stopPools()
	auths, stopAuths := s.ExternalAuths().Changes()
	defer stopAuths()
	creds, stopCreds := s.CredentialChanges()
	defer stopCreds()
	feeds := map[string]<-chan struct{}{"cluster": clusters, "node pool": pools, "external auth": auths, "break-glass": creds}
	// A write is seen within this; a feed that stays quiet this long after the woken one
	// fired was not woken by that write (notifications of one commit arrive together).
	const seen, quiet = 30 * time.Second, 500 * time.Millisecond
	// A first write that the cluster feed sees proves the listener is up; what the feeds hold
	// then (the wake-up of every feed when the listener connected) is drained.
	c, _, err := s.CreateCluster(ctx, newCluster(csid(1), armID("a")), placement.LeastLoaded{})
	if err != nil {
		t.Fatal(err)
	}
	if !woken(clusters, seen) {
		t.Fatalf("the cluster feed was not woken by a create within %s", seen)
	}
	for _, ch := range feeds {
		woken(ch, quiet)
	}

	for _, tc := range []struct {
		name  string
		write func() error
		wakes string
	}{
		{"cluster_status_write_wakes_only_the_cluster_feed", func() error {
			_, err := s.UpdateStatus(ctx, c.ID, c.Revision, &csv1.ClusterStatus{State: csv1.ClusterState_CLUSTER_STATE_INSTALLING, Message: "installing"})
			return err
		}, "cluster"},
		{"node_pool_create_wakes_only_the_node_pool_feed", func() error {
			_, _, err := s.NodePools().Create(ctx, newPool(csid(101), c.ID, armID("a")+"/nodePools/np1"))
			return err
		}, "node pool"},
		{"cluster_create_wakes_only_the_cluster_feed", func() error {
			_, _, err := s.CreateCluster(ctx, newCluster(csid(2), armID("b")), placement.LeastLoaded{})
			return err
		}, "cluster"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := tc.write(); err != nil {
				t.Fatal(err)
			}
			if !woken(feeds[tc.wakes], seen) {
				t.Fatalf("the %s feed was not woken by its write within %s", tc.wakes, seen)
			}
			for name, ch := range feeds {
				if name != tc.wakes && woken(ch, quiet) {
					t.Errorf("the %s feed was woken by a write to the %s log", name, tc.wakes)
				}
			}
		})
	}
}

// TestChangesWakeEveryReaderOnAPayloadTheyDoNotKnow: a notification whose payload names no log
// (an older replica's, which sent the revision, during a rolling upgrade) wakes every reader,
// so no reader misses a commit it cannot attribute.
func TestChangesWakeEveryReaderOnAPayloadTheyDoNotKnow(t *testing.T) {
	dsn := newDSN(t)
	s := open(t, dsn)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	clusters, stopClusters := s.Changes()
	defer stopClusters()
	pools, stopPools := s.NodePools().Changes()
	defer stopPools()
	drain(clusters)
	drain(pools)
	pool, err := pgxpool.New(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	if _, err := pool.Exec(ctx, `SELECT pg_notify($1, '12345')`, notifyChannel); err != nil {
		t.Fatal(err)
	}
	for name, ch := range map[string]<-chan struct{}{"cluster": clusters, "node pool": pools} {
		if !woken(ch, 30*time.Second) {
			t.Errorf("the %s feed was not woken by a notification naming no log", name)
		}
	}
}

// TestChangesCoalescedWakeUpStillDeliversEveryEvent: a reader that was woken once for several
// commits (the feed holds one pending wake-up) reads every one of them from its log; and a
// reader whose listener reconnected is woken even though its notification was lost.
func TestChangesCoalescedWakeUpStillDeliversEveryEvent(t *testing.T) {
	dsn := newDSN(t)
	s := open(t, dsn)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	register(t, s, "mc1", 10)
	ch, stop := s.Changes()
	defer stop()
	drain(ch)
	after, err := s.CurrentRevision(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for i := 1; i <= 3; i++ {
		if _, _, err := s.CreateCluster(ctx, newCluster(csid(i), armID("c"+csid(i))), placement.LeastLoaded{}); err != nil {
			t.Fatal(err)
		}
	}
	if !woken(ch, 30*time.Second) {
		t.Fatal("not woken by three creates")
	}
	evs, err := s.EventsAfter(ctx, after, 100)
	if err != nil || len(evs) != 3 {
		t.Fatalf("after one wake-up for three creates, EventsAfter = %d events (%v), want 3", len(evs), err)
	}

	t.Run("a_reconnected_listener_wakes_every_reader", func(t *testing.T) {
		pools, stopPools := s.NodePools().Changes()
		defer stopPools()
		drain(ch)
		drain(pools)
		pgservertest.KillListener(ctx, t, dsn)
		if !woken(ch, 60*time.Second) || !woken(pools, 60*time.Second) {
			t.Fatal("a reader was not woken after the listener reconnected")
		}
	})
}
