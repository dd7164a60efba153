package api_test

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/openhcp/openhcp/frontend/pkg/api"
	"github.com/openhcp/openhcp/internal/arm"
)

// storedClusterDocuments are cluster resource documents' identity and properties as the frontend
// wrote them while clusters had their own profile model (frontend/pkg/api/cluster.go): they must
// still read, render in every api-version and be written back as they were when the cluster
// model becomes Cluster Service's spec.
var storedClusterDocuments = []struct{ name, doc string }{
	{"example_written_by_2024_06_10", `{"identity":{"type":"UserAssigned","userAssignedIdentities":{"/subscriptions/00000000-0000-0000-0000-000000000000/resourceGroups/rg1/providers/Microsoft.ManagedIdentity/userAssignedIdentities/capz":{},"/subscriptions/00000000-0000-0000-0000-000000000000/resourceGroups/rg1/providers/Microsoft.ManagedIdentity/userAssignedIdentities/disk":{},"/subscriptions/00000000-0000-0000-0000-000000000000/resourceGroups/rg1/providers/Microsoft.ManagedIdentity/userAssignedIdentities/service":{}}},"properties":{"version":{"id":"4.19","channelGroup":"stable"},"dns":{},"network":{"networkType":"OVNKubernetes","podCidr":"10.128.0.0/14","serviceCidr":"172.30.0.0/16","machineCidr":"10.0.0.0/16","hostPrefix":23},"console":{},"api":{"visibility":"Public"},"platform":{"managedResourceGroup":"managed-rg1","subnetId":"/subscriptions/00000000-0000-0000-0000-000000000000/resourceGroups/rg1/providers/Microsoft.Network/virtualNetworks/vnet/subnets/workers","outboundType":"LoadBalancer","networkSecurityGroupId":"/subscriptions/00000000-0000-0000-0000-000000000000/resourceGroups/rg1/providers/Microsoft.Network/networkSecurityGroups/nsg","operatorsAuthentication":{"userAssignedIdentities":{"controlPlaneOperators":{"cluster-api-azure":"/subscriptions/00000000-0000-0000-0000-000000000000/resourceGroups/rg1/providers/Microsoft.ManagedIdentity/userAssignedIdentities/capz"},"dataPlaneOperators":{"disk-csi-driver":"/subscriptions/00000000-0000-0000-0000-000000000000/resourceGroups/rg1/providers/Microsoft.ManagedIdentity/userAssignedIdentities/disk"},"serviceManagedIdentity":"/subscriptions/00000000-0000-0000-0000-000000000000/resourceGroups/rg1/providers/Microsoft.ManagedIdentity/userAssignedIdentities/service"}}},"autoscaling":{"zeroIsValue":true},"etcd":{"dataEncryption":{"keyManagementMode":"PlatformManaged"}},"nodeDrainTimeoutMinutes":0,"clusterImageRegistry":{"state":"Enabled"},"ingress":{"type":"Public"},"cryptoRestrictions":"None"}}`},
	{"example_written_by_2026_09_01", `{"identity":{"type":"UserAssigned","userAssignedIdentities":{"/subscriptions/00000000-0000-0000-0000-000000000000/resourceGroups/rg1/providers/Microsoft.ManagedIdentity/userAssignedIdentities/capz":{},"/subscriptions/00000000-0000-0000-0000-000000000000/resourceGroups/rg1/providers/Microsoft.ManagedIdentity/userAssignedIdentities/disk":{},"/subscriptions/00000000-0000-0000-0000-000000000000/resourceGroups/rg1/providers/Microsoft.ManagedIdentity/userAssignedIdentities/service":{}}},"properties":{"version":{"id":"4.19","channelGroup":"stable"},"dns":{},"network":{"networkType":"OVNKubernetes","podCidr":"10.128.0.0/14","serviceCidr":"172.30.0.0/16","machineCidr":"10.0.0.0/16","hostPrefix":23},"console":{},"api":{"visibility":"Public"},"platform":{"managedResourceGroup":"managed-rg1","subnetId":"/subscriptions/00000000-0000-0000-0000-000000000000/resourceGroups/rg1/providers/Microsoft.Network/virtualNetworks/vnet/subnets/workers","outboundType":"LoadBalancer","networkSecurityGroupId":"/subscriptions/00000000-0000-0000-0000-000000000000/resourceGroups/rg1/providers/Microsoft.Network/networkSecurityGroups/nsg","vnetIntegrationSubnetId":"/subscriptions/00000000-0000-0000-0000-000000000000/resourceGroups/rg1/providers/Microsoft.Network/virtualNetworks/vnet/subnets/vi","operatorsAuthentication":{"userAssignedIdentities":{"controlPlaneOperators":{"cluster-api-azure":"/subscriptions/00000000-0000-0000-0000-000000000000/resourceGroups/rg1/providers/Microsoft.ManagedIdentity/userAssignedIdentities/capz"},"dataPlaneOperators":{"disk-csi-driver":"/subscriptions/00000000-0000-0000-0000-000000000000/resourceGroups/rg1/providers/Microsoft.ManagedIdentity/userAssignedIdentities/disk"},"serviceManagedIdentity":"/subscriptions/00000000-0000-0000-0000-000000000000/resourceGroups/rg1/providers/Microsoft.ManagedIdentity/userAssignedIdentities/service"}}},"autoscaling":{"zeroIsValue":true},"etcd":{"dataEncryption":{"keyManagementMode":"PlatformManaged"}},"nodeDrainTimeoutMinutes":0,"clusterImageRegistry":{"state":"Enabled"},"ingress":{"type":"Public"},"cryptoRestrictions":"None"}}`},
}

// TestStoredClusterDocumentsReadAndRender: each stored document reads into the model, renders in
// every api-version exactly as testdata/cluster_documents.golden records (made by the frontend
// that wrote these documents), and what it is written back as reads and renders the same.
func TestStoredClusterDocumentsReadAndRender(t *testing.T) {
	id, _ := arm.ParseResourceID("/subscriptions/s/resourceGroups/rg/providers/Microsoft.RedHatOpenShift/hcpOpenShiftClusters/c")
	var got bytes.Buffer
	for _, d := range storedClusterDocuments {
		var c api.Cluster
		if err := json.Unmarshal([]byte(d.doc), &c); err != nil {
			t.Fatalf("%s: read: %v", d.name, err)
		}
		c.Default()
		c.ID, c.Location, c.ProvisioningState = id, "eastus", "Succeeded"
		renders := renderClusterAll(t, &c)
		got.WriteString(renders)
		written, err := json.Marshal(&c)
		if err != nil {
			t.Fatalf("%s: write: %v", d.name, err)
		}
		var again api.Cluster
		if err := json.Unmarshal(written, &again); err != nil {
			t.Fatalf("%s: read what was written: %v\n%s", d.name, err, written)
		}
		again.Default()
		again.ID, again.Location, again.ProvisioningState = id, "eastus", "Succeeded"
		if r := renderClusterAll(t, &again); r != renders {
			t.Fatalf("%s: written and read again renders differently:\n%s\nwant\n%s", d.name, r, renders)
		}
	}
	golden := filepath.Join("testdata", "cluster_documents.golden")
	if os.Getenv("UPDATE_GOLDEN") != "" {
		if err := os.WriteFile(golden, got.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	if got.String() != string(want) {
		t.Fatalf("stored documents read or render differently:\n got:\n%s\nwant:\n%s", got.String(), want)
	}
}

// renderClusterAll is c rendered in every api-version, one line each.
func renderClusterAll(t *testing.T, c *api.Cluster) string {
	t.Helper()
	var b strings.Builder
	for _, v := range nodePoolVersions {
		ver, ok := api.Lookup(v)
		if !ok {
			t.Fatalf("cluster schema of %s not registered", v)
		}
		r, err := json.Marshal(ver.RenderCluster(c))
		if err != nil {
			t.Fatalf("render %s: %v", v, err)
		}
		b.WriteString(v + " " + canonicalJSON(t, r) + "\n")
	}
	return b.String()
}
