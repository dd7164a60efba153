package api_test

import (
	"slices"
	"testing"

	"github.com/openhcp/openhcp/frontend/pkg/api"
)

// TestUpdatableFieldsFollowTheSpecification: what a write may change after creation, generated
// from each version's x-ms-mutability (specClusterUpdatable), is what the versions listed by
// hand before, as internal-model paths (the KMS key's version beside the vault's, not under
// activeKey).
func TestUpdatableFieldsFollowTheSpecification(t *testing.T) {
	common := []string{
		"identity",
		"properties.api.authorizedCidrs",
		"properties.autoscaling",
		"properties.etcd.dataEncryption.customerManaged.kms.version",
		"properties.nodeDrainTimeoutMinutes",
		"properties.platform.operatorsAuthentication",
		"properties.version.channelGroup",
	}
	since20251223 := append(slices.Clone(common), "properties.imageDigestMirrors", "properties.version.id")
	for version, want := range map[string][]string{
		"2024-06-10-preview": common,
		"2025-12-23-preview": since20251223,
		"2026-06-30-preview": since20251223,
		"2026-09-01-preview": since20251223,
	} {
		v, ok := api.Lookup(version)
		if !ok {
			t.Fatalf("no api-version %s", version)
		}
		got := v.UpdatableFields()
		slices.Sort(got)
		slices.Sort(want)
		if !slices.Equal(got, want) {
			t.Errorf("%s: UpdatableFields %q, want %q", version, got, want)
		}
	}
}
