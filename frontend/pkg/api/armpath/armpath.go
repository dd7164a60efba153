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
	"sync"

	"google.golang.org/protobuf/reflect/protoreflect"

	csv1 "github.com/openhcp/openhcp/cluster-service/api/v1"
)

// Shape converts one property whose ARM shape is not its proto field's, by its ARM path:
// ToSpec from the ARM value (an error for a value of another shape: a stored document is not
// checked against the specification first), ToARM back.
type Shape struct {
	ToSpec func(v any) (any, error)
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
//
// A value of another shape than its field's (a fraction or a string for an integer, an object
// for a scalar, a null in a list) is an error naming its ARM path. A body decoded into its
// api-version's type cannot have one; a stored document's JSON objects can.
func Fill(msg protoreflect.Message, doc any, shapes Shapes) error {
	root := reflect.ValueOf(doc)
	return fill(msg, root, root, "", shapes)
}

func fill(msg protoreflect.Message, doc, obj reflect.Value, base string, shapes Shapes) error {
	if o := deref(obj); o.IsValid() && !isObject(o) {
		return mismatch(base, o, "an object")
	}
	for _, f := range fieldsOf(msg.Descriptor()) {
		fd := f.fd
		v, err := deref(obj), error(nil)
		switch {
		case f.fromRoot:
			v, err = lookupChecked(doc, "", f.steps)
		case !f.self:
			v, err = lookupChecked(obj, base, f.steps)
		}
		if err != nil {
			return err
		}
		if !v.IsValid() {
			continue
		}
		path := base
		switch {
		case f.fromRoot:
			path = f.path
		case !f.self:
			path = join(base, f.path)
		}
		if shape, ok := shapes[path]; ok && shape.ToSpec != nil {
			sv, err := shape.ToSpec(v.Interface())
			if err != nil {
				return fmt.Errorf("%s: %w", path, err)
			}
			v = deref(reflect.ValueOf(sv))
		}
		switch {
		case fd.IsMap():
			if v.Kind() != reflect.Map || v.Type().Key().Kind() != reflect.String {
				return mismatch(path, v, "an object")
			}
			m := msg.Mutable(fd).Map()
			for it := v.MapRange(); it.Next(); {
				sv, err := scalar(fd.MapValue(), deref(it.Value()), join(path, it.Key().String()))
				if err != nil {
					return err
				}
				m.Set(protoreflect.ValueOfString(it.Key().String()).MapKey(), sv)
			}
		case fd.IsList():
			if v.Kind() != reflect.Slice && v.Kind() != reflect.Array {
				return mismatch(path, v, "a list")
			}
			l := msg.Mutable(fd).List()
			for j := 0; j < v.Len(); j++ {
				e := deref(v.Index(j))
				if !e.IsValid() {
					return fmt.Errorf("%s: element %d is null", path, j)
				}
				if fd.Message() != nil {
					el := l.NewElement()
					if err := fill(el.Message(), doc, e, path, shapes); err != nil {
						return err
					}
					l.Append(el)
					continue
				}
				sv, err := scalar(fd, e, path)
				if err != nil {
					return err
				}
				l.Append(sv)
			}
		case fd.Message() != nil:
			if err := fill(msg.Mutable(fd).Message(), doc, v, path, shapes); err != nil {
				return err
			}
		default:
			sv, err := scalar(fd, v, path)
			if err != nil {
				return err
			}
			msg.Set(fd, sv)
		}
	}
	return nil
}

// field is what Fill and Render use of a message field with an arm_path, read from its
// descriptor once (fieldsOf).
type field struct {
	fd protoreflect.FieldDescriptor
	// path is the arm_path without its leading "/" when fromRoot ("." when self): a path
	// from the document's root, the holder's own object, or a path below the holder.
	path     string
	fromRoot bool
	self     bool
	steps    []string // path's dotted steps
}

// fieldsByDescriptor holds each message descriptor's fields that have an arm_path, other than
// "-" (fieldsOf). It is process-wide, not held by a caller, because what it caches is: a
// message descriptor and its options are fixed for the life of the process (the generated
// code registers them once), so one reading serves every Fill and Render of every caller, where
// reading the option per field per call (proto.GetExtension) was a large part of every stored
// document's read. It grows by one entry per message type ever filled or rendered, no more.
var fieldsByDescriptor sync.Map // protoreflect.MessageDescriptor → []field

// fieldsOf is md's fields that have an arm_path other than "-", in field order: read from the
// descriptor on first use, from fieldsByDescriptor after.
func fieldsOf(md protoreflect.MessageDescriptor) []field {
	if fs, ok := fieldsByDescriptor.Load(md); ok {
		return fs.([]field)
	}
	fds := md.Fields()
	var fs []field
	for i := 0; i < fds.Len(); i++ {
		fd := fds.Get(i)
		p := csv1.ARMPathOf(fd)
		if p == "" || p == "-" {
			continue
		}
		f := field{fd: fd, path: p, self: p == "."}
		if strings.HasPrefix(p, "/") {
			f.fromRoot, f.path = true, p[1:]
		}
		f.steps = strings.Split(f.path, ".")
		fs = append(fs, f)
	}
	stored, _ := fieldsByDescriptor.LoadOrStore(md, fs)
	return stored.([]field)
}

// isObject says whether v (dereferenced) is an object: JSON objects' map or a body type's struct.
func isObject(v reflect.Value) bool {
	return (v.Kind() == reflect.Map && v.Type().Key().Kind() == reflect.String) || v.Kind() == reflect.Struct
}

// lookupChecked is lookup of a dotted path's steps below obj (itself at ARM path base), with an
// error when a step of the path is present but no object.
func lookupChecked(obj reflect.Value, base string, steps []string) (reflect.Value, error) {
	cur := deref(obj)
	for i, k := range steps {
		if !cur.IsValid() {
			return cur, nil
		}
		if !isObject(cur) {
			at := base
			for _, s := range steps[:i] {
				at = join(at, s)
			}
			return reflect.Value{}, mismatch(at, cur, "an object")
		}
		cur = deref(property(cur, k))
	}
	return cur, nil
}

// mismatch is the error for v at ARM path where want is expected.
func mismatch(path string, v reflect.Value, want string) error {
	if path == "" {
		path = "the document"
	}
	return fmt.Errorf("%s: %s where %s is expected", path, describe(v), want)
}

// describe names v's JSON shape, for errors.
func describe(v reflect.Value) string {
	if !v.IsValid() {
		return "null"
	}
	if n, ok := v.Interface().(json.Number); ok {
		return "the number " + n.String()
	}
	switch v.Kind() {
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "a boolean"
	case reflect.Map, reflect.Struct:
		return "an object"
	case reflect.Slice, reflect.Array:
		return "a list"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64, reflect.Uint, reflect.Uint8, reflect.Uint16,
		reflect.Uint32, reflect.Uint64, reflect.Float32, reflect.Float64:
		return fmt.Sprintf("the number %v", v.Interface())
	}
	return v.Type().String()
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
	for _, f := range fieldsOf(msg.Descriptor()) {
		fd := f.fd
		if !msg.Has(fd) && (fd.Kind() != protoreflect.BoolKind || fd.IsList() || fd.IsMap() || fd.HasPresence()) {
			continue
		}
		at := obj
		var path string
		if f.fromRoot {
			at, path = doc, f.path
		} else {
			path = join(base, f.path) // "." too, as before: "." or base + "..", a path no Shape names
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
			if f.path != "." {
				sub = object(at, f.steps)
			}
			render(fv.Message(), doc, sub, path, shapes)
			continue
		default:
			v = fv.Interface()
		}
		if shape, ok := shapes[path]; ok && shape.ToARM != nil {
			v = shape.ToARM(v)
		}
		set(at, f.steps, v)
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

// As is the value of type T at path in obj (Lookup), or nil when there is none or it is of
// another type. It is a copy: for reading a body decoded into its api-version's type by path,
// where the types of every version differ but the shared profiles are the same.
func As[T any](obj any, path string) *T {
	if x, ok := Lookup(obj, path).(T); ok {
		return &x
	}
	return nil
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
		if obj.Type() == jsonObject && obj.CanInterface() {
			// JSON objects, the common case, without reflect's copy of the key: a null value
			// is present (a nil interface), as MapIndex has it.
			e, ok := obj.Interface().(map[string]any)[k]
			switch {
			case !ok:
				return reflect.Value{}
			case e == nil:
				return reflect.Zero(jsonValue)
			}
			return reflect.ValueOf(e)
		}
		if obj.Type().Key().Kind() != reflect.String {
			return reflect.Value{}
		}
		return obj.MapIndex(reflect.ValueOf(k).Convert(obj.Type().Key()))
	case reflect.Struct:
		// The first field named k in field order, an embedded struct's searched in its place.
		sf := jsonFieldsOf(obj.Type())
		i, named := sf.named[k]
		for _, e := range sf.embedded {
			if named && e > i {
				break
			}
			if v := property(deref(obj.Field(e)), k); v.IsValid() {
				return v
			}
		}
		if named {
			return obj.Field(i)
		}
	}
	return reflect.Value{}
}

// jsonFields are a struct type's fields as property finds them by JSON name.
type jsonFields struct {
	named    map[string]int // each JSON name's first exported field (untagged: its Go name)
	embedded []int          // the embedded fields without a JSON name, in field order
}

// fieldsByType holds each struct type's jsonFields (jsonFieldsOf), process-wide for the reason
// fieldsByDescriptor is: a type's fields and tags are fixed for the process's life, and reading
// every field's tag on every step of every path was most of a body's Fill and checks. It grows
// by one entry per struct type ever read by path, no more.
var fieldsByType sync.Map // reflect.Type → *jsonFields

// jsonFieldsOf is struct type t's jsonFields: read from its tags on first use, from
// fieldsByType after.
func jsonFieldsOf(t reflect.Type) *jsonFields {
	if sf, ok := fieldsByType.Load(t); ok {
		return sf.(*jsonFields)
	}
	sf := &jsonFields{named: map[string]int{}}
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if f.Anonymous && name == "" {
			sf.embedded = append(sf.embedded, i)
			continue
		}
		if name == "" {
			name = f.Name
		}
		if _, seen := sf.named[name]; !seen && f.IsExported() {
			sf.named[name] = i
		}
	}
	stored, _ := fieldsByType.LoadOrStore(t, sf)
	return stored.(*jsonFields)
}

// Object is the object at a dotted path below obj, made where it is missing (a key without a dot
// is a path of one).
func Object(obj map[string]any, path string) map[string]any {
	return object(obj, strings.Split(path, "."))
}

// object is Object by the path's steps.
func object(obj map[string]any, steps []string) map[string]any {
	for _, k := range steps {
		next, ok := obj[k].(map[string]any)
		if !ok {
			next = map[string]any{}
			obj[k] = next
		}
		obj = next
	}
	return obj
}

// Set puts v at a dotted path below obj, making the objects on the way.
func Set(obj map[string]any, path string, v any) {
	set(obj, strings.Split(path, "."), v)
}

// set is Set by the path's steps.
func set(obj map[string]any, steps []string, v any) {
	last := len(steps) - 1
	object(obj, steps[:last])[steps[last]] = v
}

// The reflect types property and scalar compare a value's with, to take the short way.
var (
	jsonObject = reflect.TypeFor[map[string]any]()
	jsonValue  = reflect.TypeFor[any]()
	jsonNumber = reflect.TypeFor[json.Number]()
)

func join(a, b string) string {
	if a == "" {
		return b
	}
	return a + "." + b
}

// scalar converts an ARM value (from a body's type or JSON objects) to a proto scalar of fd's
// kind; a value of another kind is an error naming path. In a body's type that is a
// programming error (an arm_path naming a property of another type), caught by the mapping
// tests; in a stored document it is the document's.
func scalar(fd protoreflect.FieldDescriptor, v reflect.Value, path string) (protoreflect.Value, error) {
	if !v.IsValid() {
		return protoreflect.Value{}, mismatch(path, v, "a "+kindName(fd))
	}
	orig := v
	if v.Type() == jsonNumber {
		i, err := json.Number(v.String()).Int64()
		if err != nil {
			return protoreflect.Value{}, mismatch(path, orig, "a "+kindName(fd))
		}
		v = reflect.ValueOf(i)
	}
	switch k := v.Kind(); {
	case fd.Kind() == protoreflect.StringKind && k == reflect.String:
		return protoreflect.ValueOfString(v.String()), nil
	case fd.Kind() == protoreflect.BoolKind && k == reflect.Bool:
		return protoreflect.ValueOfBool(v.Bool()), nil
	case fd.Kind() == protoreflect.Int32Kind && v.CanInt() && v.Int() == int64(int32(v.Int())):
		return protoreflect.ValueOfInt32(int32(v.Int())), nil
	case fd.Kind() == protoreflect.Int64Kind && v.CanInt():
		return protoreflect.ValueOfInt64(v.Int()), nil
	}
	return protoreflect.Value{}, mismatch(path, orig, "a "+kindName(fd))
}

// kindName names the JSON shape of fd's kind, for errors.
func kindName(fd protoreflect.FieldDescriptor) string {
	switch fd.Kind() {
	case protoreflect.StringKind:
		return "string"
	case protoreflect.BoolKind:
		return "boolean"
	case protoreflect.Int32Kind:
		return "32-bit integer"
	case protoreflect.Int64Kind:
		return "64-bit integer"
	}
	return fd.Kind().String()
}

// KeyValueList is the Shape of a map held in ARM as a list of {"key", "value"} objects (node
// pool labels), listed by key.
var KeyValueList = Shape{
	ToSpec: func(v any) (any, error) {
		if l := deref(reflect.ValueOf(v)); l.Kind() != reflect.Slice && l.Kind() != reflect.Array {
			return nil, fmt.Errorf("%s where a list of {key, value} is expected", describe(l))
		}
		m := map[string]any{}
		for i, e := range Elements(v) {
			key, ok := Lookup(e, "key").(string)
			value, vok := Lookup(e, "value").(string)
			if !ok || (!vok && Lookup(e, "value") != nil) {
				return nil, fmt.Errorf("element %d: %s where {key, value} strings are expected", i, describe(deref(reflect.ValueOf(e))))
			}
			m[key] = value
		}
		return m, nil
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
