// Package csfollow is how the backend follows each operation kind (internal/opkind) in Cluster
// Service: it reads the object an operation acts on (a cluster, node pool, external auth,
// credential or revocation), maps its state to the operation's ARM outcome, and follows the
// kind's watch stream. Kinds registers every kind; what differs per kind (its client, its states,
// its outcome) stays in its own file.
package csfollow

import (
	"context"
	"fmt"
	"log/slog"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/timestamppb"

	csv1 "github.com/openhcp/openhcp/cluster-service/api/v1"
	"github.com/openhcp/openhcp/internal/armdoc"
	"github.com/openhcp/openhcp/internal/opkind"
	"github.com/openhcp/openhcp/internal/reconcile"
)

// Outcome is what Cluster Service's view of an object means for one ARM operation.
type Outcome struct {
	// Status is the operation status and the resource's provisioning state.
	Status armdoc.ProvisioningState
	Err    *armdoc.CloudErrorBody
	// Gone means the resource document should be removed (a finished delete).
	Gone bool
	// Unrecorded: an update whose Cluster Service call has not been recorded in the operation
	// (awaitingRevision); the controller fails it once its grace has passed.
	Unrecorded bool
}

// Observation is what Cluster Service says about the object of an operation.
type Observation struct {
	Out Outcome
	// Known is false when Cluster Service does not know the object (NotFound).
	Known bool
	// Updated is Cluster Service's update time of the object, if known.
	Updated *timestamppb.Timestamp
}

// Kind is the backend's part of one operation kind.
type Kind struct {
	// Observe reads what the operation acts on from Cluster Service and maps its state to the
	// operation's outcome.
	Observe func(ctx context.Context, op *armdoc.OperationDocument) (Observation, error)
	// Follow, if set, follows the kind's Cluster Service watch until ctx ends, calling changed
	// with the ID of every object that changed. Kinds served by one watch (the credential
	// actions) set it on one of them.
	Follow func(ctx context.Context, log *slog.Logger, changed func(id string))
}

// Clients are Cluster Service's clients. Clusters is required; a kind whose client is nil is
// not followed, and its operations fail to observe with an error naming the missing client.
type Clients struct {
	Clusters      csv1.ClustersClient
	NodePools     csv1.NodePoolsClient
	ExternalAuths csv1.ExternalAuthsClient
	Credentials   csv1.CredentialsClient
}

// Kinds is the backend's registration of every operation kind; TestEveryKindIsObserved keeps
// it in line with opkind.All.
func Kinds(c Clients) map[opkind.Kind]Kind {
	return map[opkind.Kind]Kind{
		opkind.Cluster:           {Observe: c.observeCluster, Follow: c.followClusters},
		opkind.NodePool:          {Observe: c.observeNodePool, Follow: c.followNodePools},
		opkind.ExternalAuth:      {Observe: c.observeExternalAuth, Follow: c.followExternalAuths},
		opkind.RequestCredential: {Observe: c.observeCredential, Follow: c.followCredentials},
		opkind.RevokeCredentials: {Observe: c.observeRevocation}, // followCredentials carries revocations too
	}
}

// observeCluster asks Cluster Service about a cluster operation's cluster.
func (c Clients) observeCluster(ctx context.Context, op *armdoc.OperationDocument) (Observation, error) {
	cluster, err := c.Clusters.GetCluster(ctx, &csv1.GetClusterRequest{Id: op.InternalID})
	if status.Code(err) == codes.NotFound {
		cluster, err = nil, nil
	}
	if err != nil {
		return Observation{}, fmt.Errorf("get cluster %s from cluster service: %w", op.InternalID, err)
	}
	return Observation{Out: mapCluster(op, cluster), Known: cluster != nil, Updated: cluster.GetUpdateTime()}, nil
}

// followClusters follows Cluster Service's watch stream (reconcile.Follow). When the revision it
// resumes from is compacted away it starts over from a snapshot; the controller's resync covers
// anything in between.
func (c Clients) followClusters(ctx context.Context, log *slog.Logger, changed func(id string)) {
	reconcile.Follow(ctx, log, "cluster", func(ctx context.Context, since int64) (reconcile.Stream[*csv1.ClusterEvent], error) {
		return c.Clusters.WatchClusters(ctx, &csv1.WatchClustersRequest{SinceRevision: since})
	}, func(ev *csv1.ClusterEvent) { changed(ev.GetCluster().GetId()) })
}
