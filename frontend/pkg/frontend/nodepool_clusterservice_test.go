package frontend

import (
	"encoding/json"
	"fmt"
	"testing"

	"google.golang.org/protobuf/proto"

	csv1 "github.com/openhcp/openhcp/cluster-service/api/v1"
	"github.com/openhcp/openhcp/frontend/pkg/api"
	"github.com/openhcp/openhcp/frontend/pkg/api/armpath"
	"github.com/openhcp/openhcp/internal/armdoc"
)

const testDES = "/subscriptions/00000000-0000-0000-0000-000000000001/resourceGroups/rg/providers/Microsoft.Compute/diskEncryptionSets/des-1"

// modelPool is a pool as the api-versions decode it from these ARM properties, changed by mutate
// first.
func modelPool(t *testing.T, mutate func(props map[string]any)) *api.NodePool {
	t.Helper()
	doc, err := armpath.Parse([]byte(`{"properties":{"version":{"id":"4.19","channelGroup":"stable"},"replicas":2,"autoRepair":true,
		"platform":{"vmSize":"Standard_D8s_v3","osDisk":{"sizeGiB":64,"diskStorageAccountType":"Premium_LRS","diskType":"Managed"}}}}`))
	if err != nil {
		t.Fatal(err)
	}
	props := doc["properties"].(map[string]any)
	if mutate != nil {
		mutate(props)
	}
	// Numbers as a body holds them.
	b, _ := json.Marshal(doc)
	doc, _ = armpath.Parse(b)
	return api.NodePoolFromARM(doc)
}

func platformOf(props map[string]any) map[string]any { return props["platform"].(map[string]any) }
func osDiskOf(props map[string]any) map[string]any {
	return platformOf(props)["osDisk"].(map[string]any)
}

// TestNodePoolSpecMapping: every node pool property has its place in Cluster Service's spec.
func TestNodePoolSpecMapping(t *testing.T) {
	for _, tc := range []struct {
		name   string
		mutate func(map[string]any)
		check  func(*csv1.NodePoolSpec) bool
	}{
		{"channel_group", func(p map[string]any) { p["version"].(map[string]any)["channelGroup"] = "candidate" },
			func(s *csv1.NodePoolSpec) bool { return s.GetChannelGroup() == "candidate" }},
		{"drain_timeout_unset_is_unset", func(p map[string]any) {},
			func(s *csv1.NodePoolSpec) bool { return s.NodeDrainTimeoutMinutes == nil }},
		{"drain_timeout_zero_is_sent", func(p map[string]any) { p["nodeDrainTimeoutMinutes"] = 0 },
			func(s *csv1.NodePoolSpec) bool {
				return s.NodeDrainTimeoutMinutes != nil && s.GetNodeDrainTimeoutMinutes() == 0
			}},
		{"drain_timeout", func(p map[string]any) { p["nodeDrainTimeoutMinutes"] = 30 },
			func(s *csv1.NodePoolSpec) bool { return s.GetNodeDrainTimeoutMinutes() == 30 }},
		{"encryption_at_host", func(p map[string]any) { platformOf(p)["enableEncryptionAtHost"] = true },
			func(s *csv1.NodePoolSpec) bool { return s.GetPlatform().GetEncryptionAtHost() }},
		{"encryption_set", func(p map[string]any) { osDiskOf(p)["encryptionSetId"] = testDES },
			func(s *csv1.NodePoolSpec) bool { return s.GetPlatform().GetOsDiskEncryptionSetId() == testDES }},
		{"managed_disk_is_persistent", func(p map[string]any) {},
			func(s *csv1.NodePoolSpec) bool { return s.GetPlatform().GetOsDiskPersistence() == "Persistent" }},
		{"ephemeral_disk", func(p map[string]any) { osDiskOf(p)["diskType"] = api.DiskTypeEphemeral },
			func(s *csv1.NodePoolSpec) bool { return s.GetPlatform().GetOsDiskPersistence() == "Ephemeral" }},
		{"no_disk_type_leaves_cluster_services_default", func(p map[string]any) { delete(osDiskOf(p), "diskType") },
			func(s *csv1.NodePoolSpec) bool { return s.GetPlatform().GetOsDiskPersistence() == "" }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if s := nodePoolSpec(modelPool(t, tc.mutate)); !tc.check(s) {
				t.Fatalf("spec %v", s)
			}
		})
	}
}

// TestNodePoolUpdate: what the frontend sends, applied by Cluster Service's merge to its spec,
// replaces what ARM lets an update change and keeps the create-only platform Cluster Service
// resolved, for a PUT (a full update) and a PATCH (only what differs from the document).
func TestNodePoolUpdate(t *testing.T) {
	cur := &csv1.NodePoolSpec{VersionId: "4.19.17", ChannelGroup: "stable", Replicas: 2, AutoRepair: true, NodeDrainTimeoutMinutes: proto.Int32(10),
		Platform: &csv1.NodePoolPlatform{VmSize: "Standard_D8s_v3", SubnetId: "/resolved/subnet", EncryptionAtHost: true, OsDiskEncryptionSetId: testDES, OsDiskPersistence: "Ephemeral"}}
	drain10 := func(p map[string]any) { p["nodeDrainTimeoutMinutes"] = 10 }
	stored := modelPool(t, drain10)
	for _, tc := range []struct {
		name   string
		mutate func(map[string]any)
		check  func(*csv1.NodePoolSpec) bool
	}{
		{"drain_timeout_replaced", func(p map[string]any) { p["nodeDrainTimeoutMinutes"] = 60 },
			func(s *csv1.NodePoolSpec) bool { return s.GetNodeDrainTimeoutMinutes() == 60 }},
		{"drain_timeout_removed_goes_back_to_the_clusters", func(p map[string]any) { delete(p, "nodeDrainTimeoutMinutes") },
			func(s *csv1.NodePoolSpec) bool { return s.NodeDrainTimeoutMinutes == nil }},
		{"channel_group_replaced", func(p map[string]any) { p["version"].(map[string]any)["channelGroup"] = "candidate" },
			func(s *csv1.NodePoolSpec) bool { return s.GetChannelGroup() == "candidate" }},
		{"empty_channel_group_and_version_keep_the_pools", func(p map[string]any) { delete(p, "version") },
			func(s *csv1.NodePoolSpec) bool {
				return s.GetChannelGroup() == "stable" && s.GetVersionId() == "4.19.17"
			}},
		// An ARM body that switches to autoScaling has no replicas (a PATCH drops them).
		{"autoscaling_replaces_replicas", func(p map[string]any) {
			delete(p, "replicas")
			p["autoScaling"] = map[string]any{"min": 1, "max": 3}
		},
			func(s *csv1.NodePoolSpec) bool { return s.GetReplicas() == 0 && s.GetAutoscaling().GetMax() == 3 }},
		{"platform_kept_from_cluster_service", func(p map[string]any) {
			p["platform"] = map[string]any{"vmSize": "Standard_D8s_v3"}
		},
			func(s *csv1.NodePoolSpec) bool { return proto.Equal(s.GetPlatform(), cur.GetPlatform()) }},
	} {
		for _, patch := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/patch=%v", tc.name, patch), func(t *testing.T) {
				np := modelPool(t, func(p map[string]any) { drain10(p); tc.mutate(p) })
				if s := csv1.ApplyNodePoolUpdate(cur, nodePoolUpdate(stored, np, patch)); !tc.check(s) {
					t.Fatalf("merged %v", s)
				}
			})
		}
	}
	// A PATCH names only what changed: a field Cluster Service holds differently from the
	// document (an SRE's scale not yet recorded) is left alone; a PUT replaces it.
	scaled := proto.Clone(cur).(*csv1.NodePoolSpec)
	scaled.Replicas = 7
	labelled := modelPool(t, func(p map[string]any) {
		drain10(p)
		p["labels"] = []any{map[string]any{"key": "team", "value": "a"}}
	})
	if s := csv1.ApplyNodePoolUpdate(scaled, nodePoolUpdate(stored, labelled, true)); s.GetReplicas() != 7 || s.GetLabels()["team"] != "a" {
		t.Fatalf("PATCH of labels gave %v; want the replicas Cluster Service holds kept", s)
	}
	if s := csv1.ApplyNodePoolUpdate(scaled, nodePoolUpdate(stored, labelled, false)); s.GetReplicas() != 2 || s.GetLabels()["team"] != "a" {
		t.Fatalf("PUT gave %v; want the body's replicas", s)
	}
}

// TestNodePoolNewFieldsReachClusterService: a create sends the platform's encryption and disk
// type; a PATCH of nodeDrainTimeoutMinutes is an UpdateNodePool and an Update operation, not
// a write the frontend keeps to itself.
func TestNodePoolNewFieldsReachClusterService(t *testing.T) {
	e, fake := newNodePoolEnv(t)
	e.readyCluster(t, "c1")
	body := minimalPoolBody()
	body["properties"].(map[string]any)["nodeDrainTimeoutMinutes"] = 15
	body["properties"].(map[string]any)["version"] = map[string]any{"id": "4.19", "channelGroup": "stable"}
	body["properties"].(map[string]any)["platform"] = map[string]any{"vmSize": "Standard_D8s_v3", "enableEncryptionAtHost": true,
		"osDisk": map[string]any{"encryptionSetId": testDES, "diskType": "Ephemeral"}}
	resp := e.do("PUT", poolPath("c1", "np1")+"?api-version=2025-12-23-preview", mustJSON(body), nil)
	if resp.code != 201 {
		t.Fatalf("PUT: %d %s", resp.code, resp.body)
	}
	e.finish(opIDFrom(t, resp.header.Get("Azure-AsyncOperation")), armdoc.StateSucceeded, nil)
	rd, _ := e.resource(poolPath("c1", "np1"))
	s := fake.pool(rd.InternalID).GetSpec()
	if s.GetNodeDrainTimeoutMinutes() != 15 || s.GetChannelGroup() != "stable" || !s.GetPlatform().GetEncryptionAtHost() ||
		s.GetPlatform().GetOsDiskEncryptionSetId() != testDES || s.GetPlatform().GetOsDiskPersistence() != "Ephemeral" {
		t.Fatalf("CreateNodePool got %v", s)
	}

	patch := e.do("PATCH", poolPath("c1", "np1")+"?api-version=2025-12-23-preview", mustJSON(map[string]any{"properties": map[string]any{"nodeDrainTimeoutMinutes": 90}}), nil)
	if patch.code != 202 {
		t.Fatalf("PATCH: %d %s", patch.code, patch.body)
	}
	op, _ := e.operation(opIDFrom(t, patch.header.Get("Azure-AsyncOperation")))
	p := fake.pool(rd.InternalID)
	if p.GetSpec().GetNodeDrainTimeoutMinutes() != 90 || op.Request != armdoc.OperationUpdate || op.Status == armdoc.StateSucceeded || op.InternalRevision != p.GetRevision() {
		t.Fatalf("after PATCH: Cluster Service spec %v, operation %+v", p.GetSpec(), op)
	}
	if !p.GetSpec().GetPlatform().GetEncryptionAtHost() || p.GetSpec().GetPlatform().GetOsDiskPersistence() != "Ephemeral" {
		t.Fatalf("the update lost the create-only platform: %v", p.GetSpec().GetPlatform())
	}
}
