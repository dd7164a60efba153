package frontend

import (
	"fmt"
	"strings"
	"testing"
)

func TestPreflight(t *testing.T) {
	e := newEnv(t)
	path := "/subscriptions/" + testSub + "/resourceGroups/rg/providers/Microsoft.RedHatOpenShift/deployments/dep-1/preflight?api-version=2020-06-01"
	cluster := func(mutate ...func(map[string]any)) map[string]any {
		b := minimalBody()
		b["type"] = "Microsoft.RedHatOpenShift/hcpOpenShiftClusters"
		b["name"] = "c1"
		b["apiVersion"] = testVersion
		b["dependsOn"] = []string{"[resourceId('Microsoft.Network/virtualNetworks', 'vnet')]"}
		for _, m := range mutate {
			m(b)
		}
		return b
	}
	for _, tc := range []struct {
		name      string
		body      []byte
		status    string
		code      string
		target    string
		inMessage string
	}{
		{"valid_cluster_succeeds", mustJSON(map[string]any{"resources": []any{cluster()}}), "Succeeded", "", "", ""},
		{"no_resources_succeeds", mustJSON(map[string]any{"resources": []any{}}), "Succeeded", "", "", ""},
		{"other_types_are_not_checked", mustJSON(map[string]any{"resources": []any{
			map[string]any{"type": "Microsoft.Network/virtualNetworks", "name": "vnet", "apiVersion": "2023-01-01", "properties": map[string]any{"x": 1}}}}), "Succeeded", "", "", ""},
		{"invalid_field_fails_naming_it_and_the_resource", mustJSON(map[string]any{"resources": []any{cluster(func(b map[string]any) {
			set(b, "properties.network.podCidr", "10.128.0.0/33")
		})}}), "Failed", "InvalidRequestContent", "properties.network.podCidr", "Resource 'c1'"},
		// Cluster Service's network rules, as the PUT would have it refuse them.
		{"host_prefix_out_of_range_fails_naming_it", mustJSON(map[string]any{"resources": []any{cluster(func(b map[string]any) {
			set(b, "properties.network.hostPrefix", 99)
		})}}), "Failed", "InvalidRequestContent", "properties.network.hostPrefix", "Resource 'c1'"},
		{"overlapping_default_fails_naming_it", mustJSON(map[string]any{"resources": []any{cluster(func(b map[string]any) {
			set(b, "properties.network.machineCidr", "10.128.0.0/16") // inside the default pod network
		})}}), "Failed", "InvalidRequestContent", "properties.network.machineCidr", "Overlaps the pod network"},
		{"vnet_integration_subnet_is_the_cluster_subnet_fails_naming_it", mustJSON(map[string]any{"resources": []any{cluster(func(b map[string]any) {
			b["apiVersion"] = "2026-09-01-preview"
			set(b, "properties.platform.vnetIntegrationSubnetId", strings.ToUpper(b["properties"].(map[string]any)["platform"].(map[string]any)["subnetId"].(string)))
		})}}), "Failed", "InvalidRequestContent", "properties.platform.vnetIntegrationSubnetId", "not the cluster's subnet"},
		{"authorized_cidr_in_ipv6_form_fails_naming_it", mustJSON(map[string]any{"resources": []any{cluster(func(b map[string]any) {
			set(b, "properties.api.authorizedCidrs", []string{"::ffff:192.0.2.0/120"})
		})}}), "Failed", "InvalidRequestContent", "properties.api.authorizedCidrs[0]", "IPv4 CIDR block"},
		// The operators' names, checked against the role set of the version (4.19) as for a create.
		{"operator_the_version_does_not_run_fails_naming_it", mustJSON(map[string]any{"resources": []any{cluster(func(b map[string]any) {
			set(b, "properties.platform.operatorsAuthentication.userAssignedIdentities.dataPlaneOperators", map[string]any{"no-such-operator": "/subscriptions/" + testSub + "/resourceGroups/rg/providers/Microsoft.ManagedIdentity/userAssignedIdentities/dp"})
		})}}), "Failed", "InvalidRequestContent", "properties.platform.operatorsAuthentication.userAssignedIdentities.dataPlaneOperators[no-such-operator]", "OpenShift 4.19 has no data plane operator"},
		{"unknown_api_version_fails", mustJSON(map[string]any{"resources": []any{cluster(func(b map[string]any) { b["apiVersion"] = "2019-01-01" })}}),
			"Failed", "InvalidApiVersionParameter", "resources[0].apiVersion", "2019-01-01"},
		{"wrong_location_fails", mustJSON(map[string]any{"resources": []any{cluster(func(b map[string]any) { b["location"] = "westeurope" })}}),
			"Failed", "InvalidRequestContent", "location", "westeurope"},
		{"two_bad_resources_give_multiple_errors", mustJSON(map[string]any{"resources": []any{
			cluster(func(b map[string]any) { b["location"] = "westeurope" }),
			cluster(func(b map[string]any) { b["name"] = "c2"; set(b, "properties.network.foo", 1) })}}),
			"Failed", "MultipleErrorsOccurred", "", ""},
		{"unevaluated_expression_is_left_to_the_put", mustJSON(map[string]any{"resources": []any{cluster(func(b map[string]any) {
			set(b, "properties.network.hostPrefix", "[parameters('hostPrefix')]")
		})}}), "Succeeded", "", "", ""},
		{"duplicate_key_fails_naming_it_and_the_resource", []byte(strings.Replace(string(mustJSON(map[string]any{"resources": []any{cluster()}})), `"name":"c1"`, `"name":"c1","name":"c1"`, 1)),
			"Failed", "InvalidRequestContent", "name", "Resource 'c1'"},
		{"wrong-case_key_fails_naming_it", []byte(strings.Replace(string(mustJSON(map[string]any{"resources": []any{cluster()}})), `"properties"`, `"Properties"`, 1)),
			"Failed", "InvalidRequestContent", "Properties", "did you mean 'properties'"},
		{"not_json_fails_with_200", []byte("{"), "Failed", "InvalidRequestContent", "", "not valid JSON"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp := e.do("POST", path, tc.body, nil)
			if resp.code != 200 {
				t.Fatalf("status %d (preflight always answers 200): %s", resp.code, resp.body)
			}
			body := resp.json(t)
			if body["status"] != tc.status {
				t.Fatalf("status %v, want %s: %s", body["status"], tc.status, resp.body)
			}
			if tc.status == "Succeeded" {
				if _, ok := body["error"]; ok {
					t.Fatalf("error on success: %s", resp.body)
				}
				return
			}
			errBody, _ := body["error"].(map[string]any)
			if errBody["code"] != tc.code {
				t.Fatalf("code %v, want %s: %s", errBody["code"], tc.code, resp.body)
			}
			if tc.target != "" && errBody["target"] != tc.target {
				t.Fatalf("target %v, want %s: %s", errBody["target"], tc.target, resp.body)
			}
			if msg, _ := errBody["message"].(string); !strings.Contains(msg, tc.inMessage) {
				t.Fatalf("message %q does not contain %q", msg, tc.inMessage)
			}
			if tc.code == "MultipleErrorsOccurred" {
				details, _ := errBody["details"].([]any)
				if len(details) != 2 {
					t.Fatalf("want 2 details: %s", resp.body)
				}
				second := details[1].(map[string]any)
				if second["target"] != "properties.network.foo" || !strings.Contains(second["message"].(string), "Resource 'c2'") {
					t.Fatalf("second detail %v", second)
				}
			}
		})
	}
}

// TestPreflightAnswerIsBoundedByWhatItRefuses: preflight names each resource in each problem's
// message, and a resource's name, type, api-version and location are the caller's: an answer
// repeating a 1 MiB name in each of fifty problems was fifty times the request. Each message and
// target is cut as any ARM error is (arm.MaxErrorTextLen).
func TestPreflightAnswerIsBoundedByWhatItRefuses(t *testing.T) {
	e := newEnv(t)
	path := "/subscriptions/" + testSub + "/resourceGroups/rg/providers/Microsoft.RedHatOpenShift/deployments/dep-1/preflight?api-version=2020-06-01"
	huge := strings.Repeat("n", 1<<20)
	for _, tc := range []struct {
		name   string
		mutate func(b map[string]any)
	}{
		{"name", func(b map[string]any) {
			b["name"] = huge
			tags := map[string]any{}
			for i := range 50 {
				tags[fmt.Sprintf("a/%d", i)] = "v"
			}
			b["tags"] = tags
		}},
		{"api_version", func(b map[string]any) { b["apiVersion"] = huge }},
		{"location", func(b map[string]any) { b["location"] = huge }},
	} {
		b := minimalBody()
		b["type"] = "Microsoft.RedHatOpenShift/hcpOpenShiftClusters"
		b["name"] = "c1"
		b["apiVersion"] = testVersion
		tc.mutate(b)
		body := mustJSON(map[string]any{"resources": []any{b}})
		resp := e.do("POST", path, body, nil)
		if resp.code != 200 || !strings.Contains(string(resp.body), "Failed") {
			t.Fatalf("%s: %d %.300s, want 200 and a failed preflight", tc.name, resp.code, resp.body)
		}
		if len(resp.body) > len(body) {
			t.Errorf("%s: the answer is %d bytes, the request %d", tc.name, len(resp.body), len(body))
		}
	}
}
