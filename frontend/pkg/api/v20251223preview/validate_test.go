package v20251223preview

import (
	"encoding/json"
	"testing"

	csv1 "github.com/openhcp/openhcp/cluster-service/api/v1"
	"github.com/openhcp/openhcp/frontend/pkg/api"
	"github.com/openhcp/openhcp/internal/arm"
)

const sub = "00000000-0000-0000-0000-000000000001"

func body(mutate func(props map[string]any)) []byte {
	smi := "/subscriptions/" + sub + "/resourceGroups/rg/providers/Microsoft.ManagedIdentity/userAssignedIdentities/smi"
	subnet := "/subscriptions/" + sub + "/resourceGroups/rg/providers/Microsoft.Network/virtualNetworks/vnet/subnets/"
	props := map[string]any{
		"version": map[string]any{"id": "4.19"},
		"platform": map[string]any{
			"subnetId":                subnet + "workers",
			"vnetIntegrationSubnetId": subnet + "integration",
			"networkSecurityGroupId":  "/subscriptions/" + sub + "/resourceGroups/rg/providers/Microsoft.Network/networkSecurityGroups/nsg",
			"operatorsAuthentication": map[string]any{"userAssignedIdentities": map[string]any{
				"controlPlaneOperators": map[string]any{}, "dataPlaneOperators": map[string]any{}, "serviceManagedIdentity": smi}},
		},
	}
	if mutate != nil {
		mutate(props)
	}
	b, _ := json.Marshal(map[string]any{
		"location":   "eastus",
		"identity":   map[string]any{"type": "UserAssigned", "userAssignedIdentities": map[string]any{smi: map[string]any{}}},
		"properties": props,
	})
	return b
}

func target(t *testing.T, err error) string {
	t.Helper()
	ce, ok := arm.AsCloudError(err)
	if !ok || ce.StatusCode != 400 {
		t.Fatalf("want a 400 ARM error, got %v", err)
	}
	return ce.Target
}

func TestDecodeCluster(t *testing.T) {
	v := cluster
	t.Run("platform_managed_key_is_the_default_and_allowed", func(t *testing.T) {
		c, err := v.DecodeCluster(body(func(p map[string]any) {
			p["etcd"] = map[string]any{"dataEncryption": map[string]any{"keyManagementMode": "PlatformManaged"}}
		}))
		if err != nil || c.Etcd.KeyManagementMode != "PlatformManaged" || c.Spec.GetIngressVisibility() != "" {
			t.Fatalf("%v %+v", err, c)
		}
	})
	t.Run("ingress_and_crypto_restrictions_are_unknown_here", func(t *testing.T) {
		for _, f := range []string{"ingress", "cryptoRestrictions"} {
			_, err := v.DecodeCluster(body(func(p map[string]any) { p[f] = map[string]any{} }))
			if got := target(t, err); got != "properties."+f {
				t.Fatalf("target %s for %s", got, f)
			}
		}
	})
	t.Run("kms_visibility_required_on_create", func(t *testing.T) {
		_, err := v.DecodeCluster(body(func(p map[string]any) {
			p["etcd"] = map[string]any{"dataEncryption": map[string]any{"keyManagementMode": "CustomerManaged", "customerManaged": map[string]any{
				"kms": map[string]any{"vaultName": "v", "activeKey": map[string]any{"name": "k", "version": "1"}}}}}
		}))
		if got := target(t, err); got != "properties.etcd.dataEncryption.customerManaged.kms.visibility" {
			t.Fatalf("target %s", got)
		}
	})
	t.Run("fields_added_here_may_stay_empty_on_a_cluster_created_without_them", func(t *testing.T) {
		stored := &api.Cluster{}
		b := body(func(p map[string]any) {
			delete(p["platform"].(map[string]any), "vnetIntegrationSubnetId")
			delete(p["version"].(map[string]any), "id")
		})
		if _, err := v.DecodeClusterUpdate(b, stored); err != nil {
			t.Fatalf("update of a legacy cluster refused: %v", err)
		}
		if _, err := v.DecodeCluster(b); err == nil {
			t.Fatal("create without vnetIntegrationSubnetId and version.id accepted")
		}
	})
	t.Run("preserve_keeps_what_only_newer_versions_set", func(t *testing.T) {
		stored := &api.Cluster{Spec: &csv1.ClusterSpec{IngressVisibility: "Private", CryptoRestrictions: "FIPS"}}
		next, err := v.DecodeCluster(body(nil))
		if err != nil {
			t.Fatal(err)
		}
		v.Preserve(stored, next)
		if next.Spec.GetIngressVisibility() != "Private" || next.Spec.GetCryptoRestrictions() != "FIPS" {
			t.Fatalf("%v", next.Spec)
		}
	})
}
