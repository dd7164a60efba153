package store

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"

	"github.com/openhcp/openhcp/cluster-service/pkg/placement"
)

// Pipelined writes (SetPipelinedWrites, opt-in) are the two hottest writes, a cluster's create
// and a status write, done so that the write lock is held for no client round trip at all. They
// answer a burst of creates faster, but measured slower from HostedCluster Available to ARM
// Succeeded (docs/perf-data/run-log-2026-11.md, "Pipelined writes"): most likely because writers that no longer
// sleep on the lock are all runnable in PostgreSQL at once, and on a machine whose cores are full
// the Maestro server's statements wait behind them (docs/perf-data/run-log-2026-11.md, "Run queues"; one run).
//
// A locked write (writeTx) takes the write lock with its first statement and then makes its
// reads, draws its revision, writes and commits, one round trip each: six to eight round trips
// under the lock, and on a busy machine each one waits for the client and the server to be
// scheduled, so every other writer waits for all of them (docs/performance.md, P1).
//
// A pipelined write does its reads and decisions first, without the lock, and then sends the
// lock and one statement as one pipeline (pgx's SendBatch, an implicit transaction that commits
// at the pipeline's end). Once the lock is granted the server runs the rest at once: the
// statement draws the revision, writes the row on the condition that what was read still holds,
// records the event (its document patched with the revision and times only the server knows)
// and notifies; the commit releases the lock. So the lock is held for the server's own work,
// and the ordering contract stays as it is: every revision is drawn and committed under the
// lock. A write whose condition no longer holds writes nothing; a status write then returns
// ErrConflict, as the locked one does, and a create falls back to the locked create, which
// decides exactly.

// errRefused: a pipelined write's condition did not hold, so it wrote nothing.
var errRefused = errors.New("refused")

// scanOne runs sql under the write lock, sent as one pipeline with the lock, and scans its one
// row with scan; errRefused if it returned none.
func scanOne(ctx context.Context, s *Store, scan func(pgx.Row) error, sql string, args ...any) error {
	var batch pgx.Batch
	batch.Queue(takeWriteLock, int64(writeLockKey))
	batch.Queue(sql, args...)
	br := s.pool.SendBatch(ctx, &batch)
	defer br.Close()
	if _, err := br.Exec(); err != nil {
		return fmt.Errorf("take write lock: %w", err)
	}
	rows, err := br.Query()
	if err != nil {
		return err
	}
	defer rows.Close()
	if !rows.Next() {
		if err := rows.Err(); err != nil {
			return err
		}
		return errRefused
	}
	if err := scan(rows); err != nil {
		return err
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return err
	}
	return br.Close()
}

// patchedDoc is SQL that sets the JSON paths of doc (a jsonb expression) to values, in order:
// the parts of an event document that only the server knows when it writes.
func patchedDoc(doc string, paths ...[2]string) string {
	for _, p := range paths {
		doc = `jsonb_set(` + doc + `, '` + p[0] + `', to_jsonb(` + p[1] + `))`
	}
	return doc
}

// updateStatusPipelined is updateStatus as a pipelined write: it reads the row without the lock,
// and writes the status, its revision and its event in one statement under the lock, on the
// condition that the row is still at the revision it read.
func updateStatusPipelined[R any, S observedStatus](ctx context.Context, s *Store, k statusRow[R, S], id string, revision int64, st S) (*R, error) {
	cur, err := k.scan(s.reads.QueryRow(ctx, `SELECT `+k.columns+` FROM `+k.table+` WHERE id = $1`, id))
	if err != nil {
		return nil, err
	}
	curStatus, curRevision, specRevision, _ := k.fields(cur)
	if *curRevision != revision {
		return nil, ErrConflict
	}
	st = stampObserved(st, *specRevision)
	if proto.Equal(*curStatus, st) {
		return cur, nil
	}
	stj, err := protojson.Marshal(st)
	if err != nil {
		return nil, err
	}
	next := *cur
	nextStatus, nextRevision, _, updateTime := k.fields(&next)
	*nextStatus = st
	doc, err := k.eventDoc(&next) // its revision and update time are patched in by the server
	if err != nil {
		return nil, err
	}
	l := k.log
	sql := `WITH u AS (
			UPDATE ` + k.table + ` SET status = $2, state = $3, revision = nextval('cluster_revision_seq'), update_time = now()
			WHERE id = $1 AND revision = $4 RETURNING revision, update_time),
		gone AS (DELETE FROM ` + l.table + ` WHERE ` + l.idColumn + ` = $1 AND EXISTS (SELECT 1 FROM u)),
		ev AS (INSERT INTO ` + l.table + ` (revision, ` + l.idColumn + `, type, ` + l.docColumn + `)
			SELECT revision, $1, 'UPSERTED', ` + patchedDoc(`$5::jsonb`, [2]string{k.revisionPath, "revision"}, [2]string{k.updateTimePath, "update_time"}) + ` FROM u)
		SELECT u.revision, u.update_time FROM u CROSS JOIN LATERAL (SELECT pg_notify($6, $7)) n`
	var rev int64
	var at time.Time
	err = scanOne(ctx, s, func(r pgx.Row) error { return r.Scan(&rev, &at) }, sql, id, stj, k.state(st), revision, doc, notifyChannel, l.table)
	if errors.Is(err, errRefused) {
		return nil, ErrConflict
	}
	if err != nil {
		return nil, fmt.Errorf("write status of %s %s: %w", k.what, id, err)
	}
	*nextRevision, *updateTime = rev, at
	return &next, nil
}

// createClusterPipelined is CreateCluster as a pipelined write. It places the cluster from the
// shards as read without the lock, counting the creates of this process still in flight
// (reservations), and inserts it under the lock on the conditions that no cluster has its ARM
// resource ID or its ID, and that the chosen shard is as read (status, capacity, labels) and
// still has room. errRefused if a condition did not hold or the policy found no room: the
// caller then takes the locked create, which decides exactly (the existing cluster, ErrIDInUse,
// another shard, or ResourceExhausted).
func (s *Store) createClusterPipelined(ctx context.Context, c *Cluster, policy placement.Policy, row newClusterRow) (*Cluster, error) {
	shards, err := listShards(ctx, s.reads)
	if err != nil {
		return nil, err
	}
	shard, release, err := s.reserved.choose(ctx, policy, c.placementRequest(), shards)
	if err != nil {
		return nil, errRefused
	}
	defer release()
	var seen placement.Shard
	for _, sh := range shards {
		if sh.Name == shard {
			seen = sh
		}
	}
	doc, err := clusterEventDoc(&Cluster{ID: c.ID, ARMResourceID: c.ARMResourceID, Spec: c.Spec, Status: row.status, Shard: shard, Namespace: c.Namespace})
	if err != nil {
		return nil, err
	}
	sql := `WITH ins AS (
			INSERT INTO clusters (id, arm_resource_id, arm_resource_id_orig, spec, status, state, shard, namespace, revision, etcd_encryption_key, ssh_public_key)
			SELECT $1, $2, $3, $4, $5, $6, $7, $8, nextval('cluster_revision_seq'), $9, $10
			WHERE NOT EXISTS (SELECT 1 FROM clusters WHERE arm_resource_id = $2 OR id = $1)
				AND EXISTS (SELECT 1 FROM provision_shards p WHERE p.name = $7 AND p.status = $11 AND p.max_clusters = $12 AND p.labels = $13
					AND (SELECT count(*) FROM clusters o WHERE o.shard = p.name) < p.max_clusters)
			RETURNING *),
		ev AS (INSERT INTO cluster_events (revision, cluster_id, type, cluster)
			SELECT revision, id, 'UPSERTED', ` + patchedDoc(`$14::jsonb`, [2]string{"{revision}", "revision"}, [2]string{"{specRevision}", "spec_revision"},
		[2]string{"{createTime}", "create_time"}, [2]string{"{updateTime}", "update_time"}) + ` FROM ins)
		SELECT ` + clusterColumns + ` FROM ins CROSS JOIN LATERAL (SELECT pg_notify($15, $16)) n`
	var out *Cluster
	err = scanOne(ctx, s, func(r pgx.Row) (err error) {
		out, err = s.scanCluster(r)
		return err
	}, sql, c.ID, row.armID, c.ARMResourceID, row.specJSON, row.statusJSON, row.status.State.String(), shard, c.Namespace, row.etcdKey, row.sshKey,
		seen.Status.String(), seen.MaxClusters, seen.Labels, doc, notifyChannel, clusterEventLog.table)
	if err != nil {
		return nil, err
	}
	return out, nil
}

// reservations counts this process's pipelined creates per shard between their placement and
// their commit. A pipelined create places from counts read without the lock, so creates at the
// same moment would all see the same counts and choose the same shard; adding the ones in flight
// keeps a burst spread as the policy means it to be. Creates of other replicas are counted once
// committed; the capacity itself is checked under the lock whatever the counts said.
type reservations struct {
	mu       sync.Mutex
	inFlight map[string]int32
}

// choose asks policy with each shard's count raised by its creates in flight and reserves the
// chosen shard until release is called.
func (r *reservations) choose(ctx context.Context, policy placement.Policy, req placement.Request, shards []placement.Shard) (string, func(), error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	counted := make([]placement.Shard, len(shards))
	for i, sh := range shards {
		sh.ClusterCount += r.inFlight[sh.Name]
		counted[i] = sh
	}
	shard, err := policy.Choose(ctx, req, counted)
	if err != nil {
		return "", nil, err
	}
	if r.inFlight == nil {
		r.inFlight = map[string]int32{}
	}
	r.inFlight[shard]++
	return shard, func() {
		r.mu.Lock()
		defer r.mu.Unlock()
		if r.inFlight[shard]--; r.inFlight[shard] <= 0 {
			delete(r.inFlight, shard)
		}
	}, nil
}
