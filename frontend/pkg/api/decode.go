package api

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"reflect"
	"sort"
	"strings"

	"github.com/openhcp/openhcp/internal/arm"
)

// DecodeStrict decodes a JSON object into v, a pointer to an external type. Unknown fields
// anywhere in the tree and values of the wrong type are reported with their path as the
// error target; several problems become one MultipleErrorsOccurred.
func DecodeStrict(body []byte, v any) error {
	var raw any
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	if err := dec.Decode(&raw); err != nil {
		return arm.NewCloudError(http.StatusBadRequest, arm.CodeInvalidRequestContent, "",
			"The request content was invalid and could not be deserialized: %v", err)
	}
	if dec.More() {
		return arm.NewCloudError(http.StatusBadRequest, arm.CodeInvalidRequestContent, "",
			"The request content was invalid and could not be deserialized: data after the JSON object")
	}
	if _, ok := raw.(map[string]any); !ok {
		return arm.NewCloudError(http.StatusBadRequest, arm.CodeInvalidRequestContent, "",
			"The request content was invalid and could not be deserialized: expected a JSON object")
	}
	var errs []*arm.CloudError
	unknownFields(raw, reflect.TypeOf(v), "", &errs)
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

// jsonFields maps the case-folded JSON names of t's fields (embedded structs flattened), the way
// encoding/json matches them.
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
		out[strings.ToLower(name)] = jsonField{name: name, typ: f.Type}
	}
	return out
}

var rawMessageType = reflect.TypeOf(json.RawMessage(nil))

func unknownFields(raw any, t reflect.Type, path string, errs *[]*arm.CloudError) {
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
			f, ok := fields[strings.ToLower(k)]
			if !ok {
				target := join(path, k)
				where := "the request body"
				if path != "" {
					where = "'" + path + "'"
				}
				*errs = append(*errs, arm.NewCloudError(http.StatusBadRequest, arm.CodeInvalidRequestContent, target,
					"The property '%s' is not known in %s.", k, where))
				continue
			}
			unknownFields(obj[k], f.typ, join(path, f.name), errs)
		}
	case reflect.Map:
		obj, ok := raw.(map[string]any)
		if !ok {
			return
		}
		for k, v := range obj {
			unknownFields(v, t.Elem(), fmt.Sprintf("%s[%s]", path, k), errs)
		}
	case reflect.Slice, reflect.Array:
		arr, ok := raw.([]any)
		if !ok {
			return
		}
		for i, v := range arr {
			unknownFields(v, t.Elem(), fmt.Sprintf("%s[%d]", path, i), errs)
		}
	}
}

func join(path, name string) string {
	if path == "" {
		return name
	}
	return path + "." + name
}
