package csfollow

import (
	"testing"

	csv1 "github.com/openhcp/openhcp/cluster-service/api/v1"
	"github.com/openhcp/openhcp/internal/armdoc"
)

func cluster(state csv1.ClusterState, code, msg string) *csv1.Cluster {
	return &csv1.Cluster{Id: "c1", Status: &csv1.ClusterStatus{State: state, ErrorCode: code, Message: msg}}
}

func upgrading(state csv1.ClusterState, opID string, ps csv1.UpgradePolicyState) *csv1.Cluster {
	c := cluster(state, "", "")
	c.Status.Upgrade = &csv1.UpgradePolicy{OperationId: opID, State: ps, ToVersion: "4.20.3", Message: "The upgrade from 4.19.17 to 4.20.3 failed: etcd is degraded"}
	return c
}

func TestMapClusterConfigurationUpdate(t *testing.T) {
	// at: a status derived from the spec at rev (observed_revision), read at a later revision
	// (status writes move revision on; the rule looks only at observed_revision).
	at := func(c *csv1.Cluster, rev int64) *csv1.Cluster {
		c.Revision, c.Status.ObservedRevision = rev+5, rev
		return c
	}
	for _, tc := range []struct {
		name     string
		cluster  *csv1.Cluster
		want     armdoc.ProvisioningState
		wantCode string
	}{
		{"ready_before_the_updates_revision_is_updating", at(cluster(csv1.ClusterState_CLUSTER_STATE_READY, "", ""), 9), armdoc.StateUpdating, ""},
		{"ready_read_at_a_newer_revision_but_observed_before_the_update_is_updating",
			func() *csv1.Cluster {
				c := cluster(csv1.ClusterState_CLUSTER_STATE_READY, "", "")
				c.Revision, c.Status.ObservedRevision = 30, 9
				return c
			}(), armdoc.StateUpdating, ""},
		{"updating_at_the_updates_revision_is_updating", at(cluster(csv1.ClusterState_CLUSTER_STATE_UPDATING, "", ""), 10), armdoc.StateUpdating, ""},
		{"ready_after_the_updates_revision_succeeds", at(cluster(csv1.ClusterState_CLUSTER_STATE_READY, "", ""), 12), armdoc.StateSucceeded, ""},
		{"ready_at_the_updates_revision_succeeds", at(cluster(csv1.ClusterState_CLUSTER_STATE_READY, "", ""), 10), armdoc.StateSucceeded, ""},
		{"error_after_the_update_fails_with_the_cs_code", at(cluster(csv1.ClusterState_CLUSTER_STATE_ERROR, "InvalidConfiguration", "bad CIDR"), 11),
			armdoc.StateFailed, "InvalidConfiguration"},
		{"error_without_code_fails_with_update_failed", at(cluster(csv1.ClusterState_CLUSTER_STATE_ERROR, "", ""), 11), armdoc.StateFailed, UpdateFailedCode},
		{"error_before_the_update_is_not_its_failure", at(cluster(csv1.ClusterState_CLUSTER_STATE_ERROR, "HostedClusterDegraded", "x"), 9), armdoc.StateUpdating, ""},
		{"ready_with_its_upgrade_still_running_is_updating",
			at(upgrading(csv1.ClusterState_CLUSTER_STATE_READY, "op-1", csv1.UpgradePolicyState_UPGRADE_POLICY_STATE_STARTED), 11), armdoc.StateUpdating, ""},
		{"ready_with_its_upgrade_completed_succeeds",
			at(upgrading(csv1.ClusterState_CLUSTER_STATE_READY, "op-1", csv1.UpgradePolicyState_UPGRADE_POLICY_STATE_COMPLETED), 11), armdoc.StateSucceeded, ""},
		{"its_upgrade_failed_fails", at(upgrading(csv1.ClusterState_CLUSTER_STATE_UPDATING, "op-1", csv1.UpgradePolicyState_UPGRADE_POLICY_STATE_FAILED), 11),
			armdoc.StateFailed, UpgradeFailedCode},
		{"ready_with_another_operations_upgrade_succeeds",
			at(upgrading(csv1.ClusterState_CLUSTER_STATE_READY, "other-op", csv1.UpgradePolicyState_UPGRADE_POLICY_STATE_STARTED), 11), armdoc.StateSucceeded, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out := mapCluster(&armdoc.OperationDocument{ID: "op-1", Request: armdoc.OperationUpdate, InternalRevision: 10}, tc.cluster)
			code := ""
			if out.Err != nil {
				code = out.Err.Code
				if out.Err.Message == "" {
					t.Errorf("error %s has no message", code)
				}
			}
			if out.Status != tc.want || code != tc.wantCode {
				t.Fatalf("outcome %s %q; want %s %q", out.Status, code, tc.want, tc.wantCode)
			}
		})
	}
}

func TestMapCluster(t *testing.T) {
	for _, tc := range []struct {
		name     string
		request  armdoc.OperationRequest
		cluster  *csv1.Cluster
		want     armdoc.ProvisioningState
		wantCode string
		gone     bool
	}{
		{"create_pending_is_provisioning", armdoc.OperationCreate, cluster(csv1.ClusterState_CLUSTER_STATE_PENDING, "", ""), armdoc.StateProvisioning, "", false},
		{"create_installing_is_provisioning", armdoc.OperationCreate, cluster(csv1.ClusterState_CLUSTER_STATE_INSTALLING, "", ""), armdoc.StateProvisioning, "", false},
		{"create_ready_succeeds", armdoc.OperationCreate, cluster(csv1.ClusterState_CLUSTER_STATE_READY, "", ""), armdoc.StateSucceeded, "", false},
		{"create_error_fails_with_cs_code", armdoc.OperationCreate, cluster(csv1.ClusterState_CLUSTER_STATE_ERROR, "InvalidReleaseImage", "bad image"), armdoc.StateFailed, "InvalidReleaseImage", false},
		{"create_error_without_code_gets_default", armdoc.OperationCreate, cluster(csv1.ClusterState_CLUSTER_STATE_ERROR, "", ""), armdoc.StateFailed, "ProvisioningFailed", false},
		{"create_cluster_unknown_fails", armdoc.OperationCreate, nil, armdoc.StateFailed, "InternalServerError", false},
		{"create_canceled_by_delete", armdoc.OperationCreate, cluster(csv1.ClusterState_CLUSTER_STATE_UNINSTALLING, "", ""), armdoc.StateCanceled, "Canceled", false},
		{"update_in_progress_is_updating", armdoc.OperationUpdate, cluster(csv1.ClusterState_CLUSTER_STATE_UPDATING, "", ""), armdoc.StateUpdating, "", false},
		{"update_of_a_ready_cluster_without_its_upgrade_is_updating", armdoc.OperationUpdate, cluster(csv1.ClusterState_CLUSTER_STATE_READY, "", ""), armdoc.StateUpdating, "", false},
		{"update_with_another_operations_completed_upgrade_is_updating", armdoc.OperationUpdate,
			upgrading(csv1.ClusterState_CLUSTER_STATE_READY, "other-op", csv1.UpgradePolicyState_UPGRADE_POLICY_STATE_COMPLETED), armdoc.StateUpdating, "", false},
		{"update_with_its_upgrade_pending_is_updating", armdoc.OperationUpdate,
			upgrading(csv1.ClusterState_CLUSTER_STATE_READY, "op-1", csv1.UpgradePolicyState_UPGRADE_POLICY_STATE_PENDING), armdoc.StateUpdating, "", false},
		{"update_with_its_upgrade_started_is_updating", armdoc.OperationUpdate,
			upgrading(csv1.ClusterState_CLUSTER_STATE_UPDATING, "op-1", csv1.UpgradePolicyState_UPGRADE_POLICY_STATE_STARTED), armdoc.StateUpdating, "", false},
		{"update_with_its_upgrade_completed_succeeds", armdoc.OperationUpdate,
			upgrading(csv1.ClusterState_CLUSTER_STATE_READY, "op-1", csv1.UpgradePolicyState_UPGRADE_POLICY_STATE_COMPLETED), armdoc.StateSucceeded, "", false},
		{"update_with_its_upgrade_failed_fails_with_upgrade_failed", armdoc.OperationUpdate,
			upgrading(csv1.ClusterState_CLUSTER_STATE_UPDATING, "op-1", csv1.UpgradePolicyState_UPGRADE_POLICY_STATE_FAILED), armdoc.StateFailed, "UpgradeFailed", false},
		{"update_canceled_by_delete", armdoc.OperationUpdate,
			upgrading(csv1.ClusterState_CLUSTER_STATE_UNINSTALLING, "op-1", csv1.UpgradePolicyState_UPGRADE_POLICY_STATE_STARTED), armdoc.StateCanceled, "Canceled", false},
		{"delete_in_progress_is_deleting", armdoc.OperationDelete, cluster(csv1.ClusterState_CLUSTER_STATE_UNINSTALLING, "", ""), armdoc.StateDeleting, "", false},
		// A delete Cluster Service never received: the cluster is there and not being deleted.
		{"delete_not_received_is_deleting_and_resent", armdoc.OperationDelete, cluster(csv1.ClusterState_CLUSTER_STATE_READY, "", ""), armdoc.StateDeleting, "", false},
		{"delete_not_received_of_a_failed_cluster_is_resent", armdoc.OperationDelete, cluster(csv1.ClusterState_CLUSTER_STATE_ERROR, "X", "y"), armdoc.StateDeleting, "", false},
		{"delete_done_when_cs_forgets_cluster", armdoc.OperationDelete, nil, armdoc.StateSucceeded, "", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out := mapCluster(&armdoc.OperationDocument{ID: "op-1", Request: tc.request, ExternalID: "/subscriptions/s/resourceGroups/rg/providers/Microsoft.RedHatOpenShift/hcpOpenShiftClusters/c"}, tc.cluster)
			if out.Status != tc.want {
				t.Errorf("status = %s, want %s", out.Status, tc.want)
			}
			if out.Gone != tc.gone {
				t.Errorf("gone = %v, want %v", out.Gone, tc.gone)
			}
			// Only a delete whose cluster Cluster Service holds and is not deleting is sent again.
			wantResend := tc.request == armdoc.OperationDelete && tc.cluster != nil &&
				tc.cluster.GetStatus().GetState() != csv1.ClusterState_CLUSTER_STATE_UNINSTALLING
			if out.Resend != wantResend {
				t.Errorf("resend = %v, want %v", out.Resend, wantResend)
			}
			gotCode := ""
			if out.Err != nil {
				gotCode = out.Err.Code
				if out.Err.Message == "" {
					t.Errorf("error %s has no message", gotCode)
				}
			}
			if gotCode != tc.wantCode {
				t.Errorf("error code = %q, want %q", gotCode, tc.wantCode)
			}
			if (out.Status == armdoc.StateFailed || out.Status == armdoc.StateCanceled) && out.Err == nil {
				t.Errorf("%s without an error body breaks the ARM contract", out.Status)
			}
		})
	}
}
