package server

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	csv1 "github.com/openhcp/openhcp/cluster-service/api/v1"
	"github.com/openhcp/openhcp/cluster-service/pkg/manifests"
	"github.com/openhcp/openhcp/cluster-service/pkg/model"
	"github.com/openhcp/openhcp/cluster-service/pkg/store"
	"github.com/openhcp/openhcp/cluster-service/pkg/versions"
)

// heldWriteLock is the store's write lock held by a connection of the test's own: writes
// started while it is held make the reads they make before their transaction, then queue for
// the lock in the order they reach it.
type heldWriteLock struct {
	t    *testing.T
	conn *pgx.Conn
	tx   pgx.Tx
}

func holdWriteLock(t *testing.T, dsn string) *heldWriteLock {
	t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close(context.Background()) })
	tx, err := conn.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1)`, store.WriteLockKey); err != nil {
		t.Fatal(err)
	}
	return &heldWriteLock{t: t, conn: conn, tx: tx}
}

// waitForQueue waits until n sessions wait for the write lock; a write that ends first (done)
// never queued.
func (h *heldWriteLock) waitForQueue(n int, done chan error) {
	h.t.Helper()
	for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		select {
		case err := <-done:
			h.t.Fatalf("write %d ended before it queued for the write lock: %v", n, err)
		default:
		}
		var waiting int
		if err := h.conn.QueryRow(context.Background(), `SELECT count(*) FROM pg_locks l JOIN pg_database d ON d.oid = l.database
			WHERE d.datname = current_database() AND l.locktype = 'advisory' AND NOT l.granted
				AND (l.classid::bigint << 32 | l.objid::bigint) = $1`, store.WriteLockKey).Scan(&waiting); err != nil {
			h.t.Fatal(err)
		}
		if waiting == n {
			return
		}
		if time.Now().After(deadline) {
			h.t.Fatalf("%d writes wait for the write lock after 60 s; want %d", waiting, n)
		}
	}
}

func (h *heldWriteLock) release() {
	h.t.Helper()
	if err := h.tx.Commit(context.Background()); err != nil {
		h.t.Fatal(err)
	}
}

// raceWrites runs first and second so that each makes the reads it makes before its
// transaction before either commits, and first commits before second writes: both queue for
// the write lock, first ahead of second, while the test holds it. A write that checked a rule
// against the other side as read before its transaction would check second against the state
// before first.
func raceWrites(t *testing.T, dsn string, first, second func() error) (firstErr, secondErr error) {
	t.Helper()
	lock := holdWriteLock(t, dsn)
	done1, done2 := make(chan error, 1), make(chan error, 1)
	go func() { done1 <- first() }()
	lock.waitForQueue(1, done1)
	go func() { done2 <- second() }()
	lock.waitForQueue(2, done2)
	lock.release()
	wait := func(done chan error) error {
		select {
		case err := <-done:
			return err
		case <-time.After(60 * time.Second):
			t.Fatal("a write did not end 60 s after the write lock was let go")
			return nil
		}
	}
	return wait(done1), wait(done2)
}

// TestRacingWritesSeeEachOther: a write's rule that reads another resource (the cluster's work
// size with its external auth, a node pool's minor versions behind its control plane) holds when
// that resource is written at the same time: the second write to commit is checked against the
// first's, and refused naming its own field, instead of both passing against the state before
// either and together storing what neither may (a cluster work over the budget, which Maestro
// refuses for ever; a pool three minors behind).
func TestRacingWritesSeeEachOther(t *testing.T) {
	e := start(t)
	ctx := context.Background()
	e.register(t, "mc-1", 50)

	// rules validation rules fill most of a work's budget; so do mirrors(3) image digest
	// mirrors: either fits in a cluster's work, both do not.
	const rules = 3500
	clusterMirrors := func(clusterID string) func() error {
		return func() error {
			_, err := e.clusters.UpdateCluster(ctx, &csv1.UpdateClusterRequest{Id: clusterID, Update: &csv1.ClusterUpdate{
				ImageDigestMirrors: &csv1.ImageDigestMirrors{Mirrors: mirrors(3)}}})
			return err
		}
	}
	createAuth := func(n int, cl *csv1.Cluster, name string, spec *csv1.ExternalAuthSpec) func() error {
		return func() error {
			_, err := e.eas.CreateExternalAuth(ctx, &csv1.CreateExternalAuthRequest{ExternalAuth: &csv1.ExternalAuth{
				Id: id(n), ClusterId: cl.GetId(), ArmResourceId: externalAuthARM(name, "entra"), Spec: spec}})
			return err
		}
	}
	updateAuth := func(n int) func() error {
		return func() error {
			_, err := e.eas.UpdateExternalAuth(ctx, &csv1.UpdateExternalAuthRequest{Id: id(n), Update: csv1.FullExternalAuthUpdate(manyRules(rules))})
			return err
		}
	}
	// workFits checks the cluster's work as stored, with its external auth.
	workFits := func(t *testing.T, clusterID string) {
		t.Helper()
		cl, err := e.st.GetCluster(ctx, clusterID)
		if err != nil {
			t.Fatal(err)
		}
		var ea *manifests.ExternalAuth
		if stored, err := e.st.ClusterExternalAuth(ctx, clusterID); err != nil {
			t.Fatal(err)
		} else if stored != nil {
			ea = &manifests.ExternalAuth{ARMResourceID: stored.ARMResourceID, Spec: stored.Spec}
		}
		w, err := manifests.Build(manifests.Config{DevWorkloadIdentityClientID: standInClientID}, manifests.Cluster{ID: cl.ID,
			ARMResourceID: cl.ARMResourceID, Spec: cl.Spec, EtcdEncryptionKey: cl.EtcdEncryptionKey, SSHPublicKey: cl.SSHPublicKey, WatchStatus: true})
		if err == nil {
			w, err = manifests.WithExternalAuth(w, ea)
		}
		if err != nil {
			t.Fatal(err)
		}
		if size := manifests.ManifestsSize(w); size > manifests.ManifestsBudget {
			t.Fatalf("the cluster's work as stored is %d bytes, over the budget of %d", size, manifests.ManifestsBudget)
		}
	}
	// noSkew checks that no node pool of the cluster is more than MaxMinorsBehind behind its
	// version or the version its unfinished upgrade goes to.
	noSkew := func(t *testing.T, clusterID string) {
		t.Helper()
		cl, err := e.st.GetCluster(ctx, clusterID)
		if err != nil {
			t.Fatal(err)
		}
		target := cl.Spec.GetVersionId()
		if p := cl.Status.GetUpgrade(); p != nil && !store.Terminal(p.GetState()) {
			target = p.GetToVersion()
		}
		pools, err := e.st.NodePools().List(ctx, clusterID, "", 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, np := range pools {
			if n, ok := versions.MinorsBehind(np.Spec.GetVersionId(), target); !ok || n > model.MaxMinorsBehind {
				t.Fatalf("node pool %s runs %s, %d minors behind %s, the version its cluster goes to", np.ID, np.Spec.GetVersionId(), n, target)
			}
		}
	}
	oldPool := func(n int, cl *csv1.Cluster, name string) func() error {
		return func() error {
			p := validPool(n, cl.GetId(), name, "old")
			p.Spec.VersionId = "4.17.44"
			_, err := e.pools.CreateNodePool(ctx, &csv1.CreateNodePoolRequest{NodePool: p})
			return err
		}
	}
	upgrade := func(cl *csv1.Cluster) func() error {
		return func() error {
			_, err := e.clusters.UpdateCluster(ctx, &csv1.UpdateClusterRequest{Id: cl.GetId(), Update: &csv1.ClusterUpdate{VersionId: "4.20"}})
			return err
		}
	}

	for i, tc := range []struct {
		name string
		// writes returns the two writes on cluster cl (number n, ARM name name), after any setup.
		writes func(t *testing.T, n int, cl *csv1.Cluster, name string) (first, second func() error)
		// secondField is the violation that refuses the second write; check is the rule on what
		// is stored.
		secondField string
		check       func(t *testing.T, clusterID string)
	}{
		{"external_auth_update_then_cluster_update_refuses_the_cluster's_work_over_the_budget",
			func(t *testing.T, n int, cl *csv1.Cluster, name string) (func() error, func() error) {
				if err := createAuth(n, cl, name, validExternalAuthSpec())(); err != nil {
					t.Fatal(err)
				}
				return updateAuth(n), clusterMirrors(cl.GetId())
			}, "update.image_digest_mirrors.mirrors", workFits},
		{"cluster_update_then_external_auth_update_refuses_the_external_auth's",
			func(t *testing.T, n int, cl *csv1.Cluster, name string) (func() error, func() error) {
				if err := createAuth(n, cl, name, validExternalAuthSpec())(); err != nil {
					t.Fatal(err)
				}
				return clusterMirrors(cl.GetId()), updateAuth(n)
			}, "update.validation_rules.values", workFits},
		{"external_auth_create_then_cluster_update_refuses_the_cluster's",
			func(t *testing.T, n int, cl *csv1.Cluster, name string) (func() error, func() error) {
				return createAuth(n, cl, name, manyRules(rules)), clusterMirrors(cl.GetId())
			}, "update.image_digest_mirrors.mirrors", workFits},
		{"cluster_update_then_external_auth_create_refuses_the_external_auth",
			func(t *testing.T, n int, cl *csv1.Cluster, name string) (func() error, func() error) {
				return clusterMirrors(cl.GetId()), createAuth(n, cl, name, manyRules(rules))
			}, "external_auth.spec.validation_rules", workFits},
		{"node_pool_create_then_cluster_upgrade_refuses_the_upgrade_three_minors_ahead",
			func(t *testing.T, n int, cl *csv1.Cluster, name string) (func() error, func() error) {
				return oldPool(n, cl, name), upgrade(cl)
			}, "update.version_id", noSkew},
		// The upgrade is recorded pending, the spec keeps 4.19 until it starts: the pool is
		// counted to 4.20, where the control plane is going.
		{"cluster_upgrade_then_node_pool_create_refuses_the_pool_three_minors_behind_the_upgrade",
			func(t *testing.T, n int, cl *csv1.Cluster, name string) (func() error, func() error) {
				return upgrade(cl), oldPool(n, cl, name)
			}, "node_pool.spec.version_id", noSkew},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n, name := 10*(i+1), "race"+string(rune('a'+i))
			cl := e.clusterAt(t, n, name, "4.19.17")
			first, second := tc.writes(t, n+1, cl, name)
			firstErr, secondErr := raceWrites(t, e.dsn, first, second)
			if firstErr != nil {
				t.Fatalf("the first write: %v", firstErr)
			}
			if status.Code(secondErr) != codes.InvalidArgument || !fieldViolations(secondErr)[tc.secondField] {
				t.Fatalf("the second write: %v; want InvalidArgument naming %s", secondErr, tc.secondField)
			}
			tc.check(t, cl.GetId())
		})
	}
}

// TestUpdateOfADeletingChildSaysSoWhateverTheCondition: an update of a node pool or external
// auth being deleted is FailedPrecondition saying so, also when its revision condition is stale
// (no condition would let it change), as when the server read the object before the write.
func TestUpdateOfADeletingChildSaysSoWhateverTheCondition(t *testing.T) {
	e := start(t)
	ctx := context.Background()
	e.register(t, "mc-1", 10)
	cl := e.cluster(t, 1, "c1")
	np, err := e.pools.CreateNodePool(ctx, &csv1.CreateNodePoolRequest{NodePool: validPool(2, cl.GetId(), "c1", "pool1")})
	if err != nil {
		t.Fatal(err)
	}
	ea, err := e.eas.CreateExternalAuth(ctx, &csv1.CreateExternalAuthRequest{ExternalAuth: &csv1.ExternalAuth{
		Id: id(3), ClusterId: cl.GetId(), ArmResourceId: externalAuthARM("c1", "entra"), Spec: validExternalAuthSpec()}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.pools.DeleteNodePool(ctx, &csv1.DeleteNodePoolRequest{Id: np.GetId()}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.eas.DeleteExternalAuth(ctx, &csv1.DeleteExternalAuthRequest{Id: ea.GetId()}); err != nil {
		t.Fatal(err)
	}
	replicas := int32(3)
	for _, tc := range []struct {
		name     string
		revision int64
		update   func(revision int64) error
		want     string
	}{
		{"node_pool_unconditional", 0, func(rev int64) error {
			_, err := e.pools.UpdateNodePool(ctx, &csv1.UpdateNodePoolRequest{Id: np.GetId(), Revision: rev, Update: &csv1.NodePoolUpdate{Replicas: &replicas}})
			return err
		}, "node pool " + np.GetId() + " is being deleted"},
		{"node_pool_at_a_stale_revision", np.GetRevision(), func(rev int64) error {
			_, err := e.pools.UpdateNodePool(ctx, &csv1.UpdateNodePoolRequest{Id: np.GetId(), Revision: rev, Update: &csv1.NodePoolUpdate{Replicas: &replicas}})
			return err
		}, "node pool " + np.GetId() + " is being deleted"},
		{"external_auth_at_a_stale_revision", ea.GetRevision(), func(rev int64) error {
			_, err := e.eas.UpdateExternalAuth(ctx, &csv1.UpdateExternalAuthRequest{Id: ea.GetId(), Revision: rev, Update: csv1.FullExternalAuthUpdate(manyRules(2))})
			return err
		}, "external auth " + ea.GetId() + " is being deleted"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.update(tc.revision)
			if status.Code(err) != codes.FailedPrecondition || status.Convert(err).Message() != tc.want {
				t.Fatalf("update: %v; want FailedPrecondition %q", err, tc.want)
			}
		})
	}
}
