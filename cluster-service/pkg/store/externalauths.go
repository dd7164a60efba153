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

// ErrExternalAuthLimit: the cluster already has an external auth (for another ARM resource);
// a cluster has at most one.
var ErrExternalAuthLimit = errors.New("the cluster already has an external auth")

// ExternalAuth is a stored external auth (the OIDC provider of one cluster).
type ExternalAuth struct {
	ID            string
	ClusterID     string
	ARMResourceID string // as the caller spelled it; compared lower-cased
	Spec          *csv1.ExternalAuthSpec
	Status        *csv1.ExternalAuthStatus
	Deleting      bool
	Revision      int64
	SpecRevision  int64 // as Cluster.SpecRevision
	CreateTime    time.Time
	UpdateTime    time.Time
}

// ExternalAuthEvent is one entry of the external auth event log.
type ExternalAuthEvent struct {
	Type         csv1.EventType // UPSERTED or DELETED
	Revision     int64
	ExternalAuth *ExternalAuth // for DELETED, the last known state
}

const externalAuthColumns = `id, cluster_id, arm_resource_id_orig, spec, status, deleting, revision, create_time, update_time, spec_revision`

func scanExternalAuth(row pgx.Row) (*ExternalAuth, error) {
	var ea ExternalAuth
	var spec, st []byte
	if err := row.Scan(&ea.ID, &ea.ClusterID, &ea.ARMResourceID, &spec, &st, &ea.Deleting, &ea.Revision, &ea.CreateTime, &ea.UpdateTime, &ea.SpecRevision); err != nil {
		if errors.Is(err, pgx.ErrNoRows) {
			return nil, ErrNotFound
		}
		return nil, err
	}
	ea.Spec, ea.Status = &csv1.ExternalAuthSpec{}, &csv1.ExternalAuthStatus{}
	if err := protojson.Unmarshal(spec, ea.Spec); err != nil {
		return nil, fmt.Errorf("decode spec of external auth %s: %w", ea.ID, err)
	}
	if err := protojson.Unmarshal(st, ea.Status); err != nil {
		return nil, fmt.Errorf("decode status of external auth %s: %w", ea.ID, err)
	}
	return &ea, nil
}

// ExternalAuthProto is the API form of a stored external auth.
func ExternalAuthProto(ea *ExternalAuth) *csv1.ExternalAuth {
	return &csv1.ExternalAuth{
		Id: ea.ID, ClusterId: ea.ClusterID, ArmResourceId: ea.ARMResourceID, Spec: ea.Spec, Status: ea.Status,
		Revision: ea.Revision, CreateTime: timestamppb.New(ea.CreateTime), UpdateTime: timestamppb.New(ea.UpdateTime),
		SpecRevision: ea.SpecRevision,
	}
}

// CreateExternalAuth stores a new external auth of ea.ClusterID. Like CreateCluster it is
// idempotent on the ARM resource ID (created=false returns the existing one). ErrNotFound if the
// cluster does not exist, ErrDeleting if it is being deleted, ErrExternalAuthLimit if the cluster
// has an external auth for another ARM resource, ErrIDInUse if ea.ID belongs to another one.
func (s *Store) CreateExternalAuth(ctx context.Context, ea *ExternalAuth) (_ *ExternalAuth, created bool, err error) {
	armID := strings.ToLower(ea.ARMResourceID)
	var out *ExternalAuth
	err = s.writeTx(ctx, func(tx pgx.Tx) error {
		existing, err := scanExternalAuth(tx.QueryRow(ctx, `SELECT `+externalAuthColumns+` FROM external_auths WHERE arm_resource_id = $1`, armID))
		if err == nil {
			out = existing
			return nil
		}
		if !errors.Is(err, ErrNotFound) {
			return err
		}
		if err := lockLiveClusterTx(ctx, tx, ea.ClusterID); err != nil {
			return err
		}
		var other string
		switch err := tx.QueryRow(ctx, `SELECT arm_resource_id_orig FROM external_auths WHERE cluster_id = $1`, ea.ClusterID).Scan(&other); {
		case err == nil:
			return fmt.Errorf("%w: %s", ErrExternalAuthLimit, other)
		case !errors.Is(err, pgx.ErrNoRows):
			return err
		}
		switch err := tx.QueryRow(ctx, `SELECT arm_resource_id FROM external_auths WHERE id = $1`, ea.ID).Scan(&other); {
		case err == nil:
			return ErrIDInUse
		case !errors.Is(err, pgx.ErrNoRows):
			return err
		}
		st := &csv1.ExternalAuthStatus{State: csv1.ExternalAuthState_EXTERNAL_AUTH_STATE_PENDING, Message: "The external auth is accepted; it is not sent to the management cluster yet."}
		spec, err := protojson.Marshal(ea.Spec)
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
		out, err = scanExternalAuth(tx.QueryRow(ctx, `INSERT INTO external_auths
			(id, cluster_id, arm_resource_id, arm_resource_id_orig, spec, status, state, revision)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8) ON CONFLICT DO NOTHING RETURNING `+externalAuthColumns,
			ea.ID, ea.ClusterID, armID, ea.ARMResourceID, spec, stj, st.State.String(), rev))
		if errors.Is(err, ErrNotFound) {
			return ErrConflict
		}
		if err != nil {
			return err
		}
		created = true
		return recordExternalAuthEvent(ctx, tx, csv1.EventType_EVENT_TYPE_UPSERTED, out)
	})
	if err != nil {
		return nil, false, err
	}
	return out, created, nil
}

// GetExternalAuth returns the external auth or ErrNotFound.
func (s *Store) GetExternalAuth(ctx context.Context, id string) (*ExternalAuth, error) {
	return scanExternalAuth(s.pool.QueryRow(ctx, `SELECT `+externalAuthColumns+` FROM external_auths WHERE id = $1`, id))
}

// ClusterExternalAuth returns the cluster's external auth, or nil if it has none.
func (s *Store) ClusterExternalAuth(ctx context.Context, clusterID string) (*ExternalAuth, error) {
	ea, err := scanExternalAuth(s.pool.QueryRow(ctx, `SELECT `+externalAuthColumns+` FROM external_auths WHERE cluster_id = $1`, clusterID))
	if errors.Is(err, ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("external auth of cluster %s: %w", clusterID, err)
	}
	return ea, nil
}

// ListExternalAuths returns the external auths of one cluster, or with clusterID empty every
// external auth, in id order.
func (s *Store) ListExternalAuths(ctx context.Context, clusterID string) ([]*ExternalAuth, error) {
	out, err := queryAll(ctx, s.pool, scanExternalAuth,
		`SELECT `+externalAuthColumns+` FROM external_auths WHERE ($1 = '' OR cluster_id = $1) ORDER BY id`, clusterID)
	if err != nil {
		return nil, fmt.Errorf("list external auths: %w", err)
	}
	return out, nil
}

// lockExternalAuth reads the external auth for update, checking pre.
func lockExternalAuth(ctx context.Context, tx pgx.Tx, id string, pre Precondition) (*ExternalAuth, error) {
	ea, err := scanExternalAuth(tx.QueryRow(ctx, `SELECT `+externalAuthColumns+` FROM external_auths WHERE id = $1 FOR UPDATE`, id))
	if err != nil {
		return nil, err
	}
	if err := pre.check(ea.Revision, ea.SpecRevision); err != nil {
		return nil, err
	}
	return ea, nil
}

// UpdateExternalAuthSpec replaces the spec and sets the status to UPDATING (the management
// cluster has not seen the new spec yet). With revision 0 it is unconditional, otherwise
// ErrConflict unless at revision. ErrDeleting while it is being deleted. An identical spec is not
// written and keeps the revision.
func (s *Store) UpdateExternalAuthSpec(ctx context.Context, id string, revision int64, spec *csv1.ExternalAuthSpec) (*ExternalAuth, error) {
	return s.UpdateExternalAuth(ctx, id, Precondition{Revision: revision}, func(*ExternalAuth) (*csv1.ExternalAuthSpec, error) { return spec, nil })
}

// UpdateExternalAuth is UpdateExternalAuthSpec with the spec decided under the write lock from
// the stored one (a partial update applied and validated), conditional on pre (zero:
// unconditional); errors from decide are returned as they are.
func (s *Store) UpdateExternalAuth(ctx context.Context, id string, pre Precondition, decide func(cur *ExternalAuth) (*csv1.ExternalAuthSpec, error)) (*ExternalAuth, error) {
	var out *ExternalAuth
	err := s.writeTx(ctx, func(tx pgx.Tx) error {
		ea, err := lockExternalAuth(ctx, tx, id, pre)
		if err != nil {
			return err
		}
		if ea.Deleting {
			return fmt.Errorf("external auth %s: %w", id, ErrDeleting)
		}
		spec, err := decide(ea)
		if err != nil {
			return err
		}
		if proto.Equal(ea.Spec, spec) {
			out = ea
			return nil
		}
		st := proto.Clone(ea.Status).(*csv1.ExternalAuthStatus)
		if st.State != csv1.ExternalAuthState_EXTERNAL_AUTH_STATE_PENDING {
			st.State, st.Message, st.ErrorCode = csv1.ExternalAuthState_EXTERNAL_AUTH_STATE_UPDATING, "The changed configuration is being applied.", ""
		}
		st.Applied = false
		return updateExternalAuthTx(ctx, tx, ea, spec, st, false, &out)
	})
	return out, err
}

// MarkExternalAuthDeleting sets the deleting flag and UNINSTALLING; idempotent.
func (s *Store) MarkExternalAuthDeleting(ctx context.Context, id string) (*ExternalAuth, error) {
	var out *ExternalAuth
	err := s.writeTx(ctx, func(tx pgx.Tx) error {
		ea, err := lockExternalAuth(ctx, tx, id, Precondition{})
		if err != nil {
			return err
		}
		out, err = markExternalAuthDeletingTx(ctx, tx, ea)
		return err
	})
	return out, err
}

func markExternalAuthDeletingTx(ctx context.Context, tx pgx.Tx, ea *ExternalAuth) (*ExternalAuth, error) {
	if ea.Deleting {
		return ea, nil
	}
	st := proto.Clone(ea.Status).(*csv1.ExternalAuthStatus)
	st.State, st.Message, st.ErrorCode = csv1.ExternalAuthState_EXTERNAL_AUTH_STATE_UNINSTALLING, "The external auth is being removed.", ""
	var out *ExternalAuth
	err := updateExternalAuthTx(ctx, tx, ea, ea.Spec, st, true, &out)
	return out, err
}

// markClusterExternalAuthsDeletingTx marks the cluster's external auth deleting, inside the
// cluster's MarkDeleting transaction.
func markClusterExternalAuthsDeletingTx(ctx context.Context, tx pgx.Tx, clusterID string) error {
	ea, err := scanExternalAuth(tx.QueryRow(ctx, `SELECT `+externalAuthColumns+` FROM external_auths WHERE cluster_id = $1 FOR UPDATE`, clusterID))
	if errors.Is(err, ErrNotFound) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("external auth of cluster %s: %w", clusterID, err)
	}
	if _, err := markExternalAuthDeletingTx(ctx, tx, ea); err != nil {
		return fmt.Errorf("mark external auth %s deleting: %w", ea.ID, err)
	}
	return nil
}

// UpdateExternalAuthStatus replaces the status if still at revision (ErrConflict otherwise); an
// identical status keeps the revision.
func (s *Store) UpdateExternalAuthStatus(ctx context.Context, id string, revision int64, st *csv1.ExternalAuthStatus) (*ExternalAuth, error) {
	var out *ExternalAuth
	err := s.writeTx(ctx, func(tx pgx.Tx) error {
		ea, err := lockExternalAuth(ctx, tx, id, Precondition{Revision: revision})
		if err != nil {
			return err
		}
		if ea.Revision != revision {
			return ErrConflict // revision 0 too: a status write is always conditional
		}
		st = stampObserved(st, ea.SpecRevision)
		if proto.Equal(ea.Status, st) {
			out = ea
			return nil
		}
		return updateExternalAuthTx(ctx, tx, ea, ea.Spec, st, ea.Deleting, &out)
	})
	return out, err
}

func updateExternalAuthTx(ctx context.Context, tx pgx.Tx, ea *ExternalAuth, spec *csv1.ExternalAuthSpec, st *csv1.ExternalAuthStatus, deleting bool, out **ExternalAuth) error {
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
	*out, err = scanExternalAuth(tx.QueryRow(ctx, `UPDATE external_auths SET spec = $2, status = $3, state = $4, deleting = $5,
		revision = $6, update_time = now() WHERE id = $1 RETURNING `+externalAuthColumns, ea.ID, specj, stj, st.State.String(), deleting, rev))
	if err != nil {
		return fmt.Errorf("write external auth %s: %w", ea.ID, err)
	}
	return recordExternalAuthEvent(ctx, tx, csv1.EventType_EVENT_TYPE_UPSERTED, *out)
}

// RemoveExternalAuth deletes an external auth that is marked deleting and still at revision, and
// records its DELETED event. The controller calls it once the management cluster reports the
// provider gone from the HostedCluster.
func (s *Store) RemoveExternalAuth(ctx context.Context, id string, revision int64) error {
	return s.writeTx(ctx, func(tx pgx.Tx) error {
		ea, err := lockExternalAuth(ctx, tx, id, Precondition{})
		if err != nil {
			return err
		}
		if ea.Revision != revision || !ea.Deleting {
			return ErrConflict
		}
		return removeExternalAuthTx(ctx, tx, ea)
	})
}

func removeExternalAuthTx(ctx context.Context, tx pgx.Tx, ea *ExternalAuth) error {
	if _, err := tx.Exec(ctx, `DELETE FROM external_auths WHERE id = $1`, ea.ID); err != nil {
		return fmt.Errorf("delete external auth %s: %w", ea.ID, err)
	}
	rev, err := nextRevision(ctx, tx)
	if err != nil {
		return err
	}
	ea.Revision, ea.UpdateTime = rev, time.Now()
	return recordExternalAuthEvent(ctx, tx, csv1.EventType_EVENT_TYPE_DELETED, ea)
}

// removeClusterExternalAuthsTx removes the external auth of a cluster being removed (its
// HostedCluster is gone, and the configuration with it), inside RemoveCluster's transaction.
func removeClusterExternalAuthsTx(ctx context.Context, tx pgx.Tx, clusterID string) error {
	ea, err := scanExternalAuth(tx.QueryRow(ctx, `SELECT `+externalAuthColumns+` FROM external_auths WHERE cluster_id = $1 FOR UPDATE`, clusterID))
	if errors.Is(err, ErrNotFound) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("external auth of cluster %s: %w", clusterID, err)
	}
	ea.Deleting = true
	return removeExternalAuthTx(ctx, tx, ea)
}

type externalAuthEventDoc struct {
	Deleting     bool            `json:"deleting,omitempty"`
	ExternalAuth json.RawMessage `json:"externalAuth"`
}

func recordExternalAuthEvent(ctx context.Context, tx pgx.Tx, typ csv1.EventType, ea *ExternalAuth) error {
	raw, err := protojson.Marshal(ExternalAuthProto(ea))
	if err != nil {
		return err
	}
	doc, err := json.Marshal(externalAuthEventDoc{Deleting: ea.Deleting, ExternalAuth: raw})
	if err != nil {
		return err
	}
	return writeEvent(ctx, tx, externalAuthEventLog, ea.ID, ea.Revision, typ, doc)
}

// ExternalAuthEventsAfter returns up to limit external auth events with a revision greater than
// after, in order.
func (s *Store) ExternalAuthEventsAfter(ctx context.Context, after int64, limit int) ([]ExternalAuthEvent, error) {
	return eventsAfter(ctx, s.pool, externalAuthEventLog, after, limit, func(rev int64, typ csv1.EventType, raw []byte) (ExternalAuthEvent, error) {
		var doc externalAuthEventDoc
		if err := json.Unmarshal(raw, &doc); err != nil {
			return ExternalAuthEvent{}, err
		}
		var p csv1.ExternalAuth
		if err := protojson.Unmarshal(doc.ExternalAuth, &p); err != nil {
			return ExternalAuthEvent{}, err
		}
		ea := &ExternalAuth{ID: p.Id, ClusterID: p.ClusterId, ARMResourceID: p.ArmResourceId, Spec: p.Spec, Status: p.Status,
			Deleting: doc.Deleting, Revision: p.Revision, SpecRevision: p.SpecRevision, CreateTime: p.CreateTime.AsTime(), UpdateTime: p.UpdateTime.AsTime()}
		if ea.Spec == nil {
			ea.Spec = &csv1.ExternalAuthSpec{}
		}
		if ea.Status == nil {
			ea.Status = &csv1.ExternalAuthStatus{}
		}
		return ExternalAuthEvent{Type: typ, Revision: rev, ExternalAuth: ea}, nil
	})
}

// ExternalAuthSnapshot returns every external auth and the revision it is consistent with.
func (s *Store) ExternalAuthSnapshot(ctx context.Context) ([]*ExternalAuth, int64, error) {
	return snapshot(ctx, s, externalAuthEventLog, `SELECT `+externalAuthColumns+` FROM external_auths ORDER BY id`, scanExternalAuth)
}

// CurrentExternalAuthRevision is the revision of the latest external auth event.
func (s *Store) CurrentExternalAuthRevision(ctx context.Context) (int64, error) {
	return currentRevision(ctx, s.pool, externalAuthEventLog)
}

// CompactedExternalAuthRevision is the newest external auth revision whose tombstone may be
// pruned.
func (s *Store) CompactedExternalAuthRevision(ctx context.Context) (int64, error) {
	return compactedRevision(ctx, s.pool, externalAuthEventLog)
}
