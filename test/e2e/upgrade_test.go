package e2e

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	csv1 "github.com/openhcp/openhcp/cluster-service/api/v1"
	"github.com/openhcp/openhcp/internal/pki"
)

// TestUpgradeThroughARM lists the region's versions (hcpOpenShiftVersions), then through the
// frontend: refuses a downgrade and a version the channel group does not offer with 400 on
// properties.version.id, refuses a node pool ahead of its control plane, upgrades the control
// plane 4.19 → 4.20 along the catalogue's edge to Succeeded (the HostedCluster's version
// history shows 4.20.3 Completed over 4.19.17), and then the node pool.
func TestUpgradeThroughARM(t *testing.T) {
	const ver = "2025-12-23-preview" // version.id is updatable from this api-version on
	sub, rg := uuid.NewString(), "rg-upgrade"
	registerSubscription(t, sub)

	t.Run("hcpOpenShiftVersions_lists_the_catalogue", func(t *testing.T) {
		base := "/subscriptions/" + sub + "/providers/Microsoft.RedHatOpenShift/locations/" + region.Info.Location + "/hcpOpenShiftVersions"
		list := arm(t, http.MethodGet, base+"?api-version="+ver, nil)
		if list.Status != http.StatusOK {
			t.Fatalf("list versions: %d %s", list.Status, list.Raw)
		}
		found := map[string]string{}
		for _, v := range asList(list.Body["value"]) {
			m := v.(map[string]any)
			found[m["name"].(string)] = m["properties"].(map[string]any)["channelGroup"].(string)
		}
		if found["4.19.17"] != "stable" || found["4.20.3"] != "stable" || found["4.21.0"] != "candidate" {
			t.Fatalf("versions %v; want 4.19.17 and 4.20.3 in stable, 4.21.0 in candidate", found)
		}
		get := arm(t, http.MethodGet, base+"/4.20.3?api-version="+ver, nil)
		if get.Status != http.StatusOK || get.Body["properties"].(map[string]any)["enabled"] != true {
			t.Fatalf("get 4.20.3: %d %s", get.Status, get.Raw)
		}
	})

	path := clusterPath(sub, rg, "upgrade")
	cl, mc := createCluster(t, path, clusterBody(sub, rg)) // 4.19 → 4.19.17
	clusterURL := path + "?api-version=" + ver
	poolURL := path + "/nodePools/workers?api-version=" + ver

	pool := arm(t, http.MethodPut, poolURL, map[string]any{"location": region.Info.Location, "properties": map[string]any{
		"version": map[string]any{"id": "4.19", "channelGroup": "stable"}, "replicas": 1, "platform": map[string]any{"vmSize": "Standard_D8s_v3"}}})
	if pool.Status != http.StatusCreated {
		t.Fatalf("PUT node pool: %d %s", pool.Status, pool.Raw)
	}
	if final := waitOperation(t, pool.Header.Get("Azure-AsyncOperation"), 3*time.Minute); final["status"] != "Succeeded" {
		t.Fatalf("node pool create ended %v: %v", final["status"], final["error"])
	}

	for _, tc := range []struct{ name, url, version, target, msg string }{
		{"downgrade", clusterURL, "4.18", "properties.version.id", "Cannot downgrade from 4.19.17 to 4.18"},
		{"version_outside_the_channel_group", clusterURL, "4.21", "properties.version.id", "not available in channel group stable"},
		{"node_pool_ahead_of_the_control_plane", poolURL, "4.20", "", "ahead of the control plane version 4.19.17"},
	} {
		t.Run(tc.name+"_is_400", func(t *testing.T) {
			r := arm(t, http.MethodPatch, tc.url, map[string]any{"properties": map[string]any{"version": map[string]any{"id": tc.version}}})
			e, _ := r.Body["error"].(map[string]any)
			if r.Status != http.StatusBadRequest || !strings.Contains(string(r.Raw), tc.msg) || (tc.target != "" && e["target"] != tc.target) {
				t.Fatalf("PATCH version %s: %d %s; want 400 on %q saying %q", tc.version, r.Status, r.Raw, tc.target, tc.msg)
			}
		})
	}
	if got := arm(t, http.MethodGet, clusterURL, nil); got.Body["properties"].(map[string]any)["provisioningState"] != "Succeeded" {
		t.Fatalf("after refused upgrades the cluster is %s", got.Raw)
	}

	t.Run("control_plane_upgrade_along_an_edge_succeeds", func(t *testing.T) {
		r := arm(t, http.MethodPatch, clusterURL, map[string]any{"properties": map[string]any{"version": map[string]any{"id": "4.20"}}})
		if r.Status != http.StatusAccepted || r.Header.Get("Location") == "" {
			t.Fatalf("PATCH version 4.20: %d %s", r.Status, r.Raw)
		}
		if got := arm(t, http.MethodGet, clusterURL, nil); got.Body["properties"].(map[string]any)["provisioningState"] != "Updating" {
			t.Errorf("during the upgrade the cluster is %s; want Updating", got.Raw)
		}
		if final := waitOperation(t, r.Header.Get("Azure-AsyncOperation"), 5*time.Minute); final["status"] != "Succeeded" {
			t.Fatalf("upgrade ended %v: %v", final["status"], final["error"])
		}
		got := arm(t, http.MethodGet, clusterURL, nil)
		props := got.Body["properties"].(map[string]any)
		if props["provisioningState"] != "Succeeded" || props["version"].(map[string]any)["id"] != "4.20" {
			t.Fatalf("after the upgrade: %s", got.Raw)
		}
		after := csClusters(t, path)[0]
		if after.GetStatus().GetCurrentVersion() != "4.20.3" || after.GetStatus().GetUpgrade().GetState() != csv1.UpgradePolicyState_UPGRADE_POLICY_STATE_COMPLETED {
			t.Fatalf("cluster service: %v", after.GetStatus())
		}
		hcs := hostedClusters(t, mc, cl.GetId())
		if len(hcs) != 1 {
			t.Fatalf("%d HostedClusters", len(hcs))
		}
		image, _, _ := unstructured.NestedString(hcs[0].Object, "spec", "release", "image")
		history, _, _ := unstructured.NestedSlice(hcs[0].Object, "status", "version", "history")
		if !strings.HasSuffix(image, ":4.20.3-multi") || len(history) != 2 || entry(history[0]) != "4.20.3 Completed" || entry(history[1]) != "4.19.17 Completed" {
			t.Fatalf("HostedCluster release %s, history %v", image, history)
		}
	})

	t.Run("node_pool_upgrade_follows", func(t *testing.T) {
		r := arm(t, http.MethodPatch, poolURL, map[string]any{"properties": map[string]any{"version": map[string]any{"id": "4.20"}}})
		if r.Status != http.StatusAccepted {
			t.Fatalf("PATCH node pool version 4.20: %d %s", r.Status, r.Raw)
		}
		if final := waitOperation(t, r.Header.Get("Azure-AsyncOperation"), 3*time.Minute); final["status"] != "Succeeded" {
			t.Fatalf("node pool upgrade ended %v: %v", final["status"], final["error"])
		}
		obj, err := kube(t, mc).Resource(nodePoolGVR).Namespace(cl.GetNamespace()).Get(context.Background(), "workers", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		image, _, _ := unstructured.NestedString(obj.Object, "spec", "release", "image")
		version, _, _ := unstructured.NestedString(obj.Object, "status", "version")
		if !strings.HasSuffix(image, ":4.20.3-multi") || version != "4.20.3" {
			t.Fatalf("NodePool release %s, version %s", image, version)
		}
		policies := upgradePolicies(t, cl.GetId())
		var pools int
		for _, p := range policies {
			if p.GetType() == csv1.UpgradeType_UPGRADE_TYPE_NODE_POOL {
				pools++
				if p.GetFromVersion() != "4.19.17" || p.GetToVersion() != "4.20.3" {
					t.Errorf("node pool policy %v", p)
				}
			}
		}
		if pools != 1 {
			t.Fatalf("upgrade policies %v; want one node pool upgrade", policies)
		}
		eventually(t, 30*time.Second, "node pool upgrade policy COMPLETED", func() error {
			for _, p := range upgradePolicies(t, cl.GetId()) {
				if p.GetType() == csv1.UpgradeType_UPGRADE_TYPE_NODE_POOL && p.GetState() != csv1.UpgradePolicyState_UPGRADE_POLICY_STATE_COMPLETED {
					return fmt.Errorf("policy %s is %s", p.GetId(), p.GetState())
				}
			}
			return nil
		})
	})
}

func entry(h any) string {
	m, _ := h.(map[string]any)
	return fmt.Sprintf("%v %v", m["version"], m["state"])
}

func upgradePolicies(t *testing.T, clusterID string) []*csv1.UpgradePolicy {
	t.Helper()
	conn, err := region.DialClusterServiceAs(pki.SRE)
	if err != nil {
		t.Fatalf("dial cluster service: %v", err)
	}
	defer conn.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	resp, err := csv1.NewUpgradePoliciesClient(conn).ListUpgradePolicies(ctx, &csv1.ListUpgradePoliciesRequest{ClusterId: clusterID})
	if err != nil {
		t.Fatalf("list upgrade policies: %v", err)
	}
	return resp.GetUpgradePolicies()
}
