package frontend

import (
	"slices"
	"strings"
	"testing"

	"github.com/openhcp/openhcp/frontend/pkg/api"
)

// TestNodePoolCreateOnlyFieldsAreTheSpecs holds the rule that a replace may change exactly
// what the api-version's NodePoolUpdate schema names: every other property answers
// PropertyChangeNotAllowed with its path. The expectation is written out per field and checked
// against the specification's update paths, so the frontend keeps no list of its own.
func TestNodePoolCreateOnlyFieldsAreTheSpecs(t *testing.T) {
	v, ok := api.LookupNodePool(testVersion)
	if !ok {
		t.Fatalf("no node pool schema in %s", testVersion)
	}
	inUpdateSchema := func(path string) bool {
		return slices.ContainsFunc(v.NodePoolUpdatePaths(), func(u string) bool { return path == u || strings.HasPrefix(path, u+".") })
	}
	for _, tc := range []struct {
		name      string
		path      string
		value     any
		updatable bool
	}{
		{name: "vm_size_is_create_only", path: "properties.platform.vmSize", value: "Standard_D4s_v3"},
		{name: "os_disk_size_is_create_only", path: "properties.platform.osDisk.sizeGiB", value: 128},
		{name: "availability_zone_is_create_only", path: "properties.platform.availabilityZone", value: "2"},
		{name: "encryption_at_host_is_create_only", path: "properties.platform.enableEncryptionAtHost", value: true},
		{name: "auto_repair_is_create_only", path: "properties.autoRepair", value: false},
		{name: "replicas_may_change", path: "properties.replicas", value: 4, updatable: true},
		{name: "labels_may_change", path: "properties.labels", value: []any{map[string]any{"key": "a", "value": "b"}}, updatable: true},
		{name: "taints_may_change", path: "properties.taints", value: []any{map[string]any{"key": "a", "effect": "NoSchedule"}}, updatable: true},
		{name: "node_drain_timeout_may_change", path: "properties.nodeDrainTimeoutMinutes", value: 30, updatable: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := inUpdateSchema(tc.path); got != tc.updatable {
				t.Fatalf("%s in %s's NodePoolUpdate: %v, the table says %v", tc.path, testVersion, got, tc.updatable)
			}
			e, _ := newNodePoolEnv(t)
			e.readyCluster(t, "c1")
			e.readyPool(t, "c1", "np1", minimalPoolBody())
			resp := e.put(poolPath("c1", "np1"), set(minimalPoolBody(), tc.path, tc.value))
			if tc.updatable {
				if resp.code != 200 {
					t.Fatalf("replace changing %s: %d %s, want 200", tc.path, resp.code, resp.body)
				}
				return
			}
			if resp.code != 400 {
				t.Fatalf("replace changing %s: %d %s, want 400", tc.path, resp.code, resp.body)
			}
			if code, target := resp.armError(t); code != "PropertyChangeNotAllowed" || target != tc.path {
				t.Fatalf("error %s target %q, want PropertyChangeNotAllowed %q: %s", code, target, tc.path, resp.body)
			}
		})
	}
}
