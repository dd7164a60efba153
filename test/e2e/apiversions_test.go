package e2e

import (
	"net/http"
	"testing"
	"time"

	"github.com/google/uuid"
)

// TestClusterThroughEveryAPIVersion creates a cluster through the newest api-version on the
// launched region, reads it through every version, changes its tags with PATCH through an
// older one and a PUT through the oldest, and checks nothing the newest version set was lost.
func TestClusterThroughEveryAPIVersion(t *testing.T) {
	const newest = "2026-09-01-preview"
	sub, rg := uuid.NewString(), "rg-versions"
	registerSubscription(t, sub)
	path := clusterPath(sub, rg, "versions")
	body := clusterBody(sub, rg)
	props := body["properties"].(map[string]any)
	props["platform"].(map[string]any)["vnetIntegrationSubnetId"] = "/subscriptions/" + sub + "/resourceGroups/" + rg + "/providers/Microsoft.Network/virtualNetworks/vnet/subnets/integration"
	props["ingress"] = map[string]any{"type": "Private"}
	props["cryptoRestrictions"] = "FIPS"

	put := arm(t, http.MethodPut, path+"?api-version="+newest, body)
	if put.Status != http.StatusCreated {
		t.Fatalf("PUT through %s: %d %s", newest, put.Status, put.Raw)
	}
	if final := waitOperation(t, put.Header.Get("Azure-AsyncOperation"), 5*time.Minute); final["status"] != "Succeeded" {
		t.Fatalf("create ended %v: %v", final["status"], final["error"])
	}

	for _, v := range []string{"2024-06-10-preview", "2025-12-23-preview", "2026-06-30-preview", newest} {
		get := arm(t, http.MethodGet, path+"?api-version="+v, nil)
		if get.Status != http.StatusOK {
			t.Fatalf("GET through %s: %d %s", v, get.Status, get.Raw)
		}
		p := get.Body["properties"].(map[string]any)
		_, hasIngress := p["ingress"]
		if p["provisioningState"] != "Succeeded" || hasIngress != (v >= "2026-06-30-preview") {
			t.Errorf("GET through %s: %s", v, get.Raw)
		}
		if v >= "2026-06-30-preview" {
			// hypershift-sim made the HostedCluster Available; the spec's status shows it.
			st, _ := p["status"].(map[string]any)
			found := false
			for _, c := range asList(st["conditions"]) {
				m := c.(map[string]any)
				found = found || (m["type"] == "Available" && m["status"] == "True")
			}
			if !found {
				t.Errorf("GET through %s: no Available=True condition: %v", v, p["status"])
			}
		}
	}

	patch := arm(t, http.MethodPatch, path+"?api-version=2025-12-23-preview", map[string]any{"tags": map[string]any{"patched": "yes"}})
	if patch.Status != http.StatusAccepted || patch.Header.Get("Location") == "" {
		t.Fatalf("PATCH: %d %v %s", patch.Status, patch.Header, patch.Raw)
	}
	if final := waitOperation(t, patch.Header.Get("Azure-AsyncOperation"), time.Minute); final["status"] != "Succeeded" {
		t.Fatalf("PATCH operation ended %v", final["status"])
	}
	old := arm(t, http.MethodGet, path+"?api-version=2024-06-10-preview", nil)
	old.Body["tags"].(map[string]any)["put"] = "oldest"
	if r := arm(t, http.MethodPut, path+"?api-version=2024-06-10-preview", old.Body); r.Status != http.StatusOK {
		t.Fatalf("PUT back through 2024-06-10-preview: %d %s", r.Status, r.Raw)
	}
	now := arm(t, http.MethodGet, path+"?api-version="+newest, nil)
	p, tags := now.Body["properties"].(map[string]any), now.Body["tags"].(map[string]any)
	if p["cryptoRestrictions"] != "FIPS" || p["ingress"].(map[string]any)["type"] != "Private" || tags["patched"] != "yes" || tags["put"] != "oldest" {
		t.Errorf("after writes through older versions: %s", now.Raw)
	}

	del := arm(t, http.MethodDelete, path+"?api-version=2025-12-23-preview", nil)
	if del.Status != http.StatusAccepted {
		t.Fatalf("DELETE: %d %s", del.Status, del.Raw)
	}
	if final := waitOperation(t, del.Header.Get("Azure-AsyncOperation"), 5*time.Minute); final["status"] != "Succeeded" {
		t.Fatalf("delete ended %v: %v", final["status"], final["error"])
	}
}

func asList(v any) []any {
	l, _ := v.([]any)
	return l
}
