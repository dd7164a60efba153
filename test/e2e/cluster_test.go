package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// TestClusterLifecycle drives one cluster along the whole path: ARM PUT → Cluster Service →
// Maestro → management cluster → hypershift-sim → back to ARM Succeeded, then deletes it and
// checks that nothing is left anywhere.
func TestClusterLifecycle(t *testing.T) {
	sub, rg := uuid.NewString(), "rg-lifecycle"
	registerSubscription(t, sub)
	path := clusterPath(sub, rg, "c1")

	put := arm(t, http.MethodPut, path, clusterBody(sub, rg))
	if put.Status != http.StatusCreated {
		t.Fatalf("PUT cluster: got %d, want 201: %s", put.Status, put.Raw)
	}
	props, _ := put.Body["properties"].(map[string]any)
	if got := props["provisioningState"]; got != "Accepted" {
		t.Errorf("PUT body provisioningState = %v, want Accepted", got)
	}
	async := put.Header.Get("Azure-AsyncOperation")
	if async == "" {
		t.Fatalf("PUT cluster: no Azure-AsyncOperation header")
	}

	final := waitOperation(t, async, 5*time.Minute)
	if final["status"] != "Succeeded" {
		t.Fatalf("create operation ended %v: %v", final["status"], final["error"])
	}
	for _, f := range []string{"id", "name", "startTime", "endTime"} {
		if _, ok := final[f]; !ok {
			t.Errorf("operation status lacks %q: %v", f, final)
		}
	}

	get := arm(t, http.MethodGet, path, nil)
	if get.Status != http.StatusOK {
		t.Fatalf("GET cluster: %d %s", get.Status, get.Raw)
	}
	if got := get.Body["properties"].(map[string]any)["provisioningState"]; got != "Succeeded" {
		t.Errorf("GET provisioningState = %v, want Succeeded", got)
	}
	// A list shows the status a GET shows: the URLs come from one Cluster Service call per
	// page, not from the store. (2026-06-30-preview, so status.conditions is shown too.)
	const withStatus = "2026-06-30-preview"
	getURLs := statusOf(arm(t, http.MethodGet, path+"?api-version="+withStatus, nil).Body)
	if getURLs.apiURL == "" || getURLs.conditions == 0 || getURLs.consoleURL == "" || getURLs.baseDomain == "" || getURLs.issuerURL == "" {
		t.Errorf("GET of a Succeeded cluster lacks api.url, console.url, dns.baseDomain, platform.issuerUrl or status.conditions: %+v", getURLs)
	}
	if want := "https://console-openshift-console.apps.c1." + getURLs.baseDomain; getURLs.consoleURL != want {
		t.Errorf("console.url = %q, want %q (the console route under the cluster's ingress domain)", getURLs.consoleURL, want)
	}
	list := arm(t, http.MethodGet, fmt.Sprintf("/subscriptions/%s/resourceGroups/%s/providers/Microsoft.RedHatOpenShift/hcpOpenShiftClusters?api-version=%s", sub, rg, withStatus), nil)
	items, _ := list.Body["value"].([]any)
	if list.Status != http.StatusOK || len(items) != 1 {
		t.Fatalf("list: %d, %d items: %s", list.Status, len(items), list.Raw)
	}
	if got := statusOf(items[0].(map[string]any)); got != getURLs {
		t.Errorf("list item shows %+v; GET shows %+v", got, getURLs)
	}

	// The HostedCluster is on the management cluster Cluster Service chose, Available, and
	// nowhere else.
	cs := csClusters(t, path)
	if len(cs) != 1 {
		t.Fatalf("cluster service holds %d clusters for %s, want 1", len(cs), path)
	}
	csID, shard := cs[0].GetId(), cs[0].GetShard()
	chosen := managementCluster(t, shard)
	hcs := hostedClusters(t, chosen, csID)
	if len(hcs) != 1 {
		t.Fatalf("%d HostedClusters for %s on %s, want 1", len(hcs), csID, chosen.Name)
	}
	if got := condition(hcs[0], "Available"); got != "True" {
		t.Errorf("HostedCluster Available = %q, want True", got)
	}
	// The domain and the issuer ARM shows are the ones the HostedCluster was given.
	if got, _, _ := unstructured.NestedString(hcs[0].Object, "spec", "dns", "baseDomain"); got != getURLs.baseDomain {
		t.Errorf("HostedCluster spec.dns.baseDomain = %q, ARM shows %q", got, getURLs.baseDomain)
	}
	if got, _, _ := unstructured.NestedString(hcs[0].Object, "spec", "issuerURL"); got != getURLs.issuerURL {
		t.Errorf("HostedCluster spec.issuerURL = %q, ARM shows %q", got, getURLs.issuerURL)
	}
	for _, mc := range region.Info.ManagementClusters {
		if mc.Name != chosen.Name && len(hostedClusters(t, mc, csID)) != 0 {
			t.Errorf("HostedCluster for %s also found on %s", csID, mc.Name)
		}
	}

	del := arm(t, http.MethodDelete, path, nil)
	if del.Status != http.StatusAccepted {
		t.Fatalf("DELETE cluster: got %d, want 202: %s", del.Status, del.Raw)
	}
	if del.Header.Get("Location") == "" || del.Header.Get("Azure-AsyncOperation") == "" {
		t.Errorf("DELETE lacks Location or Azure-AsyncOperation: %v", del.Header)
	}
	final = waitOperation(t, del.Header.Get("Azure-AsyncOperation"), 5*time.Minute)
	if final["status"] != "Succeeded" {
		t.Fatalf("delete operation ended %v: %v", final["status"], final["error"])
	}
	if r := arm(t, http.MethodGet, path, nil); r.Status != http.StatusNotFound {
		t.Errorf("GET after delete: got %d, want 404: %s", r.Status, r.Raw)
	}
	if r := arm(t, http.MethodDelete, path, nil); r.Status != http.StatusNoContent {
		t.Errorf("DELETE of a deleted cluster: got %d, want 204", r.Status)
	}
	eventually(t, time.Minute, "HostedCluster, AppliedManifestWork and Maestro resource bundle gone", func() error {
		if n := len(hostedClusters(t, chosen, csID)); n != 0 {
			return fmt.Errorf("%d HostedClusters left on %s", n, chosen.Name)
		}
		if names, err := appliedWorksFor(t, chosen, csID); err != nil || len(names) != 0 {
			return fmt.Errorf("AppliedManifestWorks left on %s: %v (err %v)", chosen.Name, names, err)
		}
		return maestroBundlesGone(maestroRESTClient(t), csID)
	})
	if n := len(csClusters(t, path)); n != 0 {
		t.Errorf("cluster service still holds %d clusters for %s", n, path)
	}
}

// TestClusterServiceCrashDuringCreate kills Cluster Service right after it accepted a create,
// starts it again, and checks the cluster still reaches Succeeded with exactly one HostedCluster.
func TestClusterServiceCrashDuringCreate(t *testing.T) {
	needsOwnRegion(t, "kills and restarts its Cluster Service")
	sub, rg := uuid.NewString(), "rg-crash"
	registerSubscription(t, sub)
	path := clusterPath(sub, rg, "crashy")

	put := arm(t, http.MethodPut, path, clusterBody(sub, rg))
	if put.Status != http.StatusCreated {
		t.Fatalf("PUT cluster: got %d, want 201: %s", put.Status, put.Raw)
	}
	if err := region.Kill("cluster-service"); err != nil {
		t.Fatalf("kill cluster-service: %v", err)
	}
	time.Sleep(2 * time.Second)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := region.Restart(ctx, "cluster-service"); err != nil {
		t.Fatalf("restart cluster-service: %v", err)
	}

	final := waitOperation(t, put.Header.Get("Azure-AsyncOperation"), 5*time.Minute)
	if final["status"] != "Succeeded" {
		t.Fatalf("create operation after a Cluster Service crash ended %v: %v", final["status"], final["error"])
	}
	cs := csClusters(t, path)
	if len(cs) != 1 {
		t.Fatalf("cluster service holds %d clusters for %s, want exactly 1", len(cs), path)
	}
	total := 0
	for _, mc := range region.Info.ManagementClusters {
		total += len(hostedClusters(t, mc, cs[0].GetId()))
	}
	if total != 1 {
		t.Fatalf("%d HostedClusters exist for %s across all management clusters, want exactly 1", total, path)
	}

	del := arm(t, http.MethodDelete, path, nil)
	if del.Status != http.StatusAccepted {
		t.Fatalf("DELETE cluster: got %d, want 202: %s", del.Status, del.Raw)
	}
	if final := waitOperation(t, del.Header.Get("Azure-AsyncOperation"), 5*time.Minute); final["status"] != "Succeeded" {
		t.Fatalf("delete operation ended %v: %v", final["status"], final["error"])
	}
}

// maestroBundlesGone checks Maestro's REST API holds no resource bundle for the cluster.
func maestroBundlesGone(c *http.Client, csID string) error {
	resp, err := c.Get(region.Info.Maestro.REST + "/api/maestro/v1/resource-bundles?size=1000")
	if err != nil {
		return fmt.Errorf("list maestro resource bundles: %w", err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("list maestro resource bundles: %d %s", resp.StatusCode, b)
	}
	var list struct {
		Items []json.RawMessage `json:"items"`
	}
	if err := json.Unmarshal(b, &list); err != nil {
		return fmt.Errorf("decode maestro resource bundles: %w", err)
	}
	for _, it := range list.Items {
		if strings.Contains(string(it), csID) {
			return fmt.Errorf("maestro still holds a resource bundle for %s", csID)
		}
	}
	return nil
}

// shownStatus is what a cluster body shows of Cluster Service's status.
type shownStatus struct {
	consoleURL, apiURL    string
	baseDomain, issuerURL string
	conditions            int
}

func statusOf(body map[string]any) shownStatus {
	props, _ := body["properties"].(map[string]any)
	console, _ := props["console"].(map[string]any)
	api, _ := props["api"].(map[string]any)
	st, _ := props["status"].(map[string]any)
	conds, _ := st["conditions"].([]any)
	var out shownStatus
	out.consoleURL, _ = console["url"].(string)
	out.apiURL, _ = api["url"].(string)
	dns, _ := props["dns"].(map[string]any)
	platform, _ := props["platform"].(map[string]any)
	out.baseDomain, _ = dns["baseDomain"].(string)
	out.issuerURL, _ = platform["issuerUrl"].(string)
	out.conditions = len(conds)
	return out
}
