package csv1

import (
	"slices"
	"strings"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
)

// Partial updates of clusters, node pools and external auths: the caller names only the fields
// it changes, Cluster Service applies them to its stored spec under its own lock and validates
// the result. This file is the one place that knows how an update message maps onto its spec:
// Full* (every field set: an ARM PUT of a node pool or an external auth), *Diff (only what
// differs: an ARM PATCH, and a cluster's PUT) and Apply* (Cluster Service's merge), so
// Apply(a, Diff(a, b)) is b's updatable part, with two exceptions by design: an empty version or
// channel group in b means "leave a's" (a plain scalar's zero is never sent), and an empty
// message in b (autoscaling {}) comes back absent, as Cluster Service stores no empty message.

// A node pool update is read from the descriptors: each NodePoolUpdate field changes the
// NodePoolSpec field of its name, so a new updatable field costs no edit here. Its form says how:
//   - a scalar without presence (version_id, channel_group): its zero value leaves the spec's;
//   - an optional scalar (auto_repair) or a message (autoscaling): set replaces the spec's;
//   - a wrapper (StringMap, Taints, OptionalInt32: one field whose arm_path is "."): set
//     replaces the spec's with the wrapped value, an empty or absent one clearing it.
//
// nodePoolSizeFields are the one rule that names fields: replicas and autoscaling are the
// pool's size together, so an update that sets either replaces both.
var nodePoolSizeFields = []protoreflect.Name{"replicas", "autoscaling"}

// FullNodePoolUpdate sets every field an update may change to spec's value: applied, the pool's
// updatable fields become spec's (an empty version or channel group still leaves the pool's).
func FullNodePoolUpdate(spec *NodePoolSpec) *NodePoolUpdate {
	u := &NodePoolUpdate{}
	sm, um := spec.ProtoReflect(), u.ProtoReflect()
	eachUpdateField(um, sm, func(ufd, sfd protoreflect.FieldDescriptor) {
		if !slices.Contains(nodePoolSizeFields, ufd.Name()) {
			fromSpec(um, ufd, sm, sfd)
		}
	})
	setSize(um, sm)
	return u
}

// NodePoolUpdateDiff names only the fields in which next differs from cur; an empty update
// when nothing an update may change differs.
func NodePoolUpdateDiff(cur, next *NodePoolSpec) *NodePoolUpdate {
	u := &NodePoolUpdate{}
	cm, nm, um := cur.ProtoReflect(), next.ProtoReflect(), u.ProtoReflect()
	sizeChanged := false
	eachUpdateField(um, nm, func(ufd, sfd protoreflect.FieldDescriptor) {
		if sameField(cm, nm, sfd) {
			return
		}
		if slices.Contains(nodePoolSizeFields, ufd.Name()) {
			sizeChanged = true
			return
		}
		fromSpec(um, ufd, nm, sfd)
	})
	if sizeChanged {
		setSize(um, nm)
	}
	return u
}

// ApplyNodePoolUpdate returns cur with u's fields applied; cur is not changed.
func ApplyNodePoolUpdate(cur *NodePoolSpec, u *NodePoolUpdate) *NodePoolSpec {
	out := proto.Clone(cur).(*NodePoolSpec)
	if out == nil {
		out = &NodePoolSpec{}
	}
	if u == nil {
		return out
	}
	om, um := out.ProtoReflect(), u.ProtoReflect()
	sizeSet := false
	for _, name := range nodePoolSizeFields {
		sizeSet = sizeSet || um.Has(um.Descriptor().Fields().ByName(name))
	}
	eachUpdateField(um, om, func(ufd, sfd protoreflect.FieldDescriptor) {
		if slices.Contains(nodePoolSizeFields, ufd.Name()) {
			if sizeSet {
				om.Clear(sfd)
				if um.Has(ufd) {
					copyField(om, sfd, um, ufd)
				}
			}
			return
		}
		if !um.Has(ufd) {
			return
		}
		if w := wrapped(ufd); w != nil {
			om.Clear(sfd)
			if wm := um.Get(ufd).Message(); wm.Has(w) {
				copyField(om, sfd, wm, w)
			}
			return
		}
		copyField(om, sfd, um, ufd)
	})
	return out
}

// eachUpdateField calls f with each field of update u and the field of its name in spec s.
// TestNodePoolUpdateCoversEveryUpdateField holds that there is one.
func eachUpdateField(u, s protoreflect.Message, f func(ufd, sfd protoreflect.FieldDescriptor)) {
	fields := u.Descriptor().Fields()
	for i := 0; i < fields.Len(); i++ {
		ufd := fields.Get(i)
		if sfd := s.Descriptor().Fields().ByName(ufd.Name()); sfd != nil {
			f(ufd, sfd)
		}
	}
}

// setSize names the spec's whole size: the size fields the spec has (its autoscaling, its
// replicas, or both: Cluster Service's model then decides whether they conflict), or its
// replicas when it has neither (a pool of 0 nodes).
func setSize(u, s protoreflect.Message) {
	set := false
	for _, name := range nodePoolSizeFields {
		if sfd := s.Descriptor().Fields().ByName(name); s.Has(sfd) {
			fromSpec(u, u.Descriptor().Fields().ByName(name), s, sfd)
			set = true
		}
	}
	if !set {
		fromSpec(u, u.Descriptor().Fields().ByName(nodePoolSizeFields[0]), s, s.Descriptor().Fields().ByName(nodePoolSizeFields[0]))
	}
}

// fromSpec sets update field ufd of u to spec s's field sfd.
func fromSpec(u protoreflect.Message, ufd protoreflect.FieldDescriptor, s protoreflect.Message, sfd protoreflect.FieldDescriptor) {
	if w := wrapped(ufd); w != nil {
		wm := u.Mutable(ufd).Message() // set even when the spec's is empty: that clears it
		if s.Has(sfd) {
			copyField(wm, w, s, sfd)
		}
		return
	}
	if sfd.Message() != nil && !s.Has(sfd) {
		return
	}
	copyField(u, ufd, s, sfd)
}

// wrapped is the one field of ufd's wrapper message, or nil when ufd is not a wrapper.
func wrapped(ufd protoreflect.FieldDescriptor) protoreflect.FieldDescriptor {
	if md := ufd.Message(); md != nil && !ufd.IsList() && !ufd.IsMap() && md.Fields().Len() == 1 && isWrapper(md) {
		return md.Fields().Get(0)
	}
	return nil
}

// copyField sets dst's field dfd to a copy of src's field sfd (the same type, presence aside).
func copyField(dst protoreflect.Message, dfd protoreflect.FieldDescriptor, src protoreflect.Message, sfd protoreflect.FieldDescriptor) {
	v := src.Get(sfd)
	switch {
	case sfd.IsList():
		l := dst.Mutable(dfd).List()
		for i := 0; i < v.List().Len(); i++ {
			l.Append(cloneValue(v.List().Get(i)))
		}
	case sfd.IsMap():
		m := dst.Mutable(dfd).Map()
		v.Map().Range(func(k protoreflect.MapKey, e protoreflect.Value) bool {
			m.Set(k, cloneValue(e))
			return true
		})
	case sfd.HasPresence() && !src.Has(sfd):
		dst.Clear(dfd)
	default:
		dst.Set(dfd, cloneValue(v))
	}
}

func cloneValue(v protoreflect.Value) protoreflect.Value {
	if m, ok := v.Interface().(protoreflect.Message); ok {
		return protoreflect.ValueOfMessage(proto.Clone(m.Interface()).ProtoReflect())
	}
	return v
}

// sameField says whether a and b (of one type) hold the same value in fd, presence included.
func sameField(a, b protoreflect.Message, fd protoreflect.FieldDescriptor) bool {
	x, y := a.New(), b.New()
	if a.Has(fd) {
		x.Set(fd, a.Get(fd))
	}
	if b.Has(fd) {
		y.Set(fd, b.Get(fd))
	}
	return proto.Equal(x.Interface(), y.Interface())
}

// A cluster update is read from the descriptors too. ClusterSpec is nested (version_id beside
// azure.workload_identities), so names do not match; both messages carry arm_path options
// instead, and a ClusterUpdate field changes the ClusterSpec field at its arm_path (the spec
// field's whole ARM path, composed as ARMPath composes it: "." at its holder's path, "/..."
// absolute, anything else below its holder). Its form says how, as for node pools, and:
//   - a message that is not a wrapper (autoscaling, workload_identities): set replaces the
//     spec's, an empty one clears it (autoscaling: every setting back to HyperShift's default).
//
// An admin-only field (arm_path "-": paused_until) is in no ARM body, so it has no ARM path to
// match by: it changes the ClusterSpec field of its name, which must be admin-only too.
//
// The one field that names a rule is etcd_encryption_key_version (clusterKeyVersionField): the
// spec holds the whole key URL, and a new version becomes the active key with the one active
// before kept as the backup key (etcd_encryption_backup_key_id), so secrets written with it
// stay readable.
const clusterKeyVersionField protoreflect.Name = "etcd_encryption_key_version"

// clusterUpdateField is a ClusterUpdate field and the path of fields from ClusterSpec's root
// to the spec field it changes.
type clusterUpdateField struct {
	ufd  protoreflect.FieldDescriptor
	spec []protoreflect.FieldDescriptor
}

// clusterUpdateFields are ClusterUpdate's fields that change a spec field, each with that
// field; the named rule's field (clusterKeyVersionField) is not among them.
// TestClusterUpdateCoversEveryUpdateField holds that every other field has one.
func clusterUpdateFields() []clusterUpdateField {
	sd := (&ClusterSpec{}).ProtoReflect().Descriptor()
	byPath := map[string][]protoreflect.FieldDescriptor{}
	specFieldsByARMPath(sd, "", nil, byPath)
	ud := (&ClusterUpdate{}).ProtoReflect().Descriptor()
	var out []clusterUpdateField
	for i := 0; i < ud.Fields().Len(); i++ {
		ufd := ud.Fields().Get(i)
		if path := clusterSpecFieldOf(ufd, sd, byPath); path != nil {
			out = append(out, clusterUpdateField{ufd: ufd, spec: path})
		}
	}
	return out
}

// clusterSpecFieldOf is the path of the ClusterSpec field update field ufd changes, or nil.
func clusterSpecFieldOf(ufd protoreflect.FieldDescriptor, sd protoreflect.MessageDescriptor, byPath map[string][]protoreflect.FieldDescriptor) []protoreflect.FieldDescriptor {
	switch p := ARMPathOf(ufd); p {
	case "":
		return nil
	case "-":
		if sfd := sd.Fields().ByName(ufd.Name()); sfd != nil && ARMPathOf(sfd) == "-" {
			return []protoreflect.FieldDescriptor{sfd}
		}
		return nil
	default:
		return byPath[p]
	}
}

// specFieldsByARMPath records every field below md (whose ARM path is base, reached by prefix)
// under its whole ARM path. Where two fields share a path ("/id"), the first is kept: no update
// field has such a path.
func specFieldsByARMPath(md protoreflect.MessageDescriptor, base string, prefix []protoreflect.FieldDescriptor, into map[string][]protoreflect.FieldDescriptor) {
	fields := md.Fields()
	for i := 0; i < fields.Len(); i++ {
		fd := fields.Get(i)
		var path string
		switch p := ARMPathOf(fd); {
		case p == "" || p == "-":
			continue
		case p == ".":
			path = base
		case strings.HasPrefix(p, "/"):
			path = p[1:]
		default:
			path = join(base, p)
		}
		at := append(slices.Clone(prefix), fd)
		if _, ok := into[path]; !ok && path != base {
			into[path] = at
		}
		if fd.Message() != nil && !fd.IsList() && !fd.IsMap() {
			specFieldsByARMPath(fd.Message(), path, at, into)
		}
	}
}

// ClusterUpdateDiff names only the fields in which next differs from cur; an empty update when
// nothing an update may change differs.
func ClusterUpdateDiff(cur, next *ClusterSpec) *ClusterUpdate {
	u := &ClusterUpdate{}
	um := u.ProtoReflect()
	for _, f := range clusterUpdateFields() {
		cm, cfd := specParent(cur.ProtoReflect(), f.spec, false)
		nm, nfd := specParent(next.ProtoReflect(), f.spec, false)
		if sameField(cm, nm, cfd) {
			continue
		}
		if f.ufd.Message() != nil && wrapped(f.ufd) == nil && !nm.Has(nfd) {
			um.Mutable(f.ufd) // empty: clears the spec's
			continue
		}
		fromSpec(um, f.ufd, nm, nfd)
	}
	// clusterKeyVersionField: the version of next's key, when it has one and the version differs.
	if a, b := keyVersion(cur.GetEtcdEncryptionKeyId()), keyVersion(next.GetEtcdEncryptionKeyId()); b != "" && a != b {
		um.Set(um.Descriptor().Fields().ByName(clusterKeyVersionField), protoreflect.ValueOfString(b))
	}
	return u
}

// ApplyClusterUpdate returns cur with u's fields applied; cur is not changed. A key version
// is applied only to a cluster that has a customer-managed key (Cluster Service's model
// refuses it for another).
func ApplyClusterUpdate(cur *ClusterSpec, u *ClusterUpdate) *ClusterSpec {
	out := proto.Clone(cur).(*ClusterSpec)
	if out == nil {
		out = &ClusterSpec{}
	}
	if u == nil {
		return out
	}
	um := u.ProtoReflect()
	for _, f := range clusterUpdateFields() {
		if !um.Has(f.ufd) {
			continue
		}
		om, ofd := specParent(out.ProtoReflect(), f.spec, true)
		switch w := wrapped(f.ufd); {
		case w != nil:
			om.Clear(ofd)
			if wm := um.Get(f.ufd).Message(); wm.Has(w) {
				copyField(om, ofd, wm, w)
			}
		case f.ufd.Message() != nil && proto.Size(um.Get(f.ufd).Message().Interface()) == 0:
			om.Clear(ofd)
		default:
			copyField(om, ofd, um, f.ufd)
		}
	}
	// clusterKeyVersionField: the new version becomes the active key, the active one the backup.
	if ver, active := u.GetEtcdEncryptionKeyVersion(), cur.GetEtcdEncryptionKeyId(); ver != "" && active != "" {
		if next := active[:strings.LastIndex(active, "/")+1] + ver; next != active {
			out.EtcdEncryptionKeyId = next
			out.EtcdEncryptionBackupKeyId = active
		}
	}
	return out
}

// ClusterUpdateChangesConfiguration reports whether u changes anything but the version and the
// channel group, which Cluster Service resolves through its version catalogue (a version
// change is an upgrade policy, not a configuration change).
func ClusterUpdateChangesConfiguration(u *ClusterUpdate) bool {
	changes := false
	u.ProtoReflect().Range(func(fd protoreflect.FieldDescriptor, _ protoreflect.Value) bool {
		changes = fd.Name() != "version_id" && fd.Name() != "channel_group"
		return !changes
	})
	return changes
}

// keyVersion is the version of a Key Vault key URL (its last segment), "" for no key.
func keyVersion(keyID string) string {
	if keyID == "" {
		return ""
	}
	return keyID[strings.LastIndex(keyID, "/")+1:]
}

// specParent is the message that holds the last field of path, below m, and that field. With
// mutable, the messages on the way are created when absent; without, an absent one reads as
// empty.
func specParent(m protoreflect.Message, path []protoreflect.FieldDescriptor, mutable bool) (protoreflect.Message, protoreflect.FieldDescriptor) {
	for _, fd := range path[:len(path)-1] {
		switch {
		case mutable:
			m = m.Mutable(fd).Message()
		case m.Has(fd):
			m = m.Get(fd).Message()
		default:
			m = m.NewField(fd).Message()
		}
	}
	return m, path[len(path)-1]
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
