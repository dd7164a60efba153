// Package armpath moves a resource between its ARM form (JSON objects, as a body or a resource
// document holds it) and Cluster Service's message, field by field through the message's
// arm_path options: a property with an arm_path needs no hand-written conversion either way.
package armpath

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"reflect"
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

// Fill sets every field of msg that has an arm_path from the value at that path in doc, an ARM
// body's type (its properties found by their JSON names) or the JSON objects of a document; a
// path absent from doc (or null) leaves the field unset. "." is the holder's own object, "/a.b"
// a path from doc's root, "-" and no option are fields that do not come from the ARM form.
func Fill(msg protoreflect.Message, doc any, shapes Shapes) {
	root := reflect.ValueOf(doc)
	fill(msg, root, root, "", shapes)
}

func fill(msg protoreflect.Message, doc, obj reflect.Value, base string, shapes Shapes) {
	fields := msg.Descriptor().Fields()
	for i := 0; i < fields.Len(); i++ {
		fd := fields.Get(i)
		p := csv1.ARMPathOf(fd)
		if p == "" || p == "-" {
			continue
		}
		v, path := deref(obj), base
		switch {
		case strings.HasPrefix(p, "/"):
			v, path = lookup(doc, p[1:]), p[1:]
		case p != ".":
			v, path = lookup(obj, p), join(base, p)
		}
		if !v.IsValid() {
			continue
		}
		if shape, ok := shapes[path]; ok && shape.ToSpec != nil {
			v = deref(reflect.ValueOf(shape.ToSpec(v.Interface())))
		}
		switch {
		case fd.IsMap():
			m := msg.Mutable(fd).Map()
			for it := v.MapRange(); it.Next(); {
				m.Set(protoreflect.ValueOfString(it.Key().String()).MapKey(), scalar(fd.MapValue(), deref(it.Value()), path))
			}
		case fd.IsList():
			l := msg.Mutable(fd).List()
			for j := 0; j < v.Len(); j++ {
				if fd.Message() != nil {
					el := l.NewElement()
					fill(el.Message(), doc, v.Index(j), path, shapes)
					l.Append(el)
				} else {
					l.Append(scalar(fd, deref(v.Index(j)), path))
				}
			}
		case fd.Message() != nil:
			fill(msg.Mutable(fd).Message(), doc, v, path, shapes)
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

// Lookup is the value at a dotted path below obj, an ARM body's type or JSON objects: a
// string, bool, number (an int32 in a body's type, a json.Number in JSON objects), a list, an
// object, or nil when absent or null.
func Lookup(obj any, path string) any {
	v := lookup(reflect.ValueOf(obj), path)
	if !v.IsValid() {
		return nil
	}
	return v.Interface()
}

// Elements are the values of a list (nil for anything else), each as Lookup gives it.
func Elements(list any) []any {
	v := deref(reflect.ValueOf(list))
	if !v.IsValid() || (v.Kind() != reflect.Slice && v.Kind() != reflect.Array) {
		return nil
	}
	out := make([]any, v.Len())
	for i := range out {
		if e := deref(v.Index(i)); e.IsValid() {
			out[i] = e.Interface()
		}
	}
	return out
}

func lookup(obj reflect.Value, path string) reflect.Value {
	cur := deref(obj)
	for _, k := range strings.Split(path, ".") {
		cur = deref(property(cur, k))
		if !cur.IsValid() {
			return cur
		}
	}
	return cur
}

// deref follows pointers and interfaces: the invalid Value for a nil one.
func deref(v reflect.Value) reflect.Value {
	for v.IsValid() && (v.Kind() == reflect.Pointer || v.Kind() == reflect.Interface) {
		if v.IsNil() {
			return reflect.Value{}
		}
		v = v.Elem()
	}
	return v
}

// property is obj's property k: a map's key, or the struct field whose JSON name is k (in an
// embedded struct too).
func property(obj reflect.Value, k string) reflect.Value {
	switch obj.Kind() {
	case reflect.Map:
		if obj.Type().Key().Kind() != reflect.String {
			return reflect.Value{}
		}
		return obj.MapIndex(reflect.ValueOf(k).Convert(obj.Type().Key()))
	case reflect.Struct:
		t := obj.Type()
		for i := 0; i < t.NumField(); i++ {
			f := t.Field(i)
			name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
			if f.Anonymous && name == "" {
				if v := property(deref(obj.Field(i)), k); v.IsValid() {
					return v
				}
				continue
			}
			if name == "" {
				name = f.Name
			}
			if name == k && f.IsExported() {
				return obj.Field(i)
			}
		}
	}
	return reflect.Value{}
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

// scalar converts an ARM value (from a body's type or JSON objects) to a proto scalar of fd's
// kind. A mismatch is a programming error (an arm_path naming a property of another type, or a
// body not checked against its schema first), caught by the mapping tests.
func scalar(fd protoreflect.FieldDescriptor, v reflect.Value, path string) protoreflect.Value {
	if n, ok := v.Interface().(json.Number); ok {
		if i, err := n.Int64(); err == nil {
			v = reflect.ValueOf(i)
		}
	}
	switch k := v.Kind(); {
	case fd.Kind() == protoreflect.StringKind && k == reflect.String:
		return protoreflect.ValueOfString(v.String())
	case fd.Kind() == protoreflect.BoolKind && k == reflect.Bool:
		return protoreflect.ValueOfBool(v.Bool())
	case fd.Kind() == protoreflect.Int32Kind && v.CanInt() && v.Int() == int64(int32(v.Int())):
		return protoreflect.ValueOfInt32(int32(v.Int()))
	case fd.Kind() == protoreflect.Int64Kind && v.CanInt():
		return protoreflect.ValueOfInt64(v.Int())
	}
	panic(fmt.Sprintf("ARM %s: %v (%s) does not fit proto field %s (%s)", path, v, v.Type(), fd.FullName(), fd.Kind()))
}

// KeyValueList is the Shape of a map held in ARM as a list of {"key", "value"} objects (node
// pool labels), listed by key.
var KeyValueList = Shape{
	ToSpec: func(v any) any {
		m := map[string]any{}
		for _, e := range Elements(v) {
			key, _ := Lookup(e, "key").(string)
			value, _ := Lookup(e, "value").(string)
			m[key] = value
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
