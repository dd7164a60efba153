package frontend

import (
	"testing"

	"github.com/openhcp/openhcp/internal/armdoc"
)

// FuzzPatchClusterBody sends arbitrary PATCH bodies, through any of the four api-versions, to
// one existing cluster through the whole handler: every answer keeps checkARMAnswer's promises,
// and the cluster is still answered by GET, never with a 5xx.
func FuzzPatchClusterBody(f *testing.F) {
	f.Add([]byte(`{"tags":{"a":"b"}}`), uint8(0))
	f.Add([]byte(`{"tags":null,"properties":{"nodeDrainTimeoutMinutes":3}}`), uint8(1))
	f.Add([]byte(`{"properties":{"etcd":{"dataEncryption":{"customerManaged":{"kms":{"activeKey":{"version":"2"}}}}}}}`), uint8(2))
	f.Add([]byte(`{"identity":{"userAssignedIdentities":{"x":null}},"properties":{"provisioningState":"Failed"}}`), uint8(3))
	f.Add([]byte(`[]`), uint8(0))
	e := newEnv(f)
	path := succeededCluster(f, e, "fuzz-patch")
	f.Fuzz(func(t *testing.T, body []byte, v uint8) {
		patchClusterBody(t, e, path, body, specVersions[int(v)%len(specVersions)])
	})
}

// succeededCluster creates the cluster name, as the backend leaves it when the create has
// succeeded, for fuzz inputs that change an existing cluster; it returns its path.
func succeededCluster(f *testing.F, e *env, name string) string {
	f.Helper()
	path := clusterPath("rg", name)
	created := e.put(path, minimalBody())
	if created.code != 201 {
		f.Fatalf("create: %d %s", created.code, created.body)
	}
	e.finish(opIDFrom(f, created.header.Get("Azure-AsyncOperation")), armdoc.StateSucceeded, nil)
	return path
}

// patchClusterBody is one input of FuzzPatchClusterBody: body as a PATCH of the existing
// cluster at path in the api-version ver. Both answers keep checkARMAnswer's promises, and the
// cluster is still answered by GET with 200.
func patchClusterBody(t *testing.T, e *env, path string, body []byte, ver string) {
	target := path + "?api-version=" + ver
	checkARMAnswer(t, "PATCH", target, body, serve(e, "PATCH", target, body))
	get := serve(e, "GET", target, nil)
	checkARMAnswer(t, "GET", target, nil, get)
	if get.code != 200 {
		t.Fatalf("GET of the patched cluster answered %d: %s", get.code, get.body)
	}
}
