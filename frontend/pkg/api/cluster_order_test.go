package api_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/openhcp/openhcp/frontend/pkg/api"
	"github.com/openhcp/openhcp/internal/arm"
)

// TestClusterAnswersResourceIDsAfterTheGeneratedChecks: a cluster's resource IDs (subnetId,
// vnetIntegrationSubnetId, networkSecurityGroupId) are checked by fieldcheck.Cluster, after every
// generated check and in its own order (the DNS prefix, the managed resource group, then the
// resource IDs), so a body with several problems is answered in the order it always was. A
// resource ID check generated from the specification would run among the generated checks and
// come first (TestErrorBodiesAreUnchanged compares details sorted, so it cannot tell).
func TestClusterAnswersResourceIDsAfterTheGeneratedChecks(t *testing.T) {
	const (
		c      = "InvalidRequestContent "
		nsgID  = "/subscriptions/s/resourceGroups/r/providers/Microsoft.Network/networkSecurityGroups/n"
		badDNS = "properties.dns.baseDomainPrefix: Invalid value 'UPPER' for field 'properties.dns.baseDomainPrefix': at most 15 lowercase letters, digits and '-', starting with a letter."
	)
	for _, version := range api.Versions() {
		t.Run(version, func(t *testing.T) {
			var doc map[string]any
			if err := json.Unmarshal([]byte(clusterBodyFor(version)), &doc); err != nil {
				t.Fatal(err)
			}
			props := doc["properties"].(map[string]any)
			props["dns"] = map[string]any{"baseDomainPrefix": "UPPER"}
			platform := props["platform"].(map[string]any)
			platform["managedResourceGroup"] = "bad/name"
			platform["subnetId"] = nsgID
			platform["networkSecurityGroupId"] = "nope"
			_, vnet := platform["vnetIntegrationSubnetId"]
			if vnet {
				platform["vnetIntegrationSubnetId"] = "nope"
			}
			body, err := json.Marshal(doc)
			if err != nil {
				t.Fatal(err)
			}
			cv, ok := api.Lookup(version)
			if !ok {
				t.Fatalf("no version %s", version)
			}
			_, err = cv.DecodeCluster(body)
			ce, ok := arm.AsCloudError(err)
			if !ok {
				t.Fatalf("want a CloudError, got %v", err)
			}
			var got []string
			for _, d := range ce.Details {
				got = append(got, fmt.Sprintf("%s %s: %s", d.Code, d.Target, d.Message))
			}
			want := []string{
				c + badDNS,
				c + "properties.platform.managedResourceGroup: Invalid value 'bad/name' for field 'properties.platform.managedResourceGroup': not a valid resource group name.",
				c + "properties.platform.subnetId: Invalid value '" + nsgID + "' for field 'properties.platform.subnetId': must be a resource ID of type Microsoft.Network/virtualNetworks/subnets.",
			}
			if vnet {
				want = append(want, c+"properties.platform.vnetIntegrationSubnetId: Invalid value 'nope' for field 'properties.platform.vnetIntegrationSubnetId': not a resource ID.")
			}
			want = append(want, c+"properties.platform.networkSecurityGroupId: Invalid value 'nope' for field 'properties.platform.networkSecurityGroupId': not a resource ID.")
			if strings.Join(got, "\n") != strings.Join(want, "\n") {
				t.Fatalf("answers:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
			}
		})
	}
}
