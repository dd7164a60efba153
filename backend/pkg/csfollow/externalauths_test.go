package csfollow

import (
	"testing"

	csv1 "github.com/openhcp/openhcp/cluster-service/api/v1"
	"github.com/openhcp/openhcp/internal/armdoc"
)

func TestMapExternalAuth(t *testing.T) {
	ea := func(s csv1.ExternalAuthState, rev int64) *csv1.ExternalAuth {
		// A status derived from the spec at rev, read at a later revision.
		return &csv1.ExternalAuth{Revision: rev + 3, Status: &csv1.ExternalAuthStatus{State: s, ObservedRevision: rev, ErrorCode: "InvalidConfiguration", Message: "issuer unreachable"}}
	}
	tests := []struct {
		name     string
		req      armdoc.OperationRequest
		rev      int64 // the operation's InternalRevision
		in       *csv1.ExternalAuth
		want     armdoc.ProvisioningState
		wantGone bool
		wantCode string
	}{
		{"create_pending_is_accepted", armdoc.OperationCreate, 0, ea(csv1.ExternalAuthState_EXTERNAL_AUTH_STATE_PENDING, 1), armdoc.StateAccepted, false, ""},
		{"create_installing_is_provisioning", armdoc.OperationCreate, 0, ea(csv1.ExternalAuthState_EXTERNAL_AUTH_STATE_INSTALLING, 2), armdoc.StateProvisioning, false, ""},
		{"create_ready_succeeds", armdoc.OperationCreate, 0, ea(csv1.ExternalAuthState_EXTERNAL_AUTH_STATE_READY, 3), armdoc.StateSucceeded, false, ""},
		{"create_error_fails_with_the_code", armdoc.OperationCreate, 0, ea(csv1.ExternalAuthState_EXTERNAL_AUTH_STATE_ERROR, 3), armdoc.StateFailed, false, "InvalidConfiguration"},
		{"create_interrupted_by_delete_is_canceled", armdoc.OperationCreate, 0, ea(csv1.ExternalAuthState_EXTERNAL_AUTH_STATE_UNINSTALLING, 3), armdoc.StateCanceled, false, "Canceled"},
		{"create_of_an_unknown_one_fails", armdoc.OperationCreate, 0, nil, armdoc.StateFailed, false, "InternalServerError"},
		{"update_updating", armdoc.OperationUpdate, 5, ea(csv1.ExternalAuthState_EXTERNAL_AUTH_STATE_UPDATING, 5), armdoc.StateUpdating, false, ""},
		{"update_ready_before_its_revision_waits", armdoc.OperationUpdate, 5, ea(csv1.ExternalAuthState_EXTERNAL_AUTH_STATE_READY, 4), armdoc.StateUpdating, false, ""},
		{"update_not_yet_recorded_waits_on_an_old_ready", armdoc.OperationUpdate, 0, ea(csv1.ExternalAuthState_EXTERNAL_AUTH_STATE_READY, 7), armdoc.StateUpdating, false, ""},
		{"update_not_yet_recorded_waits_on_an_old_error", armdoc.OperationUpdate, 0, ea(csv1.ExternalAuthState_EXTERNAL_AUTH_STATE_ERROR, 7), armdoc.StateUpdating, false, ""},
		{"update_ready_at_its_revision_succeeds", armdoc.OperationUpdate, 5, ea(csv1.ExternalAuthState_EXTERNAL_AUTH_STATE_READY, 7), armdoc.StateSucceeded, false, ""},
		{"delete_while_there_is_deleting", armdoc.OperationDelete, 0, ea(csv1.ExternalAuthState_EXTERNAL_AUTH_STATE_UNINSTALLING, 8), armdoc.StateDeleting, false, ""},
		{"delete_of_a_gone_one_succeeds_and_removes_the_document", armdoc.OperationDelete, 0, nil, armdoc.StateSucceeded, true, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			out := mapExternalAuth(&armdoc.OperationDocument{Request: tc.req, InternalRevision: tc.rev, ExternalID: "x"}, tc.in)
			if out.Status != tc.want || out.Gone != tc.wantGone {
				t.Fatalf("outcome = %+v, want %s gone=%v", out, tc.want, tc.wantGone)
			}
			if tc.wantCode != "" && (out.Err == nil || out.Err.Code != tc.wantCode) {
				t.Fatalf("error = %+v, want code %s", out.Err, tc.wantCode)
			}
		})
	}
}
