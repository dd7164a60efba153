package api

import (
	"encoding/json"
	"errors"
	"net/http"
	"reflect"
	"sort"
	"strconv"
	"strings"

	"github.com/openhcp/openhcp/internal/arm"
)

// MaxDepth is how deeply a request body may nest objects and arrays, the body itself being
// level 1. ARM bodies are shallow: the deepest request example of every api-version's
// specification (a cluster's CreateOrUpdate) nests 7 levels, so 64 leaves ample room while a
// hostile body is refused after reading at most 64 levels, whatever its size.
const MaxDepth = 64

// MaxValues is how many values a request body may hold, counted as the objects and arrays it
// opens plus the commas between members (checkShape), never more than the values there are.
// The largest body the specification allows has about 62,000: 240 imageDigestMirrors entries
// of 255 mirrors each, with 500 authorizedCidrs. A body of more is refused before it is built,
// so the work a body costs is bounded by this, not by the 4 MiB size limit alone.
const MaxValues = 100_000

// DecodeStrict decodes a JSON object into v, a pointer to an external type. Unknown fields
// anywhere in the tree, property names in another case than the type's (ARM property names are
// case-sensitive; encoding/json alone would match them case-insensitively), keys that appear
// twice in one object, values of the wrong type, and a null where only a string, number or boolean
// can stand (a map's value, as a tag's, or a list's entry: encoding/json alone would keep it as
// "", 0 or false) are reported with their path as the error target; several problems become one
// MultipleErrorsOccurred. A null property stays an absent one.
func DecodeStrict(body []byte, v any) error {
	raw, errs, err := parseJSON(body)
	if err != nil {
		return err
	}
	if _, ok := raw.(map[string]any); !ok {
		return arm.NewCloudError(http.StatusBadRequest, arm.CodeInvalidRequestContent, "",
			"The request content was invalid and could not be deserialized: expected a JSON object")
	}
	c := &fieldChecker{unknown: true, nulls: true, errs: errs}
	c.check(raw, reflect.TypeOf(v))
	if len(errs.list) > 0 {
		return arm.Multiple(errs.list)
	}
	if err := json.Unmarshal(body, v); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) {
			return arm.NewCloudError(http.StatusBadRequest, arm.CodeInvalidRequestContent, te.Field,
				"The value of '%s' must be of type %s, not a JSON %s.", te.Field, jsonKind(te.Type), te.Value)
		}
		return arm.NewCloudError(http.StatusBadRequest, arm.CodeInvalidRequestContent, "",
			"The request content was invalid and could not be deserialized: %v", err)
	}
	return nil
}

// ParseObject reads a request body that must be one JSON object, refusing a key that appears
// twice in any object (400, target the key's path), for bodies decoded without a versioned type.
func ParseObject(body []byte) (map[string]any, error) {
	raw, errs, err := parseJSON(body)
	if err != nil {
		return nil, err
	}
	obj, ok := raw.(map[string]any)
	if !ok {
		return nil, arm.NewCloudError(http.StatusBadRequest, arm.CodeInvalidRequestContent, "",
			"The request content was invalid and could not be deserialized: expected a JSON object")
	}
	if len(errs.list) > 0 {
		return nil, arm.Multiple(errs.list)
	}
	return obj, nil
}

// MaxReportedProblems bounds the problems one body reports, here and in the versions' field
// checks: a body of a million repeated keys or invalid list entries is answered with the first
// ones, not with a million details that cost memory to collect and to send.
const MaxReportedProblems = 100

// problems collects what is wrong with a body, up to MaxReportedProblems.
type problems struct {
	list []*arm.CloudError
}

func (p *problems) add(at *path, format string, args ...any) {
	if !p.full() {
		p.list = append(p.list, arm.NewCloudError(http.StatusBadRequest, arm.CodeInvalidRequestContent, at.String(), format, args...))
	}
}

// full says no more problems are reported: callers check it before spelling out a message.
func (p *problems) full() bool { return len(p.list) >= MaxReportedProblems }

// path is where the walk of a body stands, as a stack of steps pushed going in and popped
// coming out: walking costs no allocation per value, and the path is spelt out (at most
// MaxDepth steps) only for a problem reported, so a deep or wide body costs linear time.
type path struct {
	steps []step
}

type step struct {
	key   string // an object's property, or a map's key
	index int    // an array's index
	kind  stepKind
}

type stepKind int

const (
	propertyStep stepKind = iota // spelt "parent.key"
	entryStep                    // a map's key, spelt "parent[key]"
	elementStep                  // spelt "parent[index]"
)

func (p *path) property(k string) { p.steps = append(p.steps, step{key: k, kind: propertyStep}) }
func (p *path) entry(k string)    { p.steps = append(p.steps, step{key: k, kind: entryStep}) }
func (p *path) element(i int)     { p.steps = append(p.steps, step{index: i, kind: elementStep}) }
func (p *path) pop()              { p.steps = p.steps[:len(p.steps)-1] }

// String spells the path as the error target: "properties.platform", "tags[a]", "x[3]".
func (p *path) String() string { return spell(p.steps) }

// parent names, in a message, the object that holds the last step.
func (p *path) parent() string {
	if len(p.steps) <= 1 {
		return "the request body"
	}
	return "'" + spell(p.steps[:len(p.steps)-1]) + "'"
}

func spell(steps []step) string {
	var b strings.Builder
	for _, s := range steps {
		switch s.kind {
		case propertyStep:
			if b.Len() > 0 {
				b.WriteByte('.')
			}
			b.WriteString(spellKey(s.key))
		case entryStep:
			b.WriteByte('[')
			b.WriteString(spellKey(s.key))
			b.WriteByte(']')
		default:
			b.WriteByte('[')
			b.WriteString(strconv.Itoa(s.index))
			b.WriteByte(']')
		}
	}
	return b.String()
}

// spellKey is a key as an error target or message shows it: a NUL it holds (refused, see
// hasNUL) is written as the escape \u0000, so the answer and its log line carry no NUL byte.
func spellKey(k string) string {
	if !hasNUL(k) {
		return k
	}
	return strings.ReplaceAll(k, "\x00", `\u0000`)
}

func jsonKind(t reflect.Type) string {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.String:
		return "string"
	case reflect.Bool:
		return "boolean"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "integer"
	case reflect.Float32, reflect.Float64:
		return "number"
	case reflect.Slice, reflect.Array:
		return "array"
	}
	return "object"
}

type jsonField struct {
	name string
	typ  reflect.Type
}

// typeFields are a struct type's JSON names, exactly as spelt and lower-cased.
type typeFields struct {
	exact map[string]jsonField
	lower map[string]string // lower-cased name -> name
}

// jsonFields maps the JSON names of t's fields (embedded structs flattened), exactly as spelt.
func jsonFields(t reflect.Type) map[string]jsonField {
	out := map[string]jsonField{}
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		tag := f.Tag.Get("json")
		if tag == "-" {
			continue
		}
		name, _, _ := strings.Cut(tag, ",")
		if f.Anonymous && name == "" {
			ft := f.Type
			for ft.Kind() == reflect.Pointer {
				ft = ft.Elem()
			}
			if ft.Kind() == reflect.Struct {
				for k, v := range jsonFields(ft) {
					if _, taken := out[k]; !taken {
						out[k] = v
					}
				}
				continue
			}
		}
		if !f.IsExported() {
			continue
		}
		if name == "" {
			name = f.Name
		}
		out[name] = jsonField{name: name, typ: f.Type}
	}
	return out
}

var rawMessageType = reflect.TypeOf(json.RawMessage(nil))

// fieldChecker reports the keys of a parsed body that a type does not name exactly. It reads
// each struct type's fields once per body, so a long array of objects costs one map lookup per
// key, not a reflection walk per object.
type fieldChecker struct {
	unknown bool // report keys the type does not know at all, not only those in another case
	nulls   bool // report a null map value or list entry of a scalar type (nullScalar)
	errs    *problems
	types   map[reflect.Type]*typeFields
	at      path
}

func (c *fieldChecker) fields(t reflect.Type) *typeFields {
	if tf, ok := c.types[t]; ok {
		return tf
	}
	tf := &typeFields{exact: jsonFields(t), lower: map[string]string{}}
	for name := range tf.exact {
		tf.lower[strings.ToLower(name)] = name
	}
	if c.types == nil {
		c.types = map[reflect.Type]*typeFields{}
	}
	c.types[t] = tf
	return tf
}

// unknownFields reports the keys of raw that t does not name exactly: those it names in another
// case always, the others if unknown is set.
func unknownFields(raw any, t reflect.Type, unknown bool, errs *problems) {
	c := &fieldChecker{unknown: unknown, errs: errs}
	c.check(raw, t)
}

// check walks raw as t at c.at.
func (c *fieldChecker) check(raw any, t reflect.Type) {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t == rawMessageType || t.Kind() == reflect.Interface {
		return
	}
	switch t.Kind() {
	case reflect.Struct:
		obj, ok := raw.(map[string]any)
		if !ok {
			return // a type error; json.Unmarshal reports it with its path
		}
		fields := c.fields(t)
		keys := make([]string, 0, len(obj))
		for k := range obj {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			f, ok := fields.exact[k]
			if !ok {
				if c.errs.full() {
					continue
				}
				c.at.property(k)
				if name, found := fields.lower[strings.ToLower(k)]; found {
					c.errs.add(&c.at, "The property '%s' is not known in %s: property names are case-sensitive; did you mean '%s'?", k, c.at.parent(), name)
				} else if c.unknown {
					c.errs.add(&c.at, "The property '%s' is not known in %s.", k, c.at.parent())
				}
				c.at.pop()
				continue
			}
			c.at.property(f.name)
			c.check(obj[k], f.typ)
			c.at.pop()
		}
	case reflect.Map:
		obj, ok := raw.(map[string]any)
		if !ok {
			return
		}
		for k, v := range obj {
			c.at.entry(k)
			c.nullScalar(v, t.Elem())
			c.check(v, t.Elem())
			c.at.pop()
		}
	case reflect.Slice, reflect.Array:
		arr, ok := raw.([]any)
		if !ok {
			return
		}
		for i, v := range arr {
			c.at.element(i)
			c.nullScalar(v, t.Elem())
			c.check(v, t.Elem())
			c.at.pop()
		}
	}
}

// nullScalar reports a null map value or list entry whose type is a string, number or boolean
// (not a pointer): it has no null, so encoding/json would store its zero value, and {"tags":
// {"a": null}} would keep tag a as "". In a merge patch a null removes the key first, so only a
// body read whole (c.nulls) gets here with one.
func (c *fieldChecker) nullScalar(raw any, t reflect.Type) {
	if !c.nulls || raw != nil || c.errs.full() {
		return
	}
	switch t.Kind() {
	case reflect.String, reflect.Bool, reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Float32, reflect.Float64:
		c.errs.add(&c.at, "The value of '%s' must be of type %s, not a JSON null.", c.at.String(), jsonKind(t))
	}
}
