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

// TestAzureSDKPollerDrivesCreateAndDelete runs the Azure SDK's own long-running-operation
// poller against the frontend, as any generated ARM client would, with no special cases. The
// test plays the backend: it finishes each operation while the poller waits.
func TestAzureSDKPollerDrivesCreateAndDelete(t *testing.T) {
	e := newEnv(t, func(c *Config) { c.RetryAfter = time.Second })
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	pl := runtime.NewPipeline("openhcp-test", "v0", runtime.PipelineOptions{}, &policy.ClientOptions{
		Transport: e.checkingClient(t),
		Retry:     policy.RetryOptions{MaxRetries: -1},
	})
	url := e.http.URL + clusterPath("rg", "sdk") + "?api-version=" + testVersion

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
	type result struct {
		v   map[string]any
		err error
	}
	drive := func(resp *http.Response, via runtime.FinalStateVia) (chan result, string) {
		t.Helper()
		if !runtime.HasStatusCode(resp, http.StatusCreated, http.StatusAccepted) {
			t.Fatalf("initial status %d", resp.StatusCode)
		}
		opID := opIDFrom(t, resp.Header.Get("Azure-AsyncOperation"))
		poller, err := runtime.NewPoller[map[string]any](resp, pl, &runtime.NewPollerOptions[map[string]any]{FinalStateVia: via})
		if err != nil {
			t.Fatalf("NewPoller: %v", err)
		}
		done := make(chan result, 1)
		go func() {
			v, err := poller.PollUntilDone(ctx, &runtime.PollUntilDoneOptions{Frequency: 100 * time.Millisecond})
			done <- result{v, err}
		}()
		return done, opID
	}

	created, opID := drive(send(http.MethodPut, mustJSON(minimalBody())), runtime.FinalStateViaAzureAsyncOp)
	time.Sleep(1500 * time.Millisecond) // the poller sees Accepted at least once
	e.finish(opID, armdoc.StateSucceeded, nil)
	r := <-created
	if r.err != nil {
		t.Fatalf("create poller: %v", r.err)
	}
	if r.v["name"] != "sdk" || r.v["properties"].(map[string]any)["provisioningState"] != "Succeeded" {
		t.Fatalf("create poller result %v", r.v)
	}

	deleted, opID := drive(send(http.MethodDelete, nil), runtime.FinalStateViaLocation)
	time.Sleep(1500 * time.Millisecond)
	e.finish(opID, armdoc.StateSucceeded, nil)
	if r := <-deleted; r.err != nil {
		t.Fatalf("delete poller: %v", r.err)
	}
	if resp := e.do("GET", clusterPath("rg", "sdk"), nil, nil); resp.code != 404 {
		t.Fatalf("GET after the delete poller finished: %d", resp.code)
	}

	// A failed create surfaces as the poller's error with the operation's code.
	failed, opID := drive(send(http.MethodPut, mustJSON(minimalBody())), runtime.FinalStateViaAzureAsyncOp)
	e.finish(opID, armdoc.StateFailed, &armdoc.CloudErrorBody{Code: "ProvisioningFailed", Message: "no luck"})
	if r := <-failed; r.err == nil || !bytes.Contains([]byte(r.err.Error()), []byte("ProvisioningFailed")) {
		t.Fatalf("failed create: poller error %v", r.err)
	}
}
