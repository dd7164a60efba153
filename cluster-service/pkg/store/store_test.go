package store

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	csv1 "github.com/openhcp/openhcp/cluster-service/api/v1"
	"github.com/openhcp/openhcp/cluster-service/pkg/placement"
	"github.com/openhcp/openhcp/internal/envelope"
	"github.com/openhcp/openhcp/internal/envelope/envelopetest"
	"github.com/openhcp/openhcp/internal/pgserver/pgservertest"
)

// pg is one PostgreSQL per test binary; each test gets its own database.
var pg pgservertest.Shared

func TestMain(m *testing.M) { pg.Main(m) }

func newDSN(t *testing.T) string {
	t.Helper()
	return pgservertest.NewDatabase(t, pg.Get(t))
}

// keyrings gives every store opened on one database the same KEK, as replicas of one region
// share theirs.
var keyrings sync.Map // dsn → *envelope.Keyring

func keysFor(t *testing.T, dsn string) *envelope.Keyring {
	k, _ := keyrings.LoadOrStore(dsn, envelopetest.Keyring(t))
	return k.(*envelope.Keyring)
}

func open(t *testing.T, dsn string) *Store {
	t.Helper()
	s, err := Open(context.Background(), dsn, slog.Default(), keysFor(t, dsn))
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(s.Close)
	return s
}

func newCluster(id, arm string) *Cluster {
	return &Cluster{ID: id, ARMResourceID: arm, Namespace: "ocm-dev-" + id,
		Spec: &csv1.ClusterSpec{VersionId: "4.19.7", Azure: &csv1.AzureSpec{Location: "eastus"}}}
}

func armID(name string) string {
	return "/subscriptions/00000000-0000-0000-0000-000000000001/resourceGroups/rg/providers/Microsoft.RedHatOpenShift/hcpOpenShiftClusters/" + name
}

func csid(n int) string { return fmt.Sprintf("%032d", n) }

func register(t testing.TB, s *Store, name string, max int32) {
	t.Helper()
	if _, err := s.RegisterShard(context.Background(), placement.Shard{Name: name, MaxClusters: max}); err != nil {
		t.Fatalf("RegisterShard: %v", err)
	}
}

func TestMigrate(t *testing.T) {
	dsn := newDSN(t)
	ctx := context.Background()
	pool, err := pgxpool.New(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	t.Run("concurrent_start_ups_apply_each_migration_once", func(t *testing.T) {
		var wg sync.WaitGroup
		errs := make([]error, 4)
		for i := range errs {
			wg.Add(1)
			go func() { defer wg.Done(); errs[i] = Migrate(ctx, pool) }()
		}
		wg.Wait()
		for i, err := range errs {
			if err != nil {
				t.Fatalf("Migrate #%d: %v", i, err)
			}
		}
		ms, _ := migrations()
		var n int
		if err := pool.QueryRow(ctx, `SELECT count(*) FROM schema_migrations`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		if n != len(ms) {
			t.Fatalf("schema_migrations rows = %d, want %d", n, len(ms))
		}
	})
	t.Run("rerun_is_a_no_op", func(t *testing.T) {
		if err := Migrate(ctx, pool); err != nil {
			t.Fatalf("second Migrate: %v", err)
		}
		var n int
		if err := pool.QueryRow(ctx, `SELECT count(*) FROM information_schema.tables WHERE table_name IN ('clusters','provision_shards','cluster_events')`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		if n != 3 {
			t.Fatalf("tables = %d, want 3", n)
		}
	})
}

func TestCreateCluster(t *testing.T) {
	ctx := context.Background()
	s := open(t, newDSN(t))
	register(t, s, "mc-1", 10)

	first, created, err := s.CreateCluster(ctx, newCluster(csid(1), armID("one")), placement.LeastLoaded{})
	if err != nil || !created {
		t.Fatalf("CreateCluster = created %v, %v", created, err)
	}
	t.Run("placed_pending_with_revision_and_secrets", func(t *testing.T) {
		if first.Shard != "mc-1" || first.Status.State != csv1.ClusterState_CLUSTER_STATE_PENDING || first.Revision <= 0 {
			t.Fatalf("got shard %q state %v revision %d", first.Shard, first.Status.State, first.Revision)
		}
		if len(first.EtcdEncryptionKey) != 32 || !strings.HasPrefix(first.SSHPublicKey, "ssh-ed25519 ") {
			t.Fatalf("secret material: key %d bytes, ssh %q", len(first.EtcdEncryptionKey), first.SSHPublicKey)
		}
	})
	t.Run("same_arm_id_other_case_returns_existing", func(t *testing.T) {
		got, created, err := s.CreateCluster(ctx, newCluster(csid(2), strings.ToUpper(armID("one"))), placement.LeastLoaded{})
		if err != nil {
			t.Fatal(err)
		}
		if created || got.ID != first.ID || got.Revision != first.Revision {
			t.Fatalf("got created=%v id=%s rev=%d, want existing %s rev %d", created, got.ID, got.Revision, first.ID, first.Revision)
		}
		if got.ARMResourceID != armID("one") {
			t.Fatalf("ARM ID = %q, want the original spelling", got.ARMResourceID)
		}
	})
	t.Run("same_id_other_arm_resource_is_rejected", func(t *testing.T) {
		_, _, err := s.CreateCluster(ctx, newCluster(csid(1), armID("two")), placement.LeastLoaded{})
		if !errors.Is(err, ErrIDInUse) {
			t.Fatalf("err = %v, want ErrIDInUse", err)
		}
	})
	t.Run("list_prefix_wildcards_match_themselves", func(t *testing.T) {
		cs, err := s.ListClusters(ctx, ListOptions{ARMResourceIDPrefix: "/subscriptions/%"})
		if err != nil || len(cs) != 0 {
			t.Fatalf("ListClusters(%%) = %d, %v", len(cs), err)
		}
	})
	t.Run("list_filters_by_prefix_case_insensitively", func(t *testing.T) {
		cs, err := s.ListClusters(ctx, ListOptions{ARMResourceIDPrefix: strings.ToUpper(armID("on"))})
		if err != nil || len(cs) != 1 || cs[0].ID != first.ID {
			t.Fatalf("ListClusters = %d, %v", len(cs), err)
		}
	})
}

// TestCreateClusterWhenRefused: the answers when something refuses come in a fixed order: an
// existing cluster is returned even when no shard has room, an ID taken by another ARM resource
// is ErrIDInUse even then, and only a new cluster is refused for want of room.
func TestCreateClusterWhenRefused(t *testing.T) {
	ctx := context.Background()
	s := open(t, newDSN(t))
	register(t, s, "mc-1", 1)
	first, created, err := s.CreateCluster(ctx, newCluster(csid(1), armID("one")), placement.LeastLoaded{})
	if err != nil || !created {
		t.Fatalf("first create = created %v, %v", created, err)
	}
	cases := []struct {
		name    string
		id, arm string
		wantErr error // nil and code OK: the first cluster, not created again
		code    codes.Code
	}{
		{name: "existing_returned_though_full", id: csid(2), arm: strings.ToUpper(armID("one"))},
		{name: "existing_returned_with_its_own_id", id: csid(1), arm: armID("one")},
		{name: "id_in_use_though_full", id: csid(1), arm: armID("two"), wantErr: ErrIDInUse},
		{name: "new_cluster_refused_when_full", id: csid(3), arm: armID("three"), code: codes.ResourceExhausted},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, created, err := s.CreateCluster(ctx, newCluster(tc.id, tc.arm), placement.LeastLoaded{})
			switch {
			case tc.code != codes.OK:
				if status.Code(err) != tc.code {
					t.Fatalf("err = %v, want %v", err, tc.code)
				}
			case tc.wantErr != nil:
				if !errors.Is(err, tc.wantErr) {
					t.Fatalf("err = %v, want %v", err, tc.wantErr)
				}
			default:
				if err != nil || created || got.ID != first.ID || got.Revision != first.Revision {
					t.Fatalf("got %v created=%v err=%v, want the first cluster %s rev %d", got, created, err, first.ID, first.Revision)
				}
			}
		})
	}
	cs, err := s.ListClusters(ctx, ListOptions{})
	if err != nil || len(cs) != 1 {
		t.Fatalf("clusters = %d (%v), want 1", len(cs), err)
	}
}

// TestConcurrentCreates runs creates at once from two stores (two processes' worth of pools),
// as locked writes and as pipelined ones (SetPipelinedWrites).
func TestConcurrentCreates(t *testing.T) {
	for _, pipelined := range []bool{false, true} {
		t.Run(map[bool]string{false: "locked", true: "pipelined"}[pipelined], func(t *testing.T) { testConcurrentCreates(t, pipelined) })
	}
}

func testConcurrentCreates(t *testing.T, pipelined bool) {
	ctx := context.Background()
	openBoth := func(t *testing.T) (*Store, *Store) {
		dsn := newDSN(t)
		a, b := open(t, dsn), open(t, dsn)
		a.SetPipelinedWrites(pipelined)
		b.SetPipelinedWrites(pipelined)
		return a, b
	}
	t.Run("same_arm_id_makes_one_row", func(t *testing.T) {
		a, b := openBoth(t)
		register(t, a, "mc-1", 100)
		const n = 12
		ids := make([]string, n)
		errs := make([]error, n)
		var wg sync.WaitGroup
		for i := range n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				s := a
				if i%2 == 1 {
					s = b
				}
				c, _, err := s.CreateCluster(ctx, newCluster(csid(100+i), armID("race")), placement.LeastLoaded{})
				errs[i] = err
				if err == nil {
					ids[i] = c.ID
				}
			}()
		}
		wg.Wait()
		for i := range n {
			if errs[i] != nil {
				t.Fatalf("create #%d: %v", i, errs[i])
			}
			if ids[i] != ids[0] {
				t.Fatalf("create #%d returned %s, #0 returned %s", i, ids[i], ids[0])
			}
		}
		cs, err := a.ListClusters(ctx, ListOptions{})
		if err != nil || len(cs) != 1 {
			t.Fatalf("rows = %d (%v), want 1", len(cs), err)
		}
	})
	t.Run("placement_never_overfills_a_shard", func(t *testing.T) {
		a, b := openBoth(t)
		register(t, a, "mc-1", 2)
		register(t, a, "mc-2", 1)
		const n = 10
		var ok, exhausted int
		var mu sync.Mutex
		var wg sync.WaitGroup
		for i := range n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				s := a
				if i%2 == 1 {
					s = b
				}
				_, _, err := s.CreateCluster(ctx, newCluster(csid(200+i), armID(fmt.Sprint("c", i))), placement.LeastLoaded{})
				mu.Lock()
				defer mu.Unlock()
				switch {
				case err == nil:
					ok++
				case status.Code(err) == codes.ResourceExhausted:
					exhausted++
				default:
					t.Errorf("create #%d: %v", i, err)
				}
			}()
		}
		wg.Wait()
		if ok != 3 || exhausted != n-3 {
			t.Fatalf("created %d, exhausted %d; want 3 and %d", ok, exhausted, n-3)
		}
		shards, _ := a.ListShards(ctx)
		for _, sh := range shards {
			if sh.ClusterCount != sh.MaxClusters {
				t.Fatalf("shard %s has %d clusters, capacity %d", sh.Name, sh.ClusterCount, sh.MaxClusters)
			}
		}
	})
}

func TestShards(t *testing.T) {
	ctx := context.Background()
	s := open(t, newDSN(t))
	sh, err := s.RegisterShard(ctx, placement.Shard{Name: "mc-1", MaxClusters: 5, Labels: map[string]string{"region": "eastus"}})
	if err != nil || sh.Status != csv1.ShardStatus_SHARD_STATUS_ACTIVE || sh.Labels["region"] != "eastus" {
		t.Fatalf("RegisterShard = %+v, %v", sh, err)
	}
	t.Run("maintenance_takes_no_new_clusters", func(t *testing.T) {
		if _, err := s.SetShardStatus(ctx, "mc-1", csv1.ShardStatus_SHARD_STATUS_MAINTENANCE, 0); err != nil {
			t.Fatal(err)
		}
		_, _, err := s.CreateCluster(ctx, newCluster(csid(1), armID("a")), placement.LeastLoaded{})
		if status.Code(err) != codes.ResourceExhausted {
			t.Fatalf("err = %v, want ResourceExhausted", err)
		}
	})
	t.Run("re_register_without_status_keeps_status", func(t *testing.T) {
		sh, err := s.RegisterShard(ctx, placement.Shard{Name: "mc-1", MaxClusters: 7})
		if err != nil || sh.Status != csv1.ShardStatus_SHARD_STATUS_MAINTENANCE || sh.MaxClusters != 7 {
			t.Fatalf("RegisterShard = %+v, %v", sh, err)
		}
	})
	t.Run("unknown_shard_is_not_found", func(t *testing.T) {
		if _, err := s.SetShardStatus(ctx, "nope", csv1.ShardStatus_SHARD_STATUS_ACTIVE, 0); !errors.Is(err, ErrNotFound) {
			t.Fatalf("err = %v", err)
		}
	})
	t.Run("if_status_mismatch_conflicts_and_changes_nothing", func(t *testing.T) {
		if _, err := s.SetShardStatus(ctx, "mc-1", csv1.ShardStatus_SHARD_STATUS_OFFLINE, csv1.ShardStatus_SHARD_STATUS_ACTIVE); !errors.Is(err, ErrConflict) {
			t.Fatalf("err = %v, want ErrConflict (the shard is MAINTENANCE)", err)
		}
		shs, err := s.ListShards(ctx)
		if err != nil || len(shs) != 1 || shs[0].Status != csv1.ShardStatus_SHARD_STATUS_MAINTENANCE {
			t.Fatalf("after a refused conditional change: %+v, %v", shs, err)
		}
	})
	t.Run("if_status_match_changes", func(t *testing.T) {
		sh, err := s.SetShardStatus(ctx, "mc-1", csv1.ShardStatus_SHARD_STATUS_ACTIVE, csv1.ShardStatus_SHARD_STATUS_MAINTENANCE)
		if err != nil || sh.Status != csv1.ShardStatus_SHARD_STATUS_ACTIVE {
			t.Fatalf("SetShardStatus = %+v, %v", sh, err)
		}
	})
}

func TestRevisionsAndReplay(t *testing.T) {
	ctx := context.Background()
	dsn := newDSN(t)
	s, err := Open(ctx, dsn, slog.Default(), keysFor(t, dsn))
	if err != nil {
		t.Fatal(err)
	}
	register(t, s, "mc-1", 10)

	var revs []int64
	a, _, err := s.CreateCluster(ctx, newCluster(csid(1), armID("a")), placement.LeastLoaded{})
	if err != nil {
		t.Fatal(err)
	}
	revs = append(revs, a.Revision)
	b, _, err := s.CreateCluster(ctx, newCluster(csid(2), armID("b")), placement.LeastLoaded{})
	if err != nil {
		t.Fatal(err)
	}
	revs = append(revs, b.Revision)
	a, err = s.UpdateStatus(ctx, a.ID, a.Revision, &csv1.ClusterStatus{State: csv1.ClusterState_CLUSTER_STATE_INSTALLING})
	if err != nil {
		t.Fatal(err)
	}
	revs = append(revs, a.Revision)
	t.Run("stale_status_write_conflicts", func(t *testing.T) {
		if _, err := s.UpdateStatus(ctx, a.ID, a.Revision-1, &csv1.ClusterStatus{State: csv1.ClusterState_CLUSTER_STATE_READY}); !errors.Is(err, ErrConflict) {
			t.Fatalf("err = %v, want ErrConflict", err)
		}
	})
	t.Run("identical_status_keeps_revision", func(t *testing.T) {
		same, err := s.UpdateStatus(ctx, a.ID, a.Revision, &csv1.ClusterStatus{State: csv1.ClusterState_CLUSTER_STATE_INSTALLING})
		if err != nil || same.Revision != a.Revision {
			t.Fatalf("UpdateStatus = rev %d, %v; want %d", same.Revision, err, a.Revision)
		}
	})
	b, err = s.MarkDeleting(ctx, b.ID)
	if err != nil || !b.Deleting || b.Status.State != csv1.ClusterState_CLUSTER_STATE_UNINSTALLING {
		t.Fatalf("MarkDeleting = %+v, %v", b, err)
	}
	revs = append(revs, b.Revision)
	again, err := s.MarkDeleting(ctx, b.ID)
	if err != nil || again.Revision != b.Revision {
		t.Fatalf("second MarkDeleting changed revision: %d → %d (%v)", b.Revision, again.Revision, err)
	}
	if err := s.RemoveCluster(ctx, b.ID, b.Revision); err != nil {
		t.Fatal(err)
	}
	for i := 1; i < len(revs); i++ {
		if revs[i] <= revs[i-1] {
			t.Fatalf("revisions not increasing: %v", revs)
		}
	}
	s.Close() // "restart"

	s2 := open(t, dsn)
	t.Run("replay_after_restart_includes_deletes", func(t *testing.T) {
		evs, err := s2.EventsAfter(ctx, 0, 100)
		if err != nil {
			t.Fatal(err)
		}
		if len(evs) != 2 {
			t.Fatalf("events = %d, want 2 (latest of a, tombstone of b): %+v", len(evs), evs)
		}
		if evs[0].Cluster.ID != a.ID || evs[0].Type != csv1.EventType_EVENT_TYPE_UPSERTED || evs[0].Revision != a.Revision ||
			evs[0].Cluster.Status.State != csv1.ClusterState_CLUSTER_STATE_INSTALLING {
			t.Fatalf("event 0 = %+v", evs[0])
		}
		if evs[1].Cluster.ID != b.ID || evs[1].Type != csv1.EventType_EVENT_TYPE_DELETED || evs[1].Revision <= b.Revision {
			t.Fatalf("event 1 = %+v", evs[1])
		}
		if evs[1].Cluster.ARMResourceID != armID("b") {
			t.Fatalf("tombstone lost the last known state: %+v", evs[1].Cluster)
		}
		after, err := s2.EventsAfter(ctx, evs[0].Revision, 100)
		if err != nil || len(after) != 1 || after[0].Type != csv1.EventType_EVENT_TYPE_DELETED {
			t.Fatalf("EventsAfter(%d) = %+v, %v", evs[0].Revision, after, err)
		}
		if _, err := s2.GetCluster(ctx, b.ID); !errors.Is(err, ErrNotFound) {
			t.Fatalf("GetCluster(deleted) err = %v", err)
		}
	})
	t.Run("snapshot_is_consistent_with_revision", func(t *testing.T) {
		cs, rev, err := s2.Snapshot(ctx)
		if err != nil || len(cs) != 1 || cs[0].ID != a.ID {
			t.Fatalf("Snapshot = %d clusters, %v", len(cs), err)
		}
		evs, _ := s2.EventsAfter(ctx, 0, 100)
		if rev != evs[len(evs)-1].Revision {
			t.Fatalf("snapshot revision %d, last event %d", rev, evs[len(evs)-1].Revision)
		}
	})
	t.Run("pruning_tombstones_raises_compacted_revision", func(t *testing.T) {
		evs, _ := s2.EventsAfter(ctx, 0, 100)
		tomb := evs[len(evs)-1]
		if n, err := s2.PruneTombstones(ctx, time.Now().Add(-time.Hour)); err != nil || n != 0 {
			t.Fatalf("pruning with nothing old enough removed %d (%v)", n, err)
		}
		if c, _ := s2.CompactedRevision(ctx); c != 0 {
			t.Fatalf("compacted revision = %d before any pruning", c)
		}
		n, err := s2.PruneTombstones(ctx, time.Now().Add(time.Minute))
		if err != nil || n != 1 {
			t.Fatalf("PruneTombstones = %d, %v; want 1", n, err)
		}
		if c, _ := s2.CompactedRevision(ctx); c != tomb.Revision {
			t.Fatalf("compacted revision = %d, want %d", c, tomb.Revision)
		}
		after, _ := s2.EventsAfter(ctx, 0, 100)
		if len(after) != 1 || after[0].Type != csv1.EventType_EVENT_TYPE_UPSERTED {
			t.Fatalf("events after pruning = %+v", after)
		}
	})
	t.Run("notify_wakes_other_process", func(t *testing.T) {
		ch, stop := s2.Changes()
		defer stop()
		// drain the wake-up the listener sends on connect
		select {
		case <-ch:
		case <-time.After(200 * time.Millisecond):
		}
		other := open(t, dsn)
		if _, _, err := other.CreateCluster(ctx, newCluster(csid(3), armID("c")), placement.LeastLoaded{}); err != nil {
			t.Fatal(err)
		}
		select {
		case <-ch:
		case <-time.After(5 * time.Second):
			t.Fatal("no change notification within 5s")
		}
	})
}
