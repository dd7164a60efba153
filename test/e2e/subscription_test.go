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
// any management cluster. While Deleted, the subscription's resources cannot be read through ARM.
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
	// A Deleted subscription allows nothing, reads included: 400 InvalidSubscriptionState, as
	// ARO HCP answers (docs/api.md, "Subscription states").
	for _, c := range []struct{ method, path string }{
		{http.MethodPut, clusterPath(sub, "rg-a", "late")}, {http.MethodGet, paths[0]}, {http.MethodGet, poolPath},
	} {
		var body any
		if c.method == http.MethodPut {
			body = clusterBody(sub, "rg-a")
		}
		r := arm(t, c.method, c.path, body)
		armErr, _ := r.Body["error"].(map[string]any)
		if code, _ := armErr["code"].(string); r.Status != http.StatusBadRequest || code != "InvalidSubscriptionState" {
			t.Errorf("%s %s in a Deleted subscription: got %d, want 400 InvalidSubscriptionState: %s", c.method, c.path, r.Status, r.Raw)
		}
	}

	eventually(t, 5*time.Minute, "every resource of the Deleted subscription gone from the service side", func() error {
		for _, p := range paths {
			if n := len(csClusters(t, p)); n != 0 {
				return fmt.Errorf("cluster service still holds %d clusters for %s", n, p)
			}
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
	// The frontend's documents can only be read through ARM in a Registered subscription: register
	// it again and look.
	registerSubscription(t, sub)
	eventually(t, 2*time.Minute, "no resource of the Deleted subscription left in the frontend", func() error {
		for _, p := range append(paths, poolPath) {
			if g := arm(t, http.MethodGet, p, nil); g.Status != http.StatusNotFound {
				return fmt.Errorf("GET %s: %d", p, g.Status)
			}
		}
		list := arm(t, http.MethodGet, "/subscriptions/"+sub+"/providers/Microsoft.RedHatOpenShift/hcpOpenShiftClusters", nil)
		if list.Status != http.StatusOK {
			return fmt.Errorf("list after deletion: %d %s", list.Status, list.Raw)
		}
		if v, _ := list.Body["value"].([]any); len(v) != 0 {
			return fmt.Errorf("list after deletion still has %d clusters", len(v))
		}
		return nil
	})
}
