package api_test

import (
	"encoding/json"
	"net/http"
	"testing"

	"github.com/openhcp/openhcp/frontend/pkg/api"
	_ "github.com/openhcp/openhcp/frontend/pkg/api/v20240610preview"
	_ "github.com/openhcp/openhcp/frontend/pkg/api/v20251223preview"
	_ "github.com/openhcp/openhcp/frontend/pkg/api/v20260630preview"
	_ "github.com/openhcp/openhcp/frontend/pkg/api/v20260901preview"
	"github.com/openhcp/openhcp/internal/arm"
)

// FuzzDecodeClusterAllVersions feeds one body to every api-version's decoder and PATCH: a body
// is either accepted or refused with a 400 ARM error, never a panic; what a version accepts it
// renders in a form it accepts again, to the same model.
func FuzzDecodeClusterAllVersions(f *testing.F) {
	// Small seeds: the fuzzer minimises what it finds interesting, and the spec's examples
	// (about 3 KB each) make that slow; TestSpecExamplesClusters drives those.
	f.Add([]byte(`{"location":"eastus","properties":{"version":{"id":"4.19"},"platform":{}}}`))
	f.Add([]byte(`{"tags":{"a":"b"},"properties":{"nodeDrainTimeoutMinutes":5}}`))
	f.Add([]byte(`{"properties":{"imageDigestMirrors":[{"source":"a","mirrors":[]}],"etcd":{"dataEncryption":{}}}}`))
	f.Add([]byte(`{"location":"eastus","identity":{"type":"UserAssigned","userAssignedIdentities":{"/subscriptions/s/resourceGroups/r/providers/Microsoft.ManagedIdentity/userAssignedIdentities/i":{}}},"properties":{"version":{"id":"4.19"},"platform":{"subnetId":"/subscriptions/s/resourceGroups/r/providers/Microsoft.Network/virtualNetworks/v/subnets/a","vnetIntegrationSubnetId":"/subscriptions/s/resourceGroups/r/providers/Microsoft.Network/virtualNetworks/v/subnets/b","networkSecurityGroupId":"/subscriptions/s/resourceGroups/r/providers/Microsoft.Network/networkSecurityGroups/n","operatorsAuthentication":{"userAssignedIdentities":{"controlPlaneOperators":{},"dataPlaneOperators":{},"serviceManagedIdentity":"/subscriptions/s/resourceGroups/r/providers/Microsoft.ManagedIdentity/userAssignedIdentities/i"}}}}}`))
	f.Add([]byte(`{"properties":{"autoscaling":{"podPriorityThreshold":0,"maxNodesTotal":3}}}`))
	f.Add([]byte(`null`))
	f.Fuzz(func(t *testing.T, body []byte) {
		for _, name := range api.Versions() {
			v, _ := api.Lookup(name)
			c, err := v.DecodeCluster(body)
			if err != nil {
				requireBadRequest(t, name, "decode", body, err)
				continue
			}
			rendered, err := json.Marshal(v.RenderCluster(c))
			if err != nil {
				t.Fatalf("%s: render: %v", name, err)
			}
			again, err := v.DecodeClusterUpdate(rendered, c)
			if err != nil {
				t.Fatalf("%s: the rendered cluster is refused: %v\nbody %s\nrendered %s", name, err, body, rendered)
			}
			if a, b := model(t, c), model(t, again); a != b {
				t.Fatalf("%s: render and decode changed the model:\n%s\n%s", name, a, b)
			}
			// The body as a PATCH of the cluster it described.
			if _, err := v.PatchCluster(c, body); err != nil {
				requireBadRequest(t, name, "patch", body, err)
			}
		}
	})
}

func requireBadRequest(t *testing.T, version, what string, body []byte, err error) {
	t.Helper()
	ce, ok := arm.AsCloudError(err)
	if !ok || ce.StatusCode != http.StatusBadRequest || ce.Code == "" || ce.Message == "" {
		t.Fatalf("%s %s of %q: not a 400 ARM error: %v", version, what, body, err)
	}
}

func model(t *testing.T, c *api.Cluster) string {
	b, err := json.Marshal(struct {
		C    *api.Cluster
		Loc  string
		Tags map[string]string
	}{c, c.Location, c.Tags})
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
