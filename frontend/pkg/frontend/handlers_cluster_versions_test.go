package frontend

import (
	"context"
	"strings"
	"testing"

	csv1 "github.com/openhcp/openhcp/cluster-service/api/v1"
	"github.com/openhcp/openhcp/internal/armdoc"
)

// newestBody is a valid cluster for 2026-06-30-preview and later, using the fields older
// versions do not have.
func newestBody() map[string]any {
	b := minimalBody()
	set(b, "properties.platform.vnetIntegrationSubnetId", "/subscriptions/"+testSub+"/resourceGroups/rg/providers/Microsoft.Network/virtualNetworks/vnet/subnets/integration")
	set(b, "properties.ingress", map[string]any{"type": "Private"})
	set(b, "properties.cryptoRestrictions", "FIPS")
	set(b, "properties.imageDigestMirrors", []any{map[string]any{"source": "quay.io/openshift", "mirrors": []any{"mirror.example.com/openshift"}}})
	set(b, "properties.etcd", map[string]any{"dataEncryption": map[string]any{
		"keyManagementMode": "CustomerManaged",
		"customerManaged": map[string]any{"encryptionType": "KMS", "kms": map[string]any{
			"vaultName": "vault", "visibility": "Private", "activeKey": map[string]any{"name": "key", "version": "v1"},
		}},
	}})
	return b
}

func withVersion(path, v string) string { return path + "?api-version=" + v }

func props(t *testing.T, r response) map[string]any {
	t.Helper()
	return r.json(t)["properties"].(map[string]any)
}

func TestClusterAcrossAPIVersions(t *testing.T) {
	e := newEnv(t)

	t.Run("put_through_older_version_keeps_what_a_newer_one_set", func(t *testing.T) {
		path := clusterPath("rg", "round-trip")
		created := e.do("PUT", withVersion(path, "2026-09-01-preview"), mustJSON(newestBody()), nil)
		if created.code != 201 {
			t.Fatalf("create: %d %s", created.code, created.body)
		}
		e.finish(opIDFrom(t, created.header.Get("Azure-AsyncOperation")), armdoc.StateSucceeded, nil)

		// A 2024-06-10-preview client reads the cluster and writes it back with a tag added.
		old := e.do("GET", withVersion(path, "2024-06-10-preview"), nil, nil)
		if _, ok := props(t, old)["ingress"]; ok {
			t.Fatalf("2024-06-10-preview shows a field it does not have: %s", old.body)
		}
		kms := props(t, old)["etcd"].(map[string]any)["dataEncryption"].(map[string]any)["customerManaged"].(map[string]any)["kms"].(map[string]any)
		if kms["activeKey"].(map[string]any)["vaultName"] != "vault" || kms["visibility"] != nil {
			t.Fatalf("2024-06-10-preview KMS shape: %v", kms)
		}
		body := old.json(t)
		body["tags"] = map[string]any{"owner": "old-client"}
		put := e.do("PUT", withVersion(path, "2024-06-10-preview"), mustJSON(body), nil)
		if put.code != 200 {
			t.Fatalf("PUT through 2024-06-10-preview: %d %s", put.code, put.body)
		}

		now := e.do("GET", withVersion(path, "2026-09-01-preview"), nil, nil)
		p := props(t, now)
		if p["ingress"].(map[string]any)["type"] != "Private" || p["cryptoRestrictions"] != "FIPS" ||
			p["platform"].(map[string]any)["vnetIntegrationSubnetId"] == nil || len(p["imageDigestMirrors"].([]any)) != 1 ||
			p["etcd"].(map[string]any)["dataEncryption"].(map[string]any)["customerManaged"].(map[string]any)["kms"].(map[string]any)["visibility"] != "Private" {
			t.Fatalf("a write through 2024-06-10-preview lost newer fields: %s", now.body)
		}
		if now.json(t)["tags"].(map[string]any)["owner"] != "old-client" {
			t.Fatalf("tags not written: %s", now.body)
		}
		// And 2025-12-23-preview, which lacks ingress and crypto restrictions, keeps them too.
		mid := e.do("GET", withVersion(path, "2025-12-23-preview"), nil, nil)
		mb := mid.json(t)
		mb["tags"] = map[string]any{"owner": "mid-client"}
		if r := e.do("PUT", withVersion(path, "2025-12-23-preview"), mustJSON(mb), nil); r.code != 200 {
			t.Fatalf("PUT through 2025-12-23-preview: %d %s", r.code, r.body)
		}
		if p := props(t, e.do("GET", withVersion(path, "2026-06-30-preview"), nil, nil)); p["cryptoRestrictions"] != "FIPS" || p["ingress"].(map[string]any)["type"] != "Private" {
			t.Fatalf("a write through 2025-12-23-preview lost newer fields: %v", p)
		}
	})

	t.Run("cluster_created_through_2024_can_be_tagged_through_newer_versions", func(t *testing.T) {
		// vnetIntegrationSubnetId and version.id are required from 2025-12-23-preview on; a
		// cluster created without them may keep them empty.
		path := clusterPath("rg", "legacy")
		b := minimalBody()
		set(b, "properties.version", nil)
		created := e.do("PUT", withVersion(path, "2024-06-10-preview"), mustJSON(b), nil)
		if created.code != 201 {
			t.Fatalf("create: %d %s", created.code, created.body)
		}
		e.finish(opIDFrom(t, created.header.Get("Azure-AsyncOperation")), armdoc.StateSucceeded, nil)
		for _, v := range []string{"2025-12-23-preview", "2026-09-01-preview"} {
			resp := e.do("PATCH", withVersion(path, v), []byte(`{"tags":{"v":"`+v+`"}}`), nil)
			if resp.code != 202 {
				t.Fatalf("PATCH through %s: %d %s", v, resp.code, resp.body)
			}
			got := e.do("GET", withVersion(path, v), nil, nil)
			if got.json(t)["tags"].(map[string]any)["v"] != v {
				t.Fatalf("tags after PATCH through %s: %s", v, got.body)
			}
			// A PUT of what GET shows works too.
			if r := e.do("PUT", withVersion(path, v), got.body, nil); r.code != 200 {
				t.Fatalf("PUT of GET through %s: %d %s", v, r.code, r.body)
			}
		}
		// Creating through a newer version does require them.
		resp := e.do("PUT", withVersion(clusterPath("rg", "new-without"), "2025-12-23-preview"), mustJSON(b), nil)
		if resp.code != 400 || !strings.Contains(string(resp.body), "properties.platform.vnetIntegrationSubnetId") ||
			!strings.Contains(string(resp.body), "properties.version") {
			t.Fatalf("create without fields required since 2025-12-23-preview: %d %s", resp.code, resp.body)
		}
	})

	t.Run("kms_cluster_created_through_2024_reads_schema_valid_through_newer_versions", func(t *testing.T) {
		// kms.visibility and vnetIntegrationSubnetId are required in responses from
		// 2025-12-23-preview on; 2024-06-10-preview has neither. Every answer is validated
		// against its schema by e.do; here the values themselves.
		path := clusterPath("rg-kms", "legacy-kms")
		b := set(minimalBody(), "properties.etcd", map[string]any{"dataEncryption": map[string]any{
			"keyManagementMode": "CustomerManaged",
			"customerManaged": map[string]any{"encryptionType": "KMS", "kms": map[string]any{
				"activeKey": map[string]any{"vaultName": "vault", "name": "key", "version": "0123456789abcdef0123456789abcdef"}}},
		}})
		created := e.do("PUT", withVersion(path, "2024-06-10-preview"), mustJSON(b), nil)
		if created.code != 201 {
			t.Fatalf("create: %d %s", created.code, created.body)
		}
		e.finish(opIDFrom(t, created.header.Get("Azure-AsyncOperation")), armdoc.StateSucceeded, nil)
		list := "/subscriptions/" + testSub + "/resourceGroups/rg-kms/providers/Microsoft.RedHatOpenShift/hcpOpenShiftClusters"
		for _, v := range []string{"2025-12-23-preview", "2026-06-30-preview", "2026-09-01-preview"} {
			got := e.do("GET", withVersion(path, v), nil, nil)
			listed := e.do("GET", withVersion(list, v), nil, nil)
			items, _ := listed.json(t)["value"].([]any)
			if got.code != 200 || listed.code != 200 || len(items) != 1 {
				t.Fatalf("%s: GET %d, list %d %s", v, got.code, listed.code, listed.body)
			}
			for what, body := range map[string]map[string]any{"GET": got.json(t), "list item": items[0].(map[string]any)} {
				p := body["properties"].(map[string]any)
				kms := p["etcd"].(map[string]any)["dataEncryption"].(map[string]any)["customerManaged"].(map[string]any)["kms"].(map[string]any)
				vnet, ok := p["platform"].(map[string]any)["vnetIntegrationSubnetId"]
				if kms["visibility"] != "Public" || kms["vaultName"] != "vault" || !ok || vnet != "" {
					t.Fatalf("%s %s: kms %v, vnetIntegrationSubnetId %v (present %v); want Public and \"\"", v, what, kms, vnet, ok)
				}
			}
		}
	})

	t.Run("platform_managed_etcd_key_is_not_shown_by_2026_versions", func(t *testing.T) {
		// 2026-06-30-preview knows only CustomerManaged: a platform-managed key has no
		// dataEncryption block there.
		path := clusterPath("rg", "platform-key")
		created := e.do("PUT", withVersion(path, "2024-06-10-preview"), mustJSON(minimalBody()), nil)
		if created.code != 201 {
			t.Fatalf("create: %d %s", created.code, created.body)
		}
		got := e.do("GET", withVersion(path, "2026-06-30-preview"), nil, nil)
		if _, ok := props(t, got)["etcd"].(map[string]any)["dataEncryption"]; ok {
			t.Fatalf("2026-06-30-preview shows a platform-managed key: %s", got.body)
		}
		bad := set(newestBody(), "properties.etcd.dataEncryption.keyManagementMode", "PlatformManaged")
		resp := e.do("PUT", withVersion(clusterPath("rg", "pm"), "2026-06-30-preview"), mustJSON(bad), nil)
		if code, target := resp.armError(t); resp.code != 400 || code != "InvalidRequestContent" || target != "properties.etcd.dataEncryption.keyManagementMode" {
			t.Fatalf("PlatformManaged in 2026-06-30-preview: %d %s", resp.code, resp.body)
		}
	})

	t.Run("fields_of_newer_versions_are_unknown_to_older_ones", func(t *testing.T) {
		resp := e.do("PUT", withVersion(clusterPath("rg", "too-new"), "2024-06-10-preview"), mustJSON(set(minimalBody(), "properties.ingress", map[string]any{"type": "Public"})), nil)
		if _, target := resp.armError(t); resp.code != 400 || target != "properties.ingress" {
			t.Fatalf("ingress in 2024-06-10-preview: %d %s", resp.code, resp.body)
		}
	})

	t.Run("several_errors_are_multiple_errors_occurred_with_external_targets", func(t *testing.T) {
		b := newestBody()
		set(b, "properties.ingress.type", "Sideways")
		set(b, "properties.cryptoRestrictions", "Weak")
		set(b, "properties.imageDigestMirrors", []any{map[string]any{"source": "quay.io", "mirrors": []any{}}})
		resp := e.do("PUT", withVersion(clusterPath("rg", "bad"), "2026-09-01-preview"), mustJSON(b), nil)
		code, _ := resp.armError(t)
		body := string(resp.body)
		if resp.code != 400 || code != "MultipleErrorsOccurred" {
			t.Fatalf("%d %s", resp.code, body)
		}
		for _, target := range []string{`"properties.ingress.type"`, `"properties.cryptoRestrictions"`, `"properties.imageDigestMirrors[0].mirrors"`} {
			if !strings.Contains(body, `"target":`+target) {
				t.Errorf("no detail with target %s: %s", target, body)
			}
		}
	})
}

func TestPatchCluster(t *testing.T) {
	e := newEnv(t)
	path := clusterPath("rg", "patched")
	created := e.put(path, set(minimalBody(), "tags", map[string]any{"keep": "1", "drop": "2"}))
	createOp := opIDFrom(t, created.header.Get("Azure-AsyncOperation"))

	t.Run("during_create_returns_409_naming_the_operation", func(t *testing.T) {
		resp := e.do("PATCH", path, []byte(`{"tags":{"a":"b"}}`), nil)
		if code, _ := resp.armError(t); resp.code != 409 || code != "Conflict" || !strings.Contains(string(resp.body), createOp) {
			t.Fatalf("%d %s", resp.code, resp.body)
		}
	})
	e.finish(createOp, armdoc.StateSucceeded, nil)

	t.Run("tags_merge_and_return_202_with_operation_headers", func(t *testing.T) {
		resp := e.do("PATCH", path, []byte(`{"tags":{"drop":null,"new":"3"}}`), nil)
		if resp.code != 202 || resp.header.Get("Location") == "" || resp.header.Get("Azure-AsyncOperation") == "" || resp.header.Get("Retry-After") == "" {
			t.Fatalf("%d %v %s", resp.code, resp.header, resp.body)
		}
		rd, _ := e.resource(path)
		if len(rd.Tags) != 2 || rd.Tags["keep"] != "1" || rd.Tags["new"] != "3" || rd.ActiveOperationID != "" {
			t.Fatalf("stored tags %v (active operation %q)", rd.Tags, rd.ActiveOperationID)
		}
		status := e.do("GET", strings.TrimPrefix(resp.header.Get("Azure-AsyncOperation"), e.http.URL), nil, nil)
		if status.code != 200 || status.json(t)["status"] != "Succeeded" {
			t.Fatalf("operation status %d %s", status.code, status.body)
		}
		result := e.do("GET", strings.TrimPrefix(resp.header.Get("Location"), e.http.URL), nil, nil)
		if result.code != 200 || result.json(t)["tags"].(map[string]any)["new"] != "3" {
			t.Fatalf("operation result %d %s", result.code, result.body)
		}
	})

	t.Run("configuration_change_returns_202_and_an_update_cluster_service_follows", func(t *testing.T) {
		resp := e.do("PATCH", path, []byte(`{"properties":{"nodeDrainTimeoutMinutes":30,"autoscaling":{"maxNodesTotal":40}}}`), nil)
		if resp.code != 202 || resp.header.Get("Azure-AsyncOperation") == "" {
			t.Fatalf("%d %s", resp.code, resp.body)
		}
		updateMu.Lock()
		last := updateCalls[len(updateCalls)-1]
		updateMu.Unlock()
		u := last.GetUpdate()
		if u.GetNodeDrainTimeoutMinutes() != 30 || u.NodeDrainTimeoutMinutes == nil || u.GetAutoscaling().GetMaxNodesTotal() != 40 ||
			u.GetApiAuthorizedCidrs() != nil || u.GetVersionId() != "" || u.GetImageDigestMirrors() != nil {
			t.Fatalf("UpdateCluster got %v", u)
		}
		op, _ := e.operation(last.GetOperationId())
		rd, _ := e.resource(path)
		// Cluster Service rolls it out: the backend ends the operation from the cluster's state
		// at or after the recorded revision.
		cl, _ := e.cs.GetCluster(context.Background(), &csv1.GetClusterRequest{Id: rd.InternalID})
		if op.Status != armdoc.StateAccepted || op.Request != armdoc.OperationUpdate || op.InternalRevision == 0 || op.InternalRevision != cl.GetSpecRevision() ||
			rd.ProvisioningState != armdoc.StateUpdating || rd.ActiveOperationID != op.ID {
			t.Fatalf("operation %s %s at revision %d (cluster %d), resource %s %q", op.Request, op.Status, op.InternalRevision, cl.GetRevision(), rd.ProvisioningState, rd.ActiveOperationID)
		}
		e.finish(op.ID, armdoc.StateSucceeded, nil)
	})

	t.Run("authorized_cidrs_change_by_put_and_a_bare_address_is_sent_as_a_32_block", func(t *testing.T) {
		body := e.do("GET", path, nil, nil).json(t)
		set(body, "properties.api.authorizedCidrs", []any{"192.0.2.0/24", "198.51.100.7"})
		resp := e.do("PUT", path, mustJSON(body), nil)
		if resp.code != 200 || resp.header.Get("Azure-AsyncOperation") == "" {
			t.Fatalf("%d %s", resp.code, resp.body)
		}
		updateMu.Lock()
		last := updateCalls[len(updateCalls)-1]
		updateMu.Unlock()
		if got := strings.Join(last.GetUpdate().GetApiAuthorizedCidrs().GetValues(), ","); got != "192.0.2.0/24,198.51.100.7/32" || last.GetUpdate().NodeDrainTimeoutMinutes != nil {
			t.Fatalf("UpdateCluster got %v", last.GetUpdate())
		}
		e.finish(last.GetOperationId(), armdoc.StateSucceeded, nil)
	})

	t.Run("field_outside_the_update_schema_returns_400_naming_it", func(t *testing.T) {
		resp := e.do("PATCH", path, []byte(`{"properties":{"network":{"podCidr":"10.0.0.0/8"}},"location":"westus"}`), nil)
		code, _ := resp.armError(t)
		if resp.code != 400 || code != "MultipleErrorsOccurred" || !strings.Contains(string(resp.body), `"target":"properties.network"`) ||
			!strings.Contains(string(resp.body), `"target":"location"`) {
			t.Fatalf("%d %s", resp.code, resp.body)
		}
	})

	t.Run("invalid_value_returns_400_with_external_target", func(t *testing.T) {
		resp := e.do("PATCH", path, []byte(`{"properties":{"nodeDrainTimeoutMinutes":99999}}`), nil)
		if _, target := resp.armError(t); resp.code != 400 || target != "properties.nodeDrainTimeoutMinutes" {
			t.Fatalf("%d %s", resp.code, resp.body)
		}
	})

	t.Run("if-match_mismatch_returns_412", func(t *testing.T) {
		resp := e.do("PATCH", path, []byte(`{"tags":{}}`), map[string]string{"If-Match": `"stale"`})
		if code, _ := resp.armError(t); resp.code != 412 || code != "PreconditionFailed" {
			t.Fatalf("%d %s", resp.code, resp.body)
		}
	})

	t.Run("missing_cluster_returns_404", func(t *testing.T) {
		resp := e.do("PATCH", clusterPath("rg", "absent"), []byte(`{"tags":{}}`), nil)
		if code, _ := resp.armError(t); resp.code != 404 || code != "ResourceNotFound" {
			t.Fatalf("%d %s", resp.code, resp.body)
		}
	})

	t.Run("mixed_case_path_keeps_stored_casing", func(t *testing.T) {
		resp := e.do("PATCH", strings.ToUpper(path), []byte(`{"tags":{"case":"upper"}}`), nil)
		if resp.code != 202 {
			t.Fatalf("%d %s", resp.code, resp.body)
		}
		if rd, _ := e.resource(path); rd.Tags["case"] != "upper" || rd.ResourceID != path {
			t.Fatalf("stored %+v", rd)
		}
	})
}

func TestClientProvisioningState(t *testing.T) {
	e := newEnv(t)
	path := clusterPath("rg", "state")

	t.Run("on_create_returns_400", func(t *testing.T) {
		resp := e.put(path, set(minimalBody(), "properties.provisioningState", "Succeeded"))
		if _, target := resp.armError(t); resp.code != 400 || target != "properties.provisioningState" {
			t.Fatalf("%d %s", resp.code, resp.body)
		}
		if rd, _ := e.resource(path); rd != nil {
			t.Fatal("refused create stored a resource")
		}
	})

	created := e.put(path, minimalBody())
	e.finish(opIDFrom(t, created.header.Get("Azure-AsyncOperation")), armdoc.StateSucceeded, nil)

	t.Run("same_as_stored_is_accepted", func(t *testing.T) {
		got := e.do("GET", path, nil, nil)
		if resp := e.do("PUT", path, got.body, nil); resp.code != 200 {
			t.Fatalf("PUT of GET: %d %s", resp.code, resp.body)
		}
	})

	t.Run("different_from_stored_returns_400", func(t *testing.T) {
		for _, m := range []string{"PUT", "PATCH"} {
			body := []byte(`{"properties":{"provisioningState":"Failed"}}`)
			if m == "PUT" {
				body = mustJSON(set(minimalBody(), "properties.provisioningState", "Failed"))
			}
			resp := e.do(m, path, body, nil)
			if _, target := resp.armError(t); resp.code != 400 || target != "properties.provisioningState" {
				t.Fatalf("%s: %d %s", m, resp.code, resp.body)
			}
		}
	})
	t.Run("wrong_case_is_named_by_the_decoder", func(t *testing.T) {
		for _, m := range []string{"PUT", "PATCH"} {
			body := []byte(`{"properties":{"ProvisioningState":"Failed"}}`)
			if m == "PUT" {
				body = mustJSON(set(minimalBody(), "properties.ProvisioningState", "Failed"))
			}
			resp := e.do(m, path, body, nil)
			if _, target := resp.armError(t); resp.code != 400 || target != "properties.ProvisioningState" || !strings.Contains(string(resp.body), "did you mean 'provisioningState'") {
				t.Fatalf("%s: %d %s", m, resp.code, resp.body)
			}
		}
	})
}
