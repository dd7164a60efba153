package frontend

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/openhcp/openhcp/frontend/pkg/api"
)

// TestPreflightOfManyResourcesIsBounded: a preflight request at the body size limit that holds
// tens of thousands of our resources, each with problems, is answered with at most
// api.MaxReportedProblems details, not one list per resource.
func TestPreflightOfManyResourcesIsBounded(t *testing.T) {
	e := newEnv(t)
	for _, tc := range []struct{ name, resource string }{
		{"unsupported_api_version", `{"type":"Microsoft.RedHatOpenShift/hcpOpenShiftClusters","apiVersion":"1999-01-01","name":"c"},`},
		{"invalid_clusters", `{"type":"Microsoft.RedHatOpenShift/hcpOpenShiftClusters","apiVersion":"` + testVersion + `","name":"c","location":"westus","properties":{}},`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n := (MaxBodyBytes - 32) / len(tc.resource)
			body := `{"resources":[` + strings.TrimSuffix(strings.Repeat(tc.resource, n), ",") + `]}`
			resp := e.do("POST", "/subscriptions/"+testSub+"/resourceGroups/rg/providers/Microsoft.RedHatOpenShift/deployments/dep-1/preflight?api-version=2020-06-01", []byte(body), nil)
			var got struct {
				Status string `json:"status"`
				Error  *struct {
					Code    string            `json:"code"`
					Details []json.RawMessage `json:"details"`
				} `json:"error"`
			}
			if err := json.Unmarshal(resp.body, &got); err != nil || got.Error == nil {
				t.Fatalf("status %d, not a preflight failure: %v %.300s", resp.code, err, resp.body)
			}
			if len(got.Error.Details) > api.MaxReportedProblems {
				t.Fatalf("%d resources answered with %d details, want at most %d", n, len(got.Error.Details), api.MaxReportedProblems)
			}
		})
	}
}
