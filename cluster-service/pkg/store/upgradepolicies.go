package store

import (
	"context"
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

// ErrUpgradeInProgress: the control plane or node pool already has an unfinished upgrade policy.
var ErrUpgradeInProgress = errors.New("an upgrade is already pending or running")

const policyColumns = `id, cluster_id, coalesce(node_pool_id, ''), type, state, from_version, to_version, next_run,
	message, operation_id, create_time, update_time`

func scanPolicy(row pgx.Row) (*csv1.UpgradePolicy, error) {
	var p csv1.UpgradePolicy
	var typ, state string
	var next, created, updated time.Time
	if err := row.Scan(&p.Id, &p.ClusterId, &p.NodePoolId, &typ, &state, &p.FromVersion, &p.ToVersion, &next,
		&p.Message, &p.OperationId, &created, &updated); err != nil {
		if errors.Is(err, pgx.ErrNoRows) {
			return nil, ErrNotFound
		}
		return nil, err
	}
	p.Type = csv1.UpgradeType(csv1.UpgradeType_value["UPGRADE_TYPE_"+typ])
	p.State = csv1.UpgradePolicyState(csv1.UpgradePolicyState_value["UPGRADE_POLICY_STATE_"+state])
	p.NextRun, p.CreateTime, p.UpdateTime = timestamppb.New(next), timestamppb.New(created), timestamppb.New(updated)
	return &p, nil
}

func policyType(t csv1.UpgradeType) string {
	return strings.TrimPrefix(t.String(), "UPGRADE_TYPE_")
}

func policyState(s csv1.UpgradePolicyState) string {
	return strings.TrimPrefix(s.String(), "UPGRADE_POLICY_STATE_")
}

// Terminal reports whether an upgrade policy state is final.
func Terminal(s csv1.UpgradePolicyState) bool {
	return s == csv1.UpgradePolicyState_UPGRADE_POLICY_STATE_COMPLETED || s == csv1.UpgradePolicyState_UPGRADE_POLICY_STATE_FAILED
}

func insertPolicyTx(ctx context.Context, tx pgx.Tx, p *csv1.UpgradePolicy) (*csv1.UpgradePolicy, error) {
	var np any
	if p.GetNodePoolId() != "" {
		np = p.GetNodePoolId()
	}
	out, err := scanPolicy(tx.QueryRow(ctx, `INSERT INTO upgrade_policies
		(id, cluster_id, node_pool_id, type, state, from_version, to_version, next_run, message, operation_id)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10) RETURNING `+policyColumns,
		p.GetId(), p.GetClusterId(), np, policyType(p.GetType()), policyState(p.GetState()), p.GetFromVersion(), p.GetToVersion(),
		p.GetNextRun().AsTime(), p.GetMessage(), p.GetOperationId()))
	if err != nil && strings.Contains(err.Error(), "upgrade_policies_active_") {
		return nil, ErrUpgradeInProgress
	}
	return out, err
}

// activePolicyQuery selects the unfinished control-plane policy of cluster $1.
const activePolicyQuery = `SELECT ` + policyColumns + ` FROM upgrade_policies
	WHERE cluster_id = $1 AND type = 'CONTROL_PLANE' AND state IN ('PENDING', 'SCHEDULED', 'STARTED')`

// ClusterChildren are a cluster's node pools and external auth that are not being deleted, as
// UpdateCluster's decide sees them.
type ClusterChildren struct {
	NodePools    []*NodePool   // in id order
	ExternalAuth *ExternalAuth // nil: none
}

// decideInputsTx reads, in one round trip, what UpdateCluster's decide reads besides the
// cluster: its unfinished control-plane upgrade policy (nil: none) and its children.
func decideInputsTx(ctx context.Context, tx pgx.Tx, clusterID string) (*csv1.UpgradePolicy, ClusterChildren, error) {
	var b pgx.Batch
	b.Queue(activePolicyQuery, clusterID)
	b.Queue(nodePools.selectWhere(`cluster_id = $1 AND NOT deleting ORDER BY id`), clusterID)
	b.Queue(externalAuths.selectWhere(`cluster_id = $1 AND NOT deleting ORDER BY id`), clusterID)
	br := tx.SendBatch(ctx, &b)
	defer br.Close()
	var children ClusterChildren
	active, err := scanPolicy(br.QueryRow())
	if errors.Is(err, ErrNotFound) {
		active, err = nil, nil
	}
	if err != nil {
		return nil, children, fmt.Errorf("upgrade policy of cluster %s: %w", clusterID, err)
	}
	rows, err := br.Query()
	if children.NodePools, err = scanAll(rows, err, nodePools.scan); err != nil {
		return nil, children, fmt.Errorf("node pools of cluster %s: %w", clusterID, err)
	}
	rows, err = br.Query()
	eas, err := scanAll(rows, err, externalAuths.scan)
	if err != nil {
		return nil, children, fmt.Errorf("external auth of cluster %s: %w", clusterID, err)
	}
	if len(eas) > 0 {
		children.ExternalAuth = eas[0]
	}
	return active, children, br.Close()
}

// ClusterChange is what UpdateCluster's callback decides, under the write lock, from the
// current cluster: a new spec (nil: unchanged) and an upgrade policy to start (nil: none).
type ClusterChange struct {
	Spec *csv1.ClusterSpec
	// Status, when set, replaces the status (a configuration change sets UPDATING with it).
	Status  *csv1.ClusterStatus
	Upgrade *csv1.UpgradePolicy
}

// UpdateCluster reads the cluster under the write lock and applies what decide returns: the
// spec, and a new control-plane upgrade policy, which also becomes status.upgrade. All in one
// revision. decide sees, besides the cluster, its unfinished upgrade policy and its children,
// all read in the same transaction: every write of them holds the write lock too, so none
// lands between what decide checks and the update's commit. It is conditional on pre (zero: unconditional; ErrConflict when it does not hold).
// An upgrade policy and status.upgrade are status: starting an upgrade moves the revision, not
// the spec_revision. ErrDeleting for a deleting cluster; ErrUpgradeInProgress when decide asks for an
// upgrade while one is unfinished. Errors from decide are returned as they are. Nothing to
// change keeps the revision.
func (s *Store) UpdateCluster(ctx context.Context, id string, pre Precondition,
	decide func(c *Cluster, active *csv1.UpgradePolicy, children ClusterChildren) (ClusterChange, error)) (*Cluster, error) {
	var out *Cluster
	err := s.writeTx(ctx, func(tx pgx.Tx) error {
		c, err := s.scanCluster(tx.QueryRow(ctx, `SELECT `+clusterColumns+` FROM clusters WHERE id = $1 FOR UPDATE`, id))
		if err != nil {
			return err
		}
		if err := pre.check(c.Revision, c.SpecRevision); err != nil {
			return err
		}
		if c.Deleting {
			return fmt.Errorf("cluster %s: %w", id, ErrDeleting)
		}
		active, children, err := decideInputsTx(ctx, tx, id)
		if err != nil {
			return err
		}
		ch, err := decide(c, active, children)
		if err != nil {
			return err
		}
		spec, st := c.Spec, c.Status
		if ch.Spec != nil {
			spec = ch.Spec
		}
		if ch.Status != nil {
			st = ch.Status
		}
		if ch.Upgrade != nil {
			if active != nil {
				return ErrUpgradeInProgress
			}
			p, err := insertPolicyTx(ctx, tx, ch.Upgrade)
			if err != nil {
				return fmt.Errorf("record upgrade policy: %w", err)
			}
			st = proto.Clone(st).(*csv1.ClusterStatus)
			st.Upgrade = p
		}
		if proto.Equal(spec, c.Spec) && proto.Equal(st, c.Status) {
			out = c
			return nil
		}
		out, err = s.writeClusterTx(ctx, tx, c, spec, st)
		return err
	})
	return out, err
}

// writeClusterTx writes spec and status of c under a new revision and records the event.
func (s *Store) writeClusterTx(ctx context.Context, tx pgx.Tx, c *Cluster, spec *csv1.ClusterSpec, st *csv1.ClusterStatus) (*Cluster, error) {
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
	out, err := s.scanCluster(tx.QueryRow(ctx, `UPDATE clusters SET spec = $2, status = $3, state = $4, revision = $5, update_time = now()
		WHERE id = $1 AND revision = $6 RETURNING `+clusterColumns, c.ID, specj, stj, st.GetState().String(), rev, c.Revision))
	if errors.Is(err, ErrNotFound) {
		return nil, ErrConflict
	}
	if err != nil {
		return nil, err
	}
	return out, recordEvent(ctx, tx, csv1.EventType_EVENT_TYPE_UPSERTED, out)
}

// AdvanceUpgrade moves a cluster's control-plane policy p to a new state (p carries it, with
// its message), conditional on the stored policy still being in state from and on pre (zero:
// the policy's state is the only guard). spec, when not nil, replaces the cluster's spec in the
// same revision (STARTED writes the new version). status.upgrade becomes the new policy; the
// rest of the status is kept as stored, so a status write since the caller's read is not lost.
// A caller that decided from the cluster's status (the controller) passes its revision; a
// cancel, which decides from the policy alone, passes none, so that a status write (a feedback
// heartbeat) between its read and its write does not fail it.
func (s *Store) AdvanceUpgrade(ctx context.Context, clusterID string, pre Precondition, from csv1.UpgradePolicyState, p *csv1.UpgradePolicy, spec *csv1.ClusterSpec) (*Cluster, error) {
	var out *Cluster
	err := s.writeTx(ctx, func(tx pgx.Tx) error {
		c, err := s.scanCluster(tx.QueryRow(ctx, `SELECT `+clusterColumns+` FROM clusters WHERE id = $1 FOR UPDATE`, clusterID))
		if err != nil {
			return err
		}
		if err := pre.check(c.Revision, c.SpecRevision); err != nil {
			return err
		}
		np, err := advancePolicyTx(ctx, tx, p, from)
		if err != nil {
			return err
		}
		st := proto.Clone(c.Status).(*csv1.ClusterStatus)
		st.Upgrade = np
		if spec == nil {
			spec = c.Spec
		}
		out, err = s.writeClusterTx(ctx, tx, c, spec, st)
		return err
	})
	return out, err
}

func advancePolicyTx(ctx context.Context, tx pgx.Tx, p *csv1.UpgradePolicy, from csv1.UpgradePolicyState) (*csv1.UpgradePolicy, error) {
	np, err := scanPolicy(tx.QueryRow(ctx, `UPDATE upgrade_policies SET state = $2, message = $3, next_run = $4, update_time = now()
		WHERE id = $1 AND state = $5 RETURNING `+policyColumns,
		p.GetId(), policyState(p.GetState()), p.GetMessage(), p.GetNextRun().AsTime(), policyState(from)))
	if errors.Is(err, ErrNotFound) {
		return nil, ErrConflict
	}
	return np, err
}

// AdvanceNodePoolUpgrade moves a node pool's policy from state from to p's state and message.
// ErrConflict when the stored policy is no longer in state from.
func (s *Store) AdvanceNodePoolUpgrade(ctx context.Context, from csv1.UpgradePolicyState, p *csv1.UpgradePolicy) (*csv1.UpgradePolicy, error) {
	var out *csv1.UpgradePolicy
	err := s.writeTx(ctx, func(tx pgx.Tx) error {
		var err error
		out, err = advancePolicyTx(ctx, tx, p, from)
		return err
	})
	return out, err
}

// GetUpgradePolicy returns one policy.
func (s *Store) GetUpgradePolicy(ctx context.Context, id string) (*csv1.UpgradePolicy, error) {
	return scanPolicy(s.reads.QueryRow(ctx, `SELECT `+policyColumns+` FROM upgrade_policies WHERE id = $1`, id))
}

// ActiveNodePoolUpgrade returns the unfinished policy of a node pool, or nil.
func (s *Store) ActiveNodePoolUpgrade(ctx context.Context, nodePoolID string) (*csv1.UpgradePolicy, error) {
	p, err := scanPolicy(s.reads.QueryRow(ctx, `SELECT `+policyColumns+` FROM upgrade_policies
		WHERE node_pool_id = $1 AND state IN ('PENDING', 'SCHEDULED', 'STARTED')`, nodePoolID))
	if errors.Is(err, ErrNotFound) {
		return nil, nil
	}
	return p, err
}

// ListUpgradePolicies lists a cluster's policies newest first; with nodePoolID only that pool's.
func (s *Store) ListUpgradePolicies(ctx context.Context, clusterID, nodePoolID string) ([]*csv1.UpgradePolicy, error) {
	q := `SELECT ` + policyColumns + ` FROM upgrade_policies WHERE cluster_id = $1`
	args := []any{clusterID}
	if nodePoolID != "" {
		q += ` AND node_pool_id = $2`
		args = append(args, nodePoolID)
	}
	rows, err := s.reads.Query(ctx, q+` ORDER BY create_time DESC, id`, args...)
	if err != nil {
		return nil, fmt.Errorf("list upgrade policies of cluster %s: %w", clusterID, err)
	}
	defer rows.Close()
	var out []*csv1.UpgradePolicy
	for rows.Next() {
		p, err := scanPolicy(rows)
		if err != nil {
			return nil, fmt.Errorf("list upgrade policies of cluster %s: %w", clusterID, err)
		}
		out = append(out, p)
	}
	return out, rows.Err()
}
