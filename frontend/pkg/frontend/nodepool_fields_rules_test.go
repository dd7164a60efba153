//go:build !fuzzlean

// Left out of the fuzzing build (hack/fuzz-long.sh builds with -tags fuzzlean): this file links
// Cluster Service's server, whose coverage counters every fuzz execution would scan.

package frontend

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	csv1 "github.com/openhcp/openhcp/cluster-service/api/v1"
	"github.com/openhcp/openhcp/frontend/pkg/api"
)

// fieldsRulesVersion is the newest api-version with a node pool schema; every property the
// test below covers is in it (osDisk.diskType since 2025-12-23-preview).
const fieldsRulesVersion = "2026-09-01-preview"

// TestNodePoolFieldRulesAgree: for every node pool property other than the pool's size (which
// TestNodePoolScalingAgrees covers) with a rule in the frontend or in Cluster Service, values
// around each bound and hostile shapes, the frontend's answer to a PUT through the newest
// api-version (a real Cluster Service behind it), Cluster Service's own rule
// (model.ValidateNodePoolSpec, which its server runs on a create) and the outcome the
// specification or the documented rule gives agree. A value the spec cannot carry must be
// refused by the frontend, naming its field.
func TestNodePoolFieldRulesAgree(t *testing.T) {
	e, cl, catalogue := poolEnv(t, "4.20.3")

	platform := func(p map[string]any) map[string]any { return p["platform"].(map[string]any) }
	osDisk := func(p map[string]any) map[string]any {
		pl := platform(p)
		if pl["osDisk"] == nil {
			pl["osDisk"] = map[string]any{}
		}
		return pl["osDisk"].(map[string]any)
	}
	var cases []ruleCase[*csv1.NodePoolSpec]
	add := func(name string, want outcome, arm func(map[string]any), cs func(*csv1.NodePoolSpec)) {
		cases = append(cases, ruleCase[*csv1.NodePoolSpec]{name: name, body: arm, spec: cs, want: want})
	}
	// unsendable: the spec cannot carry the value (0 or "" in a field without presence is
	// Cluster Service's "not given", which it defaults); the frontend must refuse it, naming
	// target.
	unsendable := func(name, target string, arm func(map[string]any)) {
		cases = append(cases, ruleCase[*csv1.NodePoolSpec]{name: name, body: arm, want: refused(target)})
	}

	// The specification: sizeGiB 64-4095; diskStorageAccountType and diskType enums.
	const size = "properties.platform.osDisk.sizeGiB"
	unsendable("osDisk.sizeGiB=0", size, func(p map[string]any) { osDisk(p)["sizeGiB"] = 0 })
	for _, n := range []int32{-1, 15, 16, 63, 64, 65, 4095, 4096, 65536, 65537, 1<<31 - 1} {
		add(fmt.Sprintf("osDisk.sizeGiB=%d", n), refusedUnless(n >= 64 && n <= 4095, size),
			func(p map[string]any) { osDisk(p)["sizeGiB"] = n },
			func(s *csv1.NodePoolSpec) { s.Platform.OsDiskSizeGib = n })
	}
	const storage = "properties.platform.osDisk.diskStorageAccountType"
	unsendable(`osDisk.diskStorageAccountType=""`, storage, func(p map[string]any) { osDisk(p)["diskStorageAccountType"] = "" })
	for _, v := range []string{"Premium_LRS", "StandardSSD_LRS", "Standard_LRS", "PremiumV2_LRS", "UltraSSD_LRS",
		"premium_lrs", "PREMIUM_LRS", "Premium_LRS ", "junk", strings.Repeat("x", 300)} {
		add(fmt.Sprintf("osDisk.diskStorageAccountType=%.20q", v),
			refusedUnless(slices.Contains([]string{"Premium_LRS", "StandardSSD_LRS", "Standard_LRS"}, v), storage),
			func(p map[string]any) { osDisk(p)["diskStorageAccountType"] = v },
			func(s *csv1.NodePoolSpec) { s.Platform.OsDiskStorageAccountType = v })
	}
	// HyperShift's zones (docs/api.md): 1, 2 or 3; none is a pool without a zone.
	for _, z := range []string{"1", "2", "3", "4", "0", "", " 1", "01", "eastus-1"} {
		add(fmt.Sprintf("availabilityZone=%q", z),
			refusedUnless(slices.Contains([]string{"1", "2", "3", ""}, z), "properties.platform.availabilityZone"),
			func(p map[string]any) { platform(p)["availabilityZone"] = z },
			func(s *csv1.NodePoolSpec) { s.Platform.AvailabilityZone = z })
	}
	// diskType is Cluster Service's os_disk_persistence, through the frontend's own mapping
	// (Managed is HyperShift's Persistent).
	const diskType = "properties.platform.osDisk.diskType"
	unsendable(`osDisk.diskType=""`, diskType, func(p map[string]any) { osDisk(p)["diskType"] = "" })
	for _, v := range []string{"Managed", "Ephemeral", "managed", "Persistent", "junk"} {
		cs, err := api.NodePoolShapes[diskType].ToSpec(v)
		if err != nil {
			t.Fatal(err)
		}
		add(fmt.Sprintf("osDisk.diskType=%q", v), refusedUnless(v == "Managed" || v == "Ephemeral", diskType),
			func(p map[string]any) { osDisk(p)["diskType"] = v },
			func(s *csv1.NodePoolSpec) { s.Platform.OsDiskPersistence = cs.(string) })
	}
	// A VM size is required, of Azure's form as the NodePool CRD's pattern spells it (Standard_,
	// an upper-case family: case-sensitive), at most 255 characters (Cluster Service's rule).
	for _, v := range []struct {
		size string
		ok   bool
	}{
		{"", false}, {"Standard_D8s_v3", true}, {"Standard_E16as_v5", true}, {"Standard_D8s_v3 ", false},
		{"standard_d8s_v3", false}, {"junk!", false},
		{"Standard_" + strings.Repeat("D", 245) + "8", true}, {"Standard_" + strings.Repeat("D", 246) + "8", false}, // 255 and 256 characters
	} {
		add(fmt.Sprintf("vmSize=%.24q_len%d", v.size, len(v.size)), refusedUnless(v.ok, "properties.platform.vmSize"),
			func(p map[string]any) { platform(p)["vmSize"] = v.size },
			func(s *csv1.NodePoolSpec) { s.Platform.VmSize = v.size })
	}

	// Labels: a Kubernetes qualified name (an optional lower-case DNS subdomain of at most 253
	// characters and '/', then at most 63 letters, digits, '-', '_' or '.', a letter or digit at
	// each end) and a label value (the same, or empty). Cluster Service holds them as a map and
	// names properties.labels.
	label := func(k, v string, ok bool) {
		add(fmt.Sprintf("labels_%.40q=%.20q_len%d", k, v, len(v)), refusedUnless(ok, "properties.labels"),
			func(p map[string]any) { p["labels"] = []any{map[string]any{"key": k, "value": v}} },
			func(s *csv1.NodePoolSpec) { s.Labels = map[string]string{k: v} })
	}
	for _, k := range []struct {
		key string
		ok  bool
	}{
		{"app", true}, {"example.com/app", true}, {"a.b.c/x-y_z.1", true}, {"", false}, {"-app", false}, {"app-", false},
		{"has space", false}, {"/app", false}, {"example.com/", false}, {"Example.COM/app", false}, {"exa_mple.com/app", false},
		{"a/b/c", false}, {strings.Repeat("k", 63), true}, {strings.Repeat("k", 64), false},
		{strings.Repeat("p", 253) + "/app", true}, {strings.Repeat("p", 254) + "/app", false},
	} {
		label(k.key, "v", k.ok)
	}
	for _, v := range []struct {
		value string
		ok    bool
	}{
		{"", true}, {"x", true}, {"a-b_c.d", true}, {"-x", false}, {"x-", false}, {"has space", false}, {"é", false},
		{strings.Repeat("v", 63), true}, {strings.Repeat("v", 64), false},
	} {
		label("app", v.value, v.ok)
	}

	// A list with a key twice, and shapes that are no value of their property's type, have no
	// spec to send (a map holds a key once; the spec's fields are typed).
	unsendable("labels_key_twice", "properties.labels[1].key", func(p map[string]any) {
		p["labels"] = []any{map[string]any{"key": "app", "value": "a"}, map[string]any{"key": "app", "value": "b"}}
	})
	unsendable("labels_as_an_object", "properties.labels", func(p map[string]any) { p["labels"] = map[string]any{"app": "a"} })
	unsendable("osDisk.sizeGiB_as_a_string", size, func(p map[string]any) { osDisk(p)["sizeGiB"] = "64" })
	unsendable("osDisk.sizeGiB=2^31", size, func(p map[string]any) { osDisk(p)["sizeGiB"] = int64(1) << 31 })
	unsendable("osDisk.sizeGiB=64.5", size, func(p map[string]any) { osDisk(p)["sizeGiB"] = 64.5 })
	unsendable("availabilityZone_as_a_number", "properties.platform.availabilityZone", func(p map[string]any) { platform(p)["availabilityZone"] = 1 })
	unsendable("taints_as_an_object", "properties.taints", func(p map[string]any) { p["taints"] = map[string]any{"key": "k"} })
	unsendable("nodeDrainTimeoutMinutes_as_a_string", "properties.nodeDrainTimeoutMinutes", func(p map[string]any) { p["nodeDrainTimeoutMinutes"] = "10" })

	// Taints: the specification's effect enum (required) and key of 1-316 characters, a key that
	// is a qualified name, a value of at most 63 characters of a label value's form, no key and
	// effect twice (docs/cluster-service.md).
	taint := func(name string, want outcome, taints ...[3]string) {
		add("taints_"+name, want,
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
		taint(fmt.Sprintf("effect=%q", eff),
			refusedUnless(slices.Contains([]string{"NoSchedule", "PreferNoSchedule", "NoExecute"}, eff), "properties.taints[0].effect"),
			[3]string{"dedicated", "gpu", eff})
	}
	for _, k := range []struct {
		key string
		ok  bool
	}{
		{"", false}, {"has space", false}, {"-k", false}, {"example.com/k", true}, {strings.Repeat("k", 63), true},
		{strings.Repeat("k", 64), false}, {strings.Repeat("p", 252) + "/" + strings.Repeat("k", 63), true}, // 316 characters
		{strings.Repeat("p", 253) + "/" + strings.Repeat("k", 63), false}, // 317
	} {
		taint(fmt.Sprintf("key=%.30q_len%d", k.key, len(k.key)), refusedUnless(k.ok, "properties.taints[0].key"),
			[3]string{k.key, "v", "NoSchedule"})
	}
	for _, v := range []struct {
		value string
		ok    bool
	}{{"x", true}, {"-x", false}, {"has space", false}, {strings.Repeat("v", 63), true}, {strings.Repeat("v", 64), false}} {
		taint(fmt.Sprintf("value=%.20q_len%d", v.value, len(v.value)), refusedUnless(v.ok, "properties.taints[0].value"),
			[3]string{"k", v.value, "NoSchedule"})
	}
	taint("duplicate_key_and_effect", refused("properties.taints[1]"), [3]string{"k", "a", "NoSchedule"}, [3]string{"k", "b", "NoSchedule"})
	taint("same_key_other_effect", accepted(), [3]string{"k", "a", "NoSchedule"}, [3]string{"k", "a", "NoExecute"})
	// At most 50 taints: HyperShift's NodePool CRD (spec.taints maxItems 50), Cluster Service's
	// rule (model.MaxTaints); the specification sets no maximum.
	for _, n := range []int{50, 51, 10000} {
		var ts [][3]string
		for i := range n {
			ts = append(ts, [3]string{fmt.Sprintf("k%d", i), "v", "NoSchedule"})
		}
		taint(fmt.Sprintf("count_%d", n), refusedUnless(n <= 50, "properties.taints"), ts...)
	}

	// nodeDrainTimeoutMinutes: 0-10080 (Cluster Service's rule, docs/api.md).
	for _, m := range []int32{-1, 0, 1, 10080, 10081} {
		add(fmt.Sprintf("nodeDrainTimeoutMinutes=%d", m), refusedUnless(m >= 0 && m <= 10080, "properties.nodeDrainTimeoutMinutes"),
			func(p map[string]any) { p["nodeDrainTimeoutMinutes"] = m },
			func(s *csv1.NodePoolSpec) { s.NodeDrainTimeoutMinutes = &m })
	}

	// subnetId: a subnet's resource ID (ARM IDs are case-insensitive; Azure's names: a resource
	// group does not end with '.', a virtual network not with '-'); encryptionSetId: a
	// Microsoft.Compute/diskEncryptionSets ID (Azure's names: 1-80 letters, digits, '_' and '-').
	type resourceID struct {
		id string
		ok bool
	}
	sub := "/subscriptions/" + testSub + "/resourceGroups/rg"
	for _, f := range []struct {
		name, target string
		arm          func(p map[string]any, id string)
		cs           func(s *csv1.NodePoolSpec, id string)
		ids          []resourceID
	}{
		{"subnetId=%q", "properties.platform.subnetId",
			func(p map[string]any, id string) { platform(p)["subnetId"] = id },
			func(s *csv1.NodePoolSpec, id string) { s.Platform.SubnetId = id },
			[]resourceID{
				{sub + "/providers/Microsoft.Network/virtualNetworks/vnet/subnets/other", true},
				{strings.ToLower(sub) + "/providers/microsoft.network/virtualnetworks/vnet/subnets/other", true},
				{sub + "/providers/Microsoft.Network/virtualNetworks/vnet", false},
				{sub + "/providers/Microsoft.Network/networkSecurityGroups/nsg", false},
				{"/subscriptions/not-a-uuid/resourceGroups/rg/providers/Microsoft.Network/virtualNetworks/vnet/subnets/s", false},
				{sub + "./providers/Microsoft.Network/virtualNetworks/vnet/subnets/s", false},
				{sub + "/providers/Microsoft.Network/virtualNetworks/vnet-/subnets/s", false},
				{sub + "/providers/Microsoft.Network/virtualNetworks/vnet/subnets/s/extra/x", false},
				{"not-an-id", false},
			}},
		{"osDisk.encryptionSetId=%.60q", "properties.platform.osDisk.encryptionSetId",
			func(p map[string]any, id string) { osDisk(p)["encryptionSetId"] = id },
			func(s *csv1.NodePoolSpec, id string) { s.Platform.OsDiskEncryptionSetId = id },
			[]resourceID{
				{sub + "/providers/Microsoft.Compute/diskEncryptionSets/des1", true},
				{strings.ToLower(sub) + "/providers/microsoft.compute/diskencryptionsets/des1", true},
				{sub + "/providers/Microsoft.Compute/diskEncryptionSets/des.1", false},
				{sub + "/providers/Microsoft.Compute/diskEncryptionSets/" + strings.Repeat("d", 81), false},
				{sub + "/providers/Microsoft.Network/virtualNetworks/vnet/subnets/workers", false},
				{"/subscriptions/not-a-uuid/resourceGroups/rg/providers/Microsoft.Compute/diskEncryptionSets/des1", false},
				{"not-an-id", false},
			}},
	} {
		for _, id := range f.ids {
			add(fmt.Sprintf(f.name, strings.TrimPrefix(id.id, sub)), refusedUnless(id.ok, f.target),
				func(p map[string]any) { f.arm(p, id.id) },
				func(s *csv1.NodePoolSpec) { f.cs(s, id.id) })
		}
	}

	// The cluster runs 4.20.3 in the stable group (4.17.44 to 4.20.3; 4.21.0 only in candidate):
	// a pool's version is one of its group's, not ahead of the control plane, at most two minors
	// behind it ("4.20" resolves to the newest 4.20.z).
	unsendable(`subnetId=""`, "properties.platform.subnetId", func(p map[string]any) { platform(p)["subnetId"] = "" })
	unsendable(`osDisk.encryptionSetId=""`, "properties.platform.osDisk.encryptionSetId", func(p map[string]any) { osDisk(p)["encryptionSetId"] = "" })
	unsendable(`version.id=""`, "properties.version.id", func(p map[string]any) { p["version"] = map[string]any{"id": ""} })
	for _, id := range []struct {
		id string
		ok bool
	}{
		{"4.20.3", true}, {"4.20", true}, {"4.19.17", true}, {"4.18.27", true}, {"4.17.44", false}, {"4.21.0", false},
		{"4.20.4", false}, {"5.0.0", false}, {"junk", false},
	} {
		add(fmt.Sprintf("version.id=%q", id.id), refusedUnless(id.ok, "properties.version.id"),
			func(p map[string]any) { p["version"] = map[string]any{"id": id.id} },
			func(s *csv1.NodePoolSpec) { s.VersionId = id.id })
	}

	body := func() map[string]any {
		return map[string]any{"location": testLocation, "properties": map[string]any{"replicas": 2, "platform": map[string]any{"vmSize": "Standard_D8s_v3"}}}
	}
	base := &csv1.NodePoolSpec{Replicas: 2, Platform: &csv1.NodePoolPlatform{VmSize: "Standard_D8s_v3"}}
	runRuleCases(t, e, poolCreates(cl, catalogue, fieldsRulesVersion, body, base), cases)
}

// TestNodePoolUpdateFieldRulesAgree: the same agreement for an update, a PATCH through the
// newest api-version of each updatable property TestNodePoolFieldRulesAgree covers (labels,
// taints, nodeDrainTimeoutMinutes), each to a pool of its own created with no labels or taints:
// Cluster Service's rule is the one its UpdateNodePool runs, model.ValidateNodePoolSpec on the
// stored spec with the property replaced, against the stored spec; the outcomes are the same
// rules' as on a create.
func TestNodePoolUpdateFieldRulesAgree(t *testing.T) {
	e, cl, catalogue := poolEnv(t, "4.20.3")

	var cases []ruleCase[*csv1.NodePoolSpec]
	add := func(name string, want outcome, arm func(map[string]any), cs func(*csv1.NodePoolSpec)) {
		cases = append(cases, ruleCase[*csv1.NodePoolSpec]{name: name, body: arm, spec: cs, want: want})
	}
	for _, k := range []struct {
		key string
		ok  bool
	}{
		{"app", true}, {"example.com/app", true}, {"", false}, {"-app", false}, {"has space", false}, {"a/b/c", false},
		{strings.Repeat("k", 64), false}, {strings.Repeat("p", 253) + "/app", true}, {strings.Repeat("p", 254) + "/app", false},
	} {
		add(fmt.Sprintf("labels_key_%.30q_len%d", k.key, len(k.key)), refusedUnless(k.ok, "properties.labels"),
			func(p map[string]any) { p["labels"] = []any{map[string]any{"key": k.key, "value": "v"}} },
			func(s *csv1.NodePoolSpec) { s.Labels = map[string]string{k.key: "v"} })
	}
	for _, v := range []struct {
		value string
		ok    bool
	}{{"", true}, {"-x", false}, {"é", false}, {strings.Repeat("v", 63), true}, {strings.Repeat("v", 64), false}} {
		add(fmt.Sprintf("labels_value_%.20q_len%d", v.value, len(v.value)), refusedUnless(v.ok, "properties.labels"),
			func(p map[string]any) { p["labels"] = []any{map[string]any{"key": "app", "value": v.value}} },
			func(s *csv1.NodePoolSpec) { s.Labels = map[string]string{"app": v.value} })
	}
	add("labels_none", accepted(),
		func(p map[string]any) { p["labels"] = []any{} },
		func(s *csv1.NodePoolSpec) { s.Labels = nil })
	for _, c := range []struct {
		taint [3]string
		want  outcome
	}{
		{[3]string{"k", "v", "NoSchedule"}, accepted()},
		{[3]string{"k", "v", "PreferNoSchedule"}, accepted()},
		{[3]string{"k", "v", "NoExecute"}, accepted()},
		{[3]string{"k", "v", "Never"}, refused("properties.taints[0].effect")},
		{[3]string{"k", "v", ""}, refused("properties.taints[0].effect")},
		{[3]string{"", "v", "NoSchedule"}, refused("properties.taints[0].key")},
		{[3]string{"has space", "v", "NoSchedule"}, refused("properties.taints[0].key")},
		{[3]string{"k", strings.Repeat("v", 63), "NoSchedule"}, accepted()},
		{[3]string{"k", strings.Repeat("v", 64), "NoSchedule"}, refused("properties.taints[0].value")},
		{[3]string{"k", "-v", "NoSchedule"}, refused("properties.taints[0].value")},
		{[3]string{strings.Repeat("p", 252) + "/" + strings.Repeat("k", 63), "v", "NoSchedule"}, accepted()},
		{[3]string{strings.Repeat("p", 253) + "/" + strings.Repeat("k", 63), "v", "NoSchedule"}, refused("properties.taints[0].key")},
	} {
		tt := c.taint
		add(fmt.Sprintf("taints_%.20q_len%d_%.20q_%q", tt[0], len(tt[0]), tt[1], tt[2]), c.want,
			func(p map[string]any) {
				p["taints"] = []any{map[string]any{"key": tt[0], "value": tt[1], "effect": tt[2]}}
			},
			func(s *csv1.NodePoolSpec) { s.Taints = []*csv1.Taint{{Key: tt[0], Value: tt[1], Effect: tt[2]}} })
	}
	for _, n := range []int{50, 51} {
		var arm []any
		var cs []*csv1.Taint
		for i := range n {
			arm = append(arm, map[string]any{"key": fmt.Sprintf("k%d", i), "value": "v", "effect": "NoSchedule"})
			cs = append(cs, &csv1.Taint{Key: fmt.Sprintf("k%d", i), Value: "v", Effect: "NoSchedule"})
		}
		add(fmt.Sprintf("taints_count_%d", n), refusedUnless(n <= 50, "properties.taints"),
			func(p map[string]any) { p["taints"] = arm },
			func(s *csv1.NodePoolSpec) { s.Taints = cs })
	}
	add("taints_duplicate_key_and_effect", refused("properties.taints[1]"),
		func(p map[string]any) {
			p["taints"] = []any{map[string]any{"key": "k", "value": "a", "effect": "NoSchedule"}, map[string]any{"key": "k", "value": "b", "effect": "NoSchedule"}}
		},
		func(s *csv1.NodePoolSpec) {
			s.Taints = []*csv1.Taint{{Key: "k", Value: "a", Effect: "NoSchedule"}, {Key: "k", Value: "b", Effect: "NoSchedule"}}
		})
	for _, m := range []int32{-1, 0, 10080, 10081} {
		add(fmt.Sprintf("nodeDrainTimeoutMinutes=%d", m), refusedUnless(m >= 0 && m <= 10080, "properties.nodeDrainTimeoutMinutes"),
			func(p map[string]any) { p["nodeDrainTimeoutMinutes"] = m },
			func(s *csv1.NodePoolSpec) { s.NodeDrainTimeoutMinutes = &m })
	}
	cases = append(cases,
		ruleCase[*csv1.NodePoolSpec]{name: "labels_key_twice", want: refused("properties.labels[1].key"), body: func(p map[string]any) {
			p["labels"] = []any{map[string]any{"key": "app", "value": "a"}, map[string]any{"key": "app", "value": "b"}}
		}},
		ruleCase[*csv1.NodePoolSpec]{name: "nodeDrainTimeoutMinutes_as_a_string", want: refused("properties.nodeDrainTimeoutMinutes"),
			body: func(p map[string]any) { p["nodeDrainTimeoutMinutes"] = "10" }})

	runRuleCases(t, e, poolUpdates(e, cl, catalogue, fieldsRulesVersion), cases)
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
