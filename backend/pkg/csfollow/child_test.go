package csfollow

import (
	"testing"

	csv1 "github.com/openhcp/openhcp/cluster-service/api/v1"
	"github.com/openhcp/openhcp/internal/armdoc"
)

// TestChildKindsEndOperationsAlike: node pools and external auths are mapped by one rule, so
// every state they share ends every operation the same way; only the messages differ.
func TestChildKindsEndOperationsAlike(t *testing.T) {
	states := []string{"UNSPECIFIED", "PENDING", "INSTALLING", "READY", "ERROR", "UNINSTALLING", "UPDATING"}
	ops := []struct {
		name     string
		request  armdoc.OperationRequest
		revision int64
	}{
		{"create", armdoc.OperationCreate, 0},
		{"update_not_recorded", armdoc.OperationUpdate, 0},
		{"update_observed_before", armdoc.OperationUpdate, 6},
		{"update_observed_at", armdoc.OperationUpdate, 5},
		{"delete", armdoc.OperationDelete, 0},
	}
	if len(states) != len(csv1.NodePoolState_name) || len(states) != len(csv1.ExternalAuthState_name) {
		t.Fatalf("the kinds' states changed: node pool %v, external auth %v; cover the new ones here", csv1.NodePoolState_name, csv1.ExternalAuthState_name)
	}
	for _, name := range states {
		for _, op := range ops {
			t.Run(name+"/"+op.name, func(t *testing.T) {
				doc := &armdoc.OperationDocument{Request: op.request, InternalRevision: op.revision, ExternalID: "x"}
				np := mapNodePool(doc, &csv1.NodePool{Status: &csv1.NodePoolStatus{
					State: csv1.NodePoolState(csv1.NodePoolState_value["NODE_POOL_STATE_"+name]), ObservedRevision: 5}})
				ea := mapExternalAuth(doc, &csv1.ExternalAuth{Status: &csv1.ExternalAuthStatus{
					State: csv1.ExternalAuthState(csv1.ExternalAuthState_value["EXTERNAL_AUTH_STATE_"+name]), ObservedRevision: 5}})
				if np.Status != ea.Status || np.Gone != ea.Gone || np.Unrecorded != ea.Unrecorded || np.Resend != ea.Resend || (np.Err == nil) != (ea.Err == nil) {
					t.Fatalf("node pool %+v, external auth %+v: want the same outcome", np, ea)
				}
				if wantResend := op.request == armdoc.OperationDelete && name != "UNINSTALLING"; np.Resend != wantResend {
					t.Fatalf("delete resent = %v in state %s, want %v (only a child not being deleted is sent its delete again)", np.Resend, name, wantResend)
				}
				if np.Err != nil && (np.Err.Code != ea.Err.Code || np.Err.Message == "" || ea.Err.Message == "") {
					t.Fatalf("node pool error %+v, external auth error %+v: want the same code, each with a message", np.Err, ea.Err)
				}
			})
		}
	}
}
