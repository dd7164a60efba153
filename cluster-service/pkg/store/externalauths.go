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
type ExternalAuthEvent = ChildEvent[*csv1.ExternalAuthSpec, *csv1.ExternalAuthStatus]

// externalAuths is the external auth kind: at most one per cluster (the unique index on
// cluster_id says so too), applied through the cluster's HostedCluster. Any change leaves the
// management cluster's copy behind: not applied, and UPDATING unless it was never sent.
var externalAuths = (&childKind[*csv1.ExternalAuthSpec, *csv1.ExternalAuthStatus]{log: externalAuthEventLog,
	pendingMessage:  "The external auth is accepted; it is not sent to the management cluster yet.",
	deletingMessage: "The external auth is being removed.",
	perCluster:      1, limitErr: ErrExternalAuthLimit,
	updatingFrom: []string{"INSTALLING", "READY", "UPDATING", "ERROR", "UNINSTALLING"}, updatingMessage: "The changed configuration is being applied.",
	clearApplied: true,
}).of(&csv1.ExternalAuth{})

// ExternalAuthProto is the API form of a stored external auth.
func ExternalAuthProto(ea *ExternalAuth) *csv1.ExternalAuth {
	return externalAuths.proto(ea).(*csv1.ExternalAuth)
}

// ExternalAuths is the store of external auths.
func (s *Store) ExternalAuths() Children[*csv1.ExternalAuthSpec, *csv1.ExternalAuthStatus] {
	return Children[*csv1.ExternalAuthSpec, *csv1.ExternalAuthStatus]{s: s, k: externalAuths}
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
