package opkind

import (
	"testing"

	"github.com/openhcp/openhcp/internal/armdoc"
)

// TestOfResource: clusters are told from their children through internal/arm's parser, in any
// casing, and never by string position.
func TestOfResource(t *testing.T) {
	const c = "/subscriptions/00000000-0000-0000-0000-000000000001/resourceGroups/rg/providers/Microsoft.RedHatOpenShift/hcpOpenShiftClusters/c1"
	for _, tc := range []struct {
		name string
		id   string
		want Kind // "" for none
	}{
		{"cluster", c, Cluster},
		{"cluster_with_trailing_slash", c + "/", Cluster},
		{"cluster_in_other_casing", "/SUBSCRIPTIONS/00000000-0000-0000-0000-000000000001/RESOURCEGROUPS/rg/PROVIDERS/microsoft.redhatopenshift/HCPOPENSHIFTCLUSTERS/c1", Cluster},
		{"node_pool", c + "/nodePools/p1", NodePool},
		{"node_pool_in_other_casing", c + "/NODEPOOLS/p1", NodePool},
		{"external_auth", c + "/externalAuths/e1", ExternalAuth},
		{"external_auth_in_other_casing", c + "/EXTERNALAUTHS/Entra", ExternalAuth},
		{"child_type_without_a_name_has_no_kind", c + "/externalAuths", ""},
		{"other_provider_has_no_kind", "/subscriptions/00000000-0000-0000-0000-000000000001/resourceGroups/rg/providers/Microsoft.Other/hcpOpenShiftClusters/c1", ""},
		{"unregistered_child_has_no_kind", c + "/versions/v1", ""},
		{"grandchild_has_no_kind", c + "/nodePools/p1/extra/x", ""},
		{"not_an_id_has_no_kind", "not-an-id/providers/Microsoft.RedHatOpenShift/hcpOpenShiftClusters/c1", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, ok := OfResource(tc.id)
			if got := r.Kind; got != tc.want || ok != (tc.want != "") {
				t.Fatalf("OfResource(%q) = %q, %v; want %q", tc.id, got, ok, tc.want)
			}
		})
	}
}

func TestOf(t *testing.T) {
	const c = "/subscriptions/s/resourceGroups/rg/providers/Microsoft.RedHatOpenShift/hcpOpenShiftClusters/c1"
	for _, tc := range []struct {
		name string
		op   armdoc.OperationDocument
		want Kind
	}{
		{"cluster_update_is_a_cluster_operation", armdoc.OperationDocument{Request: armdoc.OperationUpdate, ExternalID: c}, Cluster},
		{"node_pool_delete", armdoc.OperationDocument{Request: armdoc.OperationDelete, ExternalID: c + "/nodePools/p"}, NodePool},
		{"action_on_a_cluster_is_the_action", armdoc.OperationDocument{Request: armdoc.OperationRequestCredential, ExternalID: c}, RequestCredential},
		{"revocation", armdoc.OperationDocument{Request: armdoc.OperationRevokeCredentials, ExternalID: c}, RevokeCredentials},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if r, ok := Of(&tc.op); !ok || r.Kind != tc.want {
				t.Fatalf("Of = %q, %v; want %q", r.Kind, ok, tc.want)
			}
		})
	}
}

// TestRegistrationsAreWellFormed: each kind is a resource (the cluster, or a child with its type)
// or an action (a request and a POST segment), with a unique name, request, type and segment.
func TestRegistrationsAreWellFormed(t *testing.T) {
	seen := map[string]bool{}
	once := func(what string) {
		if seen[what] {
			t.Errorf("registered twice: %s", what)
		}
		seen[what] = true
	}
	for _, r := range All() {
		once("kind " + string(r.Kind))
		if r.What == "" {
			t.Errorf("%s: no What", r.Kind)
		}
		if r.IsAction() {
			once("request " + string(r.Request))
			once("action " + r.Action)
			if r.Action == "" || r.ChildType != "" {
				t.Errorf("%s: an action needs a POST segment and no child type: %+v", r.Kind, r)
			}
			if !IsAction(r.Request) {
				t.Errorf("%s: IsAction(%s) = false", r.Kind, r.Request)
			}
			continue
		}
		if r.Action != "" {
			t.Errorf("%s: a resource kind has no POST segment: %+v", r.Kind, r)
		}
		once("child " + r.ChildType)
	}
	for _, req := range []armdoc.OperationRequest{armdoc.OperationCreate, armdoc.OperationUpdate, armdoc.OperationDelete} {
		if IsAction(req) {
			t.Errorf("IsAction(%s) = true", req)
		}
	}
}
