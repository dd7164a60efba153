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
	"strings"

	"github.com/openhcp/openhcp/internal/arm"
)

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
	unknownFields(raw, reflect.TypeOf(v), "", true, &errs)
	if len(errs) > 0 {
		return arm.Multiple(errs)
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
	if len(errs) > 0 {
		return nil, arm.Multiple(errs)
	}
	return obj, nil
}

// parseJSON reads one JSON value, numbers as json.Number, and reports every key that appears
// more than once in an object (the value kept is the last, as encoding/json would keep it).
func parseJSON(body []byte) (any, []*arm.CloudError, error) {
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	var errs []*arm.CloudError
	raw, err := parseValue(dec, "", &errs)
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

func parseValue(dec *json.Decoder, path string, errs *[]*arm.CloudError) (any, error) {
	tok, err := dec.Token()
	if err != nil {
		return nil, err
	}
	switch tok {
	case json.Delim('{'):
		obj := map[string]any{}
		for dec.More() {
			kt, err := dec.Token()
			if err != nil {
				return nil, err
			}
			k, _ := kt.(string)
			if _, dup := obj[k]; dup {
				*errs = append(*errs, arm.NewCloudError(http.StatusBadRequest, arm.CodeInvalidRequestContent, join(path, k),
					"The property '%s' appears more than once in %s.", k, where(path)))
			}
			if obj[k], err = parseValue(dec, join(path, k), errs); err != nil {
				return nil, err
			}
		}
		_, err := dec.Token() // '}'
		return obj, err
	case json.Delim('['):
		arr := []any{}
		for dec.More() {
			v, err := parseValue(dec, fmt.Sprintf("%s[%d]", path, len(arr)), errs)
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

// where names the object at path in a message.
func where(path string) string {
	if path == "" {
		return "the request body"
	}
	return "'" + path + "'"
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

// unknownFields reports the keys of raw that t does not name exactly: those it names in another
// case always, the others if unknown is set.
func unknownFields(raw any, t reflect.Type, path string, unknown bool, errs *[]*arm.CloudError) {
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
		fields := jsonFields(t)
		keys := make([]string, 0, len(obj))
		for k := range obj {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			f, ok := fields[k]
			if !ok {
				target := join(path, k)
				if name, found := sameButCase(fields, k); found {
					*errs = append(*errs, arm.NewCloudError(http.StatusBadRequest, arm.CodeInvalidRequestContent, target,
						"The property '%s' is not known in %s: property names are case-sensitive; did you mean '%s'?", k, where(path), name))
					continue
				}
				if unknown {
					*errs = append(*errs, arm.NewCloudError(http.StatusBadRequest, arm.CodeInvalidRequestContent, target,
						"The property '%s' is not known in %s.", k, where(path)))
				}
				continue
			}
			unknownFields(obj[k], f.typ, join(path, f.name), unknown, errs)
		}
	case reflect.Map:
		obj, ok := raw.(map[string]any)
		if !ok {
			return
		}
		for k, v := range obj {
			unknownFields(v, t.Elem(), fmt.Sprintf("%s[%s]", path, k), unknown, errs)
		}
	case reflect.Slice, reflect.Array:
		arr, ok := raw.([]any)
		if !ok {
			return
		}
		for i, v := range arr {
			unknownFields(v, t.Elem(), fmt.Sprintf("%s[%d]", path, i), unknown, errs)
		}
	}
}

// sameButCase finds the field whose name differs from k only in case.
func sameButCase(fields map[string]jsonField, k string) (string, bool) {
	for name := range fields {
		if strings.EqualFold(name, k) {
			return name, true
		}
	}
	return "", false
}

func join(path, name string) string {
	if path == "" {
		return name
	}
	return path + "." + name
}
