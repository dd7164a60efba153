package operations

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/openhcp/openhcp/internal/arm"
	"github.com/openhcp/openhcp/internal/armdoc"
	"github.com/openhcp/openhcp/internal/docstore"
)

// Node pools, external auths and break-glass credentials are followed (reconcile.Follow, as
// clusters are), read and cascaded the same way; what differs per kind (its client, its states,
// its outcome) stays in its own file.

// observed turns one Get of a Cluster Service object into an observation. NotFound is an object
// Cluster Service does not know, which outcomeOf receives as nil; any other error fails the read
// of `what` id.
func observed[E any, P interface {
	*E
	GetUpdateTime() *timestamppb.Timestamp
}](what, id string, obj P, err error, outcomeOf func(P) outcome) (observation, error) {
	if status.Code(err) == codes.NotFound {
		obj, err = nil, nil
	}
	if err != nil {
		return observation{}, fmt.Errorf("get %s %s from cluster service: %w", what, id, err)
	}
	return observation{out: outcomeOf(obj), known: obj != nil, updated: obj.GetUpdateTime()}, nil
}

// cascadeClusterChild handles a resource below a cluster (a child kind of internal/opkind, named
// `what` in errors and logs) of a Deleted subscription: it goes with its cluster (Cluster Service
// removes it with the cluster, and the cluster's finished delete removes its document). One
// whose cluster document is already gone is removed at once. It reports whether the resource is
// still there.
func (c *Controller) cascadeClusterChild(ctx context.Context, d *docstore.Document, what string) (bool, error) {
	id, err := arm.ParseResourceID(d.ResourceID)
	if err != nil {
		return false, fmt.Errorf("%s %s: %w", what, d.ID, err)
	}
	parent := id.Parent().String()
	_, err = c.store.Get(ctx, d.PartitionKey, parent)
	if err == nil {
		return true, nil
	}
	if !errors.Is(err, docstore.ErrNotFound) {
		return false, fmt.Errorf("get cluster %s of %s %s: %w", parent, what, d.ID, err)
	}
	wctx, cancel, err := c.guard(ctx)
	defer cancel()
	if err != nil {
		return false, err
	}
	if err := c.store.Delete(wctx, d.PartitionKey, d.ID, d.ETag); err != nil && !errors.Is(err, docstore.ErrNotFound) {
		return false, fmt.Errorf("remove %s %s of a deleted cluster: %w", what, d.ID, err)
	}
	var rd armdoc.ResourceDocument
	_ = json.Unmarshal(d.Body, &rd)
	c.log.Info("removed "+what+" whose cluster is gone", "resourceID", rd.ResourceID)
	return false, nil
}
