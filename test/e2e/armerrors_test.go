package e2e

import (
	"fmt"
	"net/http"
	"sort"
	"strings"
	"testing"
	"time"

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

// TestClusterServiceErrorsNameARMFieldsOnUpdatesAndChildren: what Cluster Service refuses in a
// cluster PATCH, a node pool PUT and PATCH and an external auth PUT comes back with the ARM
// property as target (one error) or as the details' targets (several), never a proto name.
func TestClusterServiceErrorsNameARMFieldsOnUpdatesAndChildren(t *testing.T) {
	sub, rg := uuid.NewString(), "rg-errors-children"
	registerSubscription(t, sub)
	path := clusterPath(sub, rg, "errors")
	createCluster(t, path, clusterBody(sub, rg))
	const ver = "?api-version=2025-12-23-preview"
	pool := func(version, vmSize string) map[string]any {
		return map[string]any{
			"location": region.Info.Location,
			"properties": map[string]any{
				"version":  map[string]any{"id": version, "channelGroup": "stable"},
				"replicas": 1,
				"platform": map[string]any{"vmSize": vmSize},
			},
		}
	}
	okPool := arm(t, http.MethodPut, path+"/nodePools/good"+ver, pool("4.19", "Standard_D8s_v3"))
	if okPool.Status != http.StatusCreated {
		t.Fatalf("PUT node pool: %d %s", okPool.Status, okPool.Raw)
	}
	if final := waitOperation(t, okPool.Header.Get("Azure-AsyncOperation"), 3*time.Minute); final["status"] != "Succeeded" {
		t.Fatalf("node pool create ended %v: %v", final["status"], final["error"])
	}
	// An audience given twice and a client whose ID is none of the audiences.
	badAuth := externalAuthBody("https://login.example.com/t/v2.0")
	badAuth["properties"].(map[string]any)["issuer"].(map[string]any)["audiences"] = []string{"console-app", "console-app"}
	tests := []struct {
		name, method, path string
		body               any
		targets            []string
	}{
		{"cluster_patch", http.MethodPatch, path + ver, map[string]any{"properties": map[string]any{"version": map[string]any{"id": "4.1"}}},
			[]string{"properties.version.id"}},
		{"node_pool_put", http.MethodPut, path + "/nodePools/bad" + ver, pool("4.1", "huge"),
			[]string{"properties.platform.vmSize", "properties.version.id"}},
		{"external_auth_put", http.MethodPut, path + "/externalAuths/bad" + ver, badAuth,
			[]string{"properties.clients[1].clientId", "properties.issuer.audiences[1]"}},
		{"node_pool_patch", http.MethodPatch, path + "/nodePools/good" + ver, map[string]any{"properties": map[string]any{"version": map[string]any{"id": "4.1"}}},
			[]string{"properties.version.id"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := arm(t, tc.method, tc.path, tc.body)
			if r.Status != http.StatusBadRequest {
				t.Fatalf("%s: got %d, want 400: %s", tc.method, r.Status, r.Raw)
			}
			// One error carries its target; several are MultipleErrorsOccurred with one detail
			// each (a field may have more than one problem).
			e, _ := r.Body["error"].(map[string]any)
			details, _ := e["details"].([]any)
			seen := map[string]bool{}
			switch {
			case e["code"] == "InvalidRequestContent" && len(details) == 0:
				seen[fmt.Sprint(e["target"])] = true
			case e["code"] == "MultipleErrorsOccurred" && len(details) > 1 && e["target"] == nil:
				for _, d := range details {
					dm := d.(map[string]any)
					if dm["code"] != "InvalidRequestContent" {
						t.Errorf("detail code %v, want InvalidRequestContent", dm["code"])
					}
					seen[fmt.Sprint(dm["target"])] = true
				}
			default:
				t.Fatalf("not one InvalidRequestContent nor MultipleErrorsOccurred with details: %s", r.Raw)
			}
			var targets []string
			for k := range seen {
				targets = append(targets, k)
			}
			sort.Strings(targets)
			if strings.Join(targets, ",") != strings.Join(tc.targets, ",") {
				t.Errorf("targets %v, want %v: %s", targets, tc.targets, r.Raw)
			}
			for _, internal := range []string{"_id", "_gib", "spec.", "node_pool", "update."} {
				if strings.Contains(string(r.Raw), internal) {
					t.Errorf("the answer names Cluster Service's field %q: %s", internal, r.Raw)
				}
			}
		})
	}
}
