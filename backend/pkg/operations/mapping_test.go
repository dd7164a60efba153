package operations

import (
	"testing"

	csv1 "github.com/openhcp/openhcp/cluster-service/api/v1"
	"github.com/openhcp/openhcp/internal/api"
)

func cluster(state csv1.ClusterState, code, msg string) *csv1.Cluster {
	return &csv1.Cluster{Id: "c1", Status: &csv1.ClusterStatus{State: state, ErrorCode: code, Message: msg}}
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
		{"delete_in_progress_is_deleting", api.OperationDelete, cluster(csv1.ClusterState_CLUSTER_STATE_UNINSTALLING, "", ""), api.StateDeleting, "", false},
		{"delete_done_when_cs_forgets_cluster", api.OperationDelete, nil, api.StateSucceeded, "", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out := mapCluster(&api.OperationDocument{Request: tc.request, ExternalID: "/subscriptions/s/resourceGroups/rg/providers/Microsoft.RedHatOpenShift/hcpOpenShiftClusters/c"}, tc.cluster)
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
