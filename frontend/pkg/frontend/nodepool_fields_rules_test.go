//go:build !fuzzlean

// Left out of the fuzzing build (hack/fuzz-long.sh builds with -tags fuzzlean): this file links
// Cluster Service's server, whose coverage counters every fuzz execution would scan.

package frontend

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	csv1 "github.com/openhcp/openhcp/cluster-service/api/v1"
	"github.com/openhcp/openhcp/cluster-service/pkg/model"
	"github.com/openhcp/openhcp/cluster-service/pkg/versions"
	"github.com/openhcp/openhcp/frontend/pkg/api"
)

// fieldsRulesVersion is the newest api-version with a node pool schema; every property the
// test below covers is in it (osDisk.diskType since 2025-12-23-preview).
const fieldsRulesVersion = "2026-09-01-preview"

// poolFieldCase is one value of one node pool property: what it is in the ARM body (arm sets it
// in the body's properties) and what the same value is in Cluster Service's spec (cs sets it in
// the spec the frontend would send).
type poolFieldCase struct {
	name string
	arm  func(props map[string]any)
	cs   func(spec *csv1.NodePoolSpec)
	// unsendable: the spec cannot carry the value (0 or "" in a field without presence is
	// Cluster Service's "not given", which it defaults); the frontend must refuse it, naming
	// target.
	unsendable string
}

// TestNodePoolFieldRulesAgree: for every node pool property other than the pool's size (which
// TestNodePoolScalingAgrees covers) with a rule in the frontend or in Cluster Service, values
// around each bound and hostile shapes, the frontend's answer to a PUT through the newest
// api-version (a real Cluster Service behind it) and Cluster Service's own rule
// (model.ValidateNodePoolSpec, which its server runs on a create) agree: both accept, or both
// refuse, every field the frontend names being one Cluster Service names.
func TestNodePoolFieldRulesAgree(t *testing.T) {
	e := newCSEnv(t)
	cl := e.csCluster(t, "c1", func(b map[string]any) { set(b, "properties.version.id", "4.20.3") })
	catalogue, err := versions.Default()
	if err != nil {
		t.Fatal(err)
	}
	request := (&csv1.CreateNodePoolRequest{}).ProtoReflect().Descriptor()

	platform := func(p map[string]any) map[string]any { return p["platform"].(map[string]any) }
	osDisk := func(p map[string]any) map[string]any {
		pl := platform(p)
		if pl["osDisk"] == nil {
			pl["osDisk"] = map[string]any{}
		}
		return pl["osDisk"].(map[string]any)
	}
	var cases []poolFieldCase
	add := func(name string, arm func(map[string]any), cs func(*csv1.NodePoolSpec)) {
		cases = append(cases, poolFieldCase{name: name, arm: arm, cs: cs})
	}
	unsendable := func(name, target string, arm func(map[string]any)) {
		cases = append(cases, poolFieldCase{name: name, arm: arm, unsendable: target})
	}

	unsendable("osDisk.sizeGiB=0", "properties.platform.osDisk.sizeGiB", func(p map[string]any) { osDisk(p)["sizeGiB"] = 0 })
	for _, n := range []int32{-1, 15, 16, 63, 64, 65, 4095, 4096, 65536, 65537, 1<<31 - 1} {
		add(fmt.Sprintf("osDisk.sizeGiB=%d", n),
			func(p map[string]any) { osDisk(p)["sizeGiB"] = n },
			func(s *csv1.NodePoolSpec) { s.Platform.OsDiskSizeGib = n })
	}
	unsendable(`osDisk.diskStorageAccountType=""`, "properties.platform.osDisk.diskStorageAccountType",
		func(p map[string]any) { osDisk(p)["diskStorageAccountType"] = "" })
	for _, v := range []string{"Premium_LRS", "StandardSSD_LRS", "Standard_LRS", "PremiumV2_LRS", "UltraSSD_LRS",
		"premium_lrs", "PREMIUM_LRS", "Premium_LRS ", "junk", strings.Repeat("x", 300)} {
		add(fmt.Sprintf("osDisk.diskStorageAccountType=%.20q", v),
			func(p map[string]any) { osDisk(p)["diskStorageAccountType"] = v },
			func(s *csv1.NodePoolSpec) { s.Platform.OsDiskStorageAccountType = v })
	}
	for _, z := range []string{"1", "2", "3", "4", "0", "", " 1", "01", "eastus-1"} {
		add(fmt.Sprintf("availabilityZone=%q", z),
			func(p map[string]any) { platform(p)["availabilityZone"] = z },
			func(s *csv1.NodePoolSpec) { s.Platform.AvailabilityZone = z })
	}
	// diskType is Cluster Service's os_disk_persistence, through the frontend's own mapping
	// (Managed is HyperShift's Persistent).
	unsendable(`osDisk.diskType=""`, "properties.platform.osDisk.diskType", func(p map[string]any) { osDisk(p)["diskType"] = "" })
	for _, v := range []string{"Managed", "Ephemeral", "managed", "Persistent", "junk"} {
		cs, err := api.NodePoolShapes["properties.platform.osDisk.diskType"].ToSpec(v)
		if err != nil {
			t.Fatal(err)
		}
		add(fmt.Sprintf("osDisk.diskType=%q", v),
			func(p map[string]any) { osDisk(p)["diskType"] = v },
			func(s *csv1.NodePoolSpec) { s.Platform.OsDiskPersistence = cs.(string) })
	}
	for _, v := range []string{"", "Standard_D8s_v3", "Standard_E16as_v5", "Standard_D8s_v3 ", "standard_d8s_v3", "junk!",
		"Standard_" + strings.Repeat("D", 245) + "8", "Standard_" + strings.Repeat("D", 246) + "8"} { // 255 and 256 characters
		add(fmt.Sprintf("vmSize=%.24q_len%d", v, len(v)),
			func(p map[string]any) { platform(p)["vmSize"] = v },
			func(s *csv1.NodePoolSpec) { s.Platform.VmSize = v })
	}

	label := func(k, v string) {
		add(fmt.Sprintf("labels_%.40q=%.20q_len%d", k, v, len(v)),
			func(p map[string]any) { p["labels"] = []any{map[string]any{"key": k, "value": v}} },
			func(s *csv1.NodePoolSpec) { s.Labels = map[string]string{k: v} })
	}
	for _, k := range []string{"app", "example.com/app", "a.b.c/x-y_z.1", "", "-app", "app-", "has space",
		"/app", "example.com/", "Example.COM/app", "exa_mple.com/app", "a/b/c", strings.Repeat("k", 63), strings.Repeat("k", 64),
		strings.Repeat("p", 253) + "/app", strings.Repeat("p", 254) + "/app"} {
		label(k, "v")
	}
	for _, v := range []string{"", "x", "a-b_c.d", "-x", "x-", "has space", "é", strings.Repeat("v", 63), strings.Repeat("v", 64)} {
		label("app", v)
	}

	// A list with a key twice, and shapes that are no value of their property's type, have no
	// spec to send (a map holds a key once; the spec's fields are typed).
	unsendable("labels_key_twice", "properties.labels[1].key", func(p map[string]any) {
		p["labels"] = []any{map[string]any{"key": "app", "value": "a"}, map[string]any{"key": "app", "value": "b"}}
	})
	unsendable("labels_as_an_object", "properties.labels", func(p map[string]any) { p["labels"] = map[string]any{"app": "a"} })
	unsendable("osDisk.sizeGiB_as_a_string", "properties.platform.osDisk.sizeGiB", func(p map[string]any) { osDisk(p)["sizeGiB"] = "64" })
	unsendable("osDisk.sizeGiB=2^31", "properties.platform.osDisk.sizeGiB", func(p map[string]any) { osDisk(p)["sizeGiB"] = int64(1) << 31 })
	unsendable("osDisk.sizeGiB=64.5", "properties.platform.osDisk.sizeGiB", func(p map[string]any) { osDisk(p)["sizeGiB"] = 64.5 })
	unsendable("availabilityZone_as_a_number", "properties.platform.availabilityZone", func(p map[string]any) { platform(p)["availabilityZone"] = 1 })
	unsendable("taints_as_an_object", "properties.taints", func(p map[string]any) { p["taints"] = map[string]any{"key": "k"} })
	unsendable("nodeDrainTimeoutMinutes_as_a_string", "properties.nodeDrainTimeoutMinutes", func(p map[string]any) { p["nodeDrainTimeoutMinutes"] = "10" })

	taint := func(name string, taints ...[3]string) {
		add("taints_"+name,
			func(p map[string]any) {
				var l []any
				for _, t := range taints {
					m := map[string]any{"key": t[0], "effect": t[2]}
					if t[1] != "" {
						m["value"] = t[1]
					}
					l = append(l, m)
				}
				p["taints"] = l
			},
			func(s *csv1.NodePoolSpec) {
				for _, t := range taints {
					s.Taints = append(s.Taints, &csv1.Taint{Key: t[0], Value: t[1], Effect: t[2]})
				}
			})
	}
	for _, eff := range []string{"NoSchedule", "PreferNoSchedule", "NoExecute", "noschedule", "Never", ""} {
		taint(fmt.Sprintf("effect=%q", eff), [3]string{"dedicated", "gpu", eff})
	}
	for _, k := range []string{"", "has space", "-k", "example.com/k", strings.Repeat("k", 63), strings.Repeat("k", 64),
		strings.Repeat("p", 252) + "/" + strings.Repeat("k", 63), strings.Repeat("p", 253) + "/" + strings.Repeat("k", 63)} {
		taint(fmt.Sprintf("key=%.30q_len%d", k, len(k)), [3]string{k, "v", "NoSchedule"})
	}
	for _, v := range []string{"x", "-x", "has space", strings.Repeat("v", 63), strings.Repeat("v", 64)} {
		taint(fmt.Sprintf("value=%.20q_len%d", v, len(v)), [3]string{"k", v, "NoSchedule"})
	}
	taint("duplicate_key_and_effect", [3]string{"k", "a", "NoSchedule"}, [3]string{"k", "b", "NoSchedule"})
	taint("same_key_other_effect", [3]string{"k", "a", "NoSchedule"}, [3]string{"k", "a", "NoExecute"})

	for _, m := range []int32{-1, 0, 1, 10080, 10081} {
		add(fmt.Sprintf("nodeDrainTimeoutMinutes=%d", m),
			func(p map[string]any) { p["nodeDrainTimeoutMinutes"] = m },
			func(s *csv1.NodePoolSpec) { s.NodeDrainTimeoutMinutes = &m })
	}

	sub := "/subscriptions/" + testSub + "/resourceGroups/rg"
	for _, id := range []string{
		sub + "/providers/Microsoft.Network/virtualNetworks/vnet/subnets/other",
		strings.ToLower(sub) + "/providers/microsoft.network/virtualnetworks/vnet/subnets/other",
		sub + "/providers/Microsoft.Network/virtualNetworks/vnet",
		sub + "/providers/Microsoft.Network/networkSecurityGroups/nsg",
		"/subscriptions/not-a-uuid/resourceGroups/rg/providers/Microsoft.Network/virtualNetworks/vnet/subnets/s",
		sub + "./providers/Microsoft.Network/virtualNetworks/vnet/subnets/s",
		sub + "/providers/Microsoft.Network/virtualNetworks/vnet-/subnets/s",
		sub + "/providers/Microsoft.Network/virtualNetworks/vnet/subnets/s/extra/x",
		"not-an-id",
	} {
		add(fmt.Sprintf("subnetId=%q", strings.TrimPrefix(id, sub)),
			func(p map[string]any) { platform(p)["subnetId"] = id },
			func(s *csv1.NodePoolSpec) { s.Platform.SubnetId = id })
	}
	for _, id := range []string{
		sub + "/providers/Microsoft.Compute/diskEncryptionSets/des1",
		strings.ToLower(sub) + "/providers/microsoft.compute/diskencryptionsets/des1",
		sub + "/providers/Microsoft.Compute/diskEncryptionSets/des.1",
		sub + "/providers/Microsoft.Compute/diskEncryptionSets/" + strings.Repeat("d", 81),
		sub + "/providers/Microsoft.Network/virtualNetworks/vnet/subnets/workers",
		"/subscriptions/not-a-uuid/resourceGroups/rg/providers/Microsoft.Compute/diskEncryptionSets/des1",
		"not-an-id",
	} {
		add(fmt.Sprintf("osDisk.encryptionSetId=%.60q", strings.TrimPrefix(id, sub)),
			func(p map[string]any) { osDisk(p)["encryptionSetId"] = id },
			func(s *csv1.NodePoolSpec) { s.Platform.OsDiskEncryptionSetId = id })
	}

	// The cluster runs 4.20.3 in the stable group (4.17.44 to 4.20.3; 4.21.0 only in candidate).
	unsendable(`subnetId=""`, "properties.platform.subnetId", func(p map[string]any) { platform(p)["subnetId"] = "" })
	unsendable(`osDisk.encryptionSetId=""`, "properties.platform.osDisk.encryptionSetId", func(p map[string]any) { osDisk(p)["encryptionSetId"] = "" })
	unsendable(`version.id=""`, "properties.version.id", func(p map[string]any) { p["version"] = map[string]any{"id": ""} })
	for _, id := range []string{"4.20.3", "4.20", "4.19.17", "4.18.27", "4.17.44", "4.21.0", "4.20.4", "5.0.0", "junk"} {
		add(fmt.Sprintf("version.id=%q", id),
			func(p map[string]any) { p["version"] = map[string]any{"id": id} },
			func(s *csv1.NodePoolSpec) { s.VersionId = id })
	}

	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			// The frontend's answer, through its handler.
			props := map[string]any{"replicas": 2, "platform": map[string]any{"vmSize": "Standard_D8s_v3"}}
			c.arm(props)
			resp := e.put(withVersion(poolPath("c1", fmt.Sprintf("np%d", i)), fieldsRulesVersion),
				map[string]any{"location": testLocation, "properties": props})
			if c.unsendable != "" {
				if got := refusalTargets(t, resp); resp.code != 400 || !slices.Equal(got, []string{c.unsendable}) {
					t.Fatalf("PUT = %d naming %v, want 400 naming %s: %s", resp.code, got, c.unsendable, resp.body)
				}
				return
			}
			var frontend []string
			switch resp.code {
			case 201:
			case 400:
				frontend = refusalTargets(t, resp)
			default:
				t.Fatalf("PUT = %d %s", resp.code, resp.body)
			}

			// Cluster Service's answer: its model's rule on the same values, each field mapped to
			// its ARM path.
			spec := &csv1.NodePoolSpec{Replicas: 2, Platform: &csv1.NodePoolPlatform{VmSize: "Standard_D8s_v3"}}
			c.cs(spec)
			var v model.Violations
			model.ValidateNodePoolSpec(&v, "node_pool.spec", spec, model.Cluster{Spec: cl.GetSpec(), Status: cl.GetStatus()}, nil, catalogue, time.Now)
			requireAgreement(t, resp, labelsAsMap(frontend), request, v)
		})
	}
}

// TestNodePoolUpdateFieldRulesAgree: the same agreement for an update, a PATCH through the
// newest api-version of each updatable property TestNodePoolFieldRulesAgree covers (labels,
// taints, nodeDrainTimeoutMinutes), each to a pool of its own created with no labels or taints:
// Cluster Service's rule is the one its UpdateNodePool runs, model.ValidateNodePoolSpec on the
// stored spec with the property replaced, against the stored spec.
func TestNodePoolUpdateFieldRulesAgree(t *testing.T) {
	e := newCSEnv(t)
	cl := e.csCluster(t, "c1", func(b map[string]any) { set(b, "properties.version.id", "4.20.3") })
	catalogue, err := versions.Default()
	if err != nil {
		t.Fatal(err)
	}
	request := (&csv1.CreateNodePoolRequest{}).ProtoReflect().Descriptor()

	var cases []poolFieldCase
	add := func(name string, arm func(map[string]any), cs func(*csv1.NodePoolSpec)) {
		cases = append(cases, poolFieldCase{name: name, arm: arm, cs: cs})
	}
	for _, k := range []string{"app", "example.com/app", "", "-app", "has space", "a/b/c", strings.Repeat("k", 64),
		strings.Repeat("p", 253) + "/app", strings.Repeat("p", 254) + "/app"} {
		add(fmt.Sprintf("labels_key_%.30q_len%d", k, len(k)),
			func(p map[string]any) { p["labels"] = []any{map[string]any{"key": k, "value": "v"}} },
			func(s *csv1.NodePoolSpec) { s.Labels = map[string]string{k: "v"} })
	}
	for _, v := range []string{"", "-x", "é", strings.Repeat("v", 63), strings.Repeat("v", 64)} {
		add(fmt.Sprintf("labels_value_%.20q_len%d", v, len(v)),
			func(p map[string]any) { p["labels"] = []any{map[string]any{"key": "app", "value": v}} },
			func(s *csv1.NodePoolSpec) { s.Labels = map[string]string{"app": v} })
	}
	add("labels_none",
		func(p map[string]any) { p["labels"] = []any{} },
		func(s *csv1.NodePoolSpec) { s.Labels = nil })
	for _, tt := range [][3]string{
		{"k", "v", "NoSchedule"}, {"k", "v", "PreferNoSchedule"}, {"k", "v", "NoExecute"}, {"k", "v", "Never"}, {"k", "v", ""},
		{"", "v", "NoSchedule"}, {"has space", "v", "NoSchedule"}, {"k", strings.Repeat("v", 63), "NoSchedule"},
		{"k", strings.Repeat("v", 64), "NoSchedule"}, {"k", "-v", "NoSchedule"},
		{strings.Repeat("p", 252) + "/" + strings.Repeat("k", 63), "v", "NoSchedule"},
		{strings.Repeat("p", 253) + "/" + strings.Repeat("k", 63), "v", "NoSchedule"},
	} {
		add(fmt.Sprintf("taints_%.20q_len%d_%.20q_%q", tt[0], len(tt[0]), tt[1], tt[2]),
			func(p map[string]any) {
				p["taints"] = []any{map[string]any{"key": tt[0], "value": tt[1], "effect": tt[2]}}
			},
			func(s *csv1.NodePoolSpec) { s.Taints = []*csv1.Taint{{Key: tt[0], Value: tt[1], Effect: tt[2]}} })
	}
	add("taints_duplicate_key_and_effect",
		func(p map[string]any) {
			p["taints"] = []any{map[string]any{"key": "k", "value": "a", "effect": "NoSchedule"}, map[string]any{"key": "k", "value": "b", "effect": "NoSchedule"}}
		},
		func(s *csv1.NodePoolSpec) {
			s.Taints = []*csv1.Taint{{Key: "k", Value: "a", Effect: "NoSchedule"}, {Key: "k", Value: "b", Effect: "NoSchedule"}}
		})
	for _, m := range []int32{-1, 0, 10080, 10081} {
		add(fmt.Sprintf("nodeDrainTimeoutMinutes=%d", m),
			func(p map[string]any) { p["nodeDrainTimeoutMinutes"] = m },
			func(s *csv1.NodePoolSpec) { s.NodeDrainTimeoutMinutes = &m })
	}
	cases = append(cases,
		poolFieldCase{name: "labels_key_twice", unsendable: "properties.labels[1].key", arm: func(p map[string]any) {
			p["labels"] = []any{map[string]any{"key": "app", "value": "a"}, map[string]any{"key": "app", "value": "b"}}
		}},
		poolFieldCase{name: "nodeDrainTimeoutMinutes_as_a_string", unsendable: "properties.nodeDrainTimeoutMinutes",
			arm: func(p map[string]any) { p["nodeDrainTimeoutMinutes"] = "10" }})

	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			name := fmt.Sprintf("upd%d", i)
			id := e.readyPool(t, "c1", name, minimalPoolBody())
			cur, err := e.pools.GetNodePool(context.Background(), &csv1.GetNodePoolRequest{Id: id})
			if err != nil {
				t.Fatal(err)
			}

			// The frontend's answer, through its handler.
			props := map[string]any{}
			c.arm(props)
			resp := e.do("PATCH", withVersion(poolPath("c1", name), fieldsRulesVersion), mustJSON(map[string]any{"properties": props}), nil)
			if c.unsendable != "" {
				if got := refusalTargets(t, resp); resp.code != 400 || !slices.Equal(got, []string{c.unsendable}) {
					t.Fatalf("PATCH = %d naming %v, want 400 naming %s: %s", resp.code, got, c.unsendable, resp.body)
				}
				return
			}
			var frontend []string
			switch resp.code {
			case 200, 202:
			case 400:
				frontend = refusalTargets(t, resp)
			default:
				t.Fatalf("PATCH = %d %s", resp.code, resp.body)
			}

			// Cluster Service's answer: the stored spec with the property replaced, as its
			// UpdateNodePool validates it.
			spec := proto.Clone(cur.GetSpec()).(*csv1.NodePoolSpec)
			c.cs(spec)
			var v model.Violations
			model.ValidateNodePoolSpec(&v, "node_pool.spec", spec, model.Cluster{Spec: cl.GetSpec(), Status: cl.GetStatus()}, cur.GetSpec(), catalogue, time.Now)
			requireAgreement(t, resp, labelsAsMap(frontend), request, v)
		})
	}
}

// labelsAsMap names a label the way Cluster Service does: its spec holds the labels as a map,
// so its violations name properties.labels where the frontend names an element of the list.
func labelsAsMap(targets []string) []string {
	var out []string
	for _, t := range targets {
		if strings.HasPrefix(t, "properties.labels[") {
			t = "properties.labels"
		}
		if len(out) == 0 || out[len(out)-1] != t {
			out = append(out, t)
		}
	}
	return out
}

// TestNodePoolBusinessRulesAreClusterServices: a node pool rule the specification does not state
// (nodeDrainTimeoutMinutes 0-10080, vmSize at most 255 characters) is Cluster Service's alone.
// Behind a fake Cluster Service that accepts everything, the frontend sends such a value on
// rather than refuse it with a copy of the rule; TestNodePoolFieldRulesAgree shows the real
// Cluster Service refusing it, naming the same field.
func TestNodePoolBusinessRulesAreClusterServices(t *testing.T) {
	e, fake := newNodePoolEnv(t)
	e.readyCluster(t, "c1")
	long := "Standard_" + strings.Repeat("D", 247) + "8"
	for i, c := range []struct {
		name string
		set  func(props map[string]any)
		sent func(*csv1.NodePoolSpec) bool
	}{
		{"nodeDrainTimeoutMinutes=10081", func(p map[string]any) { p["nodeDrainTimeoutMinutes"] = 10081 },
			func(s *csv1.NodePoolSpec) bool { return s.GetNodeDrainTimeoutMinutes() == 10081 }},
		{"nodeDrainTimeoutMinutes=-1", func(p map[string]any) { p["nodeDrainTimeoutMinutes"] = -1 },
			func(s *csv1.NodePoolSpec) bool {
				return s.NodeDrainTimeoutMinutes != nil && *s.NodeDrainTimeoutMinutes == -1
			}},
		{"vmSize_of_256_characters", func(p map[string]any) { p["platform"].(map[string]any)["vmSize"] = long },
			func(s *csv1.NodePoolSpec) bool { return s.GetPlatform().GetVmSize() == long }},
	} {
		t.Run(c.name, func(t *testing.T) {
			props := map[string]any{"replicas": 2, "platform": map[string]any{"vmSize": "Standard_D8s_v3"}}
			c.set(props)
			resp := e.put(withVersion(poolPath("c1", fmt.Sprintf("np%d", i)), fieldsRulesVersion), map[string]any{"location": testLocation, "properties": props})
			if resp.code != 201 {
				t.Fatalf("PUT = %d %s; want the value sent to Cluster Service, whose rule it is", resp.code, resp.body)
			}
			fake.mu.Lock()
			last := fake.creates[len(fake.creates)-1].GetNodePool().GetSpec()
			fake.mu.Unlock()
			if !c.sent(last) {
				t.Fatalf("Cluster Service was sent %v", last)
			}
		})
	}
}
