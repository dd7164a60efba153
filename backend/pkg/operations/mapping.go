package operations

import (
	"fmt"

	"github.com/openhcp/openhcp/internal/api"

	csv1 "github.com/openhcp/openhcp/cluster-service/api/v1"
)

// outcome is what Cluster Service's view of a cluster means for one ARM operation.
type outcome struct {
	// status is the operation status and the resource's provisioning state.
	status api.ProvisioningState
	err    *api.CloudErrorBody
	// gone means the resource document should be removed (a finished delete).
	gone bool
}

// mapCluster derives the outcome of op from the cluster's Cluster Service state. A nil cluster
// means Cluster Service does not know it (NotFound).
func mapCluster(op *api.OperationDocument, c *csv1.Cluster) outcome {
	if op.Request == api.OperationDelete {
		if c == nil {
			return outcome{status: api.StateSucceeded, gone: true}
		}
		return outcome{status: api.StateDeleting}
	}
	if c == nil {
		return outcome{status: api.StateFailed, err: &api.CloudErrorBody{
			Code:    "InternalServerError",
			Message: fmt.Sprintf("The cluster %s is no longer known to the service.", op.ExternalID),
		}}
	}
	st := c.GetStatus()
	if op.Request == api.OperationUpdate && st.GetState() != csv1.ClusterState_CLUSTER_STATE_UNINSTALLING {
		return mapClusterUpdate(op, st)
	}
	switch st.GetState() {
	case csv1.ClusterState_CLUSTER_STATE_READY:
		return outcome{status: api.StateSucceeded}
	case csv1.ClusterState_CLUSTER_STATE_ERROR:
		code := st.GetErrorCode()
		if code == "" {
			code = "ProvisioningFailed"
		}
		msg := st.GetMessage()
		if msg == "" {
			msg = "The hosted control plane reported a failure."
		}
		return outcome{status: api.StateFailed, err: &api.CloudErrorBody{Code: code, Message: msg}}
	case csv1.ClusterState_CLUSTER_STATE_UNINSTALLING:
		// Someone deleted the cluster while this create or update ran: it will not finish.
		return outcome{status: api.StateCanceled, err: &api.CloudErrorBody{
			Code:    "Canceled",
			Message: "The operation was canceled because the cluster is being deleted.",
		}}
	}
	if op.Request == api.OperationUpdate {
		return outcome{status: api.StateUpdating}
	}
	return outcome{status: api.StateProvisioning}
}

// UpgradeFailedCode is the ARM error code of an update whose control-plane upgrade failed.
const UpgradeFailedCode = "UpgradeFailed"

// mapClusterUpdate follows the upgrade policy UpdateCluster started for this operation
// (status.upgrade carries the operation ID), so a READY read before the upgrade began, or of
// another operation's upgrade, never finishes it. An update that starts no upgrade is finished
// by the frontend; one whose UpdateCluster call never landed runs into the deadline.
func mapClusterUpdate(op *api.OperationDocument, st *csv1.ClusterStatus) outcome {
	p := st.GetUpgrade()
	if p.GetOperationId() != op.ID || op.ID == "" {
		return outcome{status: api.StateUpdating}
	}
	switch p.GetState() {
	case csv1.UpgradePolicyState_UPGRADE_POLICY_STATE_COMPLETED:
		return outcome{status: api.StateSucceeded}
	case csv1.UpgradePolicyState_UPGRADE_POLICY_STATE_FAILED:
		msg := p.GetMessage()
		if msg == "" {
			msg = fmt.Sprintf("The upgrade to %s failed.", p.GetToVersion())
		}
		return outcome{status: api.StateFailed, err: &api.CloudErrorBody{Code: UpgradeFailedCode,
			Message: msg + " The cluster keeps running its previous version; retry by requesting the version again or contact support."}}
	}
	return outcome{status: api.StateUpdating}
}
