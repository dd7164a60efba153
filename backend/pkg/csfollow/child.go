package csfollow

import (
	"fmt"
	"slices"

	csv1 "github.com/openhcp/openhcp/cluster-service/api/v1"
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
// finish: it never reached Cluster Service, unless a delete removed the child first, which the
// controller tells from the documents and ends by interrupted instead). Deleting → Deleting;
// ERROR → Failed with Cluster Service's code; UNINSTALLING under a create or update → Canceled; READY → Succeeded, for an update only at or after its revision
// (readyAt); otherwise an update is Updating and a create Accepted or Provisioning.
func (k childOutcomes[S]) outcome(op *armdoc.OperationDocument, known bool, st childStatus[S]) Outcome {
	if op.Request == armdoc.OperationDelete {
		if !known {
			return Outcome{Status: armdoc.StateSucceeded, Gone: true}
		}
		return Outcome{Status: armdoc.StateDeleting, Resend: st.GetState() != k.deleting}
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

// interrupted is the outcome of a create or update whose child a delete removed from Cluster
// Service before the backend saw the child's UNINSTALLING (it was paused or restarting across
// both): the child's own delete (own) or its cluster's. Seen in time, the same delete ends the
// operation Canceled through UNINSTALLING (outcome); the customer's delete is not a failure of
// the service either way.
func (k childOutcomes[S]) interrupted(own bool) Outcome {
	what := "its cluster"
	if own {
		what = "the " + k.noun
	}
	return Outcome{Status: armdoc.StateCanceled, Err: &armdoc.CloudErrorBody{Code: "Canceled",
		Message: fmt.Sprintf("The operation was canceled because %s was deleted before the operation finished.", what)}}
}

// readyAt is the one completion rule of an update, for every kind: the READY status reflects a
// spec at or after the one the operation's call stored (its InternalRevision, the spec_revision
// Cluster Service returned). A READY from before the change, or one read before Cluster Service
// derived a status from the new spec, does not end it.
func readyAt(observedRevision int64, op *armdoc.OperationDocument) bool {
	return op.InternalRevision > 0 && observedRevision >= op.InternalRevision
}

// The child kinds: node pools (docs/cluster-service.md, "Node pool states") and external auths
// ("External auth states": PENDING → Accepted, INSTALLING → Provisioning, UPDATING → Updating,
// READY → Succeeded, ERROR → Failed, UNINSTALLING → Deleting, or Canceled for a create or
// update it interrupts). Their operations are documents on …/hcpOpenShiftClusters/{c}/nodePools/{n}
// and …/externalAuths/{n}, with the Cluster Service ID as InternalID; a finished cluster delete
// removes them (the controller's childResourceDeletes).
var (
	nodePoolOutcomes = childOutcomes[csv1.NodePoolState]{noun: "node pool", failedMessage: "The node pool reported a failure.", canceledMessage: "The operation was canceled because the node pool is being deleted.",
		ready: csv1.NodePoolState_NODE_POOL_STATE_READY, failed: csv1.NodePoolState_NODE_POOL_STATE_ERROR, deleting: csv1.NodePoolState_NODE_POOL_STATE_UNINSTALLING,
		notStarted: []csv1.NodePoolState{csv1.NodePoolState_NODE_POOL_STATE_PENDING, csv1.NodePoolState_NODE_POOL_STATE_UNSPECIFIED}}
	externalAuthOutcomes = childOutcomes[csv1.ExternalAuthState]{noun: "external auth", failedMessage: "The external auth could not be applied.", canceledMessage: "The operation was canceled because the external auth, or its cluster, is being deleted.",
		ready: csv1.ExternalAuthState_EXTERNAL_AUTH_STATE_READY, failed: csv1.ExternalAuthState_EXTERNAL_AUTH_STATE_ERROR, deleting: csv1.ExternalAuthState_EXTERNAL_AUTH_STATE_UNINSTALLING,
		notStarted: []csv1.ExternalAuthState{csv1.ExternalAuthState_EXTERNAL_AUTH_STATE_PENDING, csv1.ExternalAuthState_EXTERNAL_AUTH_STATE_UNSPECIFIED}}
)

// mapNodePool and mapExternalAuth derive the outcome of op from the child's Cluster Service
// state (childOutcomes.outcome); a nil child is unknown to Cluster Service.
func mapNodePool(op *armdoc.OperationDocument, np *csv1.NodePool) Outcome {
	return nodePoolOutcomes.outcome(op, np != nil, np.GetStatus())
}

func mapExternalAuth(op *armdoc.OperationDocument, ea *csv1.ExternalAuth) Outcome {
	return externalAuthOutcomes.outcome(op, ea != nil, ea.GetStatus())
}
