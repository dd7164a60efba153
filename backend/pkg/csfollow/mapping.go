package csfollow

import (
	"fmt"

	"github.com/openhcp/openhcp/internal/armdoc"

	csv1 "github.com/openhcp/openhcp/cluster-service/api/v1"
)

// awaitingRevision reports whether op is an update the frontend has written but whose Cluster
// Service call it has not yet recorded (InternalRevision 0): the frontend is between its
// document write and its call (startUpdate), so no status may end it yet. A cluster upgrade is
// the exception, followed by the policy that carries the operation ID (mapClusterUpdate).
func awaitingRevision(op *armdoc.OperationDocument) bool {
	return op.Request == armdoc.OperationUpdate && op.InternalRevision == 0
}

// notRecorded is the outcome of an update awaiting its revision.
func notRecorded() Outcome { return Outcome{Status: armdoc.StateUpdating, Unrecorded: true} }

// mapCluster derives the outcome of op from the cluster's Cluster Service state. A nil cluster
// means Cluster Service does not know it (NotFound).
func mapCluster(op *armdoc.OperationDocument, c *csv1.Cluster) Outcome {
	if op.Request == armdoc.OperationDelete {
		if c == nil {
			return Outcome{Status: armdoc.StateSucceeded, Gone: true}
		}
		return Outcome{Status: armdoc.StateDeleting, Resend: c.GetStatus().GetState() != csv1.ClusterState_CLUSTER_STATE_UNINSTALLING}
	}
	if c == nil {
		return Outcome{Status: armdoc.StateFailed, Err: &armdoc.CloudErrorBody{
			Code:    "InternalServerError",
			Message: fmt.Sprintf("The cluster %s is no longer known to the service.", op.ExternalID),
		}}
	}
	st := c.GetStatus()
	if op.Request == armdoc.OperationUpdate && st.GetState() != csv1.ClusterState_CLUSTER_STATE_UNINSTALLING {
		return mapClusterUpdate(op, c)
	}
	switch st.GetState() {
	case csv1.ClusterState_CLUSTER_STATE_READY:
		return Outcome{Status: armdoc.StateSucceeded}
	case csv1.ClusterState_CLUSTER_STATE_ERROR:
		code := st.GetErrorCode()
		if code == "" {
			code = "ProvisioningFailed"
		}
		msg := st.GetMessage()
		if msg == "" {
			msg = "The hosted control plane reported a failure."
		}
		return Outcome{Status: armdoc.StateFailed, Err: &armdoc.CloudErrorBody{Code: code, Message: msg}}
	case csv1.ClusterState_CLUSTER_STATE_UNINSTALLING:
		// Someone deleted the cluster while this create or update ran: it will not finish.
		return Outcome{Status: armdoc.StateCanceled, Err: &armdoc.CloudErrorBody{
			Code:    "Canceled",
			Message: "The operation was canceled because the cluster is being deleted.",
		}}
	}
	if op.Request == armdoc.OperationUpdate {
		return Outcome{Status: armdoc.StateUpdating}
	}
	return Outcome{Status: armdoc.StateProvisioning}
}

// UpgradeFailedCode is the ARM error code of an update whose control-plane upgrade failed.
const UpgradeFailedCode = "UpgradeFailed"

// UpdateFailedCode is the ARM error code of a configuration update Cluster Service reports
// failed without a code of its own.
const UpdateFailedCode = "UpdateFailed"

// mapClusterUpdate follows what UpdateCluster started for this operation, so a READY read from
// before the change, or of another operation's change, never finishes it:
//   - a configuration change (the operation's InternalRevision is the spec_revision Cluster
//     Service stored it at) needs a status derived from that spec or a later one
//     (observed_revision, readyAt): READY ends it, ERROR there fails it;
//   - a version change follows the upgrade policy that carries the operation ID.
//
// An update that changes neither is finished by the frontend; one whose UpdateCluster call
// never landed runs into the deadline.
func mapClusterUpdate(op *armdoc.OperationDocument, c *csv1.Cluster) Outcome {
	st := c.GetStatus()
	p := st.GetUpgrade()
	ownUpgrade := op.ID != "" && p.GetOperationId() == op.ID
	if op.InternalRevision > 0 {
		if !readyAt(st.GetObservedRevision(), op) {
			return Outcome{Status: armdoc.StateUpdating}
		}
		switch st.GetState() {
		case csv1.ClusterState_CLUSTER_STATE_ERROR:
			code, msg := st.GetErrorCode(), st.GetMessage()
			if code == "" {
				code = UpdateFailedCode
			}
			if msg == "" {
				msg = "The cluster configuration could not be applied."
			}
			return Outcome{Status: armdoc.StateFailed, Err: &armdoc.CloudErrorBody{Code: code, Message: msg}}
		case csv1.ClusterState_CLUSTER_STATE_READY:
			if !ownUpgrade {
				return Outcome{Status: armdoc.StateSucceeded}
			}
		default:
			if !ownUpgrade || p.GetState() != csv1.UpgradePolicyState_UPGRADE_POLICY_STATE_FAILED {
				return Outcome{Status: armdoc.StateUpdating}
			}
		}
	}
	if !ownUpgrade {
		if awaitingRevision(op) {
			return notRecorded()
		}
		return Outcome{Status: armdoc.StateUpdating}
	}
	switch p.GetState() {
	case csv1.UpgradePolicyState_UPGRADE_POLICY_STATE_COMPLETED:
		return Outcome{Status: armdoc.StateSucceeded}
	case csv1.UpgradePolicyState_UPGRADE_POLICY_STATE_FAILED:
		msg := p.GetMessage()
		if msg == "" {
			msg = fmt.Sprintf("The upgrade to %s failed.", p.GetToVersion())
		}
		return Outcome{Status: armdoc.StateFailed, Err: &armdoc.CloudErrorBody{Code: UpgradeFailedCode,
			Message: msg + " The cluster keeps running its previous version; retry by requesting the version again or contact support."}}
	}
	return Outcome{Status: armdoc.StateUpdating}
}
