package e2e

import (
	"net/http"
	"strings"
	"testing"

	"github.com/google/uuid"
)

// TestClusterServiceErrorsNameARMFields: two problems that only Cluster Service finds (a host
// prefix outside its range, a version it does not offer) come back as MultipleErrorsOccurred
// with one detail per problem, each targeting the ARM property, and no proto name anywhere.
func TestClusterServiceErrorsNameARMFields(t *testing.T) {
	sub, rg := uuid.NewString(), "rg-errors"
	registerSubscription(t, sub)
	body := clusterBody(sub, rg)
	props := body["properties"].(map[string]any)
	props["network"].(map[string]any)["hostPrefix"] = 21
	props["version"] = map[string]any{"id": "4.1", "channelGroup": "stable"}
	r := arm(t, http.MethodPut, clusterPath(sub, rg, "two-errors"), body)
	if r.Status != http.StatusBadRequest {
		t.Fatalf("PUT: got %d, want 400: %s", r.Status, r.Raw)
	}
	e, _ := r.Body["error"].(map[string]any)
	if e["code"] != "MultipleErrorsOccurred" {
		t.Fatalf("code %v, want MultipleErrorsOccurred: %s", e["code"], r.Raw)
	}
	details, _ := e["details"].([]any)
	targets := map[string]bool{}
	for _, d := range details {
		dm := d.(map[string]any)
		targets[dm["target"].(string)] = true
		if dm["code"] != "InvalidRequestContent" {
			t.Errorf("detail code %v, want InvalidRequestContent", dm["code"])
		}
	}
	if len(details) != 2 || !targets["properties.network.hostPrefix"] || !targets["properties.version.id"] {
		t.Errorf("details target %v, want properties.network.hostPrefix and properties.version.id: %s", targets, r.Raw)
	}
	for _, internal := range []string{"host_prefix", "version_id", "cluster.spec"} {
		if strings.Contains(string(r.Raw), internal) {
			t.Errorf("the answer names Cluster Service's field %q: %s", internal, r.Raw)
		}
	}
	// Nothing was created.
	if g := arm(t, http.MethodGet, clusterPath(sub, rg, "two-errors"), nil); g.Status != http.StatusNotFound {
		t.Errorf("GET after the refused PUT: %d, want 404", g.Status)
	}
}
