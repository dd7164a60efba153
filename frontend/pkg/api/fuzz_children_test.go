package api_test

import (
	"encoding/json"
	"testing"

	"github.com/openhcp/openhcp/frontend/pkg/api"
)

// FuzzDecodeNodePoolAllVersions feeds one body to every api-version's node pool decoder, as a
// create and as a replace of what it decoded: a body is accepted or refused with a 400 ARM error,
// never a panic, and what a version accepts it renders in a form it accepts again, to the same
// model.
func FuzzDecodeNodePoolAllVersions(f *testing.F) {
	f.Add([]byte(`{"location":"eastus","properties":{"version":{"id":"4.19"},"replicas":2,"platform":{"vmSize":"Standard_D8s_v3"}}}`))
	f.Add([]byte(`{"location":"eastus","properties":{"version":{"id":"4.19.7","channelGroup":"stable"},"autoScaling":{"min":1,"max":3},"labels":[{"key":"a","value":"b"}],"taints":[{"key":"k","value":"v","effect":"NoSchedule"}],"platform":{"vmSize":"x","osDisk":{"sizeGiB":128,"diskStorageAccountType":"Premium_LRS"},"availabilityZone":"1"}}}`))
	f.Add([]byte(`{"properties":{"replicas":-1,"platform":{}}}`))
	f.Add([]byte(`null`))
	f.Fuzz(func(t *testing.T, body []byte) {
		for _, name := range api.Versions() {
			v, ok := api.LookupNodePool(name)
			if !ok {
				continue
			}
			np, err := v.DecodeNodePool(body, nil)
			if err != nil {
				requireBadRequest(t, name, "decode node pool", body, err)
				continue
			}
			rendered, err := json.Marshal(v.RenderNodePool(np))
			if err != nil {
				t.Fatalf("%s: render node pool: %v", name, err)
			}
			again, err := v.DecodeNodePool(rendered, np)
			if err != nil {
				t.Fatalf("%s: the rendered node pool is refused: %v\nbody %s\nrendered %s", name, err, body, rendered)
			}
			if a, b := nodePoolModel(t, np), nodePoolModel(t, again); a != b {
				t.Fatalf("%s: render and decode changed the node pool:\n%s\n%s", name, a, b)
			}
		}
	})
}

// FuzzDecodeExternalAuthAllVersions is the same for external auths.
func FuzzDecodeExternalAuthAllVersions(f *testing.F) {
	f.Add([]byte(`{"properties":{"issuer":{"url":"https://issuer.example.com","audiences":["c1"]},"clients":[{"component":{"name":"console","authClientNamespace":"openshift-console"},"clientId":"c1","type":"Confidential"}],"claim":{"mappings":{"username":{"claim":"email","prefixPolicy":"None"}}}}}`))
	f.Add([]byte(`{"properties":{"issuer":{"url":"http://x","audiences":[]},"claim":{}}}`))
	f.Add([]byte(`{"properties":{"issuer":{"audiences":"x"}}}`))
	f.Add([]byte(`null`))
	f.Fuzz(func(t *testing.T, body []byte) {
		for _, name := range api.Versions() {
			v, ok := api.LookupExternalAuth(name)
			if !ok {
				continue
			}
			ea, err := v.DecodeExternalAuth(body)
			if err != nil {
				requireBadRequest(t, name, "decode external auth", body, err)
				continue
			}
			rendered, err := json.Marshal(v.RenderExternalAuth(ea))
			if err != nil {
				t.Fatalf("%s: render external auth: %v", name, err)
			}
			again, err := v.DecodeExternalAuth(rendered)
			if err != nil {
				t.Fatalf("%s: the rendered external auth is refused: %v\nbody %s\nrendered %s", name, err, body, rendered)
			}
			if a, b := jsonOf(t, ea), jsonOf(t, again); a != b {
				t.Fatalf("%s: render and decode changed the external auth:\n%s\n%s", name, a, b)
			}
		}
	})
}

// nodePoolModel is what a node pool round trip must keep: its body and the top-level fields the
// JSON form leaves out.
func nodePoolModel(t *testing.T, np *api.NodePool) string {
	return jsonOf(t, struct {
		NP   *api.NodePool
		Loc  string
		Tags map[string]string
	}{np, np.Location, np.Tags})
}

func jsonOf(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
