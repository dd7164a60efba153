package e2e

import (
	"context"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/google/uuid"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// TestNodePoolThroughARM drives a node pool through the frontend as ARM would, with
// 2025-12-23-preview: created on a cluster (with encryption at host, a disk encryption set, an
// ephemeral OS disk and its own drain timeout), Succeeded once its nodes are up; scaled by PUT;
// switched to autoscaling by PATCH; its drain timeout changed by PATCH; deleted, after which
// GET is 404. Each step's ARM state is checked along with the NodePool on the management cluster.
func TestNodePoolThroughARM(t *testing.T) {
	const ver = "2025-12-23-preview"
	sub, rg := uuid.NewString(), "rg-nodepool-arm"
	registerSubscription(t, sub)
	path := clusterPath(sub, rg, "armpool")
	cl, mc := createCluster(t, path, clusterBody(sub, rg))
	poolPath := path + "/nodePools/workers?api-version=" + ver
	des := "/subscriptions/" + sub + "/resourceGroups/" + rg + "/providers/Microsoft.Compute/diskEncryptionSets/workers-des"
	ctx := context.Background()
	kubePool := func() (*unstructured.Unstructured, error) {
		return kube(t, mc).Resource(nodePoolGVR).Namespace(cl.GetNamespace()).Get(ctx, "workers", metav1.GetOptions{})
	}
	state := func() string {
		r := arm(t, http.MethodGet, poolPath, nil)
		if r.Status != http.StatusOK {
			t.Fatalf("GET node pool: %d %s", r.Status, r.Raw)
		}
		return r.Body["properties"].(map[string]any)["provisioningState"].(string)
	}
	waitSucceeded := func(what, asyncURL string) {
		t.Helper()
		if final := waitOperation(t, asyncURL, 3*time.Minute); final["status"] != "Succeeded" {
			t.Fatalf("%s ended %v: %v", what, final["status"], final["error"])
		}
		if got := state(); got != "Succeeded" {
			t.Fatalf("after %s the node pool is %s, want Succeeded", what, got)
		}
	}
	kubeReplicas := func(want int64) {
		t.Helper()
		obj, err := kubePool()
		if err != nil {
			t.Fatalf("NodePool on %s: %v", mc.Name, err)
		}
		if got, _, _ := unstructured.NestedInt64(obj.Object, "status", "replicas"); got != want || condition(*obj, "Ready") != "True" {
			t.Fatalf("NodePool status.replicas %d Ready %q, want %d and True", got, condition(*obj, "Ready"), want)
		}
	}

	body := map[string]any{
		"location": region.Info.Location,
		"properties": map[string]any{
			"version":  map[string]any{"id": "4.19", "channelGroup": "stable"},
			"replicas": 2,
			"labels":   []map[string]string{{"key": "tier", "value": "web"}},
			"platform": map[string]any{"vmSize": "Standard_D8s_v3", "enableEncryptionAtHost": true,
				"osDisk": map[string]any{"diskType": "Ephemeral", "encryptionSetId": des}},
			"nodeDrainTimeoutMinutes": 20,
		},
	}
	create := arm(t, http.MethodPut, poolPath, body)
	if create.Status != http.StatusCreated || create.Header.Get("Azure-AsyncOperation") == "" {
		t.Fatalf("PUT node pool: got %d, want 201 with Azure-AsyncOperation: %s", create.Status, create.Raw)
	}
	if got := create.Body["properties"].(map[string]any)["provisioningState"]; got != "Accepted" {
		t.Fatalf("create answered provisioningState %v, want Accepted", got)
	}
	waitSucceeded("create", create.Header.Get("Azure-AsyncOperation"))
	kubeReplicas(2)
	// The platform's encryption and disk type and the pool's own drain timeout are on the
	// NodePool, under HyperShift's names.
	kubeSpec := func(path ...string) string {
		t.Helper()
		obj, err := kubePool()
		if err != nil {
			t.Fatalf("NodePool on %s: %v", mc.Name, err)
		}
		v, _, _ := unstructured.NestedString(obj.Object, append([]string{"spec"}, path...)...)
		return v
	}
	for _, f := range []struct {
		path []string
		want string
	}{
		{[]string{"platform", "azure", "encryptionAtHost"}, "Enabled"},
		{[]string{"platform", "azure", "osDisk", "persistence"}, "Ephemeral"},
		{[]string{"platform", "azure", "osDisk", "encryptionSetID"}, des},
		{[]string{"nodeDrainTimeout"}, "20m0s"},
	} {
		if got := kubeSpec(f.path...); got != f.want {
			t.Errorf("NodePool spec.%v = %q, want %q", f.path, got, f.want)
		}
	}

	// Scale to 3 by PUT: 200 Updating, then Succeeded only with 3 nodes.
	body["properties"].(map[string]any)["replicas"] = 3
	scale := arm(t, http.MethodPut, poolPath, body)
	if scale.Status != http.StatusOK || scale.Body["properties"].(map[string]any)["provisioningState"] != "Updating" {
		t.Fatalf("PUT scale: got %d: %s", scale.Status, scale.Raw)
	}
	// The same PUT again (a client's retry) joins the scale: 200 and the same operation.
	// Another change while the scale runs is refused with 409.
	if again := arm(t, http.MethodPut, poolPath, body); again.Status != http.StatusOK ||
		again.Header.Get("Azure-AsyncOperation") != scale.Header.Get("Azure-AsyncOperation") {
		t.Errorf("the same PUT during the scale: got %d with operation %q, want 200 with %q: %s",
			again.Status, again.Header.Get("Azure-AsyncOperation"), scale.Header.Get("Azure-AsyncOperation"), again.Raw)
	}
	body["properties"].(map[string]any)["replicas"] = 4
	if other := arm(t, http.MethodPut, poolPath, body); other.Status != http.StatusConflict {
		t.Errorf("another PUT during the scale: got %d, want 409: %s", other.Status, other.Raw)
	}
	body["properties"].(map[string]any)["replicas"] = 3
	waitSucceeded("scale", scale.Header.Get("Azure-AsyncOperation"))
	kubeReplicas(3)

	// Autoscaling by PATCH: 202, then Succeeded with the NodePool autoscaled.
	patch := arm(t, http.MethodPatch, poolPath, map[string]any{"properties": map[string]any{"autoScaling": map[string]any{"min": 1, "max": 4}}})
	if patch.Status != http.StatusAccepted || patch.Header.Get("Location") == "" {
		t.Fatalf("PATCH autoscaling: got %d: %s", patch.Status, patch.Raw)
	}
	waitSucceeded("autoscaling", patch.Header.Get("Azure-AsyncOperation"))
	result := armURL(t, http.MethodGet, patch.Header.Get("Location"), nil)
	if props := result.Body["properties"].(map[string]any); result.Status != http.StatusOK || props["autoScaling"] == nil || props["replicas"] != nil {
		t.Fatalf("PATCH result: %d %s", result.Status, result.Raw)
	}
	if obj, err := kubePool(); err != nil {
		t.Fatal(err)
	} else if max, _, _ := unstructured.NestedInt64(obj.Object, "spec", "autoScaling", "max"); max != 4 {
		t.Fatalf("NodePool spec.autoScaling.max %d, want 4", max)
	}

	// nodeDrainTimeoutMinutes is updatable: a PATCH is an Update operation that ends Succeeded
	// with the NodePool's spec.nodeDrainTimeout changed.
	drain := arm(t, http.MethodPatch, poolPath, map[string]any{"properties": map[string]any{"nodeDrainTimeoutMinutes": 45}})
	if drain.Status != http.StatusAccepted {
		t.Fatalf("PATCH nodeDrainTimeoutMinutes: got %d: %s", drain.Status, drain.Raw)
	}
	waitSucceeded("drain timeout", drain.Header.Get("Azure-AsyncOperation"))
	eventually(t, time.Minute, "NodePool spec.nodeDrainTimeout 45m0s", func() error {
		if got := kubeSpec("nodeDrainTimeout"); got != "45m0s" {
			return fmt.Errorf("spec.nodeDrainTimeout %q", got)
		}
		return nil
	})

	list := arm(t, http.MethodGet, path+"/nodePools?api-version="+ver, nil)
	if list.Status != http.StatusOK || len(list.Body["value"].([]any)) != 1 {
		t.Fatalf("list node pools: %d %s", list.Status, list.Raw)
	}

	del := arm(t, http.MethodDelete, poolPath, nil)
	if del.Status != http.StatusAccepted {
		t.Fatalf("DELETE node pool: got %d: %s", del.Status, del.Raw)
	}
	if got := state(); got != "Deleting" {
		t.Errorf("node pool is %s right after DELETE, want Deleting", got)
	}
	if final := waitOperation(t, del.Header.Get("Azure-AsyncOperation"), 3*time.Minute); final["status"] != "Succeeded" {
		t.Fatalf("delete ended %v: %v", final["status"], final["error"])
	}
	if gone := arm(t, http.MethodGet, poolPath, nil); gone.Status != http.StatusNotFound {
		t.Fatalf("GET after delete: %d %s", gone.Status, gone.Raw)
	}
	eventually(t, time.Minute, "NodePool gone from the management cluster", func() error {
		if _, err := kubePool(); !apierrors.IsNotFound(err) {
			return fmt.Errorf("NodePool still there (err %v)", err)
		}
		return nil
	})
}
