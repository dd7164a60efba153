package v20260630preview

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/openhcp/openhcp/frontend/pkg/api"
	"github.com/openhcp/openhcp/internal/arm"
)

const sub = "00000000-0000-0000-0000-000000000001"

func minimal() map[string]any {
	smi := "/subscriptions/" + sub + "/resourceGroups/rg/providers/Microsoft.ManagedIdentity/userAssignedIdentities/smi"
	subnet := "/subscriptions/" + sub + "/resourceGroups/rg/providers/Microsoft.Network/virtualNetworks/vnet/subnets/"
	return map[string]any{
		"location": "eastus",
		"identity": map[string]any{"type": "UserAssigned", "userAssignedIdentities": map[string]any{smi: map[string]any{}}},
		"properties": map[string]any{
			"version": map[string]any{"id": "4.19"},
			"platform": map[string]any{
				"subnetId":                subnet + "workers",
				"vnetIntegrationSubnetId": subnet + "integration",
				"networkSecurityGroupId":  "/subscriptions/" + sub + "/resourceGroups/rg/providers/Microsoft.Network/networkSecurityGroups/nsg",
				"operatorsAuthentication": map[string]any{"userAssignedIdentities": map[string]any{
					"controlPlaneOperators": map[string]any{}, "dataPlaneOperators": map[string]any{}, "serviceManagedIdentity": smi}},
			},
		},
	}
}

// with sets a dotted path of body (nil deletes).
func with(body map[string]any, path string, v any) map[string]any {
	keys := strings.Split(path, ".")
	cur := body
	for _, k := range keys[:len(keys)-1] {
		next, ok := cur[k].(map[string]any)
		if !ok {
			next = map[string]any{}
			cur[k] = next
		}
		cur = next
	}
	if v == nil {
		delete(cur, keys[len(keys)-1])
	} else {
		cur[keys[len(keys)-1]] = v
	}
	return body
}

func cmk(kms map[string]any) map[string]any {
	return map[string]any{"dataEncryption": map[string]any{"keyManagementMode": "CustomerManaged",
		"customerManaged": map[string]any{"encryptionType": "KMS", "kms": kms}}}
}

func TestDecodeClusterDefaults(t *testing.T) {
	b, _ := json.Marshal(minimal())
	c, err := SameSchema(APIVersion).DecodeCluster(b)
	if err != nil {
		t.Fatal(err)
	}
	p := c.Spec
	// Ingress, crypto restrictions and the channel group are Cluster Service's to default.
	if p.GetIngressVisibility() != "" || p.GetCryptoRestrictions() != "" || c.Etcd.KeyManagementMode != "PlatformManaged" ||
		p.GetAzure().GetVnetIntegrationSubnetId() == "" || p.GetChannelGroup() != "" {
		t.Fatalf("defaults: %v %+v", p, c.Etcd)
	}
}

func TestValidateTargets(t *testing.T) {
	long := strings.Repeat("a", 256)
	for name, tc := range map[string]struct {
		body    map[string]any
		targets []string
	}{
		"version_id_required":          {with(minimal(), "properties.version.id", nil), []string{"properties.version.id"}},
		"version_required":             {with(minimal(), "properties.version", nil), []string{"properties.version"}},
		"vnet_integration_required":    {with(minimal(), "properties.platform.vnetIntegrationSubnetId", nil), []string{"properties.platform.vnetIntegrationSubnetId"}},
		"vnet_integration_not_subnet":  {with(minimal(), "properties.platform.vnetIntegrationSubnetId", "/subscriptions/"+sub+"/resourceGroups/rg/providers/Microsoft.Network/networkSecurityGroups/nsg"), []string{"properties.platform.vnetIntegrationSubnetId"}},
		"ingress_enum":                 {with(minimal(), "properties.ingress", map[string]any{"type": "Internal"}), []string{"properties.ingress.type"}},
		"crypto_enum":                  {with(minimal(), "properties.cryptoRestrictions", "fips"), []string{"properties.cryptoRestrictions"}},
		"key_mode_required":            {with(minimal(), "properties.etcd", map[string]any{"dataEncryption": map[string]any{}}), []string{"properties.etcd.dataEncryption.keyManagementMode"}},
		"platform_managed_not_in_enum": {with(minimal(), "properties.etcd", map[string]any{"dataEncryption": map[string]any{"keyManagementMode": "PlatformManaged"}}), []string{"properties.etcd.dataEncryption.keyManagementMode"}},
		"customer_managed_needs_details": {with(minimal(), "properties.etcd", map[string]any{"dataEncryption": map[string]any{"keyManagementMode": "CustomerManaged"}}),
			[]string{"properties.etcd.dataEncryption.customerManaged"}},
		"kms_fields_required": {with(minimal(), "properties.etcd", cmk(map[string]any{"activeKey": map[string]any{}})), []string{
			"properties.etcd.dataEncryption.customerManaged.kms.activeKey.name", "properties.etcd.dataEncryption.customerManaged.kms.activeKey.version",
			"properties.etcd.dataEncryption.customerManaged.kms.vaultName", "properties.etcd.dataEncryption.customerManaged.kms.visibility"}},
		"kms_limits": {with(minimal(), "properties.etcd", cmk(map[string]any{"vaultName": long, "visibility": "Hidden", "activeKey": map[string]any{"name": "", "version": "v"}})), []string{
			"properties.etcd.dataEncryption.customerManaged.kms.activeKey.name", "properties.etcd.dataEncryption.customerManaged.kms.vaultName",
			"properties.etcd.dataEncryption.customerManaged.kms.visibility"}},
		"kms_vault_name_not_in_key": {with(minimal(), "properties.etcd", cmk(map[string]any{"vaultName": "v", "visibility": "Public", "activeKey": map[string]any{"name": "k", "version": "1", "vaultName": "v"}})),
			[]string{"properties.etcd.dataEncryption.customerManaged.kms.activeKey.vaultName"}},
		"mirrors": {with(minimal(), "properties.imageDigestMirrors", []any{
			map[string]any{"source": "quay.io", "mirrors": []any{}},
			map[string]any{"source": "quay.io", "mirrors": []any{long}},
			map[string]any{"mirrors": []any{"m"}},
		}), []string{"properties.imageDigestMirrors[0].mirrors", "properties.imageDigestMirrors[1].mirrors[0]", "properties.imageDigestMirrors[1].source", "properties.imageDigestMirrors[2].source"}},
		"status_is_read_only_and_ignored": {with(minimal(), "properties.status", map[string]any{"conditions": []any{map[string]any{"type": "Available", "status": "True"}}}), nil},
	} {
		t.Run(name, func(t *testing.T) {
			b, _ := json.Marshal(tc.body)
			_, err := SameSchema(APIVersion).DecodeCluster(b)
			if tc.targets == nil {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			ce, ok := arm.AsCloudError(err)
			if !ok || ce.StatusCode != 400 {
				t.Fatalf("want a 400 ARM error, got %v", err)
			}
			var got []string
			if ce.Code == "MultipleErrorsOccurred" {
				for _, d := range ce.Details {
					got = append(got, d.Target)
				}
			} else {
				got = []string{ce.Target}
			}
			if strings.Join(sorted(got), " ") != strings.Join(sorted(tc.targets), " ") {
				t.Fatalf("targets %v, want %v (%v)", got, tc.targets, err)
			}
		})
	}
}

func sorted(s []string) []string {
	out := append([]string(nil), s...)
	for i := range out {
		for j := i + 1; j < len(out); j++ {
			if out[j] < out[i] {
				out[i], out[j] = out[j], out[i]
			}
		}
	}
	return out
}

func TestPatchUpdateSchema(t *testing.T) {
	b, _ := json.Marshal(with(minimal(), "properties.etcd", cmk(map[string]any{"vaultName": "v", "visibility": "Public", "activeKey": map[string]any{"name": "k", "version": "1"}})))
	v := SameSchema(APIVersion)
	stored, err := v.DecodeCluster(b)
	if err != nil {
		t.Fatal(err)
	}
	next, err := v.PatchCluster(stored, []byte(`{"properties":{"etcd":{"dataEncryption":{"customerManaged":{"kms":{"activeKey":{"version":"2"}}}}},"imageDigestMirrors":[{"source":"a","mirrors":["b"]}]}}`))
	if err != nil {
		t.Fatalf("patch inside the update schema refused: %v", err)
	}
	if k := next.Etcd.CustomerManaged.KMS; k.Version != "2" || k.Name != "k" || k.Visibility != "Public" || len(next.Spec.GetImageDigestMirrors()) != 1 {
		t.Fatalf("patched %v %+v", next.Spec, k)
	}
	_, err = v.PatchCluster(stored, []byte(`{"properties":{"etcd":{"dataEncryption":{"customerManaged":{"kms":{"activeKey":{"name":"other"}}}}}}}`))
	if ce, ok := arm.AsCloudError(err); !ok || ce.Target != "properties.etcd.dataEncryption.customerManaged.kms.activeKey.name" {
		t.Fatalf("key name is not in the update schema: %v", err)
	}
	if got := v.ExternalPath("properties.etcd.dataEncryption.customerManaged.kms.vaultName"); got != "properties.etcd.dataEncryption.customerManaged.kms.vaultName" {
		t.Fatalf("external path %s", got)
	}
	var _ api.Version = v
}
