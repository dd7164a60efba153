package operations

import (
	"testing"

	csv1 "github.com/openhcp/openhcp/cluster-service/api/v1"
	"github.com/openhcp/openhcp/internal/api"
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
	at := func(c *csv1.Cluster, rev int64) *csv1.Cluster { c.Revision = rev; return c }
	for _, tc := range []struct {
		name     string
		cluster  *csv1.Cluster
		want     api.ProvisioningState
		wantCode string
	}{
		{"ready_before_the_updates_revision_is_updating", at(cluster(csv1.ClusterState_CLUSTER_STATE_READY, "", ""), 9), api.StateUpdating, ""},
		{"updating_at_the_updates_revision_is_updating", at(cluster(csv1.ClusterState_CLUSTER_STATE_UPDATING, "", ""), 10), api.StateUpdating, ""},
		{"ready_after_the_updates_revision_succeeds", at(cluster(csv1.ClusterState_CLUSTER_STATE_READY, "", ""), 12), api.StateSucceeded, ""},
		{"ready_at_the_updates_revision_succeeds", at(cluster(csv1.ClusterState_CLUSTER_STATE_READY, "", ""), 10), api.StateSucceeded, ""},
		{"error_after_the_update_fails_with_the_cs_code", at(cluster(csv1.ClusterState_CLUSTER_STATE_ERROR, "InvalidConfiguration", "bad CIDR"), 11),
			api.StateFailed, "InvalidConfiguration"},
		{"error_without_code_fails_with_update_failed", at(cluster(csv1.ClusterState_CLUSTER_STATE_ERROR, "", ""), 11), api.StateFailed, UpdateFailedCode},
		{"error_before_the_update_is_not_its_failure", at(cluster(csv1.ClusterState_CLUSTER_STATE_ERROR, "HostedClusterDegraded", "x"), 9), api.StateUpdating, ""},
		{"ready_with_its_upgrade_still_running_is_updating",
			at(upgrading(csv1.ClusterState_CLUSTER_STATE_READY, "op-1", csv1.UpgradePolicyState_UPGRADE_POLICY_STATE_STARTED), 11), api.StateUpdating, ""},
		{"ready_with_its_upgrade_completed_succeeds",
			at(upgrading(csv1.ClusterState_CLUSTER_STATE_READY, "op-1", csv1.UpgradePolicyState_UPGRADE_POLICY_STATE_COMPLETED), 11), api.StateSucceeded, ""},
		{"its_upgrade_failed_fails", at(upgrading(csv1.ClusterState_CLUSTER_STATE_UPDATING, "op-1", csv1.UpgradePolicyState_UPGRADE_POLICY_STATE_FAILED), 11),
			api.StateFailed, UpgradeFailedCode},
		{"ready_with_another_operations_upgrade_succeeds",
			at(upgrading(csv1.ClusterState_CLUSTER_STATE_READY, "other-op", csv1.UpgradePolicyState_UPGRADE_POLICY_STATE_STARTED), 11), api.StateSucceeded, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out := mapCluster(&api.OperationDocument{ID: "op-1", Request: api.OperationUpdate, InternalRevision: 10}, tc.cluster)
			code := ""
			if out.err != nil {
				code = out.err.Code
				if out.err.Message == "" {
					t.Errorf("error %s has no message", code)
				}
			}
			if out.status != tc.want || code != tc.wantCode {
				t.Fatalf("outcome %s %q; want %s %q", out.status, code, tc.want, tc.wantCode)
			}
		})
	}
}

func TestMapCluster(t *testing.T) {
	for _, tc := range []struct {
		name     string
		request  api.OperationRequest
		cluster  *csv1.Cluster
		want     api.ProvisioningState
		wantCode string
		gone     bool
	}{
		{"create_pending_is_provisioning", api.OperationCreate, cluster(csv1.ClusterState_CLUSTER_STATE_PENDING, "", ""), api.StateProvisioning, "", false},
		{"create_installing_is_provisioning", api.OperationCreate, cluster(csv1.ClusterState_CLUSTER_STATE_INSTALLING, "", ""), api.StateProvisioning, "", false},
		{"create_ready_succeeds", api.OperationCreate, cluster(csv1.ClusterState_CLUSTER_STATE_READY, "", ""), api.StateSucceeded, "", false},
		{"create_error_fails_with_cs_code", api.OperationCreate, cluster(csv1.ClusterState_CLUSTER_STATE_ERROR, "InvalidReleaseImage", "bad image"), api.StateFailed, "InvalidReleaseImage", false},
		{"create_error_without_code_gets_default", api.OperationCreate, cluster(csv1.ClusterState_CLUSTER_STATE_ERROR, "", ""), api.StateFailed, "ProvisioningFailed", false},
		{"create_cluster_unknown_fails", api.OperationCreate, nil, api.StateFailed, "InternalServerError", false},
		{"create_canceled_by_delete", api.OperationCreate, cluster(csv1.ClusterState_CLUSTER_STATE_UNINSTALLING, "", ""), api.StateCanceled, "Canceled", false},
		{"update_in_progress_is_updating", api.OperationUpdate, cluster(csv1.ClusterState_CLUSTER_STATE_UPDATING, "", ""), api.StateUpdating, "", false},
		{"update_of_a_ready_cluster_without_its_upgrade_is_updating", api.OperationUpdate, cluster(csv1.ClusterState_CLUSTER_STATE_READY, "", ""), api.StateUpdating, "", false},
		{"update_with_another_operations_completed_upgrade_is_updating", api.OperationUpdate,
			upgrading(csv1.ClusterState_CLUSTER_STATE_READY, "other-op", csv1.UpgradePolicyState_UPGRADE_POLICY_STATE_COMPLETED), api.StateUpdating, "", false},
		{"update_with_its_upgrade_pending_is_updating", api.OperationUpdate,
			upgrading(csv1.ClusterState_CLUSTER_STATE_READY, "op-1", csv1.UpgradePolicyState_UPGRADE_POLICY_STATE_PENDING), api.StateUpdating, "", false},
		{"update_with_its_upgrade_started_is_updating", api.OperationUpdate,
			upgrading(csv1.ClusterState_CLUSTER_STATE_UPDATING, "op-1", csv1.UpgradePolicyState_UPGRADE_POLICY_STATE_STARTED), api.StateUpdating, "", false},
		{"update_with_its_upgrade_completed_succeeds", api.OperationUpdate,
			upgrading(csv1.ClusterState_CLUSTER_STATE_READY, "op-1", csv1.UpgradePolicyState_UPGRADE_POLICY_STATE_COMPLETED), api.StateSucceeded, "", false},
		{"update_with_its_upgrade_failed_fails_with_upgrade_failed", api.OperationUpdate,
			upgrading(csv1.ClusterState_CLUSTER_STATE_UPDATING, "op-1", csv1.UpgradePolicyState_UPGRADE_POLICY_STATE_FAILED), api.StateFailed, "UpgradeFailed", false},
		{"update_canceled_by_delete", api.OperationUpdate,
			upgrading(csv1.ClusterState_CLUSTER_STATE_UNINSTALLING, "op-1", csv1.UpgradePolicyState_UPGRADE_POLICY_STATE_STARTED), api.StateCanceled, "Canceled", false},
		{"delete_in_progress_is_deleting", api.OperationDelete, cluster(csv1.ClusterState_CLUSTER_STATE_UNINSTALLING, "", ""), api.StateDeleting, "", false},
		{"delete_done_when_cs_forgets_cluster", api.OperationDelete, nil, api.StateSucceeded, "", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out := mapCluster(&api.OperationDocument{ID: "op-1", Request: tc.request, ExternalID: "/subscriptions/s/resourceGroups/rg/providers/Microsoft.RedHatOpenShift/hcpOpenShiftClusters/c"}, tc.cluster)
			if out.status != tc.want {
				t.Errorf("status = %s, want %s", out.status, tc.want)
			}
			if out.gone != tc.gone {
				t.Errorf("gone = %v, want %v", out.gone, tc.gone)
			}
			gotCode := ""
			if out.err != nil {
				gotCode = out.err.Code
				if out.err.Message == "" {
					t.Errorf("error %s has no message", gotCode)
				}
			}
			if gotCode != tc.wantCode {
				t.Errorf("error code = %q, want %q", gotCode, tc.wantCode)
			}
			if (out.status == api.StateFailed || out.status == api.StateCanceled) && out.err == nil {
				t.Errorf("%s without an error body breaks the ARM contract", out.status)
			}
		})
	}
}
