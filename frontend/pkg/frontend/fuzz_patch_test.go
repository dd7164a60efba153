package frontend

import (
	"bytes"
	"net/http/httptest"
	"testing"

	"github.com/openhcp/openhcp/internal/armdoc"
)

// FuzzPatchClusterBody sends arbitrary PATCH bodies, through any of the four api-versions, to
// one existing cluster through the whole handler: never a 5xx, and every error is an ARM error
// body.
func FuzzPatchClusterBody(f *testing.F) {
	f.Add([]byte(`{"tags":{"a":"b"}}`), uint8(0))
	f.Add([]byte(`{"tags":null,"properties":{"nodeDrainTimeoutMinutes":3}}`), uint8(1))
	f.Add([]byte(`{"properties":{"etcd":{"dataEncryption":{"customerManaged":{"kms":{"activeKey":{"version":"2"}}}}}}}`), uint8(2))
	f.Add([]byte(`{"identity":{"userAssignedIdentities":{"x":null}},"properties":{"provisioningState":"Failed"}}`), uint8(3))
	f.Add([]byte(`[]`), uint8(0))
	e := newEnv(f)
	path := clusterPath("rg", "fuzz-patch")
	created := e.put(path, minimalBody())
	if created.code != 201 {
		f.Fatalf("create: %d %s", created.code, created.body)
	}
	e.finish(opIDFrom(f, created.header.Get("Azure-AsyncOperation")), armdoc.StateSucceeded, nil)
	f.Fuzz(func(t *testing.T, body []byte, v uint8) {
		ver := specVersions[int(v)%len(specVersions)]
		req := httptest.NewRequest("PATCH", path+"?api-version="+ver, bytes.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		rec := httptest.NewRecorder()
		e.srv.Handler().ServeHTTP(rec, req)
		validateExchange(t, req.Method, req.URL.String(), response{code: rec.Code, header: rec.Header(), body: rec.Body.Bytes()})
		if rec.Code >= 500 {
			t.Fatalf("status %d for %s %q: %s", rec.Code, ver, body, rec.Body)
		}
		if rec.Code >= 400 {
			resp := response{code: rec.Code, header: rec.Header(), body: rec.Body.Bytes()}
			resp.armError(t)
		}
	})
}
