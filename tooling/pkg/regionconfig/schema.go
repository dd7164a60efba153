package regionconfig

import (
	"bytes"
	"errors"
	"fmt"
	"math/big"
	"os"
	"slices"
	"strconv"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/santhosh-tekuri/jsonschema/v6/kind"
	"golang.org/x/text/language"
	"golang.org/x/text/message"
)

// Schema is config.schema.json compiled by a JSON-Schema validator (santhosh-tekuri/jsonschema,
// the one Helm checks values.schema.json with), in the draft its $schema names (2020-12 when it
// names none). Formats are asserted, not only annotated.
type Schema struct {
	compiled *jsonschema.Schema
}

// schemaURL names the schema inside the compiler; it never leaves this process.
const schemaURL = "file:///config.schema.json"

var printer = message.NewPrinter(language.Und)

// LoadSchema reads and compiles a schema file.
func LoadSchema(path string) (*Schema, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read schema: %w", err)
	}
	return ParseSchema(raw)
}

// ParseSchema compiles a schema. It refuses a keyword draft 2020-12 does not define, because the
// validator would ignore it and a misspelt rule ("minimun") would pass every config.
func ParseSchema(raw []byte) (*Schema, error) {
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		return nil, fmt.Errorf("parse schema: %w", err)
	}
	if err := checkKeywords(doc, nil); err != nil {
		return nil, fmt.Errorf("parse schema: %w", err)
	}
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	c.AssertFormat()
	if err := c.AddResource(schemaURL, doc); err != nil {
		return nil, fmt.Errorf("compile schema: %w", err)
	}
	compiled, err := c.Compile(schemaURL)
	if err != nil {
		return nil, fmt.Errorf("compile schema: %w", err)
	}
	return &Schema{compiled: compiled}, nil
}

// Validate checks v against the schema and returns every violation, one per key, each naming
// the key's dotted path, the rule (its keyword and what it wants) and, through layerOf, the
// layer that set the value.
func (s *Schema) Validate(v any, layerOf func(path []string) string) error {
	err := s.compiled.Validate(v)
	if err == nil {
		return nil
	}
	var ve *jsonschema.ValidationError
	if !errors.As(err, &ve) {
		return fmt.Errorf("validate: %w", err)
	}
	var lines []string
	for _, f := range violations(ve) {
		where := "not set by any layer"
		if l := layerOf(f.path); l != "" {
			where = "set by " + l
		}
		lines = append(lines, fmt.Sprintf("%s: %s (%s)", orRoot(pathString(f.path)), f.msg, where))
	}
	slices.Sort(lines)
	return errors.New(strings.Join(slices.Compact(lines), "; "))
}

type violation struct {
	path []string
	msg  string
}

// violations flattens the validator's tree of errors into the rules that failed. A missing or
// unknown key is reported at the key's own path, so the layer lookup finds the layer that set
// it (or none); oneOf and anyOf are reported as themselves, not as each alternative's failures.
func violations(e *jsonschema.ValidationError) []violation {
	at := e.InstanceLocation
	switch k := e.ErrorKind.(type) {
	case *kind.Required:
		var out []violation
		for _, key := range k.Missing {
			out = append(out, violation{appendPath(at, key), "required: key is missing"})
		}
		return out
	case *kind.AdditionalProperties:
		var out []violation
		for _, key := range k.Properties {
			out = append(out, violation{appendPath(at, key), "additionalProperties: unknown key"})
		}
		return out
	case *kind.OneOf:
		if len(k.Subschemas) == 0 {
			return []violation{{at, fmt.Sprintf("oneOf: matches none of its %d forms", len(e.Causes))}}
		}
		return []violation{{at, fmt.Sprintf("oneOf: matches forms %d and %d, want exactly one", k.Subschemas[0]+1, k.Subschemas[1]+1)}}
	case *kind.AnyOf:
		return []violation{{at, "anyOf: matches none of its forms"}}
	// Numbers as written in the config; the validator's own messages group thousands ("65,535").
	case *kind.Minimum:
		return []violation{{at, fmt.Sprintf("minimum: got %s, want %s", number(k.Got), number(k.Want))}}
	case *kind.Maximum:
		return []violation{{at, fmt.Sprintf("maximum: got %s, want %s", number(k.Got), number(k.Want))}}
	case *kind.ExclusiveMinimum:
		return []violation{{at, fmt.Sprintf("exclusiveMinimum: got %s, want more than %s", number(k.Got), number(k.Want))}}
	case *kind.ExclusiveMaximum:
		return []violation{{at, fmt.Sprintf("exclusiveMaximum: got %s, want less than %s", number(k.Got), number(k.Want))}}
	}
	if len(e.Causes) > 0 {
		var out []violation
		for _, c := range e.Causes {
			out = append(out, violations(c)...)
		}
		return out
	}
	msg := e.ErrorKind.LocalizedString(printer)
	if kw := e.ErrorKind.KeywordPath(); len(kw) > 0 && !strings.HasPrefix(msg, kw[len(kw)-1]+":") {
		msg = kw[len(kw)-1] + ": " + msg
	}
	return []violation{{at, msg}}
}

func number(r *big.Rat) string {
	f, _ := r.Float64()
	return strconv.FormatFloat(f, 'f', -1, 64)
}

// keywords2020 are the keywords of JSON Schema draft 2020-12 (core, applicator, unevaluated,
// validation, meta-data, format and content vocabularies).
var keywords2020 = map[string]bool{
	"$schema": true, "$id": true, "$ref": true, "$anchor": true, "$dynamicRef": true, "$dynamicAnchor": true,
	"$vocabulary": true, "$comment": true, "$defs": true,
	"prefixItems": true, "items": true, "contains": true, "additionalProperties": true, "properties": true,
	"patternProperties": true, "dependentSchemas": true, "propertyNames": true, "if": true, "then": true,
	"else": true, "allOf": true, "anyOf": true, "oneOf": true, "not": true,
	"unevaluatedItems": true, "unevaluatedProperties": true,
	"type": true, "const": true, "enum": true, "multipleOf": true, "maximum": true, "exclusiveMaximum": true,
	"minimum": true, "exclusiveMinimum": true, "maxLength": true, "minLength": true, "pattern": true,
	"maxItems": true, "minItems": true, "uniqueItems": true, "maxContains": true, "minContains": true,
	"maxProperties": true, "minProperties": true, "required": true, "dependentRequired": true,
	"title": true, "description": true, "default": true, "deprecated": true, "readOnly": true,
	"writeOnly": true, "examples": true, "format": true,
	"contentEncoding": true, "contentMediaType": true, "contentSchema": true,
}

// checkKeywords walks every subschema of a schema document and refuses unknown keywords.
func checkKeywords(node any, at []string) error {
	obj, ok := node.(map[string]any)
	if !ok {
		return nil // a boolean schema, or a malformed one the compiler reports
	}
	for _, k := range sortedKeys(obj) {
		if !keywords2020[k] {
			return fmt.Errorf("keyword %q at %s is not a JSON Schema draft 2020-12 keyword", k, orRoot(pathString(at)))
		}
		switch k {
		case "properties", "patternProperties", "$defs", "dependentSchemas":
			sub, _ := obj[k].(map[string]any)
			for _, name := range sortedKeys(sub) {
				if err := checkKeywords(sub[name], appendPath(at, k, name)); err != nil {
					return err
				}
			}
		case "additionalProperties", "items", "contains", "propertyNames", "if", "then", "else", "not",
			"unevaluatedItems", "unevaluatedProperties", "contentSchema":
			if err := checkKeywords(obj[k], appendPath(at, k)); err != nil {
				return err
			}
		case "prefixItems", "allOf", "anyOf", "oneOf":
			list, _ := obj[k].([]any)
			for i, sub := range list {
				if err := checkKeywords(sub, appendPath(at, k, fmt.Sprint(i))); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

func appendPath(path []string, k ...string) []string {
	return append(append([]string(nil), path...), k...)
}

func orRoot(p string) string {
	if p == "" {
		return "(root)"
	}
	return p
}
