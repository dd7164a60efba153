package api_test

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/openhcp/openhcp/frontend/pkg/api"
	"github.com/openhcp/openhcp/internal/arm"
)

// storedNodePoolDocuments are node pool resource documents' properties as the frontend wrote them
// before the node pool model became Cluster Service's spec: they must still read, render in every
// api-version and be written back as they were.
var storedNodePoolDocuments = []struct{ name, doc string }{
	{"every_property", `{"identity":{"type":"UserAssigned","userAssignedIdentities":{"/subscriptions/s/resourceGroups/rg/providers/Microsoft.ManagedIdentity/userAssignedIdentities/i":{}}},
		"properties":{"version":{"id":"4.19.7","channelGroup":"fast"},"platform":{"subnetId":"/subscriptions/s/resourceGroups/rg/providers/Microsoft.Network/virtualNetworks/v/subnets/w",
		"vmSize":"Standard_D8s_v3","enableEncryptionAtHost":true,"osDisk":{"sizeGiB":128,"diskStorageAccountType":"StandardSSD_LRS",
		"encryptionSetId":"/subscriptions/s/resourceGroups/rg/providers/Microsoft.Compute/diskEncryptionSets/d","diskType":"Ephemeral"},"availabilityZone":"2"},
		"replicas":3,"autoRepair":false,"labels":[{"key":"tier","value":"web"},{"key":"empty","value":""}],
		"taints":[{"key":"k","value":"v","effect":"NoExecute"},{"key":"k2","effect":"NoSchedule"}],"nodeDrainTimeoutMinutes":0}}`},
	{"autoscaled", `{"properties":{"version":{"id":"4.19","channelGroup":"stable"},"platform":{"vmSize":"Standard_D8s_v3","enableEncryptionAtHost":false,
		"osDisk":{"sizeGiB":64,"diskStorageAccountType":"Premium_LRS","diskType":"Managed"}},"replicas":0,"autoRepair":true,"autoScaling":{"min":1,"max":5},"nodeDrainTimeoutMinutes":45}}`},
	{"before_disk_type_without_version_id", `{"properties":{"version":{"channelGroup":"candidate"},"platform":{"vmSize":"Standard_D8s_v3","enableEncryptionAtHost":false,
		"osDisk":{"sizeGiB":64,"diskStorageAccountType":"Premium_LRS"}},"replicas":2,"autoRepair":true}}`},
	{"stable_without_version_id", `{"properties":{"version":{"channelGroup":"stable"},"platform":{"vmSize":"Standard_D8s_v3","enableEncryptionAtHost":false,
		"osDisk":{"sizeGiB":64,"diskStorageAccountType":"Premium_LRS","diskType":"Managed"}},"replicas":1,"autoRepair":true}}`},
}

// TestStoredNodePoolDocumentsReadAndRender: each stored document reads into the model, renders in
// every api-version exactly as testdata/nodepool_documents.golden records (made by the frontend
// that wrote these documents), and what it is written back as reads and renders the same.
func TestStoredNodePoolDocumentsReadAndRender(t *testing.T) {
	id, _ := arm.ParseResourceID("/subscriptions/s/resourceGroups/rg/providers/Microsoft.RedHatOpenShift/hcpOpenShiftClusters/c/nodePools/p")
	var got bytes.Buffer
	for _, d := range storedNodePoolDocuments {
		t.Logf("%s", d.name)
		var np api.NodePool
		if err := json.Unmarshal([]byte(d.doc), &np); err != nil {
			t.Fatalf("%s: read: %v", d.name, err)
		}
		np.Default()
		np.ID, np.Location, np.ProvisioningState = id, "eastus", "Succeeded"
		renders := renderAll(t, &np)
		got.WriteString(renders)
		// Written back and read again, the pool renders the same.
		written, err := json.Marshal(&np)
		if err != nil {
			t.Fatalf("%s: write: %v", d.name, err)
		}
		var again api.NodePool
		if err := json.Unmarshal(written, &again); err != nil {
			t.Fatalf("%s: read what was written: %v\n%s", d.name, err, written)
		}
		again.Default()
		again.ID, again.Location, again.ProvisioningState = id, "eastus", "Succeeded"
		if r := renderAll(t, &again); r != renders {
			t.Fatalf("%s: written and read again renders differently:\n%s\nwant\n%s", d.name, r, renders)
		}
	}
	matchStoredDocumentsGolden(t, "nodepool_documents.golden", got.String())
}

// matchStoredDocumentsGolden compares got, stored documents as rendered, with testdata/name
// (made by the frontend that wrote them; UPDATE_GOLDEN=1 records it).
func matchStoredDocumentsGolden(t *testing.T, name, got string) {
	t.Helper()
	golden := filepath.Join("testdata", name)
	if os.Getenv("UPDATE_GOLDEN") != "" {
		if err := os.WriteFile(golden, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	if got != string(want) {
		t.Fatalf("stored documents read or render differently:\n got:\n%s\nwant:\n%s", got, want)
	}
}

// renderAll is np rendered in every api-version, one line each.
func renderAll(t *testing.T, np *api.NodePool) string {
	t.Helper()
	var b strings.Builder
	for _, v := range nodePoolVersions {
		r, err := json.Marshal(npVersion(t, v).RenderNodePool(np))
		if err != nil {
			t.Fatalf("render %s: %v", v, err)
		}
		b.WriteString(v + " " + canonicalJSON(t, r) + "\n")
	}
	return b.String()
}

// canonicalJSON is b with its keys sorted, so the comparison is of content, not of key order.
func canonicalJSON(t *testing.T, b []byte) string {
	t.Helper()
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatal(err)
	}
	// Labels are a set by key (Cluster Service's spec holds them as a map): their order is
	// not part of the pool.
	if props, ok := v.(map[string]any)["properties"].(map[string]any); ok {
		if labels, ok := props["labels"].([]any); ok {
			sort.Slice(labels, func(i, j int) bool {
				return labels[i].(map[string]any)["key"].(string) < labels[j].(map[string]any)["key"].(string)
			})
		}
	}
	out, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(out)
}
