package frontend

import (
	"strings"
	"testing"
)

// FuzzPutClusterBody sends arbitrary bodies through the whole handler (middlewares, decoder,
// validation, store, fake Cluster Service) in any of the served api-versions. Whatever comes in,
// every answer keeps checkARMAnswer's promises (schema, never a 5xx, an ARM error body whose
// field errors carry a target), and a body that creates the cluster round-trips through GET
// (checkRoundTrip), whose answer is never a 5xx either.
func FuzzPutClusterBody(f *testing.F) {
	f.Add(mustJSON(minimalBody()), uint8(0))
	f.Add(mustJSON(set(minimalBody(), "tags", map[string]any{"team": "a", "cost": "b"})), uint8(0))
	f.Add(mustJSON(set(minimalBody(), "properties.network", map[string]any{"hostPrefix": 24, "podCidr": "10.132.0.0/14"})), uint8(0))
	f.Add([]byte(`{"location":"eastus","properties":{"platform":{}}}`), uint8(1))
	f.Add([]byte(`{"location":"eastus","tags":{"a":1}}`), uint8(2))
	f.Add([]byte(`null`), uint8(3))
	f.Add([]byte(`{"properties":{"network":{"hostPrefix":1e99}}}`), uint8(0))
	e := newEnv(f)
	f.Fuzz(func(t *testing.T, body []byte, v uint8) {
		ver := testVersion
		if v != 0 {
			ver = specVersions[int(v)%len(specVersions)]
		}
		path := clusterPath("rg", "fuzz")
		target := path + "?api-version=" + ver
		resp := serve(e, "PUT", target, body)
		checkARMAnswer(t, "PUT", target, body, resp)
		if resp.code == 201 {
			checkRoundTrip(t, e, path, ver, body)
			e.forget(t, path)
		} else {
			get := serve(e, "GET", target, nil)
			checkARMAnswer(t, "GET", target, nil, get)
		}
	})
}

// forget removes a cluster that a fuzz input created, so the next input creates again instead
// of meeting the running operation.
func (e *env) forget(t *testing.T, path string) {
	t.Helper()
	serve(e, "DELETE", path+"?api-version="+testVersion, nil)
	e.store.Purge(t.Context())
	if d, err := e.store.Get(t.Context(), strings.ToLower(testSub), strings.ToLower(path)); err == nil {
		e.store.Delete(t.Context(), d.PartitionKey, d.ID, d.ETag)
	}
}
