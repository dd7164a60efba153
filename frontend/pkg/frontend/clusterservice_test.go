package frontend

import (
	"strings"
	"testing"

	csv1 "github.com/openhcp/openhcp/cluster-service/api/v1"
	"github.com/openhcp/openhcp/frontend/pkg/api"
	"github.com/openhcp/openhcp/internal/arm"
)

func TestClusterSpecWorkloadIdentities(t *testing.T) {
	operators := map[string]string{
		"image-registry": "ir", "ingress": "in", "file-csi-driver": "fi", "disk-csi-driver": "di",
		"cluster-api-azure": "capz", "cloud-controller-manager": "ccm", "cloud-network-config": "net",
	}
	build := func(skip string) *api.Cluster {
		id, _ := arm.ParseResourceID(clusterPath("rg", "c"))
		c := &api.Cluster{ID: id, Identity: &api.ManagedServiceIdentity{UserAssignedIdentities: map[string]*api.UserAssignedIdentity{}}}
		c.OperatorIdentities.ControlPlaneOperators = map[string]string{}
		for op, name := range operators {
			rid := "/subscriptions/s/resourceGroups/rg/providers/Microsoft.ManagedIdentity/userAssignedIdentities/" + name
			c.OperatorIdentities.ControlPlaneOperators[op] = rid
			if op != skip {
				// ARM's spelling of the key may differ in case from the operator map's.
				c.Identity.UserAssignedIdentities[strings.ToLower(rid)] = &api.UserAssignedIdentity{ClientID: "client-" + name}
			}
		}
		return c
	}
	wi := clusterSpec(build(""), "").Azure.WorkloadIdentities
	if wi == nil || wi.NodePoolManagement != "client-capz" || wi.CloudProvider != "client-ccm" || wi.Network != "client-net" ||
		wi.ImageRegistry != "client-ir" || wi.File != "client-fi" || wi.Disk != "client-di" || wi.Ingress != "client-in" {
		t.Fatalf("workload identities %v", wi)
	}
	if wi := clusterSpec(build("ingress"), "").Azure.WorkloadIdentities; wi != nil {
		t.Fatalf("partial set sent: %v", wi)
	}
}

// clusterSpec starts from the properties the spec holds and adds what the model keeps elsewhere
// (the envelope, the tenant, the customer-managed key) in Cluster Service's form.
func TestClusterSpecAddsEnvelopeAndKey(t *testing.T) {
	id, _ := arm.ParseResourceID(clusterPath("rg", "c"))
	c := &api.Cluster{ID: id, Location: "West Europe", Spec: &csv1.ClusterSpec{ChannelGroup: "candidate",
		ApiAuthorizedCidrs: []string{"192.0.2.0/24", "198.51.100.7"}, CryptoRestrictions: api.CryptoFIPS}}
	c.Etcd = api.EtcdDataEncryptionProfile{KeyManagementMode: api.KeyManagementCustomer,
		CustomerManaged: &api.CustomerManagedEncryptionProfile{EncryptionType: api.EncryptionTypeKMS,
			KMS: &api.KMSKey{VaultName: "vault1", Visibility: api.VisibilityPrivate, Name: "key1", Version: "v1"}}}
	spec := clusterSpec(c, "tenant1")
	az := spec.GetAzure()
	for _, tc := range []struct{ name, got, want string }{
		{"subscription", az.GetSubscriptionId(), id.SubscriptionID},
		{"resource group", az.GetResourceGroup(), "rg"},
		{"location", az.GetLocation(), "westeurope"},
		{"tenant", az.GetTenantId(), "tenant1"},
		{"channel group", spec.GetChannelGroup(), "candidate"},
		{"crypto restrictions", spec.GetCryptoRestrictions(), api.CryptoFIPS},
		{"authorized CIDRs", strings.Join(spec.GetApiAuthorizedCidrs(), ","), "192.0.2.0/24,198.51.100.7/32"},
		{"key", spec.GetEtcdEncryptionKeyId(), "https://vault1.vault.azure.net/keys/key1/v1"},
		{"key vault visibility", spec.GetEtcdEncryptionKeyVaultVisibility(), api.VisibilityPrivate},
	} {
		if tc.got != tc.want {
			t.Errorf("%s = %q, want %q", tc.name, tc.got, tc.want)
		}
	}
	if spec.Autoscaling != nil {
		t.Errorf("autoscaling sent with no value given: %v", spec.Autoscaling)
	}
	c.Etcd.KeyManagementMode = api.KeyManagementPlatform
	if k := clusterSpec(c, "tenant1").GetEtcdEncryptionKeyId(); k != "" {
		t.Errorf("platform-managed cluster sent key %q", k)
	}
}
