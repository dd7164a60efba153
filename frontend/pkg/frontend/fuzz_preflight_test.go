package frontend

import (
	"bytes"
	"encoding/json"
	"net/http/httptest"
	"testing"
)

// FuzzPreflightBody sends arbitrary deployment preflight bodies through the whole handler:
// whatever comes in, the answer is 200 with {"status":"Succeeded"} or {"status":"Failed","error"}
// carrying a code and a message, never a 5xx or a panic.
func FuzzPreflightBody(f *testing.F) {
	cluster := minimalBody()
	cluster["type"], cluster["name"], cluster["apiVersion"] = "Microsoft.RedHatOpenShift/hcpOpenShiftClusters", "c1", testVersion
	f.Add(mustJSON(map[string]any{"resources": []any{cluster}}))
	f.Add([]byte(`{"resources":[{"type":"microsoft.redhatopenshift/HCPOPENSHIFTCLUSTERS","apiVersion":"2026-09-01-preview","properties":{"x":"[concat('a')]"}}]}`))
	f.Add([]byte(`{"resources":[1,null,"x",{}]}`))
	f.Add([]byte(`{"resources":null}`))
	f.Add([]byte(`[]`))
	e := newEnv(f)
	path := "/subscriptions/" + testSub + "/resourceGroups/rg/providers/Microsoft.RedHatOpenShift/deployments/d/preflight?api-version=2020-06-01"
	f.Fuzz(func(t *testing.T, body []byte) {
		req := httptest.NewRequest("POST", path, bytes.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		rec := httptest.NewRecorder()
		e.srv.Handler().ServeHTTP(rec, req)
		validateExchange(t, req.Method, req.URL.String(), response{code: rec.Code, header: rec.Header(), body: rec.Body.Bytes()})
		if rec.Code >= 500 {
			t.Fatalf("status %d for %q: %s", rec.Code, body, rec.Body)
		}
		if rec.Code != 200 {
			// Only what the middlewares refuse before the handler (body size, content type) may
			// be another 4xx, as an ARM error.
			resp := response{code: rec.Code, header: rec.Header(), body: rec.Body.Bytes()}
			resp.armError(t)
			return
		}
		var res struct {
			Status string `json:"status"`
			Error  *struct {
				Code, Message string
			} `json:"error"`
		}
		if err := json.Unmarshal(rec.Body.Bytes(), &res); err != nil {
			t.Fatalf("preflight answer is not JSON: %s", rec.Body)
		}
		switch {
		case res.Status == "Succeeded" && res.Error == nil:
		case res.Status == "Failed" && res.Error != nil && res.Error.Code != "" && res.Error.Message != "":
		default:
			t.Fatalf("preflight answer %s for %q", rec.Body, body)
		}
	})
}
