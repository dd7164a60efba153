package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
	"unicode"

	"github.com/jackc/pgx/v5"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/known/timestamppb"

	csv1 "github.com/openhcp/openhcp/cluster-service/api/v1"
)

// A cluster's children (node pools, external auths) are each a row of their own table with the
// same columns, an event log of the same shape, and the same life: created PENDING under a live
// cluster, spec changed under the row lock, status written by the controller at a revision,
// marked deleting, then removed by the controller. childKind is that life written once; what
// differs between kinds is data (table, event log, state names, messages, a per-cluster limit)
// and one hook (what a spec change does to the status).

// ErrDeleting: the object (or the cluster it belongs to) is being deleted, so it cannot change.
var ErrDeleting = errors.New("being deleted")

// Child is a stored child object of a cluster: a node pool or an external auth.
type Child[Spec proto.Message, Status observedStatus] struct {
	ID            string
	ClusterID     string
	ARMResourceID string // as the caller spelled it; compared lower-cased
	Spec          Spec
	Status        Status
	Deleting      bool
	Revision      int64
	SpecRevision  int64 // as Cluster.SpecRevision
	CreateTime    time.Time
	UpdateTime    time.Time
}

// StatusUnchanged is Cluster.StatusUnchanged for a child's status write.
func (c *Child[Spec, Status]) StatusUnchanged(st Status) bool {
	return proto.Equal(c.Status, stampObserved(st, c.SpecRevision))
}

// ChildEvent is one entry of a child kind's event log.
type ChildEvent[Spec proto.Message, Status observedStatus] struct {
	Type     csv1.EventType // UPSERTED or DELETED
	Revision int64
	Object   *Child[Spec, Status] // for DELETED, the last known state
}

// Children is the store of one child kind (Store.NodePools, Store.ExternalAuths): every
// operation on a child, written once for every kind.
type Children[Spec proto.Message, Status observedStatus] struct {
	s *Store
	k *childKind[Spec, Status]
}

// Create stores a new child of c.ClusterID. It is idempotent on the ARM resource ID
// (created=false returns the existing one, whatever c.ID says). ErrNotFound if the cluster does
// not exist, ErrDeleting if it is being deleted, the kind's limit error (ErrExternalAuthLimit)
// past its per-cluster limit, ErrIDInUse if c.ID belongs to another ARM resource. c.Spec is
// stored as it is; the server's creates check it against the cluster (CreateChecked).
func (cs Children[Spec, Status]) Create(ctx context.Context, c *Child[Spec, Status]) (_ *Child[Spec, Status], created bool, err error) {
	return cs.k.create(ctx, cs.s, c, nil)
}

// CreateChecked is Create with the spec checked against the cluster in the create's
// transaction: check gets the cluster as it is there, under the write lock, before anything
// else is decided (an existing child for the ARM resource included), and returns the spec to
// store; its errors are returned as they are. Every write of the cluster holds the write lock
// too, so none lands between what check sees and the create's commit.
func (cs Children[Spec, Status]) CreateChecked(ctx context.Context, c *Child[Spec, Status], check func(cl *Cluster) (Spec, error)) (_ *Child[Spec, Status], created bool, err error) {
	return cs.k.create(ctx, cs.s, c, check)
}

// Get returns the child or ErrNotFound.
func (cs Children[Spec, Status]) Get(ctx context.Context, id string) (*Child[Spec, Status], error) {
	return cs.k.scan(cs.s.reads.QueryRow(ctx, cs.k.selectWhere(`id = $1`), id))
}

// List returns the children of one cluster in id order; with clusterID empty, up to limit of
// every cluster with an id greater than afterID (limit 0: no limit).
func (cs Children[Spec, Status]) List(ctx context.Context, clusterID, afterID string, limit int) ([]*Child[Spec, Status], error) {
	return cs.k.list(ctx, cs.s, clusterID, afterID, limit)
}

// Update reads the child and its cluster under the write lock and writes the spec decide
// returns (a partial update applied to the stored spec, defaulted and validated), with an
// upgrade policy, if decide returns one, in the same transaction (ErrUpgradeInProgress if the
// object has an unfinished one). It is conditional on pre (zero: unconditional; ErrConflict
// when it does not hold); either way no other write of the child or its cluster lands between
// the reads decide sees and the write. ErrDeleting for a child (or cluster) being deleted,
// whatever pre says; errors from decide are returned as they are. An identical spec is not written and keeps the
// revision: nothing for the controller to do.
func (cs Children[Spec, Status]) Update(ctx context.Context, id string, pre Precondition,
	decide func(cl *Cluster, cur *Child[Spec, Status]) (Spec, *csv1.UpgradePolicy, error)) (*Child[Spec, Status], error) {
	return cs.k.update(ctx, cs.s, id, pre, decide)
}

// MarkDeleting sets the deleting flag and UNINSTALLING; idempotent like MarkDeleting.
func (cs Children[Spec, Status]) MarkDeleting(ctx context.Context, id string) (*Child[Spec, Status], error) {
	return cs.k.markDeleting(ctx, cs.s, id)
}

// UpdateStatus replaces the status if the child is still at revision (ErrConflict otherwise);
// an identical status keeps the revision.
func (cs Children[Spec, Status]) UpdateStatus(ctx context.Context, id string, revision int64, st Status) (*Child[Spec, Status], error) {
	return cs.k.updateStatus(ctx, cs.s, id, revision, st)
}

// Remove deletes a child that is marked deleting and still at revision, and records its
// DELETED event. Only the controller calls it, once the management cluster is done with it.
func (cs Children[Spec, Status]) Remove(ctx context.Context, id string, revision int64) error {
	return cs.k.remove(ctx, cs.s, id, revision)
}

// EventsAfter returns up to limit events with a revision greater than after, in order.
func (cs Children[Spec, Status]) EventsAfter(ctx context.Context, after int64, limit int) ([]ChildEvent[Spec, Status], error) {
	return cs.k.eventsAfter(ctx, cs.s, after, limit)
}

// Snapshot returns every child of the kind and the revision it is consistent with.
func (cs Children[Spec, Status]) Snapshot(ctx context.Context) ([]*Child[Spec, Status], int64, error) {
	return snapshot(ctx, cs.s, cs.k.log, `SELECT `+childColumns+` FROM `+cs.k.table+` ORDER BY id`, cs.k.scan)
}

// CurrentRevision is the revision of the kind's latest event.
func (cs Children[Spec, Status]) CurrentRevision(ctx context.Context) (int64, error) {
	return currentRevision(ctx, cs.s.reads, cs.k.log)
}

// Changes is Store.Changes for the kind's event log: it fires on commits to this kind's
// events (and after the listener reconnects), not on writes to other logs.
func (cs Children[Spec, Status]) Changes() (<-chan struct{}, func()) { return cs.s.changes(cs.k.log) }

// CompactedRevision is the newest revision of the kind whose tombstone may be pruned.
func (cs Children[Spec, Status]) CompactedRevision(ctx context.Context) (int64, error) {
	return compactedRevision(ctx, cs.s.reads, cs.k.log)
}

// childColumns are the columns every child table has, in the order scan reads them.
const childColumns = `id, cluster_id, arm_resource_id_orig, spec, status, deleting, revision, create_time, update_time, spec_revision`

// childKind is what the child store needs to know about one kind. Table and column names are
// constants of this package, never input, so building SQL from them is safe.
type childKind[Spec proto.Message, Status observedStatus] struct {
	what  string // one object in messages: "node pool"
	table string
	log   eventLog
	// docKey is the event document's key of the object ("nodePool"); api is its API message
	// (csv1.NodePool), whose fields id, cluster_id, ... spec_revision the document holds.
	docKey string
	api    protoreflect.MessageType
	// statePrefix is the prefix of the status enum's value names ("NODE_POOL_STATE_").
	statePrefix                     string
	pendingMessage, deletingMessage string
	// perCluster, when not zero, is how many a cluster may have; a create past it fails with
	// limitErr.
	perCluster int
	limitErr   error
	// A spec change sets UPDATING (updatingMessage) from the states in updatingFrom and, with
	// clearApplied, clears status.applied: the controller has not seen the new spec yet.
	updatingFrom    []string
	updatingMessage string
	clearApplied    bool
}

// of completes k with the names that follow from its API message (csv1.NodePool): its noun
// ("node pool"), table (node_pools), event document key (nodePool) and state names
// (NODE_POOL_STATE_*).
func (k *childKind[Spec, Status]) of(api proto.Message) *childKind[Spec, Status] {
	name := string(api.ProtoReflect().Descriptor().Name())
	var snake strings.Builder
	for i, r := range name {
		if i > 0 && unicode.IsUpper(r) {
			snake.WriteByte('_')
		}
		snake.WriteRune(unicode.ToLower(r))
	}
	k.api = api.ProtoReflect().Type()
	k.what, k.table = strings.ReplaceAll(snake.String(), "_", " "), snake.String()+"s"
	k.docKey = strings.ToLower(name[:1]) + name[1:]
	k.statePrefix = strings.ToUpper(snake.String()) + "_STATE_"
	return k
}

// specChanged is the status st becomes when the spec changes.
func (k *childKind[Spec, Status]) specChanged(st Status) {
	state := strings.TrimPrefix(childState(st), k.statePrefix)
	if slices.Contains(k.updatingFrom, state) {
		setChildState(st, k.statePrefix, "UPDATING", k.updatingMessage)
	}
	if k.clearApplied {
		m := st.ProtoReflect()
		m.Clear(m.Descriptor().Fields().ByName("applied"))
	}
}

// newMessage is a new empty M.
func newMessage[M proto.Message]() M {
	var zero M
	return zero.ProtoReflect().Type().New().Interface().(M)
}

// setChildState sets a child status's state (by its name without the kind's prefix) and
// message, and clears its error code.
func setChildState(st proto.Message, prefix, state, message string) {
	m := st.ProtoReflect()
	fields := m.Descriptor().Fields()
	fd := fields.ByName("state")
	v := fd.Enum().Values().ByName(protoreflect.Name(prefix + state))
	if v == nil {
		panic(fmt.Sprintf("status %s has no state %s%s", m.Descriptor().FullName(), prefix, state))
	}
	m.Set(fd, protoreflect.ValueOfEnum(v.Number()))
	m.Set(fields.ByName("message"), protoreflect.ValueOfString(message))
	m.Clear(fields.ByName("error_code"))
}

// childState is the name of a child status's state, as stored in the state column.
func childState(st proto.Message) string {
	m := st.ProtoReflect()
	fd := m.Descriptor().Fields().ByName("state")
	n := m.Get(fd).Enum()
	if v := fd.Enum().Values().ByNumber(n); v != nil {
		return string(v.Name())
	}
	return fmt.Sprint(n)
}

func (k *childKind[Spec, Status]) scan(row pgx.Row) (*Child[Spec, Status], error) {
	var c Child[Spec, Status]
	var spec, st []byte
	if err := row.Scan(&c.ID, &c.ClusterID, &c.ARMResourceID, &spec, &st, &c.Deleting, &c.Revision, &c.CreateTime, &c.UpdateTime, &c.SpecRevision); err != nil {
		if errors.Is(err, pgx.ErrNoRows) {
			return nil, ErrNotFound
		}
		return nil, err
	}
	c.Spec, c.Status = newMessage[Spec](), newMessage[Status]()
	if err := protojson.Unmarshal(spec, c.Spec); err != nil {
		return nil, fmt.Errorf("decode spec of %s %s: %w", k.what, c.ID, err)
	}
	if err := protojson.Unmarshal(st, c.Status); err != nil {
		return nil, fmt.Errorf("decode status of %s %s: %w", k.what, c.ID, err)
	}
	return &c, nil
}

// selectWhere is the query of the kind's rows that match cond.
func (k *childKind[Spec, Status]) selectWhere(cond string) string {
	return `SELECT ` + childColumns + ` FROM ` + k.table + ` WHERE ` + cond
}

// proto is the API form of c (a csv1.NodePool for a node pool).
func (k *childKind[Spec, Status]) proto(c *Child[Spec, Status]) proto.Message {
	m := k.api.New()
	f := m.Descriptor().Fields()
	set := func(name string, v protoreflect.Value) { m.Set(f.ByName(protoreflect.Name(name)), v) }
	set("id", protoreflect.ValueOfString(c.ID))
	set("cluster_id", protoreflect.ValueOfString(c.ClusterID))
	set("arm_resource_id", protoreflect.ValueOfString(c.ARMResourceID))
	if s := c.Spec.ProtoReflect(); s.IsValid() {
		set("spec", protoreflect.ValueOfMessage(s))
	}
	if s := c.Status.ProtoReflect(); s.IsValid() {
		set("status", protoreflect.ValueOfMessage(s))
	}
	set("revision", protoreflect.ValueOfInt64(c.Revision))
	set("create_time", protoreflect.ValueOfMessage(timestamppb.New(c.CreateTime).ProtoReflect()))
	set("update_time", protoreflect.ValueOfMessage(timestamppb.New(c.UpdateTime).ProtoReflect()))
	set("spec_revision", protoreflect.ValueOfInt64(c.SpecRevision))
	return m.Interface()
}

// fromProto is the stored form of m, an API message of the kind; an absent spec or status is
// empty.
func (k *childKind[Spec, Status]) fromProto(m protoreflect.Message) *Child[Spec, Status] {
	f := m.Descriptor().Fields()
	get := func(name string) protoreflect.Value { return m.Get(f.ByName(protoreflect.Name(name))) }
	at := func(name string) time.Time {
		ts, _ := get(name).Message().Interface().(*timestamppb.Timestamp)
		return ts.AsTime()
	}
	c := &Child[Spec, Status]{ID: get("id").String(), ClusterID: get("cluster_id").String(), ARMResourceID: get("arm_resource_id").String(),
		Spec: newMessage[Spec](), Status: newMessage[Status](), Revision: get("revision").Int(), SpecRevision: get("spec_revision").Int(),
		CreateTime: at("create_time"), UpdateTime: at("update_time")}
	if fd := f.ByName("spec"); m.Has(fd) {
		c.Spec = m.Get(fd).Message().Interface().(Spec)
	}
	if fd := f.ByName("status"); m.Has(fd) {
		c.Status = m.Get(fd).Message().Interface().(Status)
	}
	return c
}

// create stores a new child of c.ClusterID, idempotent on the ARM resource ID (created=false
// returns the existing one, whatever c.ID says). ErrNotFound if the cluster does not exist,
// ErrDeleting if it is being deleted, the kind's limitErr past its per-cluster limit, ErrIDInUse
// if c.ID belongs to another ARM resource. check, when not nil, is CreateChecked's.
func (k *childKind[Spec, Status]) create(ctx context.Context, s *Store, c *Child[Spec, Status], check func(cl *Cluster) (Spec, error)) (_ *Child[Spec, Status], created bool, err error) {
	armID := strings.ToLower(c.ARMResourceID)
	var out *Child[Spec, Status]
	err = s.writeTx(ctx, func(tx pgx.Tx) error {
		// The cluster is locked so that it cannot be marked deleting before the create commits.
		cl, err := s.scanCluster(tx.QueryRow(ctx, `SELECT `+clusterColumns+` FROM clusters WHERE id = $1 FOR UPDATE`, c.ClusterID))
		if err != nil {
			return fmt.Errorf("cluster %s: %w", c.ClusterID, err)
		}
		spec := c.Spec
		if check != nil {
			if spec, err = check(cl); err != nil {
				return err
			}
		}
		existing, err := k.scan(tx.QueryRow(ctx, k.selectWhere(`arm_resource_id = $1`), armID))
		if err == nil {
			out = existing
			return nil
		}
		if !errors.Is(err, ErrNotFound) {
			return err
		}
		if cl.Deleting {
			return fmt.Errorf("cluster %s: %w", c.ClusterID, ErrDeleting)
		}
		if k.perCluster > 0 {
			others, err := queryAll(ctx, tx, scanString, `SELECT arm_resource_id_orig FROM `+k.table+` WHERE cluster_id = $1 ORDER BY id`, c.ClusterID)
			if err != nil {
				return fmt.Errorf("%s of cluster %s: %w", k.what, c.ClusterID, err)
			}
			if len(others) >= k.perCluster {
				return fmt.Errorf("%w: %s", k.limitErr, strings.Join(others, ", "))
			}
		}
		var other string
		switch err := tx.QueryRow(ctx, `SELECT arm_resource_id FROM `+k.table+` WHERE id = $1`, c.ID).Scan(&other); {
		case err == nil:
			return ErrIDInUse
		case !errors.Is(err, pgx.ErrNoRows):
			return err
		}
		st := newMessage[Status]()
		setChildState(st, k.statePrefix, "PENDING", k.pendingMessage)
		specj, err := protojson.Marshal(spec)
		if err != nil {
			return err
		}
		stj, err := protojson.Marshal(st)
		if err != nil {
			return err
		}
		rev, err := nextRevision(ctx, tx)
		if err != nil {
			return err
		}
		out, err = k.scan(tx.QueryRow(ctx, `INSERT INTO `+k.table+`
			(id, cluster_id, arm_resource_id, arm_resource_id_orig, spec, status, state, revision)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8) ON CONFLICT DO NOTHING RETURNING `+childColumns,
			c.ID, c.ClusterID, armID, c.ARMResourceID, specj, stj, childState(st), rev))
		if errors.Is(err, ErrNotFound) {
			return ErrConflict
		}
		if err != nil {
			return err
		}
		created = true
		return k.record(ctx, tx, csv1.EventType_EVENT_TYPE_UPSERTED, out)
	})
	if err != nil {
		return nil, false, err
	}
	return out, created, nil
}

func scanString(row pgx.Row) (string, error) {
	var v string
	err := row.Scan(&v)
	return v, err
}

// list returns the children of one cluster in id order; with clusterID empty, up to limit of
// every cluster with an id greater than afterID (limit 0: no limit).
func (k *childKind[Spec, Status]) list(ctx context.Context, s *Store, clusterID, afterID string, limit int) ([]*Child[Spec, Status], error) {
	q := k.selectWhere(`($1 = '' OR cluster_id = $1) AND id > $2 ORDER BY id`)
	args := []any{clusterID, afterID}
	if limit > 0 {
		q += ` LIMIT $3`
		args = append(args, limit)
	}
	out, err := queryAll(ctx, s.reads, k.scan, q, args...)
	if err != nil {
		return nil, fmt.Errorf("list %ss: %w", k.what, err)
	}
	return out, nil
}

// lock reads the row for update and checks pre.
func (k *childKind[Spec, Status]) lock(ctx context.Context, tx pgx.Tx, id string, pre Precondition) (*Child[Spec, Status], error) {
	c, err := k.scan(tx.QueryRow(ctx, k.selectWhere(`id = $1 FOR UPDATE`), id))
	if err != nil {
		return nil, err
	}
	if err := pre.check(c.Revision, c.SpecRevision); err != nil {
		return nil, err
	}
	return c, nil
}

// lockWithCluster reads the row for update and its cluster, in one round trip.
func (k *childKind[Spec, Status]) lockWithCluster(ctx context.Context, s *Store, tx pgx.Tx, id string) (*Child[Spec, Status], *Cluster, error) {
	var b pgx.Batch
	b.Queue(k.selectWhere(`id = $1 FOR UPDATE`), id)
	b.Queue(`SELECT `+clusterColumns+` FROM clusters WHERE id = (SELECT cluster_id FROM `+k.table+` WHERE id = $1)`, id)
	br := tx.SendBatch(ctx, &b)
	defer br.Close()
	c, err := k.scan(br.QueryRow())
	if err != nil {
		return nil, nil, err
	}
	cl, err := s.scanCluster(br.QueryRow())
	if err != nil {
		return nil, nil, fmt.Errorf("cluster %s of %s %s: %w", c.ClusterID, k.what, id, err)
	}
	return c, cl, br.Close()
}

// update reads the row and its cluster under the write lock and writes the spec decide returns
// (a partial update applied to the stored spec, defaulted and validated), with upgrade, if any,
// in the same transaction (ErrUpgradeInProgress if the object has an unfinished one). It is
// conditional on pre (zero: unconditional; ErrConflict when it does not hold); either way no
// other write of the object or its cluster lands between the reads decide sees and the write.
// ErrDeleting for an object (or cluster) being deleted, whatever pre says; errors from decide are
// returned as they are. An identical spec is not written and keeps the revision: nothing for the
// controller to do.
func (k *childKind[Spec, Status]) update(ctx context.Context, s *Store, id string, pre Precondition,
	decide func(cl *Cluster, cur *Child[Spec, Status]) (Spec, *csv1.UpgradePolicy, error)) (*Child[Spec, Status], error) {
	var out *Child[Spec, Status]
	err := s.writeTx(ctx, func(tx pgx.Tx) error {
		cur, cl, err := k.lockWithCluster(ctx, s, tx, id)
		if err != nil {
			return err
		}
		// Being deleted is said before a failed condition: no condition would let it change.
		if cur.Deleting || cl.Deleting {
			return fmt.Errorf("%s %s: %w", k.what, id, ErrDeleting)
		}
		if err := pre.check(cur.Revision, cur.SpecRevision); err != nil {
			return err
		}
		spec, upgrade, err := decide(cl, cur)
		if err != nil {
			return err
		}
		if proto.Equal(cur.Spec, spec) {
			out = cur
			return nil
		}
		if upgrade != nil {
			if _, err := insertPolicyTx(ctx, tx, upgrade); err != nil {
				return err
			}
		}
		// The status changes in the same revision as the spec (as a cluster's configuration
		// change): the controller reports READY again only from feedback about the new spec, so
		// a READY read right after this update never ends the caller's wait.
		st := proto.Clone(cur.Status).(Status)
		k.specChanged(st)
		out, err = k.write(ctx, tx, cur, spec, st, false)
		return err
	})
	return out, err
}

// write replaces the row's spec, status and deleting flag at a new revision and records the
// UPSERTED event.
func (k *childKind[Spec, Status]) write(ctx context.Context, tx pgx.Tx, cur *Child[Spec, Status], spec Spec, st Status, deleting bool) (*Child[Spec, Status], error) {
	specj, err := protojson.Marshal(spec)
	if err != nil {
		return nil, err
	}
	stj, err := protojson.Marshal(st)
	if err != nil {
		return nil, err
	}
	rev, err := nextRevision(ctx, tx)
	if err != nil {
		return nil, err
	}
	out, err := k.scan(tx.QueryRow(ctx, `UPDATE `+k.table+` SET spec = $2, status = $3, state = $4, deleting = $5,
		revision = $6, update_time = now() WHERE id = $1 RETURNING `+childColumns, cur.ID, specj, stj, childState(st), deleting, rev))
	if err != nil {
		return nil, fmt.Errorf("write %s %s: %w", k.what, cur.ID, err)
	}
	return out, k.record(ctx, tx, csv1.EventType_EVENT_TYPE_UPSERTED, out)
}

// markDeleting sets the deleting flag and UNINSTALLING; idempotent like MarkDeleting.
func (k *childKind[Spec, Status]) markDeleting(ctx context.Context, s *Store, id string) (*Child[Spec, Status], error) {
	var out *Child[Spec, Status]
	err := s.writeTx(ctx, func(tx pgx.Tx) error {
		c, err := k.lock(ctx, tx, id, Precondition{})
		if err != nil {
			return err
		}
		out, err = k.markDeletingTx(ctx, tx, c)
		return err
	})
	return out, err
}

func (k *childKind[Spec, Status]) markDeletingTx(ctx context.Context, tx pgx.Tx, c *Child[Spec, Status]) (*Child[Spec, Status], error) {
	if c.Deleting {
		return c, nil
	}
	st := proto.Clone(c.Status).(Status)
	setChildState(st, k.statePrefix, "UNINSTALLING", k.deletingMessage)
	return k.write(ctx, tx, c, c.Spec, st, true)
}

// markClusterDeletingTx marks every child of a cluster deleting, inside the cluster's
// MarkDeleting transaction.
func (k *childKind[Spec, Status]) markClusterDeletingTx(ctx context.Context, tx pgx.Tx, clusterID string) error {
	all, err := queryAll(ctx, tx, k.scan, k.selectWhere(`cluster_id = $1 AND NOT deleting ORDER BY id FOR UPDATE`), clusterID)
	if err != nil {
		return fmt.Errorf("%ss of %s: %w", k.what, clusterID, err)
	}
	for _, c := range all {
		if _, err := k.markDeletingTx(ctx, tx, c); err != nil {
			return fmt.Errorf("mark %s %s deleting: %w", k.what, c.ID, err)
		}
	}
	return nil
}

// updateStatus replaces the status if the object is still at revision (ErrConflict otherwise);
// an identical status keeps the revision.
func (k *childKind[Spec, Status]) updateStatus(ctx context.Context, s *Store, id string, revision int64, st Status) (*Child[Spec, Status], error) {
	return updateStatus(ctx, s, statusRow[Child[Spec, Status], Status]{
		what: k.what, table: k.table, columns: childColumns, scan: k.scan, log: k.log, eventDoc: k.eventDoc,
		revisionPath: "{" + k.docKey + ",revision}", updateTimePath: "{" + k.docKey + ",updateTime}",
		state: func(st Status) string { return childState(st) },
		fields: func(c *Child[Spec, Status]) (*Status, *int64, *int64, *time.Time) {
			return &c.Status, &c.Revision, &c.SpecRevision, &c.UpdateTime
		},
	}, id, revision, st)
}

// remove deletes an object that is marked deleting and still at revision, and records its
// DELETED event. Only the controller calls it, once the management cluster is done with it.
func (k *childKind[Spec, Status]) remove(ctx context.Context, s *Store, id string, revision int64) error {
	return s.writeTx(ctx, func(tx pgx.Tx) error {
		c, err := k.lock(ctx, tx, id, Precondition{})
		if err != nil {
			return err
		}
		if c.Revision != revision || !c.Deleting {
			return ErrConflict
		}
		return k.removeTx(ctx, tx, c)
	})
}

func (k *childKind[Spec, Status]) removeTx(ctx context.Context, tx pgx.Tx, c *Child[Spec, Status]) error {
	if _, err := tx.Exec(ctx, `DELETE FROM `+k.table+` WHERE id = $1`, c.ID); err != nil {
		return fmt.Errorf("delete %s %s: %w", k.what, c.ID, err)
	}
	rev, err := nextRevision(ctx, tx)
	if err != nil {
		return err
	}
	c.Revision, c.UpdateTime = rev, time.Now()
	return k.record(ctx, tx, csv1.EventType_EVENT_TYPE_DELETED, c)
}

// removeClusterTx removes every child of a cluster being removed, inside RemoveCluster's
// transaction: for a kind that lives in the cluster's HostedCluster, which is gone now.
func (k *childKind[Spec, Status]) removeClusterTx(ctx context.Context, tx pgx.Tx, clusterID string) error {
	all, err := queryAll(ctx, tx, k.scan, k.selectWhere(`cluster_id = $1 ORDER BY id FOR UPDATE`), clusterID)
	if err != nil {
		return fmt.Errorf("%ss of cluster %s: %w", k.what, clusterID, err)
	}
	for _, c := range all {
		c.Deleting = true
		if err := k.removeTx(ctx, tx, c); err != nil {
			return err
		}
	}
	return nil
}

// countOfCluster is how many children the cluster has.
func (k *childKind[Spec, Status]) countOfCluster(ctx context.Context, tx pgx.Tx, clusterID string) (int, error) {
	var n int
	err := tx.QueryRow(ctx, `SELECT count(*) FROM `+k.table+` WHERE cluster_id = $1`, clusterID).Scan(&n)
	return n, err
}

func (k *childKind[Spec, Status]) record(ctx context.Context, tx pgx.Tx, typ csv1.EventType, c *Child[Spec, Status]) error {
	doc, err := k.eventDoc(c)
	if err != nil {
		return err
	}
	return writeEvent(ctx, tx, k.log, c.ID, c.Revision, typ, doc)
}

// eventDoc is the event document of c: {"<docKey>": <API form>, "deleting": true if it is}.
func (k *childKind[Spec, Status]) eventDoc(c *Child[Spec, Status]) ([]byte, error) {
	raw, err := protojson.Marshal(k.proto(c))
	if err != nil {
		return nil, err
	}
	doc := map[string]any{k.docKey: json.RawMessage(raw)}
	if c.Deleting {
		doc["deleting"] = true
	}
	return json.Marshal(doc)
}

// eventsAfter reads up to limit events with a revision greater than after.
func (k *childKind[Spec, Status]) eventsAfter(ctx context.Context, s *Store, after int64, limit int) ([]ChildEvent[Spec, Status], error) {
	return eventsAfter(ctx, s.reads, k.log, after, limit, func(rev int64, typ csv1.EventType, raw []byte) (ChildEvent[Spec, Status], error) {
		var doc map[string]json.RawMessage
		if err := json.Unmarshal(raw, &doc); err != nil {
			return ChildEvent[Spec, Status]{}, err
		}
		m := k.api.New()
		if err := protojson.Unmarshal(doc[k.docKey], m.Interface()); err != nil {
			return ChildEvent[Spec, Status]{}, err
		}
		c := k.fromProto(m)
		if d, ok := doc["deleting"]; ok {
			if err := json.Unmarshal(d, &c.Deleting); err != nil {
				return ChildEvent[Spec, Status]{}, err
			}
		}
		return ChildEvent[Spec, Status]{Type: typ, Revision: rev, Object: c}, nil
	})
}
