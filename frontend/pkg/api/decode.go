package api

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
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

// DecodeStrict decodes a JSON object into v, a pointer to an external type. Unknown fields
// anywhere in the tree, property names in another case than the type's (ARM property names are
// case-sensitive; encoding/json alone would match them case-insensitively), keys that appear
// twice in one object, and values of the wrong type are reported with their path as the error
// target; several problems become one MultipleErrorsOccurred.
func DecodeStrict(body []byte, v any) error {
	raw, errs, err := parseJSON(body)
	if err != nil {
		return err
	}
	if _, ok := raw.(map[string]any); !ok {
		return arm.NewCloudError(http.StatusBadRequest, arm.CodeInvalidRequestContent, "",
			"The request content was invalid and could not be deserialized: expected a JSON object")
	}
	unknownFields(raw, reflect.TypeOf(v), true, errs)
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

// maxReportedProblems bounds the problems one body reports: a body of a million repeated keys
// is answered with the first ones, not with a million details.
const maxReportedProblems = 100

// problems collects what is wrong with a body, up to maxReportedProblems.
type problems struct {
	list []*arm.CloudError
}

func (p *problems) add(at *path, format string, args ...any) {
	if !p.full() {
		p.list = append(p.list, arm.NewCloudError(http.StatusBadRequest, arm.CodeInvalidRequestContent, at.String(), format, args...))
	}
}

// full says no more problems are reported: callers check it before spelling out a message.
func (p *problems) full() bool { return len(p.list) >= maxReportedProblems }

// path is where a value stands in the body, as a list linked to its parent. Walking the body
// only links one step per value; the path is spelt out (at most MaxDepth steps) only for a
// problem reported, so the cost of a deep or wide body stays linear in its size.
type path struct {
	parent *path
	key    string // an object's property, or a map's key when mapKey is set
	index  int    // an array's index, when key is empty and mapKey is not set
	field  bool   // key names a property: spelt "parent.key"
	mapKey bool   // key names a map entry: spelt "parent[key]"
}

func (p *path) property(k string) *path { return &path{parent: p, key: k, field: true} }
func (p *path) entry(k string) *path    { return &path{parent: p, key: k, mapKey: true} }
func (p *path) element(i int) *path     { return &path{parent: p, index: i} }

// String spells the path as the error target: "properties.platform", "tags[a]", "x[3]".
func (p *path) String() string {
	var steps []*path
	for s := p; s != nil; s = s.parent {
		steps = append(steps, s)
	}
	var b strings.Builder
	for i := len(steps) - 1; i >= 0; i-- {
		switch s := steps[i]; {
		case s.field:
			if b.Len() > 0 {
				b.WriteByte('.')
			}
			b.WriteString(s.key)
		case s.mapKey:
			b.WriteByte('[')
			b.WriteString(s.key)
			b.WriteByte(']')
		default:
			b.WriteByte('[')
			b.WriteString(strconv.Itoa(s.index))
			b.WriteByte(']')
		}
	}
	return b.String()
}

// where names the object at p in a message.
func (p *path) where() string {
	if p == nil {
		return "the request body"
	}
	return "'" + p.String() + "'"
}

// errTooDeep refuses a body nested deeper than MaxDepth.
var errTooDeep = fmt.Errorf("objects and arrays are nested deeper than %d levels", MaxDepth)

// parseJSON reads one JSON value, numbers as json.Number, and reports every key that appears
// more than once in an object (the value kept is the last, as encoding/json would keep it).
// It refuses a value nested deeper than MaxDepth when the token that opens the level too many
// arrives, so no body costs more than MaxDepth levels of recursion.
func parseJSON(body []byte) (any, *problems, error) {
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	errs := &problems{}
	raw, err := parseValue(dec, nil, 0, errs)
	if err == nil {
		if _, extra := dec.Token(); extra != io.EOF {
			err = errors.New("data after the JSON value")
		}
	}
	if err != nil {
		return nil, nil, arm.NewCloudError(http.StatusBadRequest, arm.CodeInvalidRequestContent, "",
			"The request content was invalid and could not be deserialized: %v", err)
	}
	return raw, errs, nil
}

// parseValue reads the value at p, which is depth levels inside the body.
func parseValue(dec *json.Decoder, p *path, depth int, errs *problems) (any, error) {
	tok, err := dec.Token()
	if err != nil {
		return nil, err
	}
	switch tok {
	case json.Delim('{'):
		if depth++; depth > MaxDepth {
			return nil, errTooDeep
		}
		obj := map[string]any{}
		for dec.More() {
			kt, err := dec.Token()
			if err != nil {
				return nil, err
			}
			k, _ := kt.(string)
			at := p.property(k)
			if _, dup := obj[k]; dup && !errs.full() {
				errs.add(at, "The property '%s' appears more than once in %s.", k, p.where())
			}
			if obj[k], err = parseValue(dec, at, depth, errs); err != nil {
				return nil, err
			}
		}
		_, err := dec.Token() // '}'
		return obj, err
	case json.Delim('['):
		if depth++; depth > MaxDepth {
			return nil, errTooDeep
		}
		arr := []any{}
		for dec.More() {
			v, err := parseValue(dec, p.element(len(arr)), depth, errs)
			if err != nil {
				return nil, err
			}
			arr = append(arr, v)
		}
		_, err := dec.Token() // ']'
		return arr, err
	}
	return tok, nil
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
	errs    *problems
	types   map[reflect.Type]*typeFields
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
	c.check(raw, t, nil)
}

func (c *fieldChecker) check(raw any, t reflect.Type, p *path) {
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
				if name, found := fields.lower[strings.ToLower(k)]; found {
					c.errs.add(p.property(k), "The property '%s' is not known in %s: property names are case-sensitive; did you mean '%s'?", k, p.where(), name)
					continue
				}
				if c.unknown {
					c.errs.add(p.property(k), "The property '%s' is not known in %s.", k, p.where())
				}
				continue
			}
			c.check(obj[k], f.typ, p.property(f.name))
		}
	case reflect.Map:
		obj, ok := raw.(map[string]any)
		if !ok {
			return
		}
		for k, v := range obj {
			c.check(v, t.Elem(), p.entry(k))
		}
	case reflect.Slice, reflect.Array:
		arr, ok := raw.([]any)
		if !ok {
			return
		}
		for i, v := range arr {
			c.check(v, t.Elem(), p.element(i))
		}
	}
}
