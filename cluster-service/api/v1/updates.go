package csv1

import (
	"maps"
	"strings"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
)

// Partial updates of node pools and external auths: the caller names only the fields
// it changes, Cluster Service applies them to its stored spec under its own lock and validates
// the result. This file is the one place that knows how an update message maps onto its spec:
// Full* (every field set: an ARM PUT), *Diff (only what differs: an ARM PATCH) and Apply*
// (Cluster Service's merge), so Apply(a, Diff(a, b)) is b's updatable part.

// FullNodePoolUpdate sets every field an update may change to spec's value: applied, the pool's
// updatable fields become spec's (an empty version or channel group still leaves the pool's).
func FullNodePoolUpdate(spec *NodePoolSpec) *NodePoolUpdate {
	u := &NodePoolUpdate{
		VersionId:               spec.GetVersionId(),
		ChannelGroup:            spec.GetChannelGroup(),
		Labels:                  &StringMap{Values: maps.Clone(spec.GetLabels())},
		Taints:                  &Taints{Values: cloneAll(spec.GetTaints())},
		AutoRepair:              proto.Bool(spec.GetAutoRepair()),
		NodeDrainTimeoutMinutes: &OptionalInt32{Value: spec.NodeDrainTimeoutMinutes},
	}
	setScaling(u, spec)
	return u
}

// NodePoolUpdateDiff names only the fields in which next differs from cur; an empty update
// when nothing an update may change differs.
func NodePoolUpdateDiff(cur, next *NodePoolSpec) *NodePoolUpdate {
	u := &NodePoolUpdate{}
	if next.GetVersionId() != cur.GetVersionId() {
		u.VersionId = next.GetVersionId()
	}
	if next.GetChannelGroup() != cur.GetChannelGroup() {
		u.ChannelGroup = next.GetChannelGroup()
	}
	if next.GetReplicas() != cur.GetReplicas() || !proto.Equal(next.GetAutoscaling(), cur.GetAutoscaling()) {
		setScaling(u, next)
	}
	if !maps.Equal(next.GetLabels(), cur.GetLabels()) {
		u.Labels = &StringMap{Values: maps.Clone(next.GetLabels())}
	}
	if !equalAll(next.GetTaints(), cur.GetTaints()) {
		u.Taints = &Taints{Values: cloneAll(next.GetTaints())}
	}
	if next.GetAutoRepair() != cur.GetAutoRepair() {
		u.AutoRepair = proto.Bool(next.GetAutoRepair())
	}
	if (next.NodeDrainTimeoutMinutes == nil) != (cur.NodeDrainTimeoutMinutes == nil) || next.GetNodeDrainTimeoutMinutes() != cur.GetNodeDrainTimeoutMinutes() {
		u.NodeDrainTimeoutMinutes = &OptionalInt32{Value: next.NodeDrainTimeoutMinutes}
	}
	return u
}

// setScaling names the spec's whole size: its autoscaling, its replicas, or both when the spec
// has both (Cluster Service's model then decides whether they conflict).
func setScaling(u *NodePoolUpdate, spec *NodePoolSpec) {
	if a := spec.GetAutoscaling(); a != nil {
		u.Autoscaling = proto.Clone(a).(*NodePoolAutoscaling)
		if spec.GetReplicas() == 0 {
			return
		}
	}
	u.Replicas = proto.Int32(spec.GetReplicas())
}

// ApplyNodePoolUpdate returns cur with u's fields applied; cur is not changed.
func ApplyNodePoolUpdate(cur *NodePoolSpec, u *NodePoolUpdate) *NodePoolSpec {
	out := proto.Clone(cur).(*NodePoolSpec)
	if out == nil {
		out = &NodePoolSpec{}
	}
	if v := u.GetVersionId(); v != "" {
		out.VersionId = v
	}
	if g := u.GetChannelGroup(); g != "" {
		out.ChannelGroup = g
	}
	if u != nil && (u.Replicas != nil || u.Autoscaling != nil) {
		out.Replicas, out.Autoscaling = u.GetReplicas(), nil
		if a := u.GetAutoscaling(); a != nil {
			out.Autoscaling = proto.Clone(a).(*NodePoolAutoscaling)
		}
	}
	if l := u.GetLabels(); l != nil {
		out.Labels = maps.Clone(l.GetValues())
		if len(out.Labels) == 0 {
			out.Labels = nil // stored as no labels, as a create without any
		}
	}
	if t := u.GetTaints(); t != nil {
		out.Taints = cloneAll(t.GetValues())
	}
	if u != nil && u.AutoRepair != nil {
		out.AutoRepair = u.GetAutoRepair()
	}
	if d := u.GetNodeDrainTimeoutMinutes(); d != nil {
		out.NodeDrainTimeoutMinutes = nil
		if d.Value != nil {
			out.NodeDrainTimeoutMinutes = proto.Int32(d.GetValue())
		}
	}
	return out
}

// FullExternalAuthUpdate replaces the whole spec (an ARM PUT).
func FullExternalAuthUpdate(spec *ExternalAuthSpec) *ExternalAuthUpdate {
	u := &ExternalAuthUpdate{
		Issuer:          proto.Clone(spec.GetIssuer()).(*TokenIssuer),
		Clients:         &ExternalAuthClients{Values: cloneAll(spec.GetClients())},
		ClaimMappings:   proto.Clone(spec.GetClaimMappings()).(*TokenClaimMappings),
		ValidationRules: &TokenClaimValidationRules{Values: cloneAll(spec.GetValidationRules())},
	}
	// Set even when absent, so the merged spec is validated without them, not with the old ones.
	if u.Issuer == nil {
		u.Issuer = &TokenIssuer{}
	}
	if u.ClaimMappings == nil {
		u.ClaimMappings = &TokenClaimMappings{}
	}
	return u
}

// ExternalAuthUpdateDiff names only the parts in which next differs from cur.
func ExternalAuthUpdateDiff(cur, next *ExternalAuthSpec) *ExternalAuthUpdate {
	full, u := FullExternalAuthUpdate(next), &ExternalAuthUpdate{}
	if !proto.Equal(cur.GetIssuer(), next.GetIssuer()) {
		u.Issuer = full.Issuer
	}
	if !equalAll(cur.GetClients(), next.GetClients()) {
		u.Clients = full.Clients
	}
	if !proto.Equal(cur.GetClaimMappings(), next.GetClaimMappings()) {
		u.ClaimMappings = full.ClaimMappings
	}
	if !equalAll(cur.GetValidationRules(), next.GetValidationRules()) {
		u.ValidationRules = full.ValidationRules
	}
	return u
}

// ApplyExternalAuthUpdate returns cur with u's parts replaced; cur is not changed.
func ApplyExternalAuthUpdate(cur *ExternalAuthSpec, u *ExternalAuthUpdate) *ExternalAuthSpec {
	out := proto.Clone(cur).(*ExternalAuthSpec)
	if out == nil {
		out = &ExternalAuthSpec{}
	}
	if i := u.GetIssuer(); i != nil {
		out.Issuer = proto.Clone(i).(*TokenIssuer)
	}
	if c := u.GetClients(); c != nil {
		out.Clients = cloneAll(c.GetValues())
	}
	if m := u.GetClaimMappings(); m != nil {
		out.ClaimMappings = proto.Clone(m).(*TokenClaimMappings)
	}
	if r := u.GetValidationRules(); r != nil {
		out.ValidationRules = cloneAll(r.GetValues())
	}
	return out
}

// UpdateFieldPath turns the path of a field in a spec ("taints[2].effect", relative to the
// spec) into its path in an update message of the same field names ("taints.values[2].effect"),
// descending into the wrappers (StringMap, Taints, OptionalInt32, ...) that give a list, a map
// or an optional value presence. ok is false when the update has no such field: the violation
// is of a part the update cannot change.
func UpdateFieldPath(update protoreflect.MessageDescriptor, specPath string) (path string, ok bool) {
	head, rest, _ := strings.Cut(specPath, ".")
	name, suffix, _ := strings.Cut(head, "[")
	if suffix != "" {
		suffix = "[" + suffix
	}
	fd := update.Fields().ByName(protoreflect.Name(name))
	if fd == nil {
		return "", false
	}
	path = name
	if w := fd.Message(); w != nil && !fd.IsList() && !fd.IsMap() && w.Fields().Len() == 1 && isWrapper(w) {
		path += "." + string(w.Fields().Get(0).Name())
	}
	path += suffix
	if rest != "" {
		path += "." + rest
	}
	return path, true
}

// isWrapper: a message of one field whose arm_path is "." exists only to give that field
// presence in an update.
func isWrapper(md protoreflect.MessageDescriptor) bool {
	return ARMPathOf(md.Fields().Get(0)) == "."
}

func cloneAll[M proto.Message](in []M) []M {
	if in == nil {
		return nil
	}
	out := make([]M, len(in))
	for i, m := range in {
		out[i] = proto.Clone(m).(M)
	}
	return out
}

func equalAll[M proto.Message](a, b []M) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if !proto.Equal(a[i], b[i]) {
			return false
		}
	}
	return true
}
