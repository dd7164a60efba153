package csfollow

import (
	"testing"

	csv1 "github.com/openhcp/openhcp/cluster-service/api/v1"
	"github.com/openhcp/openhcp/internal/armdoc"
)

func pool(state csv1.NodePoolState, rev int64, spec *csv1.NodePoolSpec, replicas int32, version string) *csv1.NodePool {
	// A status derived from the spec at rev (observed_revision), read at a later revision.
	return &csv1.NodePool{Id: "p1", Revision: rev + 2, SpecRevision: rev, Spec: spec,
		Status: &csv1.NodePoolStatus{State: state, Replicas: replicas, CurrentVersion: version, ObservedRevision: rev}}
}

func TestMapNodePool(t *testing.T) {
	fixed3 := &csv1.NodePoolSpec{Replicas: 3, VersionId: "4.19.17"}
	auto := &csv1.NodePoolSpec{Autoscaling: &csv1.NodePoolAutoscaling{Min: 2, Max: 5}, VersionId: "4.19.17"}
	errPool := pool(csv1.NodePoolState_NODE_POOL_STATE_ERROR, 5, fixed3, 0, "")
	errPool.Status.ErrorCode, errPool.Status.Message = "InvalidReleaseImage", "bad image"
	for _, tc := range []struct {
		name     string
		request  armdoc.OperationRequest
		revision int64
		pool     *csv1.NodePool
		want     armdoc.ProvisioningState
		wantCode string
		gone     bool
	}{
		{"create_pending_is_accepted", armdoc.OperationCreate, 0, pool(csv1.NodePoolState_NODE_POOL_STATE_PENDING, 1, fixed3, 0, ""), armdoc.StateAccepted, "", false},
		{"create_installing_is_provisioning", armdoc.OperationCreate, 0, pool(csv1.NodePoolState_NODE_POOL_STATE_INSTALLING, 2, fixed3, 1, ""), armdoc.StateProvisioning, "", false},
		{"create_ready_succeeds", armdoc.OperationCreate, 0, pool(csv1.NodePoolState_NODE_POOL_STATE_READY, 3, fixed3, 3, "4.19.17"), armdoc.StateSucceeded, "", false},
		{"create_error_fails_with_cs_code", armdoc.OperationCreate, 0, errPool, armdoc.StateFailed, "InvalidReleaseImage", false},
		{"create_pool_unknown_fails", armdoc.OperationCreate, 0, nil, armdoc.StateFailed, "InternalServerError", false},
		{"create_canceled_by_delete", armdoc.OperationCreate, 0, pool(csv1.NodePoolState_NODE_POOL_STATE_UNINSTALLING, 4, fixed3, 3, ""), armdoc.StateCanceled, "Canceled", false},
		// Right after UpdateNodePool the pool is still READY with the old node count.
		// Cluster Service's READY means the nodes and version of the spec it observed, so a READY
		// with the old replicas, version or range is one observed before the update (6 < 7).
		{"update_ready_with_old_replicas_is_updating", armdoc.OperationUpdate, 7, pool(csv1.NodePoolState_NODE_POOL_STATE_READY, 6, fixed3, 2, "4.19.17"), armdoc.StateUpdating, "", false},
		{"update_ready_before_its_revision_is_updating", armdoc.OperationUpdate, 9, pool(csv1.NodePoolState_NODE_POOL_STATE_READY, 8, fixed3, 3, "4.19.17"), armdoc.StateUpdating, "", false},
		{"update_scaling_is_updating", armdoc.OperationUpdate, 7, pool(csv1.NodePoolState_NODE_POOL_STATE_UPDATING, 8, fixed3, 2, "4.19.17"), armdoc.StateUpdating, "", false},
		{"update_ready_with_new_replicas_succeeds", armdoc.OperationUpdate, 7, pool(csv1.NodePoolState_NODE_POOL_STATE_READY, 9, fixed3, 3, "4.19.17"), armdoc.StateSucceeded, "", false},
		{"update_ready_with_old_version_is_updating", armdoc.OperationUpdate, 7, pool(csv1.NodePoolState_NODE_POOL_STATE_READY, 6, fixed3, 3, "4.18.20"), armdoc.StateUpdating, "", false},
		{"update_autoscaling_within_range_succeeds", armdoc.OperationUpdate, 7, pool(csv1.NodePoolState_NODE_POOL_STATE_READY, 7, auto, 3, "4.19.17"), armdoc.StateSucceeded, "", false},
		{"update_autoscaling_below_min_is_updating", armdoc.OperationUpdate, 7, pool(csv1.NodePoolState_NODE_POOL_STATE_READY, 6, auto, 1, "4.19.17"), armdoc.StateUpdating, "", false},
		{"update_ready_read_after_its_revision_but_observed_before_is_updating", armdoc.OperationUpdate, 7,
			func() *csv1.NodePool {
				p := pool(csv1.NodePoolState_NODE_POOL_STATE_READY, 6, fixed3, 3, "4.19.17")
				p.Revision = 20 // newer than the operation's, as a later status write leaves it
				return p
			}(), armdoc.StateUpdating, "", false},
		{"update_error_fails", armdoc.OperationUpdate, 5, errPool, armdoc.StateFailed, "InvalidReleaseImage", false},
		// The frontend wrote the operation and has not yet recorded Cluster Service's answer.
		{"update_not_yet_recorded_waits_on_an_old_ready", armdoc.OperationUpdate, 0, pool(csv1.NodePoolState_NODE_POOL_STATE_READY, 9, fixed3, 3, "4.19.17"), armdoc.StateUpdating, "", false},
		{"update_not_yet_recorded_waits_on_an_old_error", armdoc.OperationUpdate, 0, errPool, armdoc.StateUpdating, "", false},
		{"delete_in_progress_is_deleting", armdoc.OperationDelete, 0, pool(csv1.NodePoolState_NODE_POOL_STATE_UNINSTALLING, 9, fixed3, 3, ""), armdoc.StateDeleting, "", false},
		{"delete_done_when_cs_forgets_pool", armdoc.OperationDelete, 0, nil, armdoc.StateSucceeded, "", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out := mapNodePool(&armdoc.OperationDocument{Request: tc.request, InternalRevision: tc.revision,
				ExternalID: "/subscriptions/s/resourceGroups/rg/providers/Microsoft.RedHatOpenShift/hcpOpenShiftClusters/c/nodePools/p"}, tc.pool)
			if out.Status != tc.want || out.Gone != tc.gone {
				t.Errorf("status = %s gone = %v, want %s gone = %v", out.Status, out.Gone, tc.want, tc.gone)
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
		})
	}
}
