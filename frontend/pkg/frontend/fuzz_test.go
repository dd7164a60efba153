package frontend

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// FuzzPutClusterBody sends arbitrary bodies through the whole handler (middlewares, decoder,
// validation, store, fake Cluster Service): whatever comes in, the answer is never a 5xx, every
// error is an ARM error body, and every answer matches the spec's schema for it.
func FuzzPutClusterBody(f *testing.F) {
	f.Add(mustJSON(minimalBody()))
	f.Add([]byte(`{"location":"eastus","properties":{"platform":{}}}`))
	f.Add([]byte(`{"location":"eastus","tags":{"a":1}}`))
	f.Add([]byte(`null`))
	f.Add([]byte(`{"properties":{"network":{"hostPrefix":1e99}}}`))
	e := newEnv(f)
	f.Fuzz(func(t *testing.T, body []byte) {
		req := httptest.NewRequest("PUT", clusterPath("rg", "fuzz")+"?api-version="+testVersion, bytes.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		rec := httptest.NewRecorder()
		e.srv.Handler().ServeHTTP(rec, req)
		validateExchange(t, req.Method, req.URL.String(), response{code: rec.Code, header: rec.Header(), body: rec.Body.Bytes()})
		if rec.Code >= 500 {
			t.Fatalf("status %d for %q: %s", rec.Code, body, rec.Body)
		}
		if rec.Code >= 400 {
			resp := response{code: rec.Code, header: rec.Header(), body: rec.Body.Bytes()}
			resp.armError(t)
		}
		if rec.Code == http.StatusCreated {
			// Start over so the next input creates again instead of hitting the running operation.
			del := httptest.NewRequest("DELETE", clusterPath("rg", "fuzz")+"?api-version="+testVersion, nil)
			e.srv.Handler().ServeHTTP(httptest.NewRecorder(), del)
			e.store.Purge(t.Context())
			if d, err := e.store.Get(t.Context(), strings.ToLower(testSub), strings.ToLower(clusterPath("rg", "fuzz"))); err == nil {
				e.store.Delete(t.Context(), d.PartitionKey, d.ID, d.ETag)
			}
		}
	})
}
