package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	csv1 "github.com/openhcp/openhcp/cluster-service/api/v1"
)

// ErrDeleting: the object (or the cluster it belongs to) is being deleted, so it cannot change.
var ErrDeleting = errors.New("being deleted")

// NodePool is a stored node pool.
type NodePool struct {
	ID            string
	ClusterID     string
	ARMResourceID string // as the caller spelled it; compared lower-cased
	Spec          *csv1.NodePoolSpec
	Status        *csv1.NodePoolStatus
	Deleting      bool
	Revision      int64
	SpecRevision  int64 // as Cluster.SpecRevision
	CreateTime    time.Time
	UpdateTime    time.Time
}

// NodePoolEvent is one entry of the node pool event log.
type NodePoolEvent struct {
	Type     csv1.EventType // UPSERTED or DELETED
	Revision int64
	NodePool *NodePool // for DELETED, the last known state
}

const nodePoolColumns = `id, cluster_id, arm_resource_id_orig, spec, status, deleting, revision, create_time, update_time, spec_revision`

func scanNodePool(row pgx.Row) (*NodePool, error) {
	var np NodePool
	var spec, st []byte
	if err := row.Scan(&np.ID, &np.ClusterID, &np.ARMResourceID, &spec, &st, &np.Deleting, &np.Revision, &np.CreateTime, &np.UpdateTime, &np.SpecRevision); err != nil {
		if errors.Is(err, pgx.ErrNoRows) {
			return nil, ErrNotFound
		}
		return nil, err
	}
	np.Spec, np.Status = &csv1.NodePoolSpec{}, &csv1.NodePoolStatus{}
	if err := protojson.Unmarshal(spec, np.Spec); err != nil {
		return nil, fmt.Errorf("decode spec of node pool %s: %w", np.ID, err)
	}
	if err := protojson.Unmarshal(st, np.Status); err != nil {
		return nil, fmt.Errorf("decode status of node pool %s: %w", np.ID, err)
	}
	return &np, nil
}

// NodePoolProto is the API form of a stored node pool.
func NodePoolProto(np *NodePool) *csv1.NodePool {
	return &csv1.NodePool{
		Id: np.ID, ClusterId: np.ClusterID, ArmResourceId: np.ARMResourceID, Spec: np.Spec, Status: np.Status,
		Revision: np.Revision, CreateTime: timestamppb.New(np.CreateTime), UpdateTime: timestamppb.New(np.UpdateTime),
		SpecRevision: np.SpecRevision,
	}
}

// CreateNodePool stores a new node pool of np.ClusterID. Like CreateCluster it is idempotent on
// the ARM resource ID (created=false returns the existing pool, whatever np.ID says).
// ErrNotFound if the cluster does not exist, ErrDeleting if it is being deleted, ErrIDInUse if
// np.ID belongs to another ARM resource.
func (s *Store) CreateNodePool(ctx context.Context, np *NodePool) (_ *NodePool, created bool, err error) {
	armID := strings.ToLower(np.ARMResourceID)
	var out *NodePool
	err = s.writeTx(ctx, func(tx pgx.Tx) error {
		existing, err := scanNodePool(tx.QueryRow(ctx, `SELECT `+nodePoolColumns+` FROM node_pools WHERE arm_resource_id = $1`, armID))
		if err == nil {
			out = existing
			return nil
		}
		if !errors.Is(err, ErrNotFound) {
			return err
		}
		if err := lockLiveClusterTx(ctx, tx, np.ClusterID); err != nil {
			return err
		}
		var other string
		switch err := tx.QueryRow(ctx, `SELECT arm_resource_id FROM node_pools WHERE id = $1`, np.ID).Scan(&other); {
		case err == nil:
			return ErrIDInUse
		case !errors.Is(err, pgx.ErrNoRows):
			return err
		}
		st := &csv1.NodePoolStatus{State: csv1.NodePoolState_NODE_POOL_STATE_PENDING, Message: "The node pool is accepted; its manifests are not sent yet."}
		spec, err := protojson.Marshal(np.Spec)
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
		out, err = scanNodePool(tx.QueryRow(ctx, `INSERT INTO node_pools
			(id, cluster_id, arm_resource_id, arm_resource_id_orig, spec, status, state, revision)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8) ON CONFLICT DO NOTHING RETURNING `+nodePoolColumns,
			np.ID, np.ClusterID, armID, np.ARMResourceID, spec, stj, st.State.String(), rev))
		if errors.Is(err, ErrNotFound) {
			return ErrConflict
		}
		if err != nil {
			return err
		}
		created = true
		return recordNodePoolEvent(ctx, tx, csv1.EventType_EVENT_TYPE_UPSERTED, out)
	})
	if err != nil {
		return nil, false, err
	}
	return out, created, nil
}

// lockLiveClusterTx locks the cluster a new child object (node pool, external auth) is for:
// ErrNotFound without it, ErrDeleting while it is being deleted. The lock keeps it from being
// marked deleting before the child's create commits.
func lockLiveClusterTx(ctx context.Context, tx pgx.Tx, clusterID string) error {
	var deleting bool
	switch err := tx.QueryRow(ctx, `SELECT deleting FROM clusters WHERE id = $1 FOR UPDATE`, clusterID).Scan(&deleting); {
	case errors.Is(err, pgx.ErrNoRows):
		return fmt.Errorf("cluster %s: %w", clusterID, ErrNotFound)
	case err != nil:
		return err
	case deleting:
		return fmt.Errorf("cluster %s: %w", clusterID, ErrDeleting)
	}
	return nil
}

// GetNodePool returns the node pool or ErrNotFound.
func (s *Store) GetNodePool(ctx context.Context, id string) (*NodePool, error) {
	return scanNodePool(s.pool.QueryRow(ctx, `SELECT `+nodePoolColumns+` FROM node_pools WHERE id = $1`, id))
}

// ListNodePools returns the node pools of one cluster in id order; with clusterID empty, up to
// limit pools of every cluster with an id greater than afterID (limit 0: no limit).
func (s *Store) ListNodePools(ctx context.Context, clusterID, afterID string, limit int) ([]*NodePool, error) {
	q := `SELECT ` + nodePoolColumns + ` FROM node_pools WHERE ($1 = '' OR cluster_id = $1) AND id > $2 ORDER BY id`
	args := []any{clusterID, afterID}
	if limit > 0 {
		q += ` LIMIT $3`
		args = append(args, limit)
	}
	out, err := queryAll(ctx, s.pool, scanNodePool, q, args...)
	if err != nil {
		return nil, fmt.Errorf("list node pools: %w", err)
	}
	return out, nil
}

// UpdateNodePool reads the pool under the write lock and writes the spec decide returns (a
// partial update applied to the stored spec, defaulted and validated), with upgrade, a node pool
// upgrade policy, in the same transaction (ErrUpgradeInProgress if the pool has an unfinished
// one). It is conditional on pre (zero: unconditional; ErrConflict when it does not hold);
// either way no other write lands between the read decide sees and the write.
// ErrDeleting for a pool being deleted; errors from decide are returned as they are. An
// identical spec is not written and keeps the revision.
func (s *Store) UpdateNodePool(ctx context.Context, id string, pre Precondition,
	decide func(cur *NodePool) (*csv1.NodePoolSpec, *csv1.UpgradePolicy, error)) (*NodePool, error) {
	var out *NodePool
	err := s.writeTx(ctx, func(tx pgx.Tx) error {
		np, err := scanNodePool(tx.QueryRow(ctx, `SELECT `+nodePoolColumns+` FROM node_pools WHERE id = $1 FOR UPDATE`, id))
		if err != nil {
			return err
		}
		if err := pre.check(np.Revision, np.SpecRevision); err != nil {
			return err
		}
		if np.Deleting {
			return fmt.Errorf("node pool %s: %w", id, ErrDeleting)
		}
		spec, upgrade, err := decide(np)
		if err != nil {
			return err
		}
		if proto.Equal(np.Spec, spec) {
			out = np
			return nil
		}
		if upgrade != nil {
			if _, err := insertPolicyTx(ctx, tx, upgrade); err != nil {
				return err
			}
		}
		b, err := protojson.Marshal(spec)
		if err != nil {
			return err
		}
		// UPDATING in the same revision as the spec (as a cluster's configuration change): the
		// controller reports READY again only from feedback about the new spec, so a READY read
		// right after this update never ends the caller's wait.
		st := proto.Clone(np.Status).(*csv1.NodePoolStatus)
		if st.GetState() == csv1.NodePoolState_NODE_POOL_STATE_READY {
			st.State, st.Message = csv1.NodePoolState_NODE_POOL_STATE_UPDATING, "The node pool change is being applied."
		}
		stj, err := protojson.Marshal(st)
		if err != nil {
			return err
		}
		rev, err := nextRevision(ctx, tx)
		if err != nil {
			return err
		}
		out, err = scanNodePool(tx.QueryRow(ctx, `UPDATE node_pools SET spec = $2, status = $3, state = $4, revision = $5, update_time = now()
			WHERE id = $1 RETURNING `+nodePoolColumns, id, b, stj, st.State.String(), rev))
		if err != nil {
			return err
		}
		return recordNodePoolEvent(ctx, tx, csv1.EventType_EVENT_TYPE_UPSERTED, out)
	})
	return out, err
}

// MarkNodePoolDeleting sets the deleting flag and UNINSTALLING; idempotent like MarkDeleting.
func (s *Store) MarkNodePoolDeleting(ctx context.Context, id string) (*NodePool, error) {
	var out *NodePool
	err := s.writeTx(ctx, func(tx pgx.Tx) error {
		np, err := scanNodePool(tx.QueryRow(ctx, `SELECT `+nodePoolColumns+` FROM node_pools WHERE id = $1 FOR UPDATE`, id))
		if err != nil {
			return err
		}
		out, err = markNodePoolDeletingTx(ctx, tx, np)
		return err
	})
	return out, err
}

func markNodePoolDeletingTx(ctx context.Context, tx pgx.Tx, np *NodePool) (*NodePool, error) {
	if np.Deleting {
		return np, nil
	}
	st := proto.Clone(np.Status).(*csv1.NodePoolStatus)
	st.State, st.Message, st.ErrorCode = csv1.NodePoolState_NODE_POOL_STATE_UNINSTALLING, "The node pool is being deleted.", ""
	stj, err := protojson.Marshal(st)
	if err != nil {
		return nil, err
	}
	rev, err := nextRevision(ctx, tx)
	if err != nil {
		return nil, err
	}
	out, err := scanNodePool(tx.QueryRow(ctx, `UPDATE node_pools SET deleting = true, status = $2, state = $3, revision = $4,
		update_time = now() WHERE id = $1 RETURNING `+nodePoolColumns, np.ID, stj, st.State.String(), rev))
	if err != nil {
		return nil, err
	}
	return out, recordNodePoolEvent(ctx, tx, csv1.EventType_EVENT_TYPE_UPSERTED, out)
}

// markClusterNodePoolsDeletingTx marks every node pool of a cluster deleting, inside the
// cluster's MarkDeleting transaction.
func markClusterNodePoolsDeletingTx(ctx context.Context, tx pgx.Tx, clusterID string) error {
	pools, err := queryAll(ctx, tx, scanNodePool,
		`SELECT `+nodePoolColumns+` FROM node_pools WHERE cluster_id = $1 AND NOT deleting ORDER BY id FOR UPDATE`, clusterID)
	if err != nil {
		return fmt.Errorf("node pools of %s: %w", clusterID, err)
	}
	for _, np := range pools {
		if _, err := markNodePoolDeletingTx(ctx, tx, np); err != nil {
			return fmt.Errorf("mark node pool %s deleting: %w", np.ID, err)
		}
	}
	return nil
}

// UpdateNodePoolStatus replaces the status if the pool is still at revision (ErrConflict
// otherwise); an identical status keeps the revision.
func (s *Store) UpdateNodePoolStatus(ctx context.Context, id string, revision int64, st *csv1.NodePoolStatus) (*NodePool, error) {
	return updateStatus(ctx, s, statusRow[NodePool, *csv1.NodePoolStatus]{
		what: "node pool", table: "node_pools", columns: nodePoolColumns, scan: scanNodePool, log: nodePoolEventLog, eventDoc: nodePoolEventDocOf,
		revisionPath: "{nodePool,revision}", updateTimePath: "{nodePool,updateTime}",
		state: func(st *csv1.NodePoolStatus) string { return st.State.String() },
		fields: func(np *NodePool) (**csv1.NodePoolStatus, *int64, *int64, *time.Time) {
			return &np.Status, &np.Revision, &np.SpecRevision, &np.UpdateTime
		},
	}, id, revision, st)
}

// RemoveNodePool deletes a pool that is marked deleting and still at revision, and records its
// DELETED event. Only the controller calls it, once the pool's ManifestWork is gone.
func (s *Store) RemoveNodePool(ctx context.Context, id string, revision int64) error {
	return s.writeTx(ctx, func(tx pgx.Tx) error {
		np, err := scanNodePool(tx.QueryRow(ctx, `SELECT `+nodePoolColumns+` FROM node_pools WHERE id = $1 FOR UPDATE`, id))
		if err != nil {
			return err
		}
		if np.Revision != revision || !np.Deleting {
			return ErrConflict
		}
		if _, err := tx.Exec(ctx, `DELETE FROM node_pools WHERE id = $1`, id); err != nil {
			return err
		}
		rev, err := nextRevision(ctx, tx)
		if err != nil {
			return err
		}
		np.Revision, np.UpdateTime = rev, time.Now()
		return recordNodePoolEvent(ctx, tx, csv1.EventType_EVENT_TYPE_DELETED, np)
	})
}

type nodePoolEventDoc struct {
	Deleting bool            `json:"deleting,omitempty"`
	NodePool json.RawMessage `json:"nodePool"`
}

func recordNodePoolEvent(ctx context.Context, tx pgx.Tx, typ csv1.EventType, np *NodePool) error {
	doc, err := nodePoolEventDocOf(np)
	if err != nil {
		return err
	}
	return writeEvent(ctx, tx, nodePoolEventLog, np.ID, np.Revision, typ, doc)
}

// nodePoolEventDocOf is the event document of np.
func nodePoolEventDocOf(np *NodePool) ([]byte, error) {
	raw, err := protojson.Marshal(NodePoolProto(np))
	if err != nil {
		return nil, err
	}
	return json.Marshal(nodePoolEventDoc{Deleting: np.Deleting, NodePool: raw})
}

// NodePoolEventsAfter returns up to limit node pool events with a revision greater than after.
func (s *Store) NodePoolEventsAfter(ctx context.Context, after int64, limit int) ([]NodePoolEvent, error) {
	return eventsAfter(ctx, s.pool, nodePoolEventLog, after, limit, func(rev int64, typ csv1.EventType, raw []byte) (NodePoolEvent, error) {
		var doc nodePoolEventDoc
		if err := json.Unmarshal(raw, &doc); err != nil {
			return NodePoolEvent{}, err
		}
		var p csv1.NodePool
		if err := protojson.Unmarshal(doc.NodePool, &p); err != nil {
			return NodePoolEvent{}, err
		}
		np := &NodePool{ID: p.Id, ClusterID: p.ClusterId, ARMResourceID: p.ArmResourceId, Spec: p.Spec, Status: p.Status,
			Deleting: doc.Deleting, Revision: p.Revision, SpecRevision: p.SpecRevision, CreateTime: p.CreateTime.AsTime(), UpdateTime: p.UpdateTime.AsTime()}
		if np.Spec == nil {
			np.Spec = &csv1.NodePoolSpec{}
		}
		if np.Status == nil {
			np.Status = &csv1.NodePoolStatus{}
		}
		return NodePoolEvent{Type: typ, Revision: rev, NodePool: np}, nil
	})
}

// NodePoolSnapshot returns every node pool and the revision it is consistent with.
func (s *Store) NodePoolSnapshot(ctx context.Context) ([]*NodePool, int64, error) {
	return snapshot(ctx, s, nodePoolEventLog, `SELECT `+nodePoolColumns+` FROM node_pools ORDER BY id`, scanNodePool)
}

// CurrentNodePoolRevision is the revision of the latest node pool event.
func (s *Store) CurrentNodePoolRevision(ctx context.Context) (int64, error) {
	return currentRevision(ctx, s.pool, nodePoolEventLog)
}

// CompactedNodePoolRevision is the newest node pool revision whose tombstone may be pruned.
func (s *Store) CompactedNodePoolRevision(ctx context.Context) (int64, error) {
	return compactedRevision(ctx, s.pool, nodePoolEventLog)
}
