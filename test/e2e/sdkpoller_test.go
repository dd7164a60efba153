package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/runtime"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/streaming"
	"github.com/google/uuid"
)

// TestAzureSDKPollerAgainstTheRegion drives a cluster and a node pool through create, update and
// delete with the Azure SDK for Go's own long-running-operation poller (azcore runtime.NewPoller),
// as a generated ARM client does, against the running region: the backend finishes every
// operation from what Cluster Service and the management cluster report.
func TestAzureSDKPollerAgainstTheRegion(t *testing.T) {
	ver := apiVersion // clusterBody is a body of this version
	ctx, cancel := context.WithTimeout(context.Background(), 12*time.Minute)
	defer cancel()
	sub, rg := uuid.NewString(), "rg-sdk"
	registerSubscription(t, sub)
	pl := runtime.NewPipeline("openhcp-e2e", "v0", runtime.PipelineOptions{}, &policy.ClientOptions{
		Retry: policy.RetryOptions{MaxRetries: 3},
		// ARM's client certificate (the frontend admits nothing else); every answer, the
		// poller's included, validated against the spec.
		Transport: checkingClient(t),
	})
	clusterURL := region.Info.Frontend.URL + clusterPath(sub, rg, "sdk") + "?api-version=" + ver
	poolURL := region.Info.Frontend.URL + clusterPath(sub, rg, "sdk") + "/nodePools/sdkpool?api-version=" + ver

	// run sends one request and follows its operation with the SDK's poller to the end.
	run := func(what, method, url string, body any, via runtime.FinalStateVia) map[string]any {
		t.Helper()
		req, err := runtime.NewRequest(ctx, method, url)
		if err != nil {
			t.Fatal(err)
		}
		if body != nil {
			b, _ := json.Marshal(body)
			if err := req.SetBody(streaming.NopCloser(bytes.NewReader(b)), "application/json"); err != nil {
				t.Fatal(err)
			}
		}
		resp, err := pl.Do(req)
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		if !runtime.HasStatusCode(resp, http.StatusOK, http.StatusCreated, http.StatusAccepted) {
			b, _ := runtime.Payload(resp)
			t.Fatalf("%s: status %d: %s", what, resp.StatusCode, b)
		}
		poller, err := runtime.NewPoller[map[string]any](resp, pl, &runtime.NewPollerOptions[map[string]any]{FinalStateVia: via})
		if err != nil {
			t.Fatalf("%s: NewPoller: %v", what, err)
		}
		v, err := poller.PollUntilDone(ctx, &runtime.PollUntilDoneOptions{Frequency: time.Second})
		if err != nil {
			t.Fatalf("%s: poller: %v", what, err)
		}
		return v
	}
	state := func(v map[string]any) any {
		p, _ := v["properties"].(map[string]any)
		return p["provisioningState"]
	}

	cluster := run("create cluster", http.MethodPut, clusterURL, clusterBody(sub, rg), runtime.FinalStateViaAzureAsyncOp)
	if cluster["name"] != "sdk" || state(cluster) != "Succeeded" {
		t.Fatalf("create cluster result: %v", cluster)
	}
	updated := run("update cluster", http.MethodPatch, clusterURL, map[string]any{"tags": map[string]any{"by": "sdk"}}, runtime.FinalStateViaLocation)
	if tags, _ := updated["tags"].(map[string]any); tags["by"] != "sdk" || state(updated) != "Succeeded" {
		t.Fatalf("update cluster result: %v", updated)
	}

	poolBody := map[string]any{
		"location": region.Info.Location,
		"properties": map[string]any{
			"version":  map[string]any{"id": "4.19", "channelGroup": "stable"},
			"replicas": 1,
			"platform": map[string]any{"vmSize": "Standard_D8s_v3"},
		},
	}
	pool := run("create node pool", http.MethodPut, poolURL, poolBody, runtime.FinalStateViaAzureAsyncOp)
	if pool["name"] != "sdkpool" || state(pool) != "Succeeded" {
		t.Fatalf("create node pool result: %v", pool)
	}
	scaled := run("scale node pool", http.MethodPatch, poolURL, map[string]any{"properties": map[string]any{"replicas": 2}}, runtime.FinalStateViaLocation)
	if p, _ := scaled["properties"].(map[string]any); p["replicas"] != float64(2) || state(scaled) != "Succeeded" {
		t.Fatalf("scale node pool result: %v", scaled)
	}
	run("delete node pool", http.MethodDelete, poolURL, nil, runtime.FinalStateViaLocation)
	if r := arm(t, http.MethodGet, clusterPath(sub, rg, "sdk")+"/nodePools/sdkpool?api-version="+ver, nil); r.Status != http.StatusNotFound {
		t.Fatalf("GET node pool after its delete: %d %s", r.Status, r.Raw)
	}
	run("delete cluster", http.MethodDelete, clusterURL, nil, runtime.FinalStateViaLocation)
	if r := arm(t, http.MethodGet, clusterPath(sub, rg, "sdk"), nil); r.Status != http.StatusNotFound {
		t.Fatalf("GET cluster after its delete: %d %s", r.Status, r.Raw)
	}
}
