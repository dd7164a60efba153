// Package csfollow is how the backend follows each operation kind (internal/opkind) in Cluster
// Service: it reads the object an operation acts on (a cluster, node pool, external auth,
// credential or revocation), maps its state to the operation's ARM outcome, and follows the
// kind's watch stream. Kinds registers every kind with its client's calls (observer, follower);
// how a kind's states map to outcomes is mapping.go (clusters), child.go (node pools, external
// auths) and credentials.go (break-glass actions).
package csfollow

import (
	"context"
	"log/slog"

	"google.golang.org/protobuf/types/known/timestamppb"

	csv1 "github.com/openhcp/openhcp/cluster-service/api/v1"
	"github.com/openhcp/openhcp/internal/armdoc"
	"github.com/openhcp/openhcp/internal/opkind"
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
	// Resend: a delete whose object Cluster Service holds and is not deleting. The delete never
	// reached Cluster Service (the frontend stopped between recording the operation and its
	// call, or the call ended without an answer), so nothing would delete it; the controller
	// sends the delete again (Kind.Delete) once the frontend's grace has passed.
	Resend bool
	// Revision is the revision of the object Status was read from (0: none, or not from
	// Cluster Service); it is stored with the resource's state (ResourceDocument.InternalRevision).
	Revision int64
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
	// Interrupted, set for a cluster's children, is the outcome of a create or update whose
	// object Cluster Service no longer knows because a delete removed it before the backend saw
	// the operation end: the object's own delete (own) or its cluster's. Which delete, if any, the
	// controller reads from the documents; without one such an operation ends as Observe says.
	Interrupted func(own bool) Outcome
	// Delete, set for the kinds ARM deletes (clusters and their children), asks Cluster Service
	// to delete the operation's object; one Cluster Service does not know is already deleted.
	// Cluster Service's deletes are idempotent, so a delete sent twice is one delete.
	Delete func(ctx context.Context, op *armdoc.OperationDocument) error
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
	cl, np, ea, cr := c.Clusters, c.NodePools, c.ExternalAuths, c.Credentials
	return map[opkind.Kind]Kind{
		opkind.Cluster: {Observe: observer(cl, "cluster", csv1.ClustersClient.GetCluster, mapCluster),
			Follow: follower(cl, "cluster", csv1.ClustersClient.WatchClusters, clusterEventID),
			Delete: deleter(cl, "cluster", csv1.ClustersClient.DeleteCluster)},
		opkind.NodePool: {Observe: observer(np, "node pool", csv1.NodePoolsClient.GetNodePool, mapNodePool),
			Follow:      follower(np, "node pool", csv1.NodePoolsClient.WatchNodePools, nodePoolEventID),
			Interrupted: nodePoolOutcomes.interrupted,
			Delete:      deleter(np, "node pool", csv1.NodePoolsClient.DeleteNodePool)},
		opkind.ExternalAuth: {Observe: observer(ea, "external auth", csv1.ExternalAuthsClient.GetExternalAuth, mapExternalAuth),
			Follow:      follower(ea, "external auth", csv1.ExternalAuthsClient.WatchExternalAuths, externalAuthEventID),
			Interrupted: externalAuthOutcomes.interrupted,
			Delete:      deleter(ea, "external auth", csv1.ExternalAuthsClient.DeleteExternalAuth)},
		opkind.RequestCredential: {Observe: observer(cr, "credential", csv1.CredentialsClient.GetCredential, mapCredential),
			Follow: follower(cr, "credentials", csv1.CredentialsClient.WatchCredentials, credentialEventID)},
		// The credentials watch carries revocations too.
		opkind.RevokeCredentials: {Observe: observer(cr, "revocation", csv1.CredentialsClient.GetRevocation, mapRevocation)},
	}
}

// A watch that resumes from a revision compacted away starts over from a snapshot
// (reconcile.Follow); the controller's resync covers anything in between.

func clusterEventID(ev *csv1.ClusterEvent) string           { return ev.GetCluster().GetId() }
func nodePoolEventID(ev *csv1.NodePoolEvent) string         { return ev.GetNodePool().GetId() }
func externalAuthEventID(ev *csv1.ExternalAuthEvent) string { return ev.GetExternalAuth().GetId() }
