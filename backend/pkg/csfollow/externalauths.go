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

// mapExternalAuth derives the outcome of op from the external auth's Cluster Service state
// (docs/cluster-service.md, "External auth states"): PENDING → Accepted, INSTALLING →
// Provisioning, UPDATING → Updating, READY → Succeeded, ERROR → Failed, UNINSTALLING → Deleting
// (or Canceled for a create or update it interrupts). A nil external auth is unknown to Cluster
// Service: a finished delete, or a create or update that can no longer finish.
func mapExternalAuth(op *armdoc.OperationDocument, ea *csv1.ExternalAuth) Outcome {
	if op.Request == armdoc.OperationDelete {
		if ea == nil {
			return Outcome{Status: armdoc.StateSucceeded, Gone: true}
		}
		return Outcome{Status: armdoc.StateDeleting}
	}
	if ea == nil {
		return Outcome{Status: armdoc.StateFailed, Err: &armdoc.CloudErrorBody{
			Code:    "InternalServerError",
			Message: fmt.Sprintf("The external auth %s is no longer known to the service.", op.ExternalID),
		}}
	}
	st := ea.GetStatus()
	if awaitingRevision(op) && st.GetState() != csv1.ExternalAuthState_EXTERNAL_AUTH_STATE_UNINSTALLING {
		return notRecorded() // neither an old READY nor an old ERROR speaks for this update
	}
	switch st.GetState() {
	case csv1.ExternalAuthState_EXTERNAL_AUTH_STATE_READY:
		// READY about an older spec than the update's does not end it (readyAt).
		if op.Request == armdoc.OperationUpdate && !readyAt(st.GetObservedRevision(), op) {
			return Outcome{Status: armdoc.StateUpdating}
		}
		return Outcome{Status: armdoc.StateSucceeded}
	case csv1.ExternalAuthState_EXTERNAL_AUTH_STATE_ERROR:
		code := st.GetErrorCode()
		if code == "" {
			code = "ProvisioningFailed"
		}
		msg := st.GetMessage()
		if msg == "" {
			msg = "The external auth could not be applied."
		}
		return Outcome{Status: armdoc.StateFailed, Err: &armdoc.CloudErrorBody{Code: code, Message: msg}}
	case csv1.ExternalAuthState_EXTERNAL_AUTH_STATE_UNINSTALLING:
		return Outcome{Status: armdoc.StateCanceled, Err: &armdoc.CloudErrorBody{
			Code:    "Canceled",
			Message: "The operation was canceled because the external auth, or its cluster, is being deleted.",
		}}
	}
	if op.Request == armdoc.OperationUpdate {
		return Outcome{Status: armdoc.StateUpdating}
	}
	switch st.GetState() {
	case csv1.ExternalAuthState_EXTERNAL_AUTH_STATE_PENDING, csv1.ExternalAuthState_EXTERNAL_AUTH_STATE_UNSPECIFIED:
		return Outcome{Status: armdoc.StateAccepted}
	}
	return Outcome{Status: armdoc.StateProvisioning}
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
