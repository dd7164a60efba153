package store

import (
	"context"
	"errors"
	"fmt"

	csv1 "github.com/openhcp/openhcp/cluster-service/api/v1"
)

// ErrExternalAuthLimit: the cluster already has an external auth (for another ARM resource);
// a cluster has at most one.
var ErrExternalAuthLimit = errors.New("the cluster already has an external auth")

// ExternalAuth is a stored external auth (the OIDC provider of one cluster).
type ExternalAuth = Child[*csv1.ExternalAuthSpec, *csv1.ExternalAuthStatus]

// ExternalAuthEvent is one entry of the external auth event log.
type ExternalAuthEvent struct {
	Type         csv1.EventType // UPSERTED or DELETED
	Revision     int64
	ExternalAuth *ExternalAuth // for DELETED, the last known state
}

// externalAuths is the external auth kind: at most one per cluster (the unique index on
// cluster_id says so too), applied through the cluster's HostedCluster.
var externalAuths = &childKind[*csv1.ExternalAuthSpec, *csv1.ExternalAuthStatus]{
	what: "external auth", table: "external_auths", log: externalAuthEventLog,
	docKey: "externalAuth", api: (&csv1.ExternalAuth{}).ProtoReflect().Type(),
	statePrefix:    "EXTERNAL_AUTH_STATE_",
	pendingMessage: "The external auth is accepted; it is not sent to the management cluster yet.", deletingMessage: "The external auth is being removed.",
	perCluster: 1, limitErr: ErrExternalAuthLimit,
	// Any change leaves the management cluster's copy behind: not applied, and UPDATING unless
	// it was never sent.
	specChanged: func(st *csv1.ExternalAuthStatus) {
		if st.GetState() != csv1.ExternalAuthState_EXTERNAL_AUTH_STATE_PENDING {
			setChildState(st, "EXTERNAL_AUTH_STATE_", "UPDATING", "The changed configuration is being applied.")
		}
		st.Applied = false
	},
}

// ExternalAuthProto is the API form of a stored external auth.
func ExternalAuthProto(ea *ExternalAuth) *csv1.ExternalAuth {
	return externalAuths.proto(ea).(*csv1.ExternalAuth)
}

// CreateExternalAuth stores a new external auth of ea.ClusterID (childKind.create);
// ErrExternalAuthLimit if the cluster has one for another ARM resource.
func (s *Store) CreateExternalAuth(ctx context.Context, ea *ExternalAuth) (_ *ExternalAuth, created bool, err error) {
	return externalAuths.create(ctx, s, ea)
}

// GetExternalAuth returns the external auth or ErrNotFound.
func (s *Store) GetExternalAuth(ctx context.Context, id string) (*ExternalAuth, error) {
	return externalAuths.get(ctx, s, id)
}

// ClusterExternalAuth returns the cluster's external auth, or nil if it has none.
func (s *Store) ClusterExternalAuth(ctx context.Context, clusterID string) (*ExternalAuth, error) {
	all, err := externalAuths.list(ctx, s, clusterID, "", 1)
	if err != nil || len(all) == 0 {
		if err != nil {
			err = fmt.Errorf("external auth of cluster %s: %w", clusterID, err)
		}
		return nil, err
	}
	return all[0], nil
}

// ListExternalAuths returns the external auths of one cluster, or with clusterID empty every
// external auth, in id order.
func (s *Store) ListExternalAuths(ctx context.Context, clusterID string) ([]*ExternalAuth, error) {
	return externalAuths.list(ctx, s, clusterID, "", 0)
}

// UpdateExternalAuth writes the spec decide returns under the write lock (childKind.update):
// the status goes back to UPDATING and not applied.
func (s *Store) UpdateExternalAuth(ctx context.Context, id string, pre Precondition, decide func(cur *ExternalAuth) (*csv1.ExternalAuthSpec, error)) (*ExternalAuth, error) {
	return externalAuths.update(ctx, s, id, pre, func(cur *ExternalAuth) (*csv1.ExternalAuthSpec, *csv1.UpgradePolicy, error) {
		spec, err := decide(cur)
		return spec, nil, err
	})
}

// MarkExternalAuthDeleting sets the deleting flag and UNINSTALLING; idempotent.
func (s *Store) MarkExternalAuthDeleting(ctx context.Context, id string) (*ExternalAuth, error) {
	return externalAuths.markDeleting(ctx, s, id)
}

// UpdateExternalAuthStatus replaces the status if still at revision (ErrConflict otherwise); an
// identical status keeps the revision.
func (s *Store) UpdateExternalAuthStatus(ctx context.Context, id string, revision int64, st *csv1.ExternalAuthStatus) (*ExternalAuth, error) {
	return externalAuths.updateStatus(ctx, s, id, revision, st)
}

// RemoveExternalAuth deletes an external auth that is marked deleting and still at revision, and
// records its DELETED event. The controller calls it once the management cluster reports the
// provider gone from the HostedCluster.
func (s *Store) RemoveExternalAuth(ctx context.Context, id string, revision int64) error {
	return externalAuths.remove(ctx, s, id, revision)
}

// ExternalAuthEventsAfter returns up to limit external auth events with a revision greater than
// after, in order.
func (s *Store) ExternalAuthEventsAfter(ctx context.Context, after int64, limit int) ([]ExternalAuthEvent, error) {
	return eventsAfterOf(ctx, s, externalAuths, after, limit, func(typ csv1.EventType, rev int64, ea *ExternalAuth) ExternalAuthEvent {
		return ExternalAuthEvent{Type: typ, Revision: rev, ExternalAuth: ea}
	})
}

// ExternalAuthSnapshot returns every external auth and the revision it is consistent with.
func (s *Store) ExternalAuthSnapshot(ctx context.Context) ([]*ExternalAuth, int64, error) {
	return externalAuths.snapshot(ctx, s)
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
