package e2e

import (
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/google/uuid"
)

// TestSubscriptionDeletedRemovesEverything registers a subscription, creates two clusters in it
// (one with a node pool), and then ARM says the subscription is Deleted: every resource must go
// through the normal delete path, leaving nothing in the frontend, Cluster Service, Maestro or on
// any management cluster.
func TestSubscriptionDeletedRemovesEverything(t *testing.T) {
	sub := uuid.NewString()
	registerSubscription(t, sub)
	paths := []string{clusterPath(sub, "rg-a", "doomed1"), clusterPath(sub, "rg-b", "doomed2")}
	for _, p := range paths {
		put := arm(t, http.MethodPut, p, clusterBody(sub, "rg-x"))
		if put.Status != http.StatusCreated {
			t.Fatalf("PUT %s: %d %s", p, put.Status, put.Raw)
		}
		if final := waitOperation(t, put.Header.Get("Azure-AsyncOperation"), 5*time.Minute); final["status"] != "Succeeded" {
			t.Fatalf("create %s ended %v: %v", p, final["status"], final["error"])
		}
	}
	poolPath := paths[0] + "/nodePools/np1?api-version=2025-12-23-preview"
	pool := arm(t, http.MethodPut, poolPath, map[string]any{
		"location": region.Info.Location,
		"properties": map[string]any{
			"version":  map[string]any{"id": "4.19", "channelGroup": "stable"},
			"replicas": 1,
			"platform": map[string]any{"vmSize": "Standard_D8s_v3"},
		},
	})
	if pool.Status != http.StatusCreated {
		t.Fatalf("PUT node pool: %d %s", pool.Status, pool.Raw)
	}
	if final := waitOperation(t, pool.Header.Get("Azure-AsyncOperation"), 3*time.Minute); final["status"] != "Succeeded" {
		t.Fatalf("node pool create ended %v: %v", final["status"], final["error"])
	}

	type placed struct{ id, shard string }
	var clusters []placed
	for _, p := range paths {
		cs := csClusters(t, p)
		if len(cs) != 1 {
			t.Fatalf("cluster service holds %d clusters for %s, want 1", len(cs), p)
		}
		clusters = append(clusters, placed{cs[0].GetId(), cs[0].GetShard()})
	}

	r := arm(t, http.MethodPut, "/subscriptions/"+sub+"?api-version=2.0", map[string]any{
		"state":            "Deleted",
		"registrationDate": time.Now().UTC().Format(time.RFC3339),
		"properties":       map[string]any{"tenantId": uuid.NewString()},
	})
	if r.Status != http.StatusOK && r.Status != http.StatusCreated {
		t.Fatalf("PUT subscription Deleted: %d %s", r.Status, r.Raw)
	}
	// A Deleted subscription allows GET only.
	if put := arm(t, http.MethodPut, clusterPath(sub, "rg-a", "late"), clusterBody(sub, "rg-a")); put.Status != http.StatusConflict {
		t.Errorf("PUT in a Deleted subscription: got %d, want 409: %s", put.Status, put.Raw)
	}

	eventually(t, 5*time.Minute, "every resource of the Deleted subscription gone everywhere", func() error {
		for _, p := range paths {
			if g := arm(t, http.MethodGet, p, nil); g.Status != http.StatusNotFound {
				return fmt.Errorf("GET %s: %d", p, g.Status)
			}
			if n := len(csClusters(t, p)); n != 0 {
				return fmt.Errorf("cluster service still holds %d clusters for %s", n, p)
			}
		}
		if g := arm(t, http.MethodGet, poolPath, nil); g.Status != http.StatusNotFound {
			return fmt.Errorf("GET node pool: %d", g.Status)
		}
		for _, c := range clusters {
			mc := managementCluster(t, c.shard)
			if n := len(hostedClusters(t, mc, c.id)); n != 0 {
				return fmt.Errorf("%d HostedClusters of %s left on %s", n, c.id, mc.Name)
			}
			if names, err := appliedWorksFor(t, mc, c.id); err != nil || len(names) != 0 {
				return fmt.Errorf("AppliedManifestWorks of %s left on %s: %v (err %v)", c.id, mc.Name, names, err)
			}
			if err := maestroBundlesGone(maestroRESTClient(t), c.id); err != nil {
				return err
			}
		}
		return nil
	})
	list := arm(t, http.MethodGet, "/subscriptions/"+sub+"/providers/Microsoft.RedHatOpenShift/hcpOpenShiftClusters", nil)
	if list.Status != http.StatusOK {
		t.Fatalf("list after deletion: %d %s", list.Status, list.Raw)
	}
	if v, _ := list.Body["value"].([]any); len(v) != 0 {
		t.Errorf("list after deletion still has %d clusters: %s", len(v), list.Raw)
	}
}
