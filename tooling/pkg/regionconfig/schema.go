package regionconfig

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"regexp"
	"sort"
	"strings"
)

// Schema is the subset of JSON Schema that config.schema.json uses. No JSON-Schema module is
// available at a pinned version here, so this validator implements only these keywords and
// refuses a schema that uses any other, so no rule is silently ignored.
type Schema struct {
	Type                 string             `json:"type,omitempty"`
	Properties           map[string]*Schema `json:"properties,omitempty"`
	Required             []string           `json:"required,omitempty"`
	AdditionalProperties *additional        `json:"additionalProperties,omitempty"`
	Enum                 []any              `json:"enum,omitempty"`
	Minimum              *float64           `json:"minimum,omitempty"`
	Maximum              *float64           `json:"maximum,omitempty"`
	MinLength            *int               `json:"minLength,omitempty"`
	MinProperties        *int               `json:"minProperties,omitempty"`
	Pattern              string             `json:"pattern,omitempty"`

	// Annotations, not checked.
	SchemaURI   string `json:"$schema,omitempty"`
	Title       string `json:"title,omitempty"`
	Description string `json:"description,omitempty"`

	pattern *regexp.Regexp
}

// additional is additionalProperties: false (no other keys), true (any), or a schema for them.
type additional struct {
	Allowed bool
	Schema  *Schema
}

func (a *additional) UnmarshalJSON(b []byte) error {
	if err := json.Unmarshal(b, &a.Allowed); err == nil {
		return nil
	}
	a.Allowed = true
	return strictUnmarshal(b, &a.Schema)
}

// LoadSchema reads and compiles a schema file.
func LoadSchema(path string) (*Schema, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read schema: %w", err)
	}
	return ParseSchema(raw)
}

// ParseSchema compiles a schema, rejecting keywords this validator does not implement.
func ParseSchema(raw []byte) (*Schema, error) {
	var s Schema
	if err := strictUnmarshal(raw, &s); err != nil {
		return nil, fmt.Errorf("parse schema (only type, properties, required, additionalProperties, enum, minimum, maximum, minLength, minProperties, pattern are supported): %w", err)
	}
	if err := s.compile(""); err != nil {
		return nil, err
	}
	return &s, nil
}

func strictUnmarshal(b []byte, v any) error {
	dec := json.NewDecoder(strings.NewReader(string(b)))
	dec.DisallowUnknownFields()
	return dec.Decode(v)
}

func (s *Schema) compile(at string) error {
	switch s.Type {
	case "", "object", "string", "integer", "number", "boolean", "array":
	default:
		return fmt.Errorf("schema %s: unsupported type %q", orRoot(at), s.Type)
	}
	if s.Pattern != "" {
		re, err := regexp.Compile(s.Pattern)
		if err != nil {
			return fmt.Errorf("schema %s: pattern: %w", orRoot(at), err)
		}
		s.pattern = re
	}
	for k, p := range s.Properties {
		if err := p.compile(joinPath(at, k)); err != nil {
			return err
		}
	}
	if s.AdditionalProperties != nil && s.AdditionalProperties.Schema != nil {
		return s.AdditionalProperties.Schema.compile(joinPath(at, "*"))
	}
	return nil
}

// Validate checks v against the schema and returns every violation, each naming the key's
// dotted path and, through layerOf, the layer that set it.
func (s *Schema) Validate(v any, layerOf func(path []string) string) error {
	var errs []string
	s.validate(v, nil, func(path []string, msg string) {
		where := "set by " + layerOf(path)
		if layerOf(path) == "" {
			where = "not set by any layer"
		}
		errs = append(errs, fmt.Sprintf("%s: %s (%s)", orRoot(pathString(path)), msg, where))
	})
	if len(errs) == 0 {
		return nil
	}
	sort.Strings(errs)
	return errors.New(strings.Join(errs, "; "))
}

func (s *Schema) validate(v any, path []string, fail func([]string, string)) {
	if !s.checkType(v) {
		fail(path, fmt.Sprintf("want %s, got %s", s.Type, describe(v)))
		return
	}
	if len(s.Enum) > 0 && !inEnum(v, s.Enum) {
		fail(path, fmt.Sprintf("%s is not one of %v", describe(v), s.Enum))
	}
	switch t := v.(type) {
	case float64:
		if s.Minimum != nil && t < *s.Minimum {
			fail(path, fmt.Sprintf("%v is below the minimum %v", t, *s.Minimum))
		}
		if s.Maximum != nil && t > *s.Maximum {
			fail(path, fmt.Sprintf("%v is above the maximum %v", t, *s.Maximum))
		}
	case string:
		if s.MinLength != nil && len([]rune(t)) < *s.MinLength {
			fail(path, fmt.Sprintf("%q is shorter than %d", t, *s.MinLength))
		}
		if s.pattern != nil && !s.pattern.MatchString(t) {
			fail(path, fmt.Sprintf("%q does not match %s", t, s.Pattern))
		}
	case map[string]any:
		s.validateObject(t, path, fail)
	}
}

func (s *Schema) validateObject(obj map[string]any, path []string, fail func([]string, string)) {
	for _, k := range s.Required {
		if _, ok := obj[k]; !ok {
			fail(appendPath(path, k), "required key is missing")
		}
	}
	if s.MinProperties != nil && len(obj) < *s.MinProperties {
		fail(path, fmt.Sprintf("has %d keys, needs at least %d", len(obj), *s.MinProperties))
	}
	for _, k := range sortedKeys(obj) {
		child := appendPath(path, k)
		if ps, ok := s.Properties[k]; ok {
			ps.validate(obj[k], child, fail)
			continue
		}
		switch ap := s.AdditionalProperties; {
		case ap == nil || (ap.Allowed && ap.Schema == nil):
		case ap.Schema != nil:
			ap.Schema.validate(obj[k], child, fail)
		default:
			fail(child, "unknown key")
		}
	}
}

func (s *Schema) checkType(v any) bool {
	switch s.Type {
	case "":
		return true
	case "object":
		_, ok := v.(map[string]any)
		return ok
	case "string":
		_, ok := v.(string)
		return ok
	case "boolean":
		_, ok := v.(bool)
		return ok
	case "array":
		_, ok := v.([]any)
		return ok
	case "number":
		_, ok := v.(float64)
		return ok
	case "integer":
		f, ok := v.(float64)
		return ok && f == math.Trunc(f)
	}
	return false
}

func inEnum(v any, enum []any) bool {
	for _, e := range enum {
		if e == v {
			return true
		}
	}
	return false
}

func describe(v any) string {
	switch t := v.(type) {
	case nil:
		return "null"
	case map[string]any:
		return "object"
	case []any:
		return "array"
	case string:
		return fmt.Sprintf("string %q", t)
	case bool:
		return fmt.Sprintf("boolean %v", t)
	case float64:
		return fmt.Sprintf("number %v", t)
	}
	return fmt.Sprintf("%T", v)
}

func appendPath(path []string, k string) []string {
	return append(append([]string(nil), path...), k)
}

func orRoot(p string) string {
	if p == "" {
		return "(root)"
	}
	return p
}
