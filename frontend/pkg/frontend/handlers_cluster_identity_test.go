package frontend

import (
	"fmt"
	"strings"
	"testing"

	"github.com/openhcp/openhcp/frontend/pkg/api"
	"github.com/openhcp/openhcp/internal/armdoc"
)

// identityPatch is a PATCH body giving every control plane operator its own user-assigned
// identity, with the client IDs ARM fills in when it forwards the request (n varies them).
func identityPatch(n int, dataPlane bool) []byte {
	mi := "/subscriptions/" + testSub + "/resourceGroups/rg/providers/Microsoft.ManagedIdentity/userAssignedIdentities/"
	uais := map[string]any{}
	cp := map[string]any{}
	for i, op := range controlPlaneOperators {
		uais[mi+op] = map[string]any{"clientId": fmt.Sprintf("00000000-0000-4000-8000-%06d%06d", n, i), "principalId": fmt.Sprintf("10000000-0000-4000-8000-%012d", i)}
		cp[op] = mi + op
	}
	ua := map[string]any{"controlPlaneOperators": cp}
	if dataPlane {
		// Its own identity: a data plane operator's identity is not assigned to the cluster.
		ua["dataPlaneOperators"] = map[string]any{"disk-csi-driver": mi + "dp-disk-csi-driver"}
	}
	return mustJSON(map[string]any{
		"identity":   map[string]any{"type": "UserAssigned", "userAssignedIdentities": uais},
		"properties": map[string]any{"platform": map[string]any{"operatorsAuthentication": map[string]any{"userAssignedIdentities": ua}}},
	})
}

// TestClusterIdentityUpdate: identity and operator identity changes go through Cluster
// Service's UpdateCluster as workload identities, as a configuration update; a change that
// leaves an operator without a client ID is refused before anything is stored.
func TestClusterIdentityUpdate(t *testing.T) {
	e := newEnv(t)
	path := clusterPath("rg", "identities")
	created := e.put(path, minimalBody())
	e.finish(opIDFrom(t, created.header.Get("Azure-AsyncOperation")), armdoc.StateSucceeded, nil)

	lastUpdate := func() string {
		updateMu.Lock()
		defer updateMu.Unlock()
		if len(updateCalls) == 0 {
			return ""
		}
		return updateCalls[len(updateCalls)-1].GetOperationId()
	}

	t.Run("patch_with_all_client_ids_sends_the_workload_identities", func(t *testing.T) {
		resp := e.do("PATCH", path, identityPatch(1, false), nil)
		if resp.code != 202 || resp.header.Get("Azure-AsyncOperation") == "" {
			t.Fatalf("%d %s", resp.code, resp.body)
		}
		updateMu.Lock()
		u := updateCalls[len(updateCalls)-1].GetUpdate()
		updateMu.Unlock()
		wi := u.GetWorkloadIdentities()
		if wi.GetImageRegistry() != "00000000-0000-4000-8000-000001000000" || wi.GetNetwork() != "00000000-0000-4000-8000-000001000006" ||
			wi.GetNodePoolManagement() != "00000000-0000-4000-8000-000001000004" || u.GetVersionId() != "" || u.GetAutoscaling() != nil {
			t.Fatalf("UpdateCluster got %v", u)
		}
		rd, _ := e.resource(path)
		op, _ := e.operation(lastUpdate())
		if rd.ProvisioningState != armdoc.StateUpdating || op.Request != armdoc.OperationUpdate || op.InternalRevision == 0 {
			t.Fatalf("resource %s, operation %s at revision %d", rd.ProvisioningState, op.Request, op.InternalRevision)
		}
		e.finish(op.ID, armdoc.StateSucceeded, nil)
		got := e.do("GET", path, nil, nil)
		if !strings.Contains(string(got.body), "00000000-0000-4000-8000-000001000003") {
			t.Fatalf("GET does not show the new identities: %s", got.body)
		}
	})

	t.Run("a_data_plane_identity_change_goes_through_cluster_service_too", func(t *testing.T) {
		before := lastUpdate()
		resp := e.do("PATCH", path, identityPatch(1, true), nil)
		if resp.code != 202 || lastUpdate() == before {
			t.Fatalf("%d %s", resp.code, resp.body)
		}
		updateMu.Lock()
		u := updateCalls[len(updateCalls)-1].GetUpdate()
		updateMu.Unlock()
		if u.GetWorkloadIdentities().GetDisk() != "00000000-0000-4000-8000-000001000003" {
			t.Fatalf("UpdateCluster got %v", u)
		}
		e.finish(lastUpdate(), armdoc.StateSucceeded, nil)
		rd, _ := e.resource(path)
		if !strings.Contains(string(rd.Properties), `"dataPlaneOperators"`) || !strings.Contains(string(rd.Properties), `disk-csi-driver`) {
			t.Fatalf("stored properties lack the data plane identity: %s", rd.Properties)
		}
	})

	t.Run("an_operator_without_a_client_id_returns_400_and_changes_nothing", func(t *testing.T) {
		before := lastUpdate()
		// The ingress operator moves to an identity ARM gave no client ID for (its old one no
		// longer assigned).
		mi := "/subscriptions/" + testSub + "/resourceGroups/rg/providers/Microsoft.ManagedIdentity/userAssignedIdentities/"
		body := mustJSON(map[string]any{
			"identity": map[string]any{"type": "UserAssigned", "userAssignedIdentities": map[string]any{mi + "ingress-2": map[string]any{}, mi + "ingress": nil}},
			"properties": map[string]any{"platform": map[string]any{"operatorsAuthentication": map[string]any{"userAssignedIdentities": map[string]any{
				"controlPlaneOperators": map[string]any{"ingress": mi + "ingress-2"}}}}},
		})
		resp := e.do("PATCH", path, body, nil)
		code, target := resp.armError(t)
		if resp.code != 400 || code != "InvalidRequestContent" || target != "properties.platform.operatorsAuthentication.userAssignedIdentities.controlPlaneOperators" || lastUpdate() != before {
			t.Fatalf("%d %s", resp.code, resp.body)
		}
		rd, _ := e.resource(path)
		if rd.ProvisioningState != armdoc.StateSucceeded || strings.Contains(string(rd.Properties), "ingress-2") {
			t.Fatalf("resource changed: %s %s", rd.ProvisioningState, rd.Properties)
		}
	})
}

// TestEveryUpdatableFieldGoesThroughClusterService: no field a version lets a write update is
// refused as unchangeable, because each has a ClusterUpdate field (csUpdatable).
func TestEveryUpdatableFieldGoesThroughClusterService(t *testing.T) {
	if len(api.Versions()) < 3 {
		t.Fatalf("versions registered: %v", api.Versions())
	}
	for _, name := range api.Versions() {
		ver, _ := api.Lookup(name)
		for _, p := range ver.UpdatableFields() {
			if !updatableThroughCS(ver, p) {
				t.Errorf("%s: %s is updatable in the spec but has no ClusterUpdate field", name, p)
			}
		}
	}
}
