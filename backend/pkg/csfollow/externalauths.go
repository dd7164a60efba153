package csfollow

import (
	"context"
	"fmt"
	"log/slog"

	csv1 "github.com/openhcp/openhcp/cluster-service/api/v1"
	"github.com/openhcp/openhcp/internal/armdoc"
	"github.com/openhcp/openhcp/internal/reconcile"
)

// External auth operations are documents like a node pool's, on the resource
// …/hcpOpenShiftClusters/{c}/externalAuths/{n}, with the Cluster Service external auth ID as
// InternalID. They are observed through GetExternalAuth and WatchExternalAuths and end by
// mapExternalAuth. A finished cluster delete removes their documents (the controller's childResourceDeletes).

func (c Clients) observeExternalAuth(ctx context.Context, op *armdoc.OperationDocument) (Observation, error) {
	if c.ExternalAuths == nil {
		return Observation{}, fmt.Errorf("external auth operation %s: the backend has no Cluster Service external auth client", op.ID)
	}
	ea, err := c.ExternalAuths.GetExternalAuth(ctx, &csv1.GetExternalAuthRequest{Id: op.InternalID})
	return observed("external auth", op.InternalID, ea, err, func(ea *csv1.ExternalAuth) Outcome { return mapExternalAuth(op, ea) })
}

// externalAuthOutcomes are the external auth states (docs/cluster-service.md, "External auth
// states"): PENDING → Accepted, INSTALLING → Provisioning, UPDATING → Updating, READY →
// Succeeded, ERROR → Failed, UNINSTALLING → Deleting (or Canceled for a create or update it
// interrupts).
var externalAuthOutcomes = childOutcomes[csv1.ExternalAuthState]{
	noun:            "external auth",
	ready:           csv1.ExternalAuthState_EXTERNAL_AUTH_STATE_READY,
	failed:          csv1.ExternalAuthState_EXTERNAL_AUTH_STATE_ERROR,
	deleting:        csv1.ExternalAuthState_EXTERNAL_AUTH_STATE_UNINSTALLING,
	notStarted:      []csv1.ExternalAuthState{csv1.ExternalAuthState_EXTERNAL_AUTH_STATE_PENDING, csv1.ExternalAuthState_EXTERNAL_AUTH_STATE_UNSPECIFIED},
	failedMessage:   "The external auth could not be applied.",
	canceledMessage: "The operation was canceled because the external auth, or its cluster, is being deleted.",
}

// mapExternalAuth derives the outcome of op from the external auth's Cluster Service state
// (childOutcomes.outcome). A nil external auth is unknown to Cluster Service.
func mapExternalAuth(op *armdoc.OperationDocument, ea *csv1.ExternalAuth) Outcome {
	return externalAuthOutcomes.outcome(op, ea != nil, ea.GetStatus())
}

// followExternalAuths follows Cluster Service's external auth watch (reconcile.Follow).
func (c Clients) followExternalAuths(ctx context.Context, log *slog.Logger, changed func(id string)) {
	if c.ExternalAuths == nil {
		return
	}
	reconcile.Follow(ctx, log, "external auth", func(ctx context.Context, since int64) (reconcile.Stream[*csv1.ExternalAuthEvent], error) {
		return c.ExternalAuths.WatchExternalAuths(ctx, &csv1.WatchExternalAuthsRequest{SinceRevision: since})
	}, func(ev *csv1.ExternalAuthEvent) { changed(ev.GetExternalAuth().GetId()) })
}
