package api_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/openhcp/openhcp/frontend/pkg/api"
	_ "github.com/openhcp/openhcp/frontend/pkg/api/v20240610preview"
	_ "github.com/openhcp/openhcp/frontend/pkg/api/v20251223preview"
	_ "github.com/openhcp/openhcp/frontend/pkg/api/v20260630preview"
	_ "github.com/openhcp/openhcp/frontend/pkg/api/v20260901preview"
	"github.com/openhcp/openhcp/internal/arm"
)

var nodePoolVersions = []string{"2024-06-10-preview", "2025-12-23-preview", "2026-06-30-preview", "2026-09-01-preview"}

func npVersion(t *testing.T, v string) api.NodePoolVersion {
	t.Helper()
	ver, ok := api.LookupNodePool(v)
	if !ok {
		t.Fatalf("node pool schema of %s not registered", v)
	}
	return ver
}

const poolBody = `{"location":"eastus","properties":{"version":{"id":"4.19"},"replicas":2,"platform":{"vmSize":"Standard_D8s_v3"}}}`

func TestDecodeNodePoolDefaults(t *testing.T) {
	for _, v := range nodePoolVersions {
		t.Run(v, func(t *testing.T) {
			np, err := npVersion(t, v).DecodeNodePool([]byte(poolBody), nil)
			if err != nil {
				t.Fatal(err)
			}
			p := np.Spec
			// Only autoRepair (absent and false look the same to Cluster Service); the rest is
			// left for Cluster Service's model to default (TestNodePoolChannelGroupFromCluster).
			if !p.AutoRepair || p.Platform.EncryptionAtHost || p.Platform.OsDiskSizeGib != 0 ||
				p.Platform.OsDiskStorageAccountType != "" || p.Platform.OsDiskPersistence != "" ||
				p.ChannelGroup != "" || p.Replicas != 2 || p.Autoscaling != nil || p.NodeDrainTimeoutMinutes != nil {
				t.Fatalf("decoded with defaults of its own: %+v", p)
			}
		})
	}
}

// TestDecodeNodePoolValidation: each problem names its field in the version's path; several
// become MultipleErrorsOccurred.
func TestDecodeNodePoolValidation(t *testing.T) {
	for _, tc := range []struct {
		name     string
		versions []string // nil: all
		body     string
		targets  []string
	}{
		{name: "platform_required", body: `{"location":"eastus","properties":{"replicas":1}}`, targets: []string{"properties.platform"}},
		{name: "vm_size_required", body: `{"location":"eastus","properties":{"platform":{}}}`, targets: []string{"properties.platform.vmSize"}},
		{name: "location_required", body: `{"properties":{"platform":{"vmSize":"x"}}}`, targets: []string{"location"}},
		// Only the specification's structural bound (minimum 0) is the frontend's; the pool's
		// size range and the replicas/autoScaling exclusion are Cluster Service's
		// (TestNodePoolScalingAgrees in package frontend).
		{name: "negative_replicas_and_autoscaling", body: `{"location":"eastus","properties":{"replicas":-1,"autoScaling":{"min":-2,"max":-1},"platform":{"vmSize":"x"}}}`,
			targets: []string{"properties.replicas", "properties.autoScaling.min", "properties.autoScaling.max"}},
		{name: "taint_effect_and_key", body: `{"location":"eastus","properties":{"taints":[{"key":"","effect":"Sometimes"}],"platform":{"vmSize":"x"}}}`,
			targets: []string{"properties.taints[0].key", "properties.taints[0].effect"}},
		{name: "duplicate_label_key", body: `{"location":"eastus","properties":{"labels":[{"key":"a"},{"key":"a","value":"b"}],"platform":{"vmSize":"x"}}}`,
			targets: []string{"properties.labels[1].key"}},
		{name: "disk_too_small_and_bad_storage_type", body: `{"location":"eastus","properties":{"platform":{"vmSize":"x","osDisk":{"sizeGiB":32,"diskStorageAccountType":"Ultra"}}}}`,
			targets: []string{"properties.platform.osDisk.sizeGiB", "properties.platform.osDisk.diskStorageAccountType"}},
		{name: "subnet_must_be_a_subnet", body: `{"location":"eastus","properties":{"platform":{"vmSize":"x","subnetId":"/subscriptions/s/resourceGroups/rg/providers/Microsoft.Network/networkSecurityGroups/n"}}}`,
			targets: []string{"properties.platform.subnetId"}},
		// nodeDrainTimeoutMinutes' range (0-10080) and vmSize's length are Cluster Service's rules,
		// which the node pool's specification does not state (TestNodePoolFieldRulesAgree and
		// TestNodePoolBusinessRulesAreClusterServices in package frontend).
		{name: "version_id_required_from_2025_12_23", versions: []string{"2025-12-23-preview", "2026-06-30-preview", "2026-09-01-preview"},
			body: `{"location":"eastus","properties":{"version":{"channelGroup":"stable"},"platform":{"vmSize":"x"}}}`, targets: []string{"properties.version.id"}},
		{name: "disk_type_unknown_before_2025_12_23", versions: []string{"2024-06-10-preview"},
			body: `{"location":"eastus","properties":{"platform":{"vmSize":"x","osDisk":{"diskType":"Managed"}}}}`, targets: []string{"properties.platform.osDisk.diskType"}},
		{name: "disk_over_4095_from_2026_06_30", versions: []string{"2026-06-30-preview", "2026-09-01-preview"},
			body: `{"location":"eastus","properties":{"platform":{"vmSize":"x","osDisk":{"sizeGiB":4096}}}}`, targets: []string{"properties.platform.osDisk.sizeGiB"}},
		{name: "status_unknown_before_2026_06_30", versions: []string{"2024-06-10-preview", "2025-12-23-preview"},
			body: `{"location":"eastus","properties":{"status":{},"platform":{"vmSize":"x"}}}`, targets: []string{"properties.status"}},
	} {
		vs := tc.versions
		if vs == nil {
			vs = nodePoolVersions
		}
		for _, v := range vs {
			t.Run(tc.name+"/"+v, func(t *testing.T) {
				_, err := npVersion(t, v).DecodeNodePool([]byte(tc.body), nil)
				ce, ok := arm.AsCloudError(err)
				if !ok {
					t.Fatalf("want a CloudError, got %v", err)
				}
				var got []string
				if len(ce.Details) > 0 {
					if ce.Code != arm.CodeMultipleErrorsOccurred {
						t.Fatalf("several errors with code %s", ce.Code)
					}
					for _, d := range ce.Details {
						got = append(got, d.Target)
					}
				} else {
					got = []string{ce.Target}
				}
				if strings.Join(got, ",") != strings.Join(tc.targets, ",") {
					t.Fatalf("targets %v, want %v (%s)", got, tc.targets, ce.Message)
				}
			})
		}
	}
}

// TestNodePoolRenderDecodeRoundTrip: what GET shows is accepted back as a PUT body and means the
// same pool, in every version.
func TestNodePoolRenderDecodeRoundTrip(t *testing.T) {
	const full = `{"location":"eastus","tags":{"a":"b"},"properties":{"version":{"id":"4.19.7","channelGroup":"fast"},
		"autoScaling":{"min":2,"max":5},"autoRepair":false,"labels":[{"key":"tier","value":"web"}],
		"taints":[{"key":"k","value":"v","effect":"NoExecute"}],"nodeDrainTimeoutMinutes":0,
		"platform":{"vmSize":"Standard_D8s_v3","availabilityZone":"2","enableEncryptionAtHost":true,
		"subnetId":"/subscriptions/s/resourceGroups/rg/providers/Microsoft.Network/virtualNetworks/v/subnets/w",
		"osDisk":{"sizeGiB":128,"diskStorageAccountType":"StandardSSD_LRS"}}}}`
	for _, v := range nodePoolVersions {
		t.Run(v, func(t *testing.T) {
			ver := npVersion(t, v)
			np, err := ver.DecodeNodePool([]byte(full), nil)
			if err != nil {
				t.Fatal(err)
			}
			id, _ := arm.ParseResourceID("/subscriptions/s/resourceGroups/rg/providers/Microsoft.RedHatOpenShift/hcpOpenShiftClusters/c/nodePools/p")
			np.ID, np.ProvisioningState = id, "Succeeded"
			rendered, err := json.Marshal(ver.RenderNodePool(np))
			if err != nil {
				t.Fatal(err)
			}
			if strings.Contains(string(rendered), `"replicas"`) {
				t.Fatalf("an autoscaled pool shows replicas: %s", rendered)
			}
			back, err := ver.DecodeNodePool(rendered, np)
			if err != nil {
				t.Fatalf("rendered pool is not accepted back: %v\n%s", err, rendered)
			}
			a, _ := json.Marshal(np)
			b, _ := json.Marshal(back)
			if string(a) != string(b) {
				t.Fatalf("round trip changed the pool:\n%s\n%s", a, b)
			}
			if np.Spec.NodeDrainTimeoutMinutes == nil || np.Spec.GetNodeDrainTimeoutMinutes() != 0 {
				t.Fatalf("an explicit nodeDrainTimeoutMinutes 0 is lost")
			}
		})
	}
}

func TestPatchNodePool(t *testing.T) {
	ver := npVersion(t, "2024-06-10-preview")
	stored, err := npVersion(t, "2025-12-23-preview").DecodeNodePool([]byte(`{"location":"eastus","properties":{"version":{"id":"4.19"},"replicas":2,
		"platform":{"vmSize":"x","osDisk":{"diskType":"Ephemeral"}}}}`), nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, patch string
		check       func(t *testing.T, np *api.NodePool)
		wantTarget  string
	}{
		{name: "autoscaling_replaces_replicas", patch: `{"properties":{"autoScaling":{"min":1,"max":3}}}`, check: func(t *testing.T, np *api.NodePool) {
			if np.Spec.Autoscaling == nil || np.Spec.Replicas != 0 || np.Spec.Platform.OsDiskPersistence != "Ephemeral" {
				t.Fatalf("patched %v", np.Spec)
			}
		}},
		{name: "replicas_replaces_autoscaling", patch: `{"properties":{"replicas":4}}`, check: func(t *testing.T, np *api.NodePool) {
			if np.Spec.Autoscaling != nil || np.Spec.Replicas != 4 {
				t.Fatalf("patched %v", np.Spec)
			}
		}},
		{name: "platform_is_not_in_the_update_schema", patch: `{"properties":{"platform":{"vmSize":"y"}}}`, wantTarget: "properties.platform"},
		{name: "auto_repair_is_not_in_the_update_schema", patch: `{"properties":{"autoRepair":false}}`, wantTarget: "properties.autoRepair"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			np, err := api.PatchNodePool(ver, stored, []byte(tc.patch))
			if tc.wantTarget != "" {
				ce, ok := arm.AsCloudError(err)
				if !ok || ce.Target != tc.wantTarget {
					t.Fatalf("error %v, want target %s", err, tc.wantTarget)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			tc.check(t, np)
		})
	}
}
