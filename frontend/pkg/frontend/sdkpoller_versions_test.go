//go:build !fuzzlean

// Left out of the fuzzing build (hack/fuzz-long.sh builds with -tags fuzzlean): this file links
// the Azure SDK, whose coverage counters every fuzz execution would scan.

package frontend

import (
	"bytes"
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/runtime"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/streaming"

	"github.com/openhcp/openhcp/internal/armdoc"
)

// TestAzureSDKPollerDrivesUpdateInEveryVersion runs the Azure SDK's poller over create, update
// (PATCH, final state via Location as the spec says) and delete of a cluster in each
// api-version; the test plays the backend for create and delete.
func TestAzureSDKPollerDrivesUpdateInEveryVersion(t *testing.T) {
	e := newEnv(t, func(c *Config) { c.RetryAfter = time.Second })
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	pl := runtime.NewPipeline("openhcp-test", "v0", runtime.PipelineOptions{}, &policy.ClientOptions{
		Transport: e.checkingClient(t),
		Retry:     policy.RetryOptions{MaxRetries: -1},
	})
	for _, ver := range specVersions {
		t.Run(ver, func(t *testing.T) {
			url := e.http.URL + clusterPath("rg", "sdk-"+ver[:10]) + "?api-version=" + ver
			send := func(method string, body []byte) *http.Response {
				t.Helper()
				req, err := runtime.NewRequest(ctx, method, url)
				if err != nil {
					t.Fatal(err)
				}
				if body != nil {
					if err := req.SetBody(streaming.NopCloser(bytes.NewReader(body)), "application/json"); err != nil {
						t.Fatal(err)
					}
				}
				resp, err := pl.Do(req)
				if err != nil {
					t.Fatal(err)
				}
				return resp
			}
			poll := func(resp *http.Response, via runtime.FinalStateVia, finish bool) map[string]any {
				t.Helper()
				if !runtime.HasStatusCode(resp, http.StatusCreated, http.StatusAccepted) {
					t.Fatalf("initial status %d", resp.StatusCode)
				}
				opID := opIDFrom(t, resp.Header.Get("Azure-AsyncOperation"))
				poller, err := runtime.NewPoller[map[string]any](resp, pl, &runtime.NewPollerOptions[map[string]any]{FinalStateVia: via})
				if err != nil {
					t.Fatalf("NewPoller: %v", err)
				}
				if finish {
					e.finish(opID, armdoc.StateSucceeded, nil)
				}
				v, err := poller.PollUntilDone(ctx, &runtime.PollUntilDoneOptions{Frequency: 100 * time.Millisecond})
				if err != nil {
					t.Fatalf("poller: %v", err)
				}
				return v
			}
			body := minimalBody()
			if ver != "2024-06-10-preview" {
				set(body, "properties.platform.vnetIntegrationSubnetId", "/subscriptions/"+testSub+"/resourceGroups/rg/providers/Microsoft.Network/virtualNetworks/vnet/subnets/integration")
			}
			created := poll(send(http.MethodPut, mustJSON(body)), runtime.FinalStateViaAzureAsyncOp, true)
			if created["properties"].(map[string]any)["provisioningState"] != "Succeeded" {
				t.Fatalf("create result %v", created)
			}
			updated := poll(send(http.MethodPatch, []byte(`{"tags":{"env":"sdk"}}`)), runtime.FinalStateViaLocation, false)
			if updated["tags"].(map[string]any)["env"] != "sdk" {
				t.Fatalf("update result %v", updated)
			}
			poll(send(http.MethodDelete, nil), runtime.FinalStateViaLocation, true)
			if resp := e.do("GET", clusterPath("rg", "sdk-"+ver[:10])+"?api-version="+ver, nil, nil); resp.code != 404 {
				t.Fatalf("GET after delete: %d", resp.code)
			}
		})
	}
}
