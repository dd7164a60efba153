package operations

import (
	"context"

	"github.com/openhcp/openhcp/internal/armdoc"
	"github.com/openhcp/openhcp/internal/opkind"
)

// kind is the backend's part of one operation kind of internal/opkind.
type kind struct {
	// observe reads what the operation acts on from Cluster Service and maps its state to the
	// operation's outcome.
	observe func(ctx context.Context, op *armdoc.OperationDocument) (observation, error)
	// follow follows the kind's Cluster Service watch until ctx ends, calling changed with the
	// ID of every object that changed. Kinds served by one watch (the credential actions) set it
	// on one of them.
	follow func(ctx context.Context, changed func(id string))
}

// kindTable is the backend's registration of every operation kind; TestEveryKindIsObserved
// keeps it in line with opkind.All.
func (c *Controller) kindTable() map[opkind.Kind]kind {
	return map[opkind.Kind]kind{
		opkind.Cluster:           {observe: c.observeCluster, follow: c.followClusters},
		opkind.NodePool:          {observe: c.observeNodePool, follow: c.followNodePools},
		opkind.ExternalAuth:      {observe: c.observeExternalAuth, follow: c.followExternalAuths},
		opkind.RequestCredential: {observe: c.observeCredential, follow: c.followCredentials},
		opkind.RevokeCredentials: {observe: c.observeRevocation}, // followCredentials carries revocations too
	}
}
