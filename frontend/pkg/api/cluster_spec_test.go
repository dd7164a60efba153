package api_test

import (
	"testing"

	csv1 "github.com/openhcp/openhcp/cluster-service/api/v1"
	"github.com/openhcp/openhcp/frontend/pkg/api"
	"github.com/openhcp/openhcp/frontend/pkg/api/armpath"
)

// The active KMS key is one key URL in Cluster Service's spec, whichever api-version's layout
// the body has; the resource ID and the operators' resource IDs never reach the spec.
func TestClusterShapesFill(t *testing.T) {
	const want = "https://vault1.vault.azure.net/keys/key1/v1"
	for _, tc := range []struct {
		name, body, keyID string
	}{
		{"vaultName beside the key (2024-06-10-preview)",
			`{"properties":{"etcd":{"dataEncryption":{"customerManaged":{"kms":{"activeKey":{"vaultName":"vault1","name":"key1","version":"v1"}}}}}}}`, want},
		{"vaultName on kms (later versions)",
			`{"properties":{"etcd":{"dataEncryption":{"customerManaged":{"kms":{"vaultName":"vault1","visibility":"Private","activeKey":{"name":"key1","version":"v1"}}}}}}}`, want},
		{"no key version", `{"properties":{"etcd":{"dataEncryption":{"customerManaged":{"kms":{"vaultName":"vault1","activeKey":{"name":"key1"}}}}}}}`, ""},
		{"platform managed", `{"properties":{"etcd":{"dataEncryption":{"keyManagementMode":"PlatformManaged"}}}}`, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			doc, err := armpath.Parse([]byte(tc.body))
			if err != nil {
				t.Fatal(err)
			}
			spec := &csv1.ClusterSpec{}
			if err := armpath.Fill(spec.ProtoReflect(), doc, api.ClusterShapes); err != nil {
				t.Fatal(err)
			}
			if got := spec.GetEtcdEncryptionKeyId(); got != tc.keyID {
				t.Errorf("etcd_encryption_key_id = %q, want %q", got, tc.keyID)
			}
		})
	}
	t.Run("envelope and operators", func(t *testing.T) {
		doc, err := armpath.Parse([]byte(`{"id":"/subscriptions/s/resourceGroups/rg/providers/Microsoft.RedHatOpenShift/hcpOpenShiftClusters/c",
			"properties":{"platform":{"operatorsAuthentication":{"userAssignedIdentities":{"controlPlaneOperators":{"ingress":"/subscriptions/s/resourceGroups/rg/providers/Microsoft.ManagedIdentity/userAssignedIdentities/i"}}}}}}`))
		if err != nil {
			t.Fatal(err)
		}
		spec := &csv1.ClusterSpec{}
		if err := armpath.Fill(spec.ProtoReflect(), doc, api.ClusterShapes); err != nil {
			t.Fatal(err)
		}
		az := spec.GetAzure()
		if az.GetSubscriptionId() != "" || az.GetResourceGroup() != "" || az.GetWorkloadIdentities().GetIngress() != "" {
			t.Errorf("azure spec filled from the envelope or the operators' resource IDs: %v", az)
		}
	})
}
