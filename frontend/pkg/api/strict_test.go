package api_test

import (
	"strings"
	"testing"

	"github.com/openhcp/openhcp/frontend/pkg/api"
	"github.com/openhcp/openhcp/internal/arm"
)

const strictClusterBody = `{"location":"eastus","identity":{"type":"UserAssigned","userAssignedIdentities":{"/subscriptions/s/resourceGroups/r/providers/Microsoft.ManagedIdentity/userAssignedIdentities/i":{}}},"properties":{"version":{"id":"4.19"},"platform":{"subnetId":"/subscriptions/s/resourceGroups/r/providers/Microsoft.Network/virtualNetworks/v/subnets/a","networkSecurityGroupId":"/subscriptions/s/resourceGroups/r/providers/Microsoft.Network/networkSecurityGroups/n","operatorsAuthentication":{"userAssignedIdentities":{"controlPlaneOperators":{},"dataPlaneOperators":{},"serviceManagedIdentity":"/subscriptions/s/resourceGroups/r/providers/Microsoft.ManagedIdentity/userAssignedIdentities/i"}}}}}`

// strictCases are bodies ARM must refuse however lenient encoding/json would be: a property
// name in another case, and a key given twice, at the top and deeper down.
var strictCases = []struct {
	name, body, target, says string
}{
	{"wrong_case_top", `{"Location":"eastus"}`, "Location", "did you mean 'location'"},
	{"wrong_case_nested", `{"properties":{"version":{"ChAnnelGroup":""}}}`, "properties.version.ChAnnelGroup", "did you mean 'channelGroup'"},
	{"wrong_case_object", `{"Properties":{}}`, "Properties", "case-sensitive"},
	{"duplicate_top", `{"location":"eastus","location":"westus"}`, "location", "appears more than once"},
	{"duplicate_nested", `{"properties":{"version":{"id":"4.19","id":"4.20"}}}`, "properties.version.id", "appears more than once"},
	{"duplicate_map_key", `{"tags":{"a":"1","a":"2"}}`, "tags.a", "appears more than once"},
}

func requireTarget(t *testing.T, err error, target, says string) {
	t.Helper()
	ce, ok := err.(*arm.CloudError)
	if !ok || ce.StatusCode != 400 {
		t.Fatalf("got %v, want a 400", err)
	}
	found := ce.Target == target && strings.Contains(ce.Message, says)
	for _, d := range ce.Details {
		found = found || (d.Target == target && strings.Contains(d.Message, says))
	}
	if !found {
		t.Fatalf("no error with target %q saying %q: %+v", target, says, ce)
	}
}

func TestDecodeIsExact(t *testing.T) {
	for _, name := range api.Versions() {
		v, _ := api.Lookup(name)
		for _, tc := range strictCases {
			t.Run(name+"/cluster/"+tc.name, func(t *testing.T) {
				_, err := v.DecodeCluster([]byte(tc.body))
				requireTarget(t, err, tc.target, tc.says)
			})
			t.Run(name+"/nodepool/"+tc.name, func(t *testing.T) {
				_, err := npVersion(t, name).DecodeNodePool([]byte(tc.body), nil)
				requireTarget(t, err, tc.target, tc.says)
			})
		}
	}
}

func TestPatchIsExact(t *testing.T) {
	for _, name := range api.Versions() {
		v, _ := api.Lookup(name)
		body := strictClusterBody
		if name >= "2025-12-23-preview" { // these versions require the integration subnet
			body = strings.Replace(body, `"subnetId":`, `"vnetIntegrationSubnetId":"/subscriptions/s/resourceGroups/r/providers/Microsoft.Network/virtualNetworks/v/subnets/b","subnetId":`, 1)
		}
		stored, err := v.DecodeCluster([]byte(body))
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		for _, tc := range []struct{ name, body, target, says string }{
			{"wrong_case_tags", `{"Tags":{"a":"b"}}`, "Tags", "did you mean 'tags'"},
			{"wrong_case_below_allowed", `{"tags":{"a":"b"},"properties":{"Version":{"id":"4.20"}}}`, "properties.Version", "case-sensitive"},
			{"duplicate", `{"tags":{"a":"b"},"tags":{"c":"d"}}`, "tags", "appears more than once"},
		} {
			t.Run(name+"/"+tc.name, func(t *testing.T) {
				_, err := v.PatchCluster(stored, []byte(tc.body))
				requireTarget(t, err, tc.target, tc.says)
			})
		}
	}
}
