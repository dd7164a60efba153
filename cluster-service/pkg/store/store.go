// Package store keeps the Cluster Service model in PostgreSQL: clusters, provision shards and a
// global, monotonically increasing revision with an event log (latest state per cluster plus
// tombstones) that WatchClusters replays. Every write is transactional and conditional.
package store

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"

	csv1 "github.com/openhcp/openhcp/cluster-service/api/v1"
	"github.com/openhcp/openhcp/cluster-service/pkg/placement"
	"github.com/openhcp/openhcp/internal/backoff"
	"github.com/openhcp/openhcp/internal/docstore/postgres"
	"github.com/openhcp/openhcp/internal/envelope"
)

var (
	// ErrNotFound: no such cluster or shard.
	ErrNotFound = errors.New("not found")
	// ErrConflict: a conditional write lost against a concurrent change (stale revision).
	ErrConflict = errors.New("conflict: the resource changed")
	// ErrIDInUse: the cluster ID already belongs to a different ARM resource.
	ErrIDInUse = errors.New("cluster id already used by a different ARM resource")
)

// Precondition is what a conditional spec update is conditional on; the zero value is none
// (unconditional). Revision is compared with the row's revision, which every write moves,
// status writes included; SpecRevision with its spec_revision, which only a spec change moves
// (migration 0009). A client that changes the spec wants SpecRevision: a controller's status
// write between its read and its update is no conflict, another spec change is. Both may be set;
// both must then hold.
type Precondition struct {
	Revision     int64
	SpecRevision int64
}

// check returns ErrConflict unless a row at revision and specRevision meets p; it runs under the
// row lock, so nothing moves either between the check and the write.
func (p Precondition) check(revision, specRevision int64) error {
	if p.Revision != 0 && p.Revision != revision {
		return fmt.Errorf("%w: revision is %d, not %d", ErrConflict, revision, p.Revision)
	}
	if p.SpecRevision != 0 && p.SpecRevision != specRevision {
		return fmt.Errorf("%w: spec_revision is %d, not %d", ErrConflict, specRevision, p.SpecRevision)
	}
	return nil
}

// writeLockKey is the transaction advisory lock every cluster write takes before it draws a
// revision. It makes revisions commit in order, so a watcher that has seen revision N never
// later finds a committed N-1, and it serialises placement so shards are never overfilled.
const writeLockKey = 0x0cb5_0002

// WriteLockKey is writeLockKey, for a test that holds the lock to order writes that race.
const WriteLockKey int64 = writeLockKey

// takeWriteLock is the statement that takes it, held to the transaction's end.
const takeWriteLock = `SELECT pg_advisory_xact_lock($1)`

// notifyChannel is the LISTEN/NOTIFY channel that wakes watchers; the payload is the name of the
// event log written (its table), so that a reader of one log is not woken by writes to another.
// A payload that names no log (before 2026-11-26 it was the revision, as an older replica in a
// rolling upgrade still sends it) wakes every reader.
const notifyChannel = "openhcp_cluster_events"

// Cluster is a stored cluster.
type Cluster struct {
	ID            string
	ARMResourceID string // as the caller spelled it; compared lower-cased
	Spec          *csv1.ClusterSpec
	Status        *csv1.ClusterStatus
	Shard         string // empty until placed
	Namespace     string
	Deleting      bool
	Revision      int64
	// SpecRevision is the revision of the last change to Spec (the spec_revision trigger of
	// migration 0009 keeps it, on every write path).
	SpecRevision int64
	CreateTime   time.Time
	UpdateTime   time.Time

	// Secret material generated at create so the ManifestWork is the same on every build.
	EtcdEncryptionKey []byte
	SSHPublicKey      string
}

// Event is one entry of the cluster event log.
type Event struct {
	Type     csv1.EventType // UPSERTED or DELETED
	Revision int64
	Cluster  *Cluster // for DELETED, the last known state
}

// Store is the PostgreSQL-backed store. Its zero value is not usable; call Open.
type Store struct {
	pool *pgxpool.Pool
	// reads is pool for reads outside a transaction, which run once more after a lost
	// connection; loss is what makes the pool check its connections after one.
	reads readPool
	loss  *postgres.ConnLoss
	log   *slog.Logger
	keys  *envelope.Keyring // seals the secretColumns

	mu sync.Mutex
	// waiters are the change feeds (Changes), each with the table of the event log it follows.
	waiters map[chan struct{}]string
	cancel  context.CancelFunc
	done    chan struct{}

	// pipelined makes creates and status writes pipelined writes (SetPipelinedWrites).
	pipelined atomic.Bool
	// reserved counts pipelined creates in flight per shard (reservations).
	reserved reservations
	// decoded saves decoding an unchanged cluster's spec and status again (decoded.go).
	decoded *decodedClusters
}

// SetPipelinedWrites chooses how CreateCluster, UpdateStatus and UpdateNodePoolStatus hold the
// write lock: on, as pipelined writes, which hold it for no client round trip (pipeline.go); off
// (the default), as locked writes, which take it first and hold it for six to eight round trips.
// On answers creates faster under load, yet measured slower from HostedCluster Available to ARM
// Succeeded (docs/perf-data/run-log-2026-11.md, "Pipelined writes"), so it is opt-in: Cluster Service's
// --store-pipelined-writes.
func (s *Store) SetPipelinedWrites(on bool) { s.pipelined.Store(on) }

// Open connects, applies migrations and starts the LISTEN loop that wakes watchers. keys seals
// the customer secrets the store keeps (secretColumns); without it Open fails (ErrNoKeyring).
func Open(ctx context.Context, dsn string, log *slog.Logger, keys *envelope.Keyring) (*Store, error) {
	if keys == nil {
		return nil, ErrNoKeyring
	}
	cfg, err := pgxpool.ParseConfig(dsn)
	if err != nil {
		return nil, fmt.Errorf("parse database DSN: %w", err)
	}
	// pgxpool's default (4 on small machines) is too few: the listener holds one, and writers
	// hold theirs while they queue on the write lock. pool_max_conns in the DSN still wins.
	if !strings.Contains(dsn, "pool_max_conns") {
		cfg.MaxConns = 16
	}
	return openConfig(ctx, cfg, log, keys)
}

// openConfig is Open with the pool's configuration parsed (a test adds a tracer to it).
func openConfig(ctx context.Context, cfg *pgxpool.Config, log *slog.Logger, keys *envelope.Keyring) (*Store, error) {
	loss := &postgres.ConnLoss{}
	loss.Guard(cfg)
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("connect to database: %w", err)
	}
	if err := pool.Ping(ctx); err != nil {
		pool.Close()
		return nil, fmt.Errorf("connect to database: %w", err)
	}
	if err := Migrate(ctx, pool); err != nil {
		pool.Close()
		return nil, err
	}
	lctx, cancel := context.WithCancel(context.Background())
	s := &Store{pool: pool, reads: readPool{pool: pool, loss: loss}, loss: loss, log: log, keys: keys, waiters: map[chan struct{}]string{}, cancel: cancel, done: make(chan struct{}),
		decoded: &decodedClusters{m: map[string]decodedCluster{}}}
	go s.listen(lctx)
	return s, nil
}

// Close stops the listener and closes the pool.
func (s *Store) Close() {
	s.cancel()
	<-s.done
	s.pool.Close()
}

// Ping checks the database connection (readiness).
func (s *Store) Ping(ctx context.Context) error { return s.pool.Ping(ctx) }

// ---- clusters

const clusterColumns = `id, arm_resource_id_orig, spec, status, coalesce(shard, ''), namespace, deleting, revision,
	create_time, update_time, etcd_encryption_key, ssh_public_key, spec_revision`

func (s *Store) scanCluster(row pgx.Row) (*Cluster, error) {
	var c Cluster
	var spec, st []byte
	if err := row.Scan(&c.ID, &c.ARMResourceID, &spec, &st, &c.Shard, &c.Namespace, &c.Deleting, &c.Revision,
		&c.CreateTime, &c.UpdateTime, &c.EtcdEncryptionKey, &c.SSHPublicKey, &c.SpecRevision); err != nil {
		if errors.Is(err, pgx.ErrNoRows) {
			return nil, ErrNotFound
		}
		return nil, err
	}
	var err error
	if c.EtcdEncryptionKey, err = s.openSecret("clusters", "etcd_encryption_key", c.ID, c.EtcdEncryptionKey); err != nil {
		return nil, err
	}
	if err := s.decoded.decode(&c, spec, st); err != nil {
		return nil, err
	}
	return &c, nil
}

// CreateCluster stores a new cluster and places it on a shard with policy, in one transaction.
// It is idempotent on the ARM resource ID (case-insensitive): if a cluster for it exists, that
// cluster is returned with created=false, whatever c.ID says. ErrIDInUse if c.ID is taken by a
// different ARM resource; placement errors (ResourceExhausted) are returned as they are.
// The input's Spec and Status are stored; Revision, times, shard and secrets are set here.
func (s *Store) CreateCluster(ctx context.Context, c *Cluster, policy placement.Policy) (_ *Cluster, created bool, err error) {
	armID := strings.ToLower(c.ARMResourceID)
	etcdKey := make([]byte, 32)
	if _, err := rand.Read(etcdKey); err != nil {
		return nil, false, fmt.Errorf("generate etcd encryption key: %w", err)
	}
	sealedEtcdKey, err := s.sealSecret("clusters", "etcd_encryption_key", c.ID, etcdKey)
	if err != nil {
		return nil, false, err
	}
	sshKey, err := newSSHPublicKey()
	if err != nil {
		return nil, false, err
	}
	row := newClusterRow{armID: armID, etcdKey: sealedEtcdKey, sshKey: sshKey}
	row.status = proto.Clone(c.Status).(*csv1.ClusterStatus)
	if row.status == nil || row.status.State == csv1.ClusterState_CLUSTER_STATE_UNSPECIFIED {
		row.status = &csv1.ClusterStatus{State: csv1.ClusterState_CLUSTER_STATE_PENDING, Message: "The cluster is accepted and placed; its manifests are not sent yet."}
	}
	if row.specJSON, err = protojson.Marshal(c.Spec); err != nil {
		return nil, false, err
	}
	if row.statusJSON, err = protojson.Marshal(row.status); err != nil {
		return nil, false, err
	}
	if s.pipelined.Load() {
		out, err := s.createClusterPipelined(ctx, c, policy, row)
		if !errors.Is(err, errRefused) {
			return out, err == nil, err
		}
	}
	var out *Cluster
	err = s.writeTx(ctx, func(tx pgx.Tx) error {
		existing, err := s.scanCluster(tx.QueryRow(ctx, `SELECT `+clusterColumns+` FROM clusters WHERE arm_resource_id = $1`, armID))
		if err == nil {
			out = existing
			return nil
		}
		if !errors.Is(err, ErrNotFound) {
			return err
		}
		var otherARM string
		switch err := tx.QueryRow(ctx, `SELECT arm_resource_id FROM clusters WHERE id = $1`, c.ID).Scan(&otherARM); {
		case err == nil:
			return ErrIDInUse
		case !errors.Is(err, pgx.ErrNoRows):
			return err
		}
		shard, err := placeTx(ctx, tx, policy, c.placementRequest())
		if err != nil {
			return err
		}
		rev, err := nextRevision(ctx, tx)
		if err != nil {
			return err
		}
		// ON CONFLICT is a second guard; the advisory lock already serialises creates.
		out, err = s.scanCluster(tx.QueryRow(ctx, `INSERT INTO clusters
			(id, arm_resource_id, arm_resource_id_orig, spec, status, state, shard, namespace, revision, etcd_encryption_key, ssh_public_key)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)
			ON CONFLICT DO NOTHING
			RETURNING `+clusterColumns,
			c.ID, row.armID, c.ARMResourceID, row.specJSON, row.statusJSON, row.status.State.String(), shard, c.Namespace, rev, row.etcdKey, row.sshKey))
		if errors.Is(err, ErrNotFound) {
			return ErrConflict
		}
		if err != nil {
			return err
		}
		created = true
		return recordEvent(ctx, tx, csv1.EventType_EVENT_TYPE_UPSERTED, out)
	})
	if err != nil {
		return nil, false, err
	}
	return out, created, nil
}

// newClusterRow is what CreateCluster works out before it writes, whichever way it writes: the
// lower-cased ARM ID, the status to store (PENDING unless the caller gave one) and the spec and
// status as JSON, and the sealed etcd key and SSH key.
type newClusterRow struct {
	armID                string
	status               *csv1.ClusterStatus
	specJSON, statusJSON []byte
	etcdKey              []byte
	sshKey               string
}

// placementRequest is what a placement policy is told about c.
func (c *Cluster) placementRequest() placement.Request {
	return placement.Request{ClusterID: c.ID, Location: c.Spec.GetAzure().GetLocation()}
}

// placeTx counts clusters per shard and asks the policy, inside the caller's transaction (which
// holds the write lock), so two concurrent placements cannot both take a shard's last slot.
func placeTx(ctx context.Context, tx pgx.Tx, policy placement.Policy, req placement.Request) (string, error) {
	shards, err := listShards(ctx, tx)
	if err != nil {
		return "", err
	}
	return policy.Choose(ctx, req, shards)
}

// PlaceCluster places a cluster that has no shard yet; a placed cluster never moves, so for
// one that has a shard this returns it unchanged.
func (s *Store) PlaceCluster(ctx context.Context, id string, policy placement.Policy) (*Cluster, error) {
	var out *Cluster
	err := s.writeTx(ctx, func(tx pgx.Tx) error {
		c, err := s.scanCluster(tx.QueryRow(ctx, `SELECT `+clusterColumns+` FROM clusters WHERE id = $1`, id))
		if err != nil {
			return err
		}
		if c.Shard != "" || c.Deleting {
			out = c
			return nil
		}
		shard, err := placeTx(ctx, tx, policy, c.placementRequest())
		if err != nil {
			return err
		}
		rev, err := nextRevision(ctx, tx)
		if err != nil {
			return err
		}
		out, err = s.scanCluster(tx.QueryRow(ctx, `UPDATE clusters SET shard = $2, revision = $3, update_time = now()
			WHERE id = $1 AND shard IS NULL RETURNING `+clusterColumns, id, shard, rev))
		if err != nil {
			return err
		}
		return recordEvent(ctx, tx, csv1.EventType_EVENT_TYPE_UPSERTED, out)
	})
	return out, err
}

// GetCluster returns the cluster or ErrNotFound.
func (s *Store) GetCluster(ctx context.Context, id string) (*Cluster, error) {
	return s.scanCluster(s.reads.QueryRow(ctx, `SELECT `+clusterColumns+` FROM clusters WHERE id = $1`, id))
}

// ListOptions pages ListClusters by id.
type ListOptions struct {
	// Limit is the page size; 0 means no limit.
	Limit int
	// AfterID returns clusters with an id greater than this.
	AfterID string
	// ARMResourceIDPrefix filters case-insensitively.
	ARMResourceIDPrefix string
	// Shard filters by shard when set.
	Shard string
	// IDs, when not empty, keeps only these clusters.
	IDs []string
}

// ListClusters returns clusters in id order.
func (s *Store) ListClusters(ctx context.Context, o ListOptions) ([]*Cluster, error) {
	q := `SELECT ` + clusterColumns + ` FROM clusters WHERE id > $1 AND arm_resource_id LIKE $2
		AND ($3 = '' OR shard = $3) AND (cardinality($4::text[]) = 0 OR id = ANY($4::text[])) ORDER BY id`
	ids := o.IDs
	if ids == nil {
		ids = []string{} // a NULL array would make cardinality NULL, not 0
	}
	args := []any{o.AfterID, likePrefix(strings.ToLower(o.ARMResourceIDPrefix)), o.Shard, ids}
	if o.Limit > 0 {
		q += ` LIMIT $5`
		args = append(args, o.Limit)
	}
	out, err := queryAll(ctx, s.reads, s.scanCluster, q, args...)
	if err != nil {
		return nil, fmt.Errorf("list clusters: %w", err)
	}
	return out, nil
}

// MarkDeleting sets the deleting flag and the UNINSTALLING state, and marks every node pool of
// the cluster deleting too. It is idempotent: a cluster already deleting is returned unchanged
// (no new revision).
func (s *Store) MarkDeleting(ctx context.Context, id string) (*Cluster, error) {
	var out *Cluster
	err := s.writeTx(ctx, func(tx pgx.Tx) error {
		c, err := s.scanCluster(tx.QueryRow(ctx, `SELECT `+clusterColumns+` FROM clusters WHERE id = $1 FOR UPDATE`, id))
		if err != nil {
			return err
		}
		if c.Deleting {
			out = c
			return nil
		}
		// Its node pools go first: the controller removes the cluster's work only once theirs
		// are gone.
		if err := nodePools.markClusterDeletingTx(ctx, tx, id); err != nil {
			return err
		}
		if err := externalAuths.markClusterDeletingTx(ctx, tx, id); err != nil {
			return err
		}
		st := proto.Clone(c.Status).(*csv1.ClusterStatus)
		st.State = csv1.ClusterState_CLUSTER_STATE_UNINSTALLING
		st.Message = "The cluster is being deleted."
		st.ErrorCode = ""
		stj, err := protojson.Marshal(st)
		if err != nil {
			return err
		}
		rev, err := nextRevision(ctx, tx)
		if err != nil {
			return err
		}
		out, err = s.scanCluster(tx.QueryRow(ctx, `UPDATE clusters SET deleting = true, status = $2, state = $3, revision = $4,
			update_time = now() WHERE id = $1 RETURNING `+clusterColumns, id, stj, st.State.String(), rev))
		if err != nil {
			return err
		}
		return recordEvent(ctx, tx, csv1.EventType_EVENT_TYPE_UPSERTED, out)
	})
	return out, err
}

// UpdateStatus replaces the status if the cluster is still at revision (ErrConflict
// otherwise). An identical status is not written and keeps the revision.
func (s *Store) UpdateStatus(ctx context.Context, id string, revision int64, st *csv1.ClusterStatus) (*Cluster, error) {
	return updateStatus(ctx, s, statusRow[Cluster, *csv1.ClusterStatus]{
		what: "cluster", table: "clusters", columns: clusterColumns, scan: s.scanCluster, log: clusterEventLog, eventDoc: clusterEventDoc,
		revisionPath: "{revision}", updateTimePath: "{updateTime}",
		state: func(st *csv1.ClusterStatus) string { return st.State.String() },
		fields: func(c *Cluster) (**csv1.ClusterStatus, *int64, *int64, *time.Time) {
			return &c.Status, &c.Revision, &c.SpecRevision, &c.UpdateTime
		},
	}, id, revision, st)
}

// statusRow says how updateStatus reads, changes and records the row of one kind (R, whose
// status is an S): a cluster or a node pool.
type statusRow[R any, S observedStatus] struct {
	what, table, columns string
	scan                 func(pgx.Row) (*R, error)
	log                  eventLog
	eventDoc             func(*R) ([]byte, error)
	state                func(S) string
	// revisionPath and updateTimePath are where the event document keeps the revision and the
	// update time (jsonb_set paths), which a pipelined write patches in.
	revisionPath, updateTimePath string
	// fields points at the row's status, revision, spec revision and update time.
	fields func(*R) (status *S, revision, specRevision *int64, updateTime *time.Time)
}

// updateStatus is every status write of the controller: it replaces the row's status if the
// row is still at revision (ErrConflict otherwise), stamped with the spec revision it reflects,
// and records the UPSERTED event; a status equal to the stored one writes nothing and keeps the
// revision.
func updateStatus[R any, S observedStatus](ctx context.Context, s *Store, k statusRow[R, S], id string, revision int64, st S) (*R, error) {
	if s.pipelined.Load() {
		return updateStatusPipelined(ctx, s, k, id, revision, st)
	}
	var out *R
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		cur, rev, now, err := lockedRead(ctx, tx, `SELECT `+k.columns+` FROM `+k.table+` WHERE id = $1 FOR UPDATE`, id, k.scan)
		if err != nil {
			return err
		}
		curStatus, curRevision, specRevision, _ := k.fields(cur)
		if *curRevision != revision {
			return ErrConflict
		}
		st = stampObserved(st, *specRevision)
		if proto.Equal(*curStatus, st) {
			out = cur
			return nil
		}
		stj, err := protojson.Marshal(st)
		if err != nil {
			return err
		}
		next := *cur
		nextStatus, nextRevision, _, updateTime := k.fields(&next)
		*nextStatus, *nextRevision, *updateTime = st, rev, now
		doc, err := k.eventDoc(&next)
		if err != nil {
			return err
		}
		tags, err := runSteps(ctx, tx, false, append([]sqlStep{{`UPDATE ` + k.table + ` SET status = $2, state = $3, revision = $4, update_time = now()
			WHERE id = $1 AND revision = $5`, []any{id, stj, k.state(st), rev, revision}, "write status of " + k.what + " " + id}},
			eventSteps(k.log, id, rev, csv1.EventType_EVENT_TYPE_UPSERTED, doc)...))
		if err != nil {
			return err
		}
		if tags[0].RowsAffected() != 1 {
			return ErrConflict
		}
		out = &next
		return nil
	})
	return out, err
}

// lockedRead is a locked status write's first three round trips: it takes the write lock (see
// writeTx), reads the row that query selects FOR UPDATE with scan, and draws the next revision
// with the transaction's time (now(), which the write's update_time will be). A write that then
// changes nothing leaves a gap in the revisions, which watchers never rely on.
func lockedRead[T any](ctx context.Context, tx pgx.Tx, query, id string, scan func(pgx.Row) (T, error)) (row T, rev int64, now time.Time, err error) {
	if _, err = tx.Exec(ctx, takeWriteLock, int64(writeLockKey)); err != nil {
		return row, 0, now, fmt.Errorf("take write lock: %w", err)
	}
	if row, err = scan(tx.QueryRow(ctx, query, id)); err != nil {
		return row, 0, now, err
	}
	if err = tx.QueryRow(ctx, `SELECT nextval('cluster_revision_seq'), now()`).Scan(&rev, &now); err != nil {
		return row, 0, now, fmt.Errorf("next revision: %w", err)
	}
	return row, rev, now, nil
}

// RemoveCluster deletes a cluster that is marked deleting and still at revision, and records
// the DELETED event (tombstone). Only the controller calls it, once the ManifestWork is gone.
func (s *Store) RemoveCluster(ctx context.Context, id string, revision int64) error {
	return s.writeTx(ctx, func(tx pgx.Tx) error {
		c, err := s.scanCluster(tx.QueryRow(ctx, `SELECT `+clusterColumns+` FROM clusters WHERE id = $1 FOR UPDATE`, id))
		if err != nil {
			return err
		}
		if c.Revision != revision || !c.Deleting {
			return ErrConflict
		}
		pools, err := nodePools.countOfCluster(ctx, tx, id)
		if err != nil {
			return err
		}
		if pools > 0 {
			return fmt.Errorf("cluster %s still has %d node pools: %w", id, pools, ErrConflict)
		}
		// Its external auth lived in the cluster's HostedCluster, which is gone now.
		if err := externalAuths.removeClusterTx(ctx, tx, id); err != nil {
			return err
		}
		if err := s.endClusterCredentialsTx(ctx, tx, id); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `DELETE FROM clusters WHERE id = $1`, id); err != nil {
			return err
		}
		rev, err := nextRevision(ctx, tx)
		if err != nil {
			return err
		}
		c.Revision = rev
		c.UpdateTime = time.Now()
		return recordEvent(ctx, tx, csv1.EventType_EVENT_TYPE_DELETED, c)
	})
}

// ---- events

type eventDoc struct {
	ID            string          `json:"id"`
	ARMResourceID string          `json:"armResourceId"`
	Spec          json.RawMessage `json:"spec"`
	Status        json.RawMessage `json:"status"`
	Shard         string          `json:"shard,omitempty"`
	Namespace     string          `json:"namespace"`
	Deleting      bool            `json:"deleting,omitempty"`
	Revision      int64           `json:"revision"`
	SpecRevision  int64           `json:"specRevision,omitempty"`
	CreateTime    time.Time       `json:"createTime"`
	UpdateTime    time.Time       `json:"updateTime"`
}

func nextRevision(ctx context.Context, tx pgx.Tx) (int64, error) {
	var rev int64
	if err := tx.QueryRow(ctx, `SELECT nextval('cluster_revision_seq')`).Scan(&rev); err != nil {
		return 0, fmt.Errorf("next revision: %w", err)
	}
	return rev, nil
}

// recordEvent replaces the cluster's previous event with this one (a watcher resuming from an
// older revision only needs the latest state) and notifies listeners at commit. Secret material
// is not copied into events.
func recordEvent(ctx context.Context, tx pgx.Tx, typ csv1.EventType, c *Cluster) error {
	doc, err := clusterEventDoc(c)
	if err != nil {
		return err
	}
	return writeEvent(ctx, tx, clusterEventLog, c.ID, c.Revision, typ, doc)
}

// clusterEventDoc is the event document of c.
func clusterEventDoc(c *Cluster) ([]byte, error) {
	spec, err := protojson.Marshal(c.Spec)
	if err != nil {
		return nil, err
	}
	st, err := protojson.Marshal(c.Status)
	if err != nil {
		return nil, err
	}
	return json.Marshal(eventDoc{ID: c.ID, ARMResourceID: c.ARMResourceID, Spec: spec, Status: st, Shard: c.Shard,
		Namespace: c.Namespace, Deleting: c.Deleting, Revision: c.Revision, SpecRevision: c.SpecRevision, CreateTime: c.CreateTime, UpdateTime: c.UpdateTime})
}

// EventsAfter returns up to limit events with a revision greater than after, in order.
func (s *Store) EventsAfter(ctx context.Context, after int64, limit int) ([]Event, error) {
	return eventsAfter(ctx, s.reads, clusterEventLog, after, limit, func(rev int64, typ csv1.EventType, doc []byte) (Event, error) {
		var d eventDoc
		if err := json.Unmarshal(doc, &d); err != nil {
			return Event{}, err
		}
		c := &Cluster{ID: d.ID, ARMResourceID: d.ARMResourceID, Shard: d.Shard, Namespace: d.Namespace, Deleting: d.Deleting,
			Revision: d.Revision, SpecRevision: d.SpecRevision, CreateTime: d.CreateTime, UpdateTime: d.UpdateTime, Spec: &csv1.ClusterSpec{}, Status: &csv1.ClusterStatus{}}
		if err := protojson.Unmarshal(d.Spec, c.Spec); err != nil {
			return Event{}, err
		}
		if err := protojson.Unmarshal(d.Status, c.Status); err != nil {
			return Event{}, err
		}
		return Event{Type: typ, Revision: rev, Cluster: c}, nil
	})
}

// Snapshot returns every cluster and the revision the snapshot is consistent with; a watcher
// continues with EventsAfter(revision).
func (s *Store) Snapshot(ctx context.Context) ([]*Cluster, int64, error) {
	return snapshot(ctx, s, clusterEventLog, `SELECT `+clusterColumns+` FROM clusters ORDER BY id`, s.scanCluster)
}

// PruneTombstones removes DELETED events (of clusters and of node pools) recorded before
// `before` and raises each stream's compacted revision to the newest one removed. It returns
// how many were removed.
func (s *Store) PruneTombstones(ctx context.Context, before time.Time) (int64, error) {
	var n int64
	err := s.writeTx(ctx, func(tx pgx.Tx) error {
		pools, err := pruneTombstonesTx(ctx, tx, nodePoolEventLog, before)
		if err != nil {
			return err
		}
		defer func() { n += pools }()
		auths, err := pruneTombstonesTx(ctx, tx, externalAuthEventLog, before)
		if err != nil {
			return err
		}
		defer func() { n += auths }()
		n, err = pruneTombstonesTx(ctx, tx, clusterEventLog, before)
		return err
	})
	return n, err
}

// CompactedRevision is the newest revision whose event may have been pruned: a watcher that
// last saw an older revision (other than 0) may have missed a deletion and must start over.
func (s *Store) CompactedRevision(ctx context.Context) (int64, error) {
	return compactedRevision(ctx, s.reads, clusterEventLog)
}

// CurrentRevision is the latest committed revision.
func (s *Store) CurrentRevision(ctx context.Context) (int64, error) {
	return currentRevision(ctx, s.reads, clusterEventLog)
}

// Changes returns a channel that receives a value (coalesced) whenever a cluster change is
// committed, and a function to stop. Readers then call EventsAfter. Writes to the other event
// logs (node pools, external auths, break-glass) do not wake it: each has its own feed
// (Children.Changes, CredentialChanges). The channel also fires after the listener reconnects,
// since changes may have been missed meanwhile.
func (s *Store) Changes() (<-chan struct{}, func()) { return s.changes(clusterEventLog) }

// CredentialChanges is Changes for the break-glass event log (CredentialEventsAfter).
func (s *Store) CredentialChanges() (<-chan struct{}, func()) { return s.changes(breakGlassEventLog) }

// changes subscribes to the commits to l's event log.
func (s *Store) changes(l eventLog) (<-chan struct{}, func()) {
	ch := make(chan struct{}, 1)
	s.mu.Lock()
	s.waiters[ch] = l.table
	s.mu.Unlock()
	return ch, func() {
		s.mu.Lock()
		delete(s.waiters, ch)
		s.mu.Unlock()
	}
}

// eventLogs are the logs whose table a notification may name.
var eventLogs = []eventLog{clusterEventLog, nodePoolEventLog, externalAuthEventLog, breakGlassEventLog}

// wake wakes the readers of the event log a notification's payload names; every reader when it
// names none (an older replica's payload) or when payload is empty (after a reconnect).
func (s *Store) wake(payload string) {
	all := true
	for _, l := range eventLogs {
		if l.table == payload {
			all = false
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for ch, table := range s.waiters {
		if !all && table != payload {
			continue
		}
		select {
		case ch <- struct{}{}:
		default:
		}
	}
}

// listen holds one connection with LISTEN and fans notifications out; it reconnects with
// backoff until the store is closed.
func (s *Store) listen(ctx context.Context) {
	defer close(s.done)
	backoff.Reconnect(ctx, backoff.Policy{Initial: 100 * time.Millisecond, Max: 5 * time.Second}, func(ctx context.Context) (bool, error) {
		err := s.listenOnce(ctx)
		// The listener sees a restart first; the pool then checks what it held before.
		s.loss.Seen(err)
		return false, err
	}, func(err error, wait time.Duration) {
		s.log.Warn("cluster event listener lost its connection; reconnecting", "error", err, "backoff", wait)
	})
}

func (s *Store) listenOnce(ctx context.Context) error {
	conn, err := s.pool.Acquire(ctx)
	if err != nil {
		return err
	}
	defer conn.Release()
	if _, err := conn.Exec(ctx, `LISTEN `+notifyChannel); err != nil {
		return err
	}
	defer conn.Exec(context.Background(), `UNLISTEN `+notifyChannel) //nolint:errcheck
	s.wake("")                                                       // anything committed while we were not listening
	for {
		n, err := conn.Conn().WaitForNotification(ctx)
		if err != nil {
			return err
		}
		s.wake(n.Payload)
	}
}

// writeTx runs fn in a transaction that holds the global write lock.
func (s *Store) writeTx(ctx context.Context, fn func(pgx.Tx) error) error {
	return pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, takeWriteLock, int64(writeLockKey)); err != nil {
			return fmt.Errorf("take write lock: %w", err)
		}
		return fn(tx)
	})
}

// ---- shards

type querier interface {
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

const shardQuery = `SELECT s.name, s.status, s.max_clusters, s.labels,
	(SELECT count(*) FROM clusters c WHERE c.shard = s.name)::int AS cluster_count
	FROM provision_shards s`

func scanShard(row pgx.Row) (placement.Shard, error) {
	var sh placement.Shard
	var st string
	if err := row.Scan(&sh.Name, &st, &sh.MaxClusters, &sh.Labels, &sh.ClusterCount); err != nil {
		if errors.Is(err, pgx.ErrNoRows) {
			return sh, ErrNotFound
		}
		return sh, err
	}
	sh.Status = csv1.ShardStatus(csv1.ShardStatus_value[st])
	return sh, nil
}

func listShards(ctx context.Context, q querier) ([]placement.Shard, error) {
	out, err := queryAll(ctx, q, scanShard, shardQuery+` ORDER BY s.name`)
	if err != nil {
		return nil, fmt.Errorf("list shards: %w", err)
	}
	return out, nil
}

// ListShards returns all shards with their current cluster counts.
func (s *Store) ListShards(ctx context.Context) ([]placement.Shard, error) {
	return listShards(ctx, s.reads)
}

// GetShard returns one shard or ErrNotFound.
func (s *Store) GetShard(ctx context.Context, name string) (placement.Shard, error) {
	return scanShard(s.reads.QueryRow(ctx, shardQuery+` WHERE s.name = $1`, name))
}

// RegisterShard creates the shard or updates its status, capacity and labels. An unspecified
// status means ACTIVE for a new shard and "unchanged" for an existing one.
func (s *Store) RegisterShard(ctx context.Context, sh placement.Shard) (placement.Shard, error) {
	if sh.Labels == nil {
		sh.Labels = map[string]string{}
	}
	var out placement.Shard
	err := s.writeTx(ctx, func(tx pgx.Tx) error {
		newStatus := csv1.ShardStatus_SHARD_STATUS_ACTIVE.String()
		if sh.Status != csv1.ShardStatus_SHARD_STATUS_UNSPECIFIED {
			newStatus = sh.Status.String()
		}
		_, err := tx.Exec(ctx, `INSERT INTO provision_shards (name, status, max_clusters, labels) VALUES ($1, $2, $3, $4)
			ON CONFLICT (name) DO UPDATE SET
				status = CASE WHEN $5 THEN provision_shards.status ELSE excluded.status END,
				max_clusters = excluded.max_clusters, labels = excluded.labels, update_time = now()`,
			sh.Name, newStatus, sh.MaxClusters, sh.Labels, sh.Status == csv1.ShardStatus_SHARD_STATUS_UNSPECIFIED)
		if err != nil {
			return fmt.Errorf("register shard %s: %w", sh.Name, err)
		}
		out, err = scanShard(tx.QueryRow(ctx, shardQuery+` WHERE s.name = $1`, sh.Name))
		return err
	})
	return out, err
}

// SetShardStatus changes a shard's status; ErrNotFound if it does not exist. A non-zero
// ifStatus makes the change conditional: ErrConflict unless the status is still ifStatus.
func (s *Store) SetShardStatus(ctx context.Context, name string, st, ifStatus csv1.ShardStatus) (placement.Shard, error) {
	var out placement.Shard
	err := s.writeTx(ctx, func(tx pgx.Tx) error {
		var current string
		if err := tx.QueryRow(ctx, `SELECT status FROM provision_shards WHERE name = $1 FOR UPDATE`, name).Scan(&current); err != nil {
			if errors.Is(err, pgx.ErrNoRows) {
				return ErrNotFound
			}
			return fmt.Errorf("set shard status %s: %w", name, err)
		}
		if ifStatus != csv1.ShardStatus_SHARD_STATUS_UNSPECIFIED && current != ifStatus.String() {
			return fmt.Errorf("%w: shard %s is %s, not %s", ErrConflict, name, current, ifStatus)
		}
		if _, err := tx.Exec(ctx, `UPDATE provision_shards SET status = $2, update_time = now() WHERE name = $1`, name, st.String()); err != nil {
			return fmt.Errorf("set shard status %s: %w", name, err)
		}
		var err error
		out, err = scanShard(tx.QueryRow(ctx, shardQuery+` WHERE s.name = $1`, name))
		return err
	})
	return out, err
}

// likePrefix makes a LIKE pattern matching strings that start with p; LIKE's wildcards and
// escape character in p match themselves.
func likePrefix(p string) string {
	r := strings.NewReplacer(`\`, `\\`, `%`, `\%`, `_`, `\_`)
	return r.Replace(p) + "%"
}

// observedStatus is a status that carries the revision of the spec it reflects.
type observedStatus interface {
	proto.Message
	GetObservedRevision() int64
}

// StatusUnchanged says whether UpdateStatus(c.ID, c.Revision, st) would leave c's status as it
// is: st, stamped as the write would stamp it, equals it. Such a write changes nothing, yet
// takes the write lock and a row lock; a controller skips it.
func (c *Cluster) StatusUnchanged(st *csv1.ClusterStatus) bool {
	return proto.Equal(c.Status, stampObserved(st, c.SpecRevision))
}

// stampObserved returns a copy of st (a status the controller derived from the stored row, and
// writes conditionally on the revision it read, so from the spec at specRevision) with
// observed_revision = specRevision. Only the controller's status writes stamp: a spec write
// that sets UPDATING keeps the old observed_revision, since nothing has observed the new spec.
func stampObserved[S observedStatus](st S, specRevision int64) S {
	out := proto.Clone(st).(S)
	out.ProtoReflect().Set(out.ProtoReflect().Descriptor().Fields().ByName("observed_revision"), protoreflect.ValueOfInt64(specRevision))
	return out
}
