package e2e

import (
	"context"
	"fmt"
	"net/http"
	"reflect"
	"testing"
	"time"

	"github.com/google/uuid"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// TestClusterConfigurationThroughARM creates a cluster with imageDigestMirrors and a private
// ingress and sees them on the HostedCluster, then PATCHes autoscaling and nodeDrainTimeoutMinutes
// and PUTs api.authorizedCidrs (the PATCH schema has no api): each is 202/200 → Succeeded, and
// the HostedCluster (and NodePool) on the management cluster has the new values.
func TestClusterConfigurationThroughARM(t *testing.T) {
	const ver = "2026-06-30-preview" // ingress exists from this api-version on
	sub, rg := uuid.NewString(), "rg-config"
	registerSubscription(t, sub)
	path := clusterPath(sub, rg, "configured")
	url := path + "?api-version=" + ver

	body := clusterBody(sub, rg)
	props := body["properties"].(map[string]any)
	props["imageDigestMirrors"] = []any{map[string]any{"source": "quay.io/openshift-release-dev", "mirrors": []any{"mirror.example.com/ocp"}}}
	props["ingress"] = map[string]any{"type": "Private"}
	props["platform"].(map[string]any)["vnetIntegrationSubnetId"] = "/subscriptions/" + sub + "/resourceGroups/" + rg + "/providers/Microsoft.Network/virtualNetworks/vnet/subnets/integration"
	cl, mc := createCluster(t, url, body)
	hc := func(t *testing.T) unstructured.Unstructured {
		t.Helper()
		hcs := hostedClusters(t, mc, cl.GetId())
		if len(hcs) != 1 {
			t.Fatalf("%d HostedClusters for %s", len(hcs), cl.GetId())
		}
		return hcs[0]
	}

	t.Run("create_puts_mirrors_and_private_ingress_on_the_hosted_cluster", func(t *testing.T) {
		h := hc(t)
		mirrors, _, _ := unstructured.NestedSlice(h.Object, "spec", "imageContentSources")
		want := []any{map[string]any{"source": "quay.io/openshift-release-dev", "mirrors": []any{"mirror.example.com/ocp"}}}
		if !reflect.DeepEqual(mirrors, want) || h.GetAnnotations()["hypershift.openshift.io/private-ingress-controller"] != "true" {
			t.Fatalf("imageContentSources %v, annotations %v", mirrors, h.GetAnnotations())
		}
	})

	pool := arm(t, http.MethodPut, path+"/nodePools/workers?api-version="+ver, map[string]any{"location": region.Info.Location, "properties": map[string]any{
		"version": map[string]any{"id": "4.19", "channelGroup": "stable"}, "replicas": 1, "platform": map[string]any{"vmSize": "Standard_D8s_v3"}}})
	if pool.Status != http.StatusCreated {
		t.Fatalf("PUT node pool: %d %s", pool.Status, pool.Raw)
	}
	if final := waitOperation(t, pool.Header.Get("Azure-AsyncOperation"), 3*time.Minute); final["status"] != "Succeeded" {
		t.Fatalf("node pool create ended %v: %v", final["status"], final["error"])
	}

	t.Run("patch_autoscaling_and_drain_timeout_succeeds_and_reaches_the_management_cluster", func(t *testing.T) {
		r := arm(t, http.MethodPatch, url, map[string]any{"properties": map[string]any{
			"nodeDrainTimeoutMinutes": 45, "autoscaling": map[string]any{"maxNodesTotal": 30, "maxNodeProvisionTimeSeconds": 600}}})
		if r.Status != http.StatusAccepted {
			t.Fatalf("PATCH: %d %s", r.Status, r.Raw)
		}
		if final := waitOperation(t, r.Header.Get("Azure-AsyncOperation"), 3*time.Minute); final["status"] != "Succeeded" {
			t.Fatalf("update ended %v: %v", final["status"], final["error"])
		}
		h := hc(t)
		maxNodes, _, _ := unstructured.NestedInt64(h.Object, "spec", "autoscaling", "maxNodesTotal")
		provision, _, _ := unstructured.NestedString(h.Object, "spec", "autoscaling", "maxNodeProvisionTime")
		if maxNodes != 30 || provision != "600s" {
			t.Fatalf("HostedCluster autoscaling maxNodesTotal %d maxNodeProvisionTime %q", maxNodes, provision)
		}
		eventually(t, time.Minute, "NodePool nodeDrainTimeout 45m", func() error {
			np, err := kube(t, mc).Resource(nodePoolGVR).Namespace(h.GetNamespace()).Get(context.Background(), "workers", metav1.GetOptions{})
			if err != nil {
				return err
			}
			if d, _, _ := unstructured.NestedString(np.Object, "spec", "nodeDrainTimeout"); d != "45m0s" {
				return fmt.Errorf("nodeDrainTimeout %q", d)
			}
			return nil
		})
	})

	t.Run("put_authorized_cidrs_succeeds_and_reaches_the_hosted_cluster", func(t *testing.T) {
		got := arm(t, http.MethodGet, url, nil)
		body := got.Body
		body["properties"].(map[string]any)["api"].(map[string]any)["authorizedCidrs"] = []any{"192.0.2.0/24", "198.51.100.7"}
		r := arm(t, http.MethodPut, url, body)
		if r.Status != http.StatusOK {
			t.Fatalf("PUT: %d %s", r.Status, r.Raw)
		}
		if final := waitOperation(t, r.Header.Get("Azure-AsyncOperation"), 3*time.Minute); final["status"] != "Succeeded" {
			t.Fatalf("update ended %v: %v", final["status"], final["error"])
		}
		blocks, _, _ := unstructured.NestedStringSlice(hc(t).Object, "spec", "networking", "apiServer", "allowedCIDRBlocks")
		if !reflect.DeepEqual(blocks, []string{"192.0.2.0/24", "198.51.100.7/32"}) {
			t.Fatalf("allowedCIDRBlocks %v", blocks)
		}
	})

	t.Run("patch_identities_succeeds_and_the_hosted_cluster_gets_the_workload_identities", func(t *testing.T) {
		// Each control plane operator gets its own identity, with the client ID ARM fills in
		// when it forwards the request; they replace the region's development placeholder.
		mi := "/subscriptions/" + sub + "/resourceGroups/" + rg + "/providers/Microsoft.ManagedIdentity/userAssignedIdentities/"
		operators := map[string]string{"image-registry": "imageRegistry", "ingress": "ingress", "file-csi-driver": "file", "disk-csi-driver": "disk",
			"cluster-api-azure": "nodePoolManagement", "cloud-controller-manager": "cloudProvider", "cloud-network-config": "network"}
		uais, cp, want := map[string]any{}, map[string]any{}, map[string]string{}
		i := 0
		for op, field := range operators {
			i++
			clientID := fmt.Sprintf("7e57c1d0-0000-4000-8000-%012d", i)
			uais[mi+op] = map[string]any{"clientId": clientID, "principalId": uuid.NewString()}
			cp[op] = mi + op
			want[field] = clientID
		}
		// The cluster-api-azure operator's identity until now (ClusterBody's capz) is no longer
		// used, so it is no longer assigned.
		uais[mi+"capz"] = nil
		r := arm(t, http.MethodPatch, url, map[string]any{
			"identity": map[string]any{"type": "UserAssigned", "userAssignedIdentities": uais},
			"properties": map[string]any{"platform": map[string]any{"operatorsAuthentication": map[string]any{
				"userAssignedIdentities": map[string]any{"controlPlaneOperators": cp}}}},
		})
		if r.Status != http.StatusAccepted {
			t.Fatalf("PATCH: %d %s", r.Status, r.Raw)
		}
		if final := waitOperation(t, r.Header.Get("Azure-AsyncOperation"), 3*time.Minute); final["status"] != "Succeeded" {
			t.Fatalf("update ended %v: %v", final["status"], final["error"])
		}
		wi, _, _ := unstructured.NestedMap(hc(t).Object, "spec", "platform", "azure", "azureAuthenticationConfig", "workloadIdentities")
		for field, clientID := range want {
			if got, _, _ := unstructured.NestedString(wi, field, "clientID"); got != clientID {
				t.Errorf("HostedCluster workloadIdentities.%s.clientID = %q, want %q", field, got, clientID)
			}
		}
		got := arm(t, http.MethodGet, url, nil)
		if got.Status != http.StatusOK || got.Body["properties"].(map[string]any)["provisioningState"] != "Succeeded" {
			t.Fatalf("GET after the update: %d %s", got.Status, got.Raw)
		}
	})
}

// TestClusterUpdateRetriedAfterAClusterServiceOutageSucceeds (docs/reliability.md, defect 9, for
// a cluster): a PATCH that reaches the frontend while Cluster Service is down is answered 503,
// and its operation stays, as the change may have been taken. The same PATCH sent again once
// Cluster Service is back, as the Azure SDK retries after a 503, joins that operation (202),
// which ends Succeeded through the backend's rule with the change in Cluster Service: not a
// 409, and not UpdateNotRecorded 2 min later.
func TestClusterUpdateRetriedAfterAClusterServiceOutageSucceeds(t *testing.T) {
	needsOwnRegion(t, "kills and restarts its Cluster Service")
	sub, rg := uuid.NewString(), "rg-retry"
	registerSubscription(t, sub)
	path := clusterPath(sub, rg, "retried")
	createCluster(t, path, clusterBody(sub, rg))
	patch := map[string]any{"properties": map[string]any{"nodeDrainTimeoutMinutes": 45}}

	if err := region.Kill("cluster-service"); err != nil {
		t.Fatalf("kill cluster-service: %v", err)
	}
	up := false
	restart := func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		if err := region.Restart(ctx, "cluster-service"); err != nil {
			t.Fatalf("restart cluster-service: %v", err)
		}
		up = true
	}
	t.Cleanup(func() {
		if !up {
			restart()
		}
	})
	first := arm(t, http.MethodPatch, path, patch)
	if first.Status != http.StatusServiceUnavailable || first.Header.Get("Retry-After") == "" {
		t.Fatalf("PATCH while Cluster Service is down: %d %s, want 503 with Retry-After", first.Status, first.Raw)
	}
	restart()

	// The client's retries, until an answer that is not a 503 (the frontend's connection to
	// Cluster Service may take a few seconds to come back).
	var retry armResponse
	for deadline := time.Now().Add(2 * time.Minute); ; time.Sleep(time.Second) {
		retry = arm(t, http.MethodPatch, path, patch)
		if retry.Status != http.StatusServiceUnavailable || time.Now().After(deadline) {
			break
		}
	}
	if retry.Status != http.StatusAccepted {
		t.Fatalf("the same PATCH again once Cluster Service is back: %d %s, want 202", retry.Status, retry.Raw)
	}
	if final := waitOperation(t, retry.Header.Get("Azure-AsyncOperation"), 5*time.Minute); final["status"] != "Succeeded" {
		t.Fatalf("the retried update ended %v: %v", final["status"], final["error"])
	}
	if cs := csClusters(t, path); len(cs) != 1 || cs[0].GetSpec().GetNodeDrainTimeoutMinutes() != 45 {
		t.Fatalf("Cluster Service holds %v, want one cluster with nodeDrainTimeoutMinutes 45", cs)
	}
	got := arm(t, http.MethodGet, path, nil)
	if props, _ := got.Body["properties"].(map[string]any); props["provisioningState"] != "Succeeded" || props["nodeDrainTimeoutMinutes"] != float64(45) {
		t.Fatalf("GET after the retried update: %d %s", got.Status, got.Raw)
	}
}
