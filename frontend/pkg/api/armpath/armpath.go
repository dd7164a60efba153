// Package armpath moves a resource between its ARM form (JSON objects, as a body or a resource
// document holds it) and Cluster Service's message, field by field through the message's
// arm_path options: a property with an arm_path needs no hand-written conversion either way.
package armpath

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"

	"google.golang.org/protobuf/reflect/protoreflect"

	csv1 "github.com/openhcp/openhcp/cluster-service/api/v1"
)

// Shape converts one property whose ARM shape is not its proto field's, by its ARM path:
// ToSpec from the ARM value, ToARM back.
type Shape struct {
	ToSpec func(v any) any
	ToARM  func(v any) any
}

// Shapes are a kind's Shape by ARM path.
type Shapes map[string]Shape

// Document is v (an ARM body's type, or any value that marshals) as JSON objects, numbers kept
// exact. The types given are plain structs that always marshal.
func Document(v any) map[string]any {
	b, err := json.Marshal(v)
	if err != nil {
		panic(fmt.Sprintf("marshal %T: %v", v, err))
	}
	doc, err := Parse(b)
	if err != nil {
		panic(fmt.Sprintf("read back %T: %v", v, err))
	}
	return doc
}

// Parse reads a JSON object, numbers kept exact (json.Number), as Fill expects them.
func Parse(b []byte) (map[string]any, error) {
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	var doc map[string]any
	if err := d.Decode(&doc); err != nil {
		return nil, err
	}
	return doc, nil
}

// Fill sets every field of msg that has an arm_path from the value at that path in doc; a path
// absent from doc leaves the field unset. "." is the holder's own object, "/a.b" a path from
// doc's root, "-" and no option are fields that do not come from the ARM form.
func Fill(msg protoreflect.Message, doc map[string]any, shapes Shapes) {
	fill(msg, doc, doc, "", shapes)
}

func fill(msg protoreflect.Message, doc, obj map[string]any, base string, shapes Shapes) {
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
			v, path = Lookup(doc, p[1:]), p[1:]
		case p != ".":
			v, path = Lookup(obj, p), join(base, p)
		}
		if v == nil {
			continue
		}
		if shape, ok := shapes[path]; ok && shape.ToSpec != nil {
			v = shape.ToSpec(v)
		}
		switch {
		case fd.IsMap():
			m := msg.Mutable(fd).Map()
			for k, e := range v.(map[string]any) {
				m.Set(protoreflect.ValueOfString(k).MapKey(), scalar(fd.MapValue(), e, path))
			}
		case fd.IsList():
			l := msg.Mutable(fd).List()
			for _, e := range v.([]any) {
				if fd.Message() != nil {
					el := l.NewElement()
					fill(el.Message(), doc, e.(map[string]any), path, shapes)
					l.Append(el)
				} else {
					l.Append(scalar(fd, e, path))
				}
			}
		case fd.Message() != nil:
			fill(msg.Mutable(fd).Message(), doc, v.(map[string]any), path, shapes)
		default:
			msg.Set(fd, scalar(fd, v, path))
		}
	}
}

// Render is msg's ARM form, the inverse of Fill: a field is written at its arm_path when it is
// set (proto presence: a scalar without it is set when not zero), and a bool always (false is
// a value in ARM, where absent means the specification's default).
func Render(msg protoreflect.Message, shapes Shapes) map[string]any {
	doc := map[string]any{}
	render(msg, doc, doc, "", shapes)
	return doc
}

func render(msg protoreflect.Message, doc, obj map[string]any, base string, shapes Shapes) {
	fields := msg.Descriptor().Fields()
	for i := 0; i < fields.Len(); i++ {
		fd := fields.Get(i)
		p := csv1.ARMPathOf(fd)
		if p == "" || p == "-" {
			continue
		}
		if !msg.Has(fd) && (fd.Kind() != protoreflect.BoolKind || fd.IsList() || fd.IsMap() || fd.HasPresence()) {
			continue
		}
		at, rel, path := obj, p, join(base, p)
		if strings.HasPrefix(p, "/") {
			at, rel, path = doc, p[1:], p[1:]
		}
		var v any
		fv := msg.Get(fd)
		switch {
		case fd.IsMap():
			m := map[string]any{}
			fv.Map().Range(func(k protoreflect.MapKey, e protoreflect.Value) bool {
				m[k.String()] = e.Interface()
				return true
			})
			v = m
		case fd.IsList():
			l := make([]any, 0, fv.List().Len())
			for j := 0; j < fv.List().Len(); j++ {
				e := fv.List().Get(j)
				if fd.Message() != nil {
					el := map[string]any{}
					render(e.Message(), doc, el, path, shapes)
					l = append(l, el)
				} else {
					l = append(l, e.Interface())
				}
			}
			v = l
		case fd.Message() != nil:
			sub := obj
			if rel != "." {
				sub = object(at, rel)
			}
			render(fv.Message(), doc, sub, path, shapes)
			continue
		default:
			v = fv.Interface()
		}
		if shape, ok := shapes[path]; ok && shape.ToARM != nil {
			v = shape.ToARM(v)
		}
		set(at, rel, v)
	}
}

// Lookup is the value at a dotted path below obj (nil when absent).
func Lookup(obj map[string]any, path string) any {
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

// object is the object at a dotted path below obj, made where it is missing.
func object(obj map[string]any, path string) map[string]any {
	for _, k := range strings.Split(path, ".") {
		next, ok := obj[k].(map[string]any)
		if !ok {
			next = map[string]any{}
			obj[k] = next
		}
		obj = next
	}
	return obj
}

// set puts v at a dotted path below obj.
func set(obj map[string]any, path string, v any) {
	if i := strings.LastIndexByte(path, '.'); i >= 0 {
		obj, path = object(obj, path[:i]), path[i+1:]
	}
	obj[path] = v
}

func join(a, b string) string {
	if a == "" {
		return b
	}
	return a + "." + b
}

// scalar converts an ARM value to a proto scalar of fd's kind. A mismatch is a programming
// error (an arm_path naming a property of another type, or a body not checked against its
// schema first), caught by the mapping tests.
func scalar(fd protoreflect.FieldDescriptor, v any, path string) protoreflect.Value {
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
	panic(fmt.Sprintf("ARM %s: %v (%T) does not fit proto field %s (%s)", path, v, v, fd.FullName(), fd.Kind()))
}

// KeyValueList is the Shape of a map held in ARM as a list of {"key", "value"} objects (node
// pool labels), listed by key.
var KeyValueList = Shape{
	ToSpec: func(v any) any {
		m := map[string]any{}
		for _, e := range v.([]any) {
			e := e.(map[string]any)
			value, _ := e["value"].(string)
			m[e["key"].(string)] = value
		}
		return m
	},
	ToARM: func(v any) any {
		m := v.(map[string]any)
		l := make([]any, 0, len(m))
		for _, k := range slices.Sorted(maps.Keys(m)) {
			l = append(l, map[string]any{"key": k, "value": m[k]})
		}
		return l
	},
}
