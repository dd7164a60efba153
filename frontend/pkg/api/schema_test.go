package api_test

import (
	"encoding/json"
	"testing"

	"github.com/openhcp/openhcp/frontend/pkg/api"
	"github.com/openhcp/openhcp/internal/arm"
	"github.com/openhcp/openhcp/internal/armdoc"
	"github.com/openhcp/openhcp/internal/armspec"
)

// These check the other direction of the decoders' fuzzers: whatever one api-version accepts,
// every api-version renders as a body its specification's schema accepts (required properties
// included), the way a GET through that version would show it. TestRenderedExamplesAreSchemaValid
// does it for the spec's own CreateOrUpdate examples of every version; the fuzzers explore from
// small seeds (the 3 KB examples make the fuzzing engine's minimisation crawl).

const (
	clusterID      = "/subscriptions/00000000-0000-0000-0000-000000000001/resourceGroups/rg/providers/Microsoft.RedHatOpenShift/hcpOpenShiftClusters/c1"
	nodePoolID     = clusterID + "/nodePools/np1"
	externalAuthID = clusterID + "/externalAuths/ea1"
)

func TestRenderedExamplesAreSchemaValid(t *testing.T) {
	for _, tc := range []struct {
		prefix string
		check  func(t *testing.T, body []byte) int
	}{
		{"HcpOpenShiftClusters_CreateOrUpdate", checkRenderedCluster},
		{"NodePools_CreateOrUpdate", checkRenderedNodePool},
	} {
		for _, v := range armspec.Versions() {
			xs, err := armspec.Examples(v, tc.prefix)
			if err != nil {
				t.Fatal(err)
			}
			for _, x := range xs {
				t.Run(v+"/"+x.File, func(t *testing.T) {
					body := []byte(adaptExample(t, x.Parameters["resource"]))
					if n := tc.check(t, body); n == 0 {
						t.Fatalf("no api-version accepted the example: %s", body)
					}
				})
			}
		}
	}
}

// adaptExample changes what the decoders refuse in the generated examples, within the spec: of
// replicas and autoScaling, which the spec says cannot be used together, replicas goes. (The
// external auth examples need more, see the frontend's adaptExternalAuth; they are driven there,
// through every version's handler, whose answers are validated too.)
func adaptExample(t *testing.T, raw json.RawMessage) string {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatal(err)
	}
	props, _ := m["properties"].(map[string]any)
	if _, ok := props["autoScaling"]; ok {
		delete(props, "replicas")
		as := props["autoScaling"].(map[string]any)
		if lo, hi := as["min"].(float64), as["max"].(float64); hi < lo {
			as["min"], as["max"] = hi, lo
		}
	}
	b, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// requireSchemaValid renders through every api-version and validates against its definition.
func requireSchemaValid(t *testing.T, what, definition string, render func(version string) (any, bool)) {
	t.Helper()
	for _, name := range api.Versions() {
		rendered, ok := render(name)
		if !ok {
			continue
		}
		b, err := json.Marshal(rendered)
		if err != nil {
			t.Fatalf("%s: render %s: %v", name, what, err)
		}
		s, err := armspec.Load(name)
		if err != nil {
			t.Fatal(err)
		}
		if err := s.ValidateDefinition(definition, b); err != nil {
			t.Fatalf("%s as %s renders a body its schema refuses:\n%v\nrendered %s", what, name, err, b)
		}
	}
}

func mustID(t *testing.T, id string) *arm.ResourceID {
	t.Helper()
	r, err := arm.ParseResourceID(id)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func FuzzRenderedClusterIsSchemaValid(f *testing.F) {
	// A cluster every version accepts, one without vnetIntegrationSubnetId and one with a KMS
	// key (both only 2024-06-10-preview accepts, and every version must render).
	const identity = `"identity":{"type":"UserAssigned","userAssignedIdentities":{"/subscriptions/s/resourceGroups/r/providers/Microsoft.ManagedIdentity/userAssignedIdentities/i":{}}}`
	const platform = `"subnetId":"/subscriptions/s/resourceGroups/r/providers/Microsoft.Network/virtualNetworks/v/subnets/a","networkSecurityGroupId":"/subscriptions/s/resourceGroups/r/providers/Microsoft.Network/networkSecurityGroups/n","operatorsAuthentication":{"userAssignedIdentities":{"controlPlaneOperators":{},"dataPlaneOperators":{},"serviceManagedIdentity":"/subscriptions/s/resourceGroups/r/providers/Microsoft.ManagedIdentity/userAssignedIdentities/i"}}`
	const vnet = `"vnetIntegrationSubnetId":"/subscriptions/s/resourceGroups/r/providers/Microsoft.Network/virtualNetworks/v/subnets/b",`
	f.Add([]byte(`{"location":"eastus",` + identity + `,"properties":{"version":{"id":"4.19"},"platform":{` + vnet + platform + `}}}`))
	f.Add([]byte(`{"location":"eastus",` + identity + `,"properties":{"version":{"id":"4.19"},"platform":{` + platform + `}}}`))
	f.Add([]byte(`{"location":"eastus",` + identity + `,"properties":{"version":{"id":"4.19"},"platform":{` + platform + `},"etcd":{"dataEncryption":{"keyManagementMode":"CustomerManaged","customerManaged":{"encryptionType":"KMS","kms":{"activeKey":{"vaultName":"v","name":"k","version":"0123456789abcdef0123456789abcdef"}}}}}}}`))
	f.Fuzz(func(t *testing.T, body []byte) { checkRenderedCluster(t, body) })
}

func FuzzRenderedNodePoolIsSchemaValid(f *testing.F) {
	f.Add([]byte(`{"location":"eastus","properties":{"replicas":2,"platform":{"vmSize":"Standard_D8s_v3"}}}`))
	f.Add([]byte(`{"location":"eastus","properties":{"version":{"channelGroup":"candidate"},"replicas":2,"platform":{"vmSize":"Standard_D8s_v3"}}}`))
	f.Fuzz(func(t *testing.T, body []byte) { checkRenderedNodePool(t, body) })
}

func FuzzRenderedExternalAuthIsSchemaValid(f *testing.F) {
	f.Add([]byte(`{"properties":{"issuer":{"url":"https://issuer.example.com","audiences":["c1"]},"claim":{"mappings":{"username":{"claim":"email"}}}}}`))
	f.Fuzz(func(t *testing.T, body []byte) { checkRenderedExternalAuth(t, body) })
}

// checkRenderedCluster renders what each api-version accepts of body through every api-version and
// validates it; it returns how many versions accepted body.
func checkRenderedCluster(t *testing.T, body []byte) int {
	t.Helper()
	accepted := 0
	for _, from := range api.Versions() {
		v, _ := api.Lookup(from)
		c, err := v.DecodeCluster(body)
		if err != nil {
			continue // FuzzDecodeClusterAllVersions checks refusals
		}
		accepted++
		c.ID, c.ProvisioningState = mustID(t, clusterID), armdoc.StateSucceeded
		requireSchemaValid(t, "a cluster decoded by "+from, "HcpOpenShiftCluster", func(to string) (any, bool) {
			w, ok := api.Lookup(to)
			if !ok {
				return nil, false
			}
			return w.RenderCluster(c), true
		})
	}
	return accepted
}

// checkRenderedNodePool renders what each api-version accepts of body through every api-version and
// validates it; it returns how many versions accepted body.
func checkRenderedNodePool(t *testing.T, body []byte) int {
	t.Helper()
	accepted := 0
	for _, from := range api.Versions() {
		v, ok := api.LookupNodePool(from)
		if !ok {
			continue
		}
		np, err := v.DecodeNodePool(body, nil)
		if err != nil {
			continue // FuzzDecodeNodePoolAllVersions checks refusals
		}
		accepted++
		np.ID, np.ProvisioningState = mustID(t, nodePoolID), armdoc.StateSucceeded
		requireSchemaValid(t, "a node pool decoded by "+from, "NodePool", func(to string) (any, bool) {
			w, ok := api.LookupNodePool(to)
			if !ok {
				return nil, false
			}
			return w.RenderNodePool(np), true
		})
	}
	return accepted
}

// checkRenderedExternalAuth renders what each api-version accepts of body through every api-version and
// validates it; it returns how many versions accepted body.
func checkRenderedExternalAuth(t *testing.T, body []byte) int {
	t.Helper()
	accepted := 0
	for _, from := range api.Versions() {
		v, ok := api.LookupExternalAuth(from)
		if !ok {
			continue
		}
		ea, err := v.DecodeExternalAuth(body)
		if err != nil {
			continue // FuzzDecodeExternalAuthAllVersions checks refusals
		}
		accepted++
		ea.ID, ea.ProvisioningState = mustID(t, externalAuthID), armdoc.StateSucceeded
		requireSchemaValid(t, "an external auth decoded by "+from, "ExternalAuth", func(to string) (any, bool) {
			w, ok := api.LookupExternalAuth(to)
			if !ok {
				return nil, false
			}
			return w.RenderExternalAuth(ea), true
		})
	}
	return accepted
}
