package api_test

import (
	"strings"
	"testing"

	"github.com/openhcp/openhcp/frontend/pkg/api"
)

// strictCase is a body with one problem: the error must be a 400 whose target (or one
// detail's) is the key's JSON path and whose message contains want. These extend
// strict_test.go to node pools and external auths, PATCH bodies of each, array elements, map
// values and deeper levels, in every api-version.
type strictCase struct {
	name, body, target, want string
}

const (
	uami  = "/subscriptions/s/resourceGroups/r/providers/Microsoft.ManagedIdentity/userAssignedIdentities/i"
	dup   = "appears more than once"
	cased = "property names are case-sensitive; did you mean '"
	// An explicit "" names no channel group; the default is for an absent one.
	empty = "must not be empty: leave it out for the default channel group 'stable'"
	// PostgreSQL's jsonb and text refuse U+0000: a body holding one is refused before any write.
	nul = "contains a NUL character (\\u0000)"
)

// Valid bodies of every api-version, the stored resources the PATCH cases apply to.
const (
	nodePoolBody     = `{"location":"eastus","properties":{"version":{"id":"4.19.7","channelGroup":"stable"},"replicas":2,"labels":[{"key":"a","value":"b"}],"platform":{"vmSize":"Standard_D8s_v3"}}}`
	externalAuthBody = `{"properties":{"issuer":{"url":"https://issuer.example.com","audiences":["c1"]},"clients":[{"component":{"name":"console","authClientNamespace":"openshift-console"},"clientId":"c1","type":"Confidential"}],"claim":{"mappings":{"username":{"claim":"email","prefixPolicy":"None"}}}}}`
)

func TestStrictJSONClusters(t *testing.T) {
	for _, name := range api.Versions() {
		body := strictClusterBody
		if name != "2024-06-10-preview" { // required from 2025-12-23-preview on
			body = strings.Replace(body, `"networkSecurityGroupId"`, `"vnetIntegrationSubnetId":"/subscriptions/s/resourceGroups/r/providers/Microsoft.Network/virtualNetworks/v/subnets/b","networkSecurityGroupId"`, 1)
		}
		testStrictJSONCluster(t, name, body)
	}
}

func testStrictJSONCluster(t *testing.T, name, body string) {
	with := func(old, new string) string { return strings.Replace(body, old, new, 1) }
	put := []strictCase{
		{"duplicate_top-level_key", with(`"location":"eastus"`, `"location":"eastus","location":"westus"`), "location", dup},
		{"duplicate_nested_key", with(`"id":"4.19"`, `"id":"4.19","id":"4.20"`), "properties.version.id", dup},
		{"duplicate_map_key", with(`"location":"eastus"`, `"location":"eastus","tags":{"a":"1","a":"2"}`), "tags.a", dup},
		{"wrong-case_key_in_a_map_value", with(`userAssignedIdentities/i":{}`, `userAssignedIdentities/i":{"PrincipalId":"p"}`), "identity.userAssignedIdentities[" + uami + "].PrincipalId", cased + "principalId'"},
		{"wrong-case_top-level_key", with(`"location"`, `"Location"`), "Location", cased + "location'"},
		{"wrong-case_key_at_depth_2", with(`"version"`, `"Version"`), "properties.Version", cased + "version'"},
		{"wrong-case_key_at_depth_3", with(`"id":"4.19"`, `"id":"4.19","ChAnnelGroup":""`), "properties.version.ChAnnelGroup", cased + "channelGroup'"},
		{"wrong-case_key_at_depth_5", with(`"controlPlaneOperators"`, `"ControlPlaneOperators"`), "properties.platform.operatorsAuthentication.userAssignedIdentities.ControlPlaneOperators", cased + "controlPlaneOperators'"},
		{"explicit_empty_channelGroup", with(`"id":"4.19"`, `"id":"4.19","channelGroup":""`), "properties.version.channelGroup", empty},
		{"unknown_key_stays_refused", with(`"id":"4.19"`, `"id":"4.19","channel":"x"`), "properties.version.channel", "is not known in 'properties.version'"},
		{"NUL_in_a_tag_value", with(`"location":"eastus"`, `"location":"eastus","tags":{"a":"x\u0000"}`), "tags.a", "The value of 'tags.a' " + nul},
		{"NUL_in_a_tag_key", with(`"location":"eastus"`, `"location":"eastus","tags":{"a\u0000b":"x"}`), `tags.a\u0000b`, "The property name 'a\\u0000b' in 'tags' " + nul},
		{"NUL_in_a_nested_value", with(`"id":"4.19"`, `"id":"4.19\u0000"`), "properties.version.id", nul},
	}
	patch := []strictCase{
		{"duplicate_top-level_key", `{"tags":{},"tags":{"a":"b"}}`, "tags", dup},
		{"duplicate_nested_key", `{"properties":{"nodeDrainTimeoutMinutes":1,"nodeDrainTimeoutMinutes":2}}`, "properties.nodeDrainTimeoutMinutes", dup},
		{"wrong-case_top-level_key", `{"Tags":{"a":"b"}}`, "Tags", cased + "tags'"},
		{"wrong-case_nested_key", `{"properties":{"NodeDrainTimeoutMinutes":5}}`, "properties.NodeDrainTimeoutMinutes", cased + "nodeDrainTimeoutMinutes'"},
		{"wrong-case_key_with_null_value", `{"properties":{"NodeDrainTimeoutMinutes":null}}`, "properties.NodeDrainTimeoutMinutes", cased + "nodeDrainTimeoutMinutes'"},
		{"NUL_in_a_tag_value", `{"tags":{"a":"\u0000"}}`, "tags.a", nul},
		{"NUL_in_a_tag_key", `{"tags":{"\u0000":"b"}}`, `tags.\u0000`, nul},
	}
	v, _ := api.Lookup(name)
	stored, err := v.DecodeCluster([]byte(body))
	if err != nil {
		t.Fatalf("%s: the base cluster is refused: %v", name, err)
	}
	runStrict(t, name, put, patch,
		func(b []byte) error { _, err := v.DecodeCluster(b); return err },
		func(b []byte) error { _, err := v.PatchCluster(stored, b); return err })
}

func TestStrictJSONNodePools(t *testing.T) {
	put := []strictCase{
		{"duplicate_top-level_key", `{"location":"eastus","properties":{"replicas":1,"platform":{"vmSize":"x"}},"properties":{"replicas":2,"platform":{"vmSize":"x"}}}`, "properties", dup},
		{"duplicate_nested_key", `{"location":"eastus","properties":{"replicas":1,"platform":{"vmSize":"x","vmSize":"y"}}}`, "properties.platform.vmSize", dup},
		{"duplicate_key_in_an_array_element", `{"location":"eastus","properties":{"labels":[{"key":"a","key":"b","value":"c"}],"platform":{"vmSize":"x"}}}`, "properties.labels[0].key", dup},
		{"wrong-case_top-level_key", `{"loCAtion":"eastus","properties":{"platform":{"vmSize":"x"}}}`, "loCAtion", cased + "location'"},
		{"wrong-case_key_at_depth_3", `{"location":"eastus","properties":{"version":{"ChAnnelGroup":""},"platform":{"vmSize":"x"}}}`, "properties.version.ChAnnelGroup", cased + "channelGroup'"},
		{"explicit_empty_channelGroup", `{"location":"eastus","properties":{"version":{"channelGroup":""},"platform":{"vmSize":"x"}}}`, "properties.version.channelGroup", empty},
		{"wrong-case_key_in_an_array_element", `{"location":"eastus","properties":{"taints":[{"key":"k","Effect":"NoSchedule"}],"platform":{"vmSize":"x"}}}`, "properties.taints[0].Effect", cased + "effect'"},
		{"wrong-case_key_at_depth_4", `{"location":"eastus","properties":{"platform":{"vmSize":"x","osDisk":{"SizeGiB":128}}}}`, "properties.platform.osDisk.SizeGiB", cased + "sizeGiB'"},
		{"NUL_in_a_label_key", `{"location":"eastus","properties":{"labels":[{"key":"a\u0000b","value":"c"}],"platform":{"vmSize":"x"}}}`, "properties.labels[0].key", nul},
	}
	patch := []strictCase{
		{"duplicate_nested_key", `{"properties":{"replicas":1,"replicas":2}}`, "properties.replicas", dup},
		{"duplicate_key_in_an_array_element", `{"properties":{"labels":[{"key":"a","value":"b","value":"c"}]}}`, "properties.labels[0].value", dup},
		{"wrong-case_top-level_key", `{"TAGS":{"a":"b"}}`, "TAGS", cased + "tags'"},
		{"wrong-case_key_at_depth_3", `{"properties":{"version":{"ChAnnelGroup":""}}}`, "properties.version.ChAnnelGroup", cased + "channelGroup'"},
		{"explicit_empty_channelGroup", `{"properties":{"version":{"channelGroup":""}}}`, "properties.version.channelGroup", empty},
		{"wrong-case_key_with_null_value", `{"properties":{"AutoScaling":null}}`, "properties.AutoScaling", cased + "autoScaling'"},
		{"NUL_in_a_label_value", `{"properties":{"labels":[{"key":"a","value":"\u0000"}]}}`, "properties.labels[0].value", nul},
		{"NUL_in_a_taint_key", `{"properties":{"taints":[{"key":"k\u0000","value":"v","effect":"NoSchedule"}]}}`, "properties.taints[0].key", nul},
		{"NUL_in_a_tag_value", `{"tags":{"a":"\u0000"}}`, "tags.a", nul},
	}
	for _, name := range api.Versions() {
		v, ok := api.LookupNodePool(name)
		if !ok {
			continue
		}
		stored, err := v.DecodeNodePool([]byte(nodePoolBody), nil)
		if err != nil {
			t.Fatalf("%s: the base node pool is refused: %v", name, err)
		}
		runStrict(t, name, put, patch,
			func(b []byte) error { _, err := v.DecodeNodePool(b, nil); return err },
			func(b []byte) error { _, err := api.PatchNodePool(v, stored, b); return err })
	}
}

func TestStrictJSONExternalAuths(t *testing.T) {
	put := []strictCase{
		{"duplicate_top-level_key", `{"properties":{},` + externalAuthBody[1:], "properties", dup},
		{"duplicate_nested_key", strings.Replace(externalAuthBody, `"url":`, `"url":"https://a.example.com","url":`, 1), "properties.issuer.url", dup},
		{"wrong-case_key_at_depth_2", strings.Replace(externalAuthBody, `"issuer"`, `"Issuer"`, 1), "properties.Issuer", cased + "issuer'"},
		{"wrong-case_key_at_depth_5", strings.Replace(externalAuthBody, `"prefixPolicy"`, `"PrefixPolicy"`, 1), "properties.claim.mappings.username.PrefixPolicy", cased + "prefixPolicy'"},
		{"wrong-case_key_in_an_array_element", strings.Replace(externalAuthBody, `"clientId"`, `"clientID"`, 1), "properties.clients[0].clientID", cased + "clientId'"},
		{"NUL_in_a_client_id", strings.Replace(externalAuthBody, `"clientId":"c1"`, `"clientId":"c\u0000"`, 1), "properties.clients[0].clientId", nul},
	}
	patch := []strictCase{
		{"duplicate_nested_key", `{"properties":{"issuer":{"url":"https://a.example.com","url":"https://b.example.com"}}}`, "properties.issuer.url", dup},
		{"wrong-case_nested_key", `{"properties":{"issuer":{"URL":"https://a.example.com"}}}`, "properties.issuer.URL", cased + "url'"},
		{"wrong-case_key_with_null_value", `{"properties":{"Claim":null}}`, "properties.Claim", cased + "claim'"},
		{"wrong-case_key_with_null_value_below_an_update_path", `{"properties":{"issuer":{"URL":null}}}`, "properties.issuer.URL", cased + "url'"},
		{"NUL_in_the_username_prefix", `{"properties":{"claim":{"mappings":{"username":{"claim":"email","prefixPolicy":"Prefix","prefix":"p\u0000"}}}}}`, "properties.claim.mappings.username.prefix", nul},
		{"NUL_in_an_audience", `{"properties":{"issuer":{"audiences":["c1","\u0000"]}}}`, "properties.issuer.audiences[1]", nul},
		{"NUL_in_a_rule's_claim", `{"properties":{"claim":{"validationRules":[{"type":"RequiredClaim","requiredClaim":{"claim":"\u0000","requiredValue":"v"}}]}}}`, "properties.claim.validationRules[0].requiredClaim.claim", nul},
	}
	for _, name := range api.Versions() {
		v, ok := api.LookupExternalAuth(name)
		if !ok {
			continue
		}
		stored, err := v.DecodeExternalAuth([]byte(externalAuthBody))
		if err != nil {
			t.Fatalf("%s: the base external auth is refused: %v", name, err)
		}
		runStrict(t, name, put, patch,
			func(b []byte) error { _, err := v.DecodeExternalAuth(b); return err },
			func(b []byte) error { _, err := api.PatchExternalAuth(v, stored, b); return err })
	}
}

// runStrict runs one api-version's PUT cases through decode and its PATCH cases through apply.
func runStrict(t *testing.T, name string, put, patch []strictCase, decode, apply func([]byte) error) {
	for _, c := range put {
		t.Run(name+"/PUT/"+c.name, func(t *testing.T) { requireTarget(t, decode([]byte(c.body)), c.target, c.want) })
	}
	for _, c := range patch {
		t.Run(name+"/PATCH/"+c.name, func(t *testing.T) { requireTarget(t, apply([]byte(c.body)), c.target, c.want) })
	}
}
