package csv1

import (
	"strings"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
)

// ARMPathOf is the arm_path option of a field ("" when the field has none).
func ARMPathOf(fd protoreflect.FieldDescriptor) string {
	s, _ := proto.GetExtension(fd.Options(), E_ArmPath).(string)
	return s
}

// ARMPath turns the field path of a violation that Cluster Service reported for a request of
// type root ("cluster.spec.network.host_prefix", "node_pool.spec.taints[2].effect") into the
// path of the field in the frontend's internal ARM model ("properties.network.hostPrefix",
// "properties.taints[2].effect"), following the arm_path options of the fields on the way.
// ok is false when the path names no field of root, crosses a field without arm_path, or ends
// in a field that does not come from the request body ("-"): such a violation has no target.
func ARMPath(root protoreflect.MessageDescriptor, field string) (path string, ok bool) {
	md, cur := root, ""
	segs := strings.Split(field, ".")
	for _, seg := range segs {
		name, suffix, _ := strings.Cut(seg, "[")
		if suffix != "" {
			suffix = "[" + suffix
		}
		if md == nil {
			// Below a scalar or a map: a key, as Cluster Service wrote it.
			cur = join(cur, seg)
			continue
		}
		fd := md.Fields().ByName(protoreflect.Name(name))
		if fd == nil {
			return "", false
		}
		switch p := ARMPathOf(fd); {
		case p == "" || p == "-":
			return "", false
		case p == ".":
		case strings.HasPrefix(p, "/"):
			cur = p[1:]
		default:
			cur = join(cur, p)
		}
		cur += suffix
		md = nil
		if fd.Message() != nil && !fd.IsMap() {
			md = fd.Message()
		}
	}
	return cur, cur != ""
}

func join(a, b string) string {
	switch {
	case a == "":
		return b
	case b == "":
		return a
	}
	return a + "." + b
}
