package csv1

import (
	"testing"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
)

func poolSpec() *NodePoolSpec {
	return &NodePoolSpec{VersionId: "4.19.7", ChannelGroup: "stable", Replicas: 2, AutoRepair: true, NodeDrainTimeoutMinutes: proto.Int32(10),
		Labels: map[string]string{"a": "1"}, Taints: []*Taint{{Key: "k", Value: "v", Effect: "NoSchedule"}},
		Platform: &NodePoolPlatform{VmSize: "Standard_D8s_v3", SubnetId: "/subnet"}}
}

func TestApplyNodePoolUpdate(t *testing.T) {
	for _, tc := range []struct {
		name  string
		u     *NodePoolUpdate
		check func(*NodePoolSpec) bool
	}{
		{"empty_update_changes_nothing", &NodePoolUpdate{}, func(s *NodePoolSpec) bool { return proto.Equal(s, poolSpec()) }},
		{"nil_update_changes_nothing", nil, func(s *NodePoolSpec) bool { return proto.Equal(s, poolSpec()) }},
		{"replicas_removes_autoscaling", &NodePoolUpdate{Replicas: proto.Int32(0)},
			func(s *NodePoolSpec) bool { return s.GetReplicas() == 0 && s.GetAutoscaling() == nil }},
		{"autoscaling_zeroes_replicas", &NodePoolUpdate{Autoscaling: &NodePoolAutoscaling{Min: 1, Max: 4}},
			func(s *NodePoolSpec) bool { return s.GetReplicas() == 0 && s.GetAutoscaling().GetMax() == 4 }},
		{"empty_labels_remove_them", &NodePoolUpdate{Labels: &StringMap{}}, func(s *NodePoolSpec) bool { return s.Labels == nil }},
		{"empty_taints_remove_them", &NodePoolUpdate{Taints: &Taints{}}, func(s *NodePoolSpec) bool { return len(s.Taints) == 0 }},
		{"drain_timeout_without_value_clears_it", &NodePoolUpdate{NodeDrainTimeoutMinutes: &OptionalInt32{}},
			func(s *NodePoolSpec) bool { return s.NodeDrainTimeoutMinutes == nil }},
		{"drain_timeout_zero_is_a_value", &NodePoolUpdate{NodeDrainTimeoutMinutes: &OptionalInt32{Value: proto.Int32(0)}},
			func(s *NodePoolSpec) bool {
				return s.NodeDrainTimeoutMinutes != nil && s.GetNodeDrainTimeoutMinutes() == 0
			}},
		{"auto_repair_false_is_a_value", &NodePoolUpdate{AutoRepair: proto.Bool(false)}, func(s *NodePoolSpec) bool { return !s.GetAutoRepair() }},
		{"empty_version_keeps_it", &NodePoolUpdate{ChannelGroup: "fast"},
			func(s *NodePoolSpec) bool { return s.GetVersionId() == "4.19.7" && s.GetChannelGroup() == "fast" }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cur := poolSpec()
			got := ApplyNodePoolUpdate(cur, tc.u)
			if !tc.check(got) {
				t.Fatalf("applied %v", got)
			}
			if !proto.Equal(cur, poolSpec()) {
				t.Fatalf("the stored spec was changed in place: %v", cur)
			}
		})
	}
}

// TestNodePoolUpdateDiffRoundTrip: applying the diff of a and b to a gives b (for every field
// an update may change), and the diff of a spec with itself is empty.
func TestNodePoolUpdateDiffRoundTrip(t *testing.T) {
	for _, tc := range []struct {
		name   string
		mutate func(*NodePoolSpec)
	}{
		{"nothing", func(*NodePoolSpec) {}},
		{"replicas", func(s *NodePoolSpec) { s.Replicas = 9 }},
		{"to_autoscaling", func(s *NodePoolSpec) { s.Replicas, s.Autoscaling = 0, &NodePoolAutoscaling{Min: 2, Max: 5} }},
		{"labels_and_taints", func(s *NodePoolSpec) { s.Labels, s.Taints = map[string]string{"b": "2"}, nil }},
		{"drain_cleared", func(s *NodePoolSpec) { s.NodeDrainTimeoutMinutes = nil }},
		{"version_and_group", func(s *NodePoolSpec) { s.VersionId, s.ChannelGroup = "4.20.1", "fast" }},
		{"auto_repair", func(s *NodePoolSpec) { s.AutoRepair = false }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a, b := poolSpec(), poolSpec()
			tc.mutate(b)
			u := NodePoolUpdateDiff(a, b)
			if got := ApplyNodePoolUpdate(a, u); !proto.Equal(got, b) {
				t.Fatalf("apply(a, diff(a, b)) = %v, want %v (update %v)", got, b, u)
			}
			if got := ApplyNodePoolUpdate(a, FullNodePoolUpdate(b)); !proto.Equal(got, b) {
				t.Fatalf("apply(a, full(b)) = %v, want %v", got, b)
			}
		})
	}
	if u := NodePoolUpdateDiff(poolSpec(), poolSpec()); !proto.Equal(u, &NodePoolUpdate{}) {
		t.Fatalf("diff of equal specs = %v, want empty", u)
	}
}

func TestExternalAuthUpdate(t *testing.T) {
	spec := func() *ExternalAuthSpec {
		return &ExternalAuthSpec{Issuer: &TokenIssuer{Url: "https://issuer", Audiences: []string{"a"}},
			Clients:       []*ExternalAuthClient{{ComponentName: "console", ComponentNamespace: "ns", ClientId: "a", Type: "Public"}},
			ClaimMappings: &TokenClaimMappings{Username: &UsernameClaimMapping{Claim: "email"}}}
	}
	b := spec()
	b.ClaimMappings.Groups = &GroupsClaimMapping{Claim: "groups"}
	b.Clients = nil
	u := ExternalAuthUpdateDiff(spec(), b)
	if u.Issuer != nil || u.ValidationRules != nil || u.Clients == nil || u.ClaimMappings == nil {
		t.Fatalf("diff = %v, want clients and claim mappings only", u)
	}
	if got := ApplyExternalAuthUpdate(spec(), u); !proto.Equal(got, b) {
		t.Fatalf("apply(diff) = %v, want %v", got, b)
	}
	if got := ApplyExternalAuthUpdate(spec(), &ExternalAuthUpdate{}); !proto.Equal(got, spec()) {
		t.Fatalf("empty update changed %v", got)
	}
	if got := ApplyExternalAuthUpdate(spec(), FullExternalAuthUpdate(&ExternalAuthSpec{})); got.GetIssuer().GetUrl() != "" || got.GetClaimMappings().GetUsername() != nil {
		t.Fatalf("a full update of an empty spec kept %v; it must replace (and fail validation)", got)
	}
}

func TestUpdateFieldPath(t *testing.T) {
	md := (&NodePoolUpdate{}).ProtoReflect().Descriptor()
	for _, tc := range []struct{ spec, want string }{
		{"autoscaling.max", "autoscaling.max"},
		{"taints[1].effect", "taints.values[1].effect"},
		{"labels", "labels.values"},
		{"node_drain_timeout_minutes", "node_drain_timeout_minutes.value"},
		{"version_id", "version_id"},
		{"platform.vm_size", ""},
	} {
		got, ok := UpdateFieldPath(md, tc.spec)
		if got != tc.want || ok != (tc.want != "") {
			t.Errorf("UpdateFieldPath(%q) = %q, %v; want %q", tc.spec, got, ok, tc.want)
		}
	}
}

// TestNodePoolUpdateCoversEveryUpdateField: every field of NodePoolUpdate has the spec field of
// its name, and a change of that spec field alone is named by the diff (with nothing else but
// the other half of the pool's size), and reaches the spec through Apply of the diff and of the
// full update. A field added to NodePoolUpdate is held to this without an edit here.
func TestNodePoolUpdateCoversEveryUpdateField(t *testing.T) {
	ud := (&NodePoolUpdate{}).ProtoReflect().Descriptor()
	sd := (&NodePoolSpec{}).ProtoReflect().Descriptor()
	size := map[protoreflect.Name]bool{"replicas": true, "autoscaling": true}
	for i := 0; i < ud.Fields().Len(); i++ {
		ufd := ud.Fields().Get(i)
		t.Run(string(ufd.Name()), func(t *testing.T) {
			sfd := sd.Fields().ByName(ufd.Name())
			if sfd == nil {
				t.Fatalf("NodePoolUpdate.%s has no NodePoolSpec field of its name", ufd.Name())
			}
			a, b := poolSpec(), poolSpec()
			changeField(b.ProtoReflect(), sfd)
			u := NodePoolUpdateDiff(a, b)
			u.ProtoReflect().Range(func(fd protoreflect.FieldDescriptor, _ protoreflect.Value) bool {
				if fd.Name() != ufd.Name() && !(size[fd.Name()] && size[ufd.Name()]) {
					t.Errorf("the diff of a change of %s names %s too: %v", sfd.Name(), fd.Name(), u)
				}
				return true
			})
			if !u.ProtoReflect().Has(ufd) {
				t.Fatalf("the diff of a change of %s does not name it: %v", sfd.Name(), u)
			}
			if got := ApplyNodePoolUpdate(a, u); !proto.Equal(got, b) {
				t.Fatalf("apply(a, diff(a, b)) = %v, want %v", got, b)
			}
			if got := ApplyNodePoolUpdate(a, FullNodePoolUpdate(b)); !proto.Equal(got, b) {
				t.Fatalf("apply(a, full(b)) = %v, want %v", got, b)
			}
		})
	}
}

// changeField gives m's field fd a value other than the one it has.
func changeField(m protoreflect.Message, fd protoreflect.FieldDescriptor) {
	switch {
	case fd.IsMap():
		m.Mutable(fd).Map().Set(protoreflect.ValueOfString("changed").MapKey(), protoreflect.ValueOfString("yes"))
	case fd.IsList() && fd.Message() == nil:
		m.Mutable(fd).List().Append(protoreflect.ValueOfString("changed"))
	case fd.IsList():
		l := m.Mutable(fd).List()
		el := l.NewElement()
		fillChanged(el.Message())
		l.Append(el)
	case fd.Message() != nil:
		fillChanged(m.Mutable(fd).Message())
	default:
		m.Set(fd, changedScalar(fd, m.Get(fd)))
	}
}

// fillChanged sets every scalar field of m to a value other than the one it has.
func fillChanged(m protoreflect.Message) {
	fields := m.Descriptor().Fields()
	for i := 0; i < fields.Len(); i++ {
		if fd := fields.Get(i); fd.Message() == nil && !fd.IsList() && !fd.IsMap() {
			m.Set(fd, changedScalar(fd, m.Get(fd)))
		}
	}
}

func changedScalar(fd protoreflect.FieldDescriptor, v protoreflect.Value) protoreflect.Value {
	switch fd.Kind() {
	case protoreflect.StringKind:
		return protoreflect.ValueOfString(v.String() + "-changed")
	case protoreflect.BoolKind:
		return protoreflect.ValueOfBool(!v.Bool())
	case protoreflect.Int32Kind:
		return protoreflect.ValueOfInt32(int32(v.Int()) + 7)
	case protoreflect.Int64Kind:
		return protoreflect.ValueOfInt64(v.Int() + 7)
	}
	panic("changedScalar: kind " + fd.Kind().String())
}

func clusterSpec() *ClusterSpec {
	return &ClusterSpec{VersionId: "4.19.7", ChannelGroup: "stable", NodeDrainTimeoutMinutes: 30, PausedUntil: "2026-01-01T00:00:00Z",
		Autoscaling:         &ClusterAutoscaling{MaxNodesTotal: proto.Int32(10)},
		ApiAuthorizedCidrs:  []string{"10.0.0.0/8"},
		ImageDigestMirrors:  []*ImageDigestMirror{{Source: "quay.io/a", Mirrors: []string{"m.example.com/a"}}},
		EtcdEncryptionKeyId: "https://v.vault.azure.net/keys/k/v1",
		Network:             &NetworkSpec{HostPrefix: 23},
		Azure: &AzureSpec{SubscriptionId: "s", WorkloadIdentities: &AzureWorkloadIdentities{ImageRegistry: "a", Ingress: "b", File: "c",
			Disk: "d", NodePoolManagement: "e", CloudProvider: "f", Network: "g"}}}
}

// TestClusterUpdateCoversEveryUpdateField: every field of ClusterUpdate changes the ClusterSpec
// field at its arm_path (an admin-only one, the field of its name) or is the named rule of
// the key version; a change of that spec field alone is named by the diff alone, and reaches
// the spec through Apply of the diff. A field added to ClusterUpdate is held to this without an
// edit here.
func TestClusterUpdateCoversEveryUpdateField(t *testing.T) {
	ud := (&ClusterUpdate{}).ProtoReflect().Descriptor()
	fields := map[protoreflect.Name][]protoreflect.FieldDescriptor{}
	for _, f := range clusterUpdateFields() {
		fields[f.ufd.Name()] = f.spec
	}
	for i := 0; i < ud.Fields().Len(); i++ {
		ufd := ud.Fields().Get(i)
		t.Run(string(ufd.Name()), func(t *testing.T) {
			path := fields[ufd.Name()]
			if ufd.Name() == clusterKeyVersionField {
				if path != nil {
					t.Fatalf("%s is the named rule, yet matches spec field %v", ufd.Name(), path)
				}
				return // TestClusterKeyVersionUpdate
			}
			if path == nil {
				t.Fatalf("ClusterUpdate.%s (arm_path %q) has no ClusterSpec field at its arm_path", ufd.Name(), ARMPathOf(ufd))
			}
			a, b := clusterSpec(), clusterSpec()
			m, sfd := specParent(b.ProtoReflect(), path, true)
			changeField(m, sfd)
			u := ClusterUpdateDiff(a, b)
			u.ProtoReflect().Range(func(fd protoreflect.FieldDescriptor, _ protoreflect.Value) bool {
				if fd.Name() != ufd.Name() {
					t.Errorf("the diff of a change of %s names %s too: %v", sfd.FullName(), fd.Name(), u)
				}
				return true
			})
			if !u.ProtoReflect().Has(ufd) {
				t.Fatalf("the diff of a change of %s does not name it: %v", sfd.FullName(), u)
			}
			if got := ApplyClusterUpdate(a, u); !proto.Equal(got, b) {
				t.Fatalf("apply(a, diff(a, b)) = %v, want %v", got, b)
			}
			if !proto.Equal(a, clusterSpec()) {
				t.Fatalf("the stored spec was changed in place: %v", a)
			}
			// An update field with presence (a message, a wrapper, an optional scalar) can also
			// take the spec's value away: clearing it must be named by the diff and undone by
			// nothing on the way back. A plain scalar's zero means "leave it", so it has no clear.
			if !ufd.HasPresence() {
				return
			}
			c := clusterSpec()
			cm, cfd := specParent(c.ProtoReflect(), path, false)
			if !cm.Has(cfd) {
				t.Fatalf("clusterSpec() leaves %s unset, so its clear is not tested", cfd.FullName())
			}
			cm.Clear(cfd)
			u = ClusterUpdateDiff(clusterSpec(), c)
			if !u.ProtoReflect().Has(ufd) {
				t.Fatalf("the diff of a clear of %s does not name it: %v", cfd.FullName(), u)
			}
			if got := ApplyClusterUpdate(clusterSpec(), u); !proto.Equal(got, c) {
				t.Fatalf("apply(a, diff(a, a without %s)) = %v, want %v", cfd.FullName(), got, c)
			}
		})
	}
	if u := ClusterUpdateDiff(clusterSpec(), clusterSpec()); !proto.Equal(u, &ClusterUpdate{}) {
		t.Fatalf("diff of equal specs = %v, want empty", u)
	}
}

func TestApplyClusterUpdate(t *testing.T) {
	for _, tc := range []struct {
		name  string
		u     *ClusterUpdate
		check func(*ClusterSpec) bool
	}{
		{"empty_update_changes_nothing", &ClusterUpdate{}, func(s *ClusterSpec) bool { return proto.Equal(s, clusterSpec()) }},
		{"nil_update_changes_nothing", nil, func(s *ClusterSpec) bool { return proto.Equal(s, clusterSpec()) }},
		{"empty_autoscaling_clears_it", &ClusterUpdate{Autoscaling: &ClusterAutoscaling{}}, func(s *ClusterSpec) bool { return s.Autoscaling == nil }},
		{"autoscaling_zero_is_a_value", &ClusterUpdate{Autoscaling: &ClusterAutoscaling{PodPriorityThreshold: proto.Int32(0)}},
			func(s *ClusterSpec) bool {
				return s.GetAutoscaling().PodPriorityThreshold != nil && s.GetAutoscaling().MaxNodesTotal == nil
			}},
		{"drain_timeout_zero_is_a_value", &ClusterUpdate{NodeDrainTimeoutMinutes: proto.Int32(0)}, func(s *ClusterSpec) bool { return s.NodeDrainTimeoutMinutes == 0 }},
		{"empty_cidrs_allow_any", &ClusterUpdate{ApiAuthorizedCidrs: &StringList{}}, func(s *ClusterSpec) bool { return s.ApiAuthorizedCidrs == nil }},
		{"empty_mirrors_remove_them", &ClusterUpdate{ImageDigestMirrors: &ImageDigestMirrors{}}, func(s *ClusterSpec) bool { return s.ImageDigestMirrors == nil }},
		{"paused_until_empty_resumes", &ClusterUpdate{PausedUntil: proto.String("")}, func(s *ClusterSpec) bool { return s.PausedUntil == "" }},
		{"paused_until_set", &ClusterUpdate{PausedUntil: proto.String("true")}, func(s *ClusterSpec) bool { return s.PausedUntil == "true" }},
		{"workload_identities_replace_in_azure", &ClusterUpdate{WorkloadIdentities: &AzureWorkloadIdentities{Ingress: "x"}},
			func(s *ClusterSpec) bool {
				return s.GetAzure().GetSubscriptionId() == "s" && proto.Equal(s.GetAzure().GetWorkloadIdentities(), &AzureWorkloadIdentities{Ingress: "x"})
			}},
		{"empty_channel_group_keeps_it", &ClusterUpdate{VersionId: "4.20.1"},
			func(s *ClusterSpec) bool { return s.VersionId == "4.20.1" && s.ChannelGroup == "stable" }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cur := clusterSpec()
			if got := ApplyClusterUpdate(cur, tc.u); !tc.check(got) {
				t.Fatalf("applied %v", got)
			}
			if !proto.Equal(cur, clusterSpec()) {
				t.Fatalf("the stored spec was changed in place: %v", cur)
			}
		})
	}
}

// TestClusterKeyVersionUpdate: the named rule. A new key version becomes the active key and the
// key active before becomes the backup; the same version, or a cluster without a
// customer-managed key, changes nothing.
func TestClusterKeyVersionUpdate(t *testing.T) {
	next := clusterSpec()
	next.EtcdEncryptionKeyId = "https://v.vault.azure.net/keys/k/v2"
	u := ClusterUpdateDiff(clusterSpec(), next)
	if !proto.Equal(u, &ClusterUpdate{EtcdEncryptionKeyVersion: "v2"}) {
		t.Fatalf("diff = %v, want the key version v2 alone", u)
	}
	got := ApplyClusterUpdate(clusterSpec(), u)
	if got.EtcdEncryptionKeyId != next.EtcdEncryptionKeyId || got.EtcdEncryptionBackupKeyId != clusterSpec().EtcdEncryptionKeyId {
		t.Fatalf("applied key %q backup %q", got.EtcdEncryptionKeyId, got.EtcdEncryptionBackupKeyId)
	}
	if got := ApplyClusterUpdate(clusterSpec(), &ClusterUpdate{EtcdEncryptionKeyVersion: "v1"}); !proto.Equal(got, clusterSpec()) {
		t.Fatalf("the active version again changed the spec: %v", got)
	}
	platform := &ClusterSpec{VersionId: "4.19.7"}
	if got := ApplyClusterUpdate(platform, &ClusterUpdate{EtcdEncryptionKeyVersion: "v2"}); !proto.Equal(got, platform) {
		t.Fatalf("a platform-managed key took a version: %v", got)
	}
	if u := ClusterUpdateDiff(clusterSpec(), &ClusterSpec{}); u.EtcdEncryptionKeyVersion != "" {
		t.Fatalf("a key removed is a key version %q", u.EtcdEncryptionKeyVersion)
	}
}

func TestClusterUpdateChangesConfiguration(t *testing.T) {
	for _, tc := range []struct {
		u    *ClusterUpdate
		want bool
	}{
		{&ClusterUpdate{}, false},
		{&ClusterUpdate{VersionId: "4.20", ChannelGroup: "fast"}, false},
		{&ClusterUpdate{NodeDrainTimeoutMinutes: proto.Int32(0)}, true},
		{&ClusterUpdate{VersionId: "4.20", PausedUntil: proto.String("")}, true},
		{&ClusterUpdate{EtcdEncryptionKeyVersion: "v2"}, true},
	} {
		if got := ClusterUpdateChangesConfiguration(tc.u); got != tc.want {
			t.Errorf("ClusterUpdateChangesConfiguration(%v) = %v, want %v", tc.u, got, tc.want)
		}
	}
}
