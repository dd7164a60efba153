package frontend

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"

	"google.golang.org/protobuf/reflect/protoreflect"

	csv1 "github.com/openhcp/openhcp/cluster-service/api/v1"
)

// armShapes convert an internal model value, found at its path, to the shape of the proto
// field whose arm_path names that path.
type armShapes map[string]func(v any) any

// armDocument is the internal model m as JSON objects, numbers kept exact. The internal models
// are plain structs that always marshal.
func armDocument(m any) map[string]any {
	b, err := json.Marshal(m)
	if err != nil {
		panic(fmt.Sprintf("marshal internal model %T: %v", m, err))
	}
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	var doc map[string]any
	if err := d.Decode(&doc); err != nil {
		panic(fmt.Sprintf("read back internal model %T: %v", m, err))
	}
	return doc
}

// fillFromARM sets every field of msg that has an arm_path from the value at that path in doc
// (the whole internal model; obj is its part at base); a path absent from the model leaves the
// field unset. "." is obj itself, "/a.b" a path from doc's root, "-" and no option are fields
// that do not come from the internal model.
func fillFromARM(msg protoreflect.Message, doc, obj map[string]any, base string, shapes armShapes) {
	fields := msg.Descriptor().Fields()
	for i := 0; i < fields.Len(); i++ {
		fd := fields.Get(i)
		p := csv1.ARMPathOf(fd)
		if p == "" || p == "-" {
			continue
		}
		v, path := any(obj), base
		switch {
		case strings.HasPrefix(p, "/"):
			v, path = lookupARM(doc, p[1:]), p[1:]
		case p != ".":
			v, path = lookupARM(obj, p), joinARM(base, p)
		}
		if v == nil {
			continue
		}
		if shape, ok := shapes[path]; ok {
			v = shape(v)
		}
		switch {
		case fd.IsMap():
			m := msg.Mutable(fd).Map()
			for k, e := range v.(map[string]any) {
				m.Set(protoreflect.ValueOfString(k).MapKey(), armScalar(fd.MapValue(), e, path))
			}
		case fd.IsList():
			l := msg.Mutable(fd).List()
			for _, e := range v.([]any) {
				if fd.Message() != nil {
					el := l.NewElement()
					fillFromARM(el.Message(), doc, e.(map[string]any), path, shapes)
					l.Append(el)
				} else {
					l.Append(armScalar(fd, e, path))
				}
			}
		case fd.Message() != nil:
			fillFromARM(msg.Mutable(fd).Message(), doc, v.(map[string]any), path, shapes)
		default:
			msg.Set(fd, armScalar(fd, v, path))
		}
	}
}

// lookupARM is the value at a dotted path below obj (nil when absent).
func lookupARM(obj map[string]any, path string) any {
	var cur any = obj
	for _, k := range strings.Split(path, ".") {
		m, ok := cur.(map[string]any)
		if !ok {
			return nil
		}
		cur = m[k]
	}
	return cur
}

func joinARM(a, b string) string {
	if a == "" {
		return b
	}
	return a + "." + b
}

// armScalar converts an internal model value to a proto scalar of fd's kind. A mismatch is a
// programming error (an arm_path naming a field of another type), caught by the mapping tests.
func armScalar(fd protoreflect.FieldDescriptor, v any, path string) protoreflect.Value {
	switch fd.Kind() {
	case protoreflect.StringKind:
		if s, ok := v.(string); ok {
			return protoreflect.ValueOfString(s)
		}
	case protoreflect.BoolKind:
		if b, ok := v.(bool); ok {
			return protoreflect.ValueOfBool(b)
		}
	case protoreflect.Int32Kind:
		if n, ok := v.(json.Number); ok {
			if i, err := n.Int64(); err == nil && i == int64(int32(i)) {
				return protoreflect.ValueOfInt32(int32(i))
			}
		}
	case protoreflect.Int64Kind:
		if n, ok := v.(json.Number); ok {
			if i, err := n.Int64(); err == nil {
				return protoreflect.ValueOfInt64(i)
			}
		}
	}
	panic(fmt.Sprintf("internal model %s: %v (%T) does not fit proto field %s (%s)", path, v, v, fd.FullName(), fd.Kind()))
}
