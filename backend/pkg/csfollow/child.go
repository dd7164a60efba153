package csfollow

import (
	"fmt"
	"slices"

	"github.com/openhcp/openhcp/internal/armdoc"
)

// A cluster's children (node pools, external auths) end their operations by one rule, written
// once here (docs/cluster-service.md, "Node pool states" and "External auth states"); what
// differs between kinds is data: the kind's noun, which of its states mean ready, failed and
// being deleted, which mean not yet started, and its messages.

// childStatus is a child's Cluster Service status (csv1.NodePoolStatus, csv1.ExternalAuthStatus)
// with its state enum S. A nil one reads as the zero status.
type childStatus[S ~int32] interface {
	GetState() S
	GetErrorCode() string
	GetMessage() string
	GetObservedRevision() int64
}

// childOutcomes is how one child kind's states map to its operations' outcomes.
type childOutcomes[S ~int32] struct {
	noun                    string // "node pool"
	ready, failed, deleting S      // READY, ERROR, UNINSTALLING
	notStarted              []S    // a create in these states is Accepted; in any other, Provisioning
	failedMessage           string // of an ERROR that carries no message
	canceledMessage         string // of a create or update the child's deletion interrupts
}

// outcome derives the outcome of op from the child's status; known is false when Cluster
// Service does not know the child (a finished delete, or a create or update that can no longer
// finish). Deleting → Deleting; ERROR → Failed with Cluster Service's code; UNINSTALLING under a
// create or update → Canceled; READY → Succeeded, for an update only at or after its revision
// (readyAt); otherwise an update is Updating and a create Accepted or Provisioning.
func (k childOutcomes[S]) outcome(op *armdoc.OperationDocument, known bool, st childStatus[S]) Outcome {
	if op.Request == armdoc.OperationDelete {
		if !known {
			return Outcome{Status: armdoc.StateSucceeded, Gone: true}
		}
		return Outcome{Status: armdoc.StateDeleting}
	}
	if !known {
		return Outcome{Status: armdoc.StateFailed, Err: &armdoc.CloudErrorBody{
			Code:    "InternalServerError",
			Message: fmt.Sprintf("The %s %s is no longer known to the service.", k.noun, op.ExternalID),
		}}
	}
	state := st.GetState()
	if awaitingRevision(op) && state != k.deleting {
		return notRecorded() // neither an old READY nor an old ERROR speaks for this update
	}
	switch state {
	case k.failed:
		code, msg := st.GetErrorCode(), st.GetMessage()
		if code == "" {
			code = "ProvisioningFailed"
		}
		if msg == "" {
			msg = k.failedMessage
		}
		return Outcome{Status: armdoc.StateFailed, Err: &armdoc.CloudErrorBody{Code: code, Message: msg}}
	case k.deleting:
		return Outcome{Status: armdoc.StateCanceled, Err: &armdoc.CloudErrorBody{Code: "Canceled", Message: k.canceledMessage}}
	case k.ready:
		// Cluster Service's READY means what the spec it observed asks for; observed_revision
		// says which spec that is, and one older than the update's does not end it.
		if op.Request == armdoc.OperationUpdate && !readyAt(st.GetObservedRevision(), op) {
			return Outcome{Status: armdoc.StateUpdating}
		}
		return Outcome{Status: armdoc.StateSucceeded}
	}
	if op.Request == armdoc.OperationUpdate {
		return Outcome{Status: armdoc.StateUpdating}
	}
	if slices.Contains(k.notStarted, state) {
		return Outcome{Status: armdoc.StateAccepted}
	}
	return Outcome{Status: armdoc.StateProvisioning}
}
