package frontend

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/openhcp/openhcp/internal/arm"
)

// This file is a small validator of JSON values against the Swagger 2.0 (OpenAPI) schemas of the
// specification in shared/reference/arm-api, enough for the RP's responses: $ref across files
// (common-types), allOf, type, format, enum, pattern, lengths, ranges, item counts, required and
// additionalProperties. Objects with declared properties are closed: a property the schema does
// not declare is an error, so a version that renders a field from a newer version fails.

// specRoot is where the specification lives, relative to this package.
var specRoot = filepath.Join("..", "..", "..", "..", "shared", "reference", "arm-api")

func specDir(apiVersion string) string {
	return filepath.Join(specRoot, "redhatopenshift", "resource-manager", "Microsoft.RedHatOpenShift",
		"hcpopenshiftclusters", "preview", apiVersion)
}

// specLoader loads and caches spec files by absolute path.
type specLoader struct{ files map[string]map[string]any }

func newSpecLoader() *specLoader { return &specLoader{files: map[string]map[string]any{}} }

func (l *specLoader) load(t testing.TB, path string) map[string]any {
	t.Helper()
	abs, err := filepath.Abs(path)
	if err != nil {
		t.Fatal(err)
	}
	if d, ok := l.files[abs]; ok {
		return d
	}
	b, err := os.ReadFile(abs)
	if err != nil {
		t.Fatalf("read spec: %v", err)
	}
	var d map[string]any
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	if err := dec.Decode(&d); err != nil {
		t.Fatalf("parse %s: %v", abs, err)
	}
	l.files[abs] = d
	return d
}

// schema is a node of a spec file, with the file it came from (for relative $refs).
type schema struct {
	file string
	node map[string]any
}

// deref follows $ref until a node without one.
func (l *specLoader) deref(t testing.TB, s schema) schema {
	t.Helper()
	for i := 0; i < 32; i++ {
		ref, ok := s.node["$ref"].(string)
		if !ok {
			return s
		}
		file, frag, _ := strings.Cut(ref, "#")
		target := s.file
		if file != "" {
			target = filepath.Join(filepath.Dir(s.file), file)
		}
		var cur any = l.load(t, target)
		for _, k := range strings.Split(strings.Trim(frag, "/"), "/") {
			m, ok := cur.(map[string]any)
			if !ok {
				t.Fatalf("bad $ref %s in %s", ref, s.file)
			}
			cur = m[k]
		}
		node, ok := cur.(map[string]any)
		if !ok {
			t.Fatalf("$ref %s in %s does not resolve", ref, s.file)
		}
		abs, _ := filepath.Abs(target)
		s = schema{file: abs, node: node}
	}
	t.Fatalf("$ref loop at %s", s.file)
	return s
}

// objectShape is an object schema with its allOf parents merged.
type objectShape struct {
	props      map[string]schema
	required   map[string]bool
	additional *schema // schema of additional properties; nil: none allowed when props declared
	anyExtra   bool    // additionalProperties: true, or no properties declared at all
}

func (l *specLoader) shape(t testing.TB, s schema) objectShape {
	sh := objectShape{props: map[string]schema{}, required: map[string]bool{}}
	var walk func(s schema)
	walk = func(s schema) {
		s = l.deref(t, s)
		for _, a := range asSlice(s.node["allOf"]) {
			walk(schema{s.file, a.(map[string]any)})
		}
		for k, p := range asMap(s.node["properties"]) {
			sh.props[k] = schema{s.file, p.(map[string]any)}
		}
		for _, r := range asSlice(s.node["required"]) {
			sh.required[r.(string)] = true
		}
		switch ap := s.node["additionalProperties"].(type) {
		case map[string]any:
			sh.additional = &schema{s.file, ap}
		case bool:
			sh.anyExtra = sh.anyExtra || ap
		}
	}
	walk(s)
	if len(sh.props) == 0 && sh.additional == nil {
		sh.anyExtra = true
	}
	return sh
}

func asSlice(v any) []any {
	s, _ := v.([]any)
	return s
}

func asMap(v any) map[string]any {
	m, _ := v.(map[string]any)
	return m
}

// validator collects every mismatch of a value with a schema.
type specValidator struct {
	t    testing.TB
	l    *specLoader
	errs []string
	// mayOmit are required properties the RP deliberately leaves out (docs/api.md says why),
	// as paths without list prefixes ("properties.platform.issuerUrl").
	mayOmit map[string]bool
}

var listPrefix = regexp.MustCompile(`^value\[\d+\]\.`)

func (v *specValidator) fail(path, format string, args ...any) {
	if path == "" {
		path = "(root)"
	}
	v.errs = append(v.errs, path+": "+fmt.Sprintf(format, args...))
}

func join(path, k string) string {
	if path == "" {
		return k
	}
	return path + "." + k
}

func (v *specValidator) check(s schema, val any, path string) {
	s = v.l.deref(v.t, s)
	n := s.node
	typ, _ := n["type"].(string)
	if typ == "" && (n["properties"] != nil || n["allOf"] != nil || n["additionalProperties"] != nil) {
		typ = "object"
	}
	switch typ {
	case "object":
		obj, ok := val.(map[string]any)
		if !ok {
			v.fail(path, "want an object, got %T", val)
			return
		}
		sh := v.l.shape(v.t, s)
		keys := make([]string, 0, len(sh.required))
		for k := range sh.required {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			if _, ok := obj[k]; !ok && !v.mayOmit[listPrefix.ReplaceAllString(join(path, k), "")] {
				v.fail(join(path, k), "required property missing")
			}
		}
		for k, pv := range obj {
			if ps, ok := sh.props[k]; ok {
				v.check(ps, pv, join(path, k))
				continue
			}
			switch {
			case sh.additional != nil:
				v.check(*sh.additional, pv, path+"{"+k+"}")
			case !sh.anyExtra:
				v.fail(join(path, k), "property not in the schema")
			}
		}
		return
	case "array":
		arr, ok := val.([]any)
		if !ok {
			v.fail(path, "want an array, got %T", val)
			return
		}
		if m, ok := num(n["minItems"]); ok && float64(len(arr)) < m {
			v.fail(path, "%d items, fewer than minItems %v", len(arr), m)
		}
		if m, ok := num(n["maxItems"]); ok && float64(len(arr)) > m {
			v.fail(path, "%d items, more than maxItems %v", len(arr), m)
		}
		if items, ok := n["items"].(map[string]any); ok {
			for i, it := range arr {
				v.check(schema{s.file, items}, it, fmt.Sprintf("%s[%d]", path, i))
			}
		}
		return
	case "string":
		str, ok := val.(string)
		if !ok {
			v.fail(path, "want a string, got %T", val)
			return
		}
		v.checkString(n, str, path)
	case "integer", "number":
		jn, ok := val.(json.Number)
		if !ok {
			v.fail(path, "want a %s, got %T", typ, val)
			return
		}
		f, err := jn.Float64()
		if err != nil {
			v.fail(path, "bad number %s", jn)
			return
		}
		if typ == "integer" && f != math.Trunc(f) {
			v.fail(path, "want an integer, got %s", jn)
		}
		if n["format"] == "int32" && (f < math.MinInt32 || f > math.MaxInt32) {
			v.fail(path, "%s out of int32 range", jn)
		}
		if m, ok := num(n["minimum"]); ok && f < m {
			v.fail(path, "%s below minimum %v", jn, m)
		}
		if m, ok := num(n["maximum"]); ok && f > m {
			v.fail(path, "%s above maximum %v", jn, m)
		}
	case "boolean":
		if _, ok := val.(bool); !ok {
			v.fail(path, "want a boolean, got %T", val)
		}
	case "":
		// No type: anything goes.
	default:
		v.fail(path, "schema type %q not supported by this validator", typ)
	}
	if enum := asSlice(n["enum"]); enum != nil {
		found := false
		for _, e := range enum {
			if fmt.Sprint(e) == fmt.Sprint(val) {
				found = true
			}
		}
		if !found {
			v.fail(path, "%v is not one of %v", val, enum)
		}
	}
}

var uuidRE = regexp.MustCompile(`^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$`)

func (v *specValidator) checkString(n map[string]any, s, path string) {
	if m, ok := num(n["minLength"]); ok && float64(len([]rune(s))) < m {
		v.fail(path, "%q shorter than minLength %v", s, m)
	}
	if m, ok := num(n["maxLength"]); ok && float64(len([]rune(s))) > m {
		v.fail(path, "%q longer than maxLength %v", s, m)
	}
	if p, ok := n["pattern"].(string); ok {
		if re, err := regexp.Compile(p); err != nil {
			v.fail(path, "pattern %q does not compile: %v", p, err)
		} else if !re.MatchString(s) {
			v.fail(path, "%q does not match %s", s, p)
		}
	}
	switch n["format"] {
	case "date-time":
		if _, err := time.Parse(time.RFC3339Nano, s); err != nil {
			v.fail(path, "%q is not a date-time", s)
		}
	case "uuid":
		if !uuidRE.MatchString(s) {
			v.fail(path, "%q is not a uuid", s)
		}
	case "uri":
		if u, err := url.Parse(s); err != nil || u.Scheme == "" || u.Host == "" {
			v.fail(path, "%q is not an absolute URI", s)
		}
	case "arm-id":
		if tenantScoped(n) && tenantIDRE.MatchString(s) {
			break // e.g. a built-in role definition: /providers/Microsoft.Authorization/roleDefinitions/{guid}
		}
		if _, err := arm.ParseResourceID(s); err != nil {
			v.fail(path, "%q is not a resource ID: %v", s, err)
		}
	}
}

// tenantIDRE is a tenant-level resource ID: /providers/{namespace}/{type}/{name}[/{type}/{name}…].
var tenantIDRE = regexp.MustCompile(`^/providers/[^/]+(/[^/]+/[^/]+)+$`)

// tenantScoped says whether an arm-id schema allows resources at tenant scope
// (x-ms-arm-id-details.allowedResources[].scopes contains "Tenant").
func tenantScoped(n map[string]any) bool {
	details, _ := n["x-ms-arm-id-details"].(map[string]any)
	allowed, _ := details["allowedResources"].([]any)
	for _, a := range allowed {
		scopes, _ := a.(map[string]any)["scopes"].([]any)
		for _, sc := range scopes {
			if sc == "Tenant" {
				return true
			}
		}
	}
	return false
}

func num(v any) (float64, bool) {
	switch x := v.(type) {
	case json.Number:
		f, err := x.Float64()
		return f, err == nil
	case float64:
		return x, true
	}
	return 0, false
}

// validateJSON checks body against s and fails the test with every mismatch.
func (v *specValidator) validateJSON(t testing.TB, what string, s schema, body []byte) {
	t.Helper()
	var val any
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	if err := dec.Decode(&val); err != nil {
		t.Fatalf("%s: body is not JSON: %v\n%s", what, err, body)
	}
	v.errs = nil
	v.t = t
	v.check(s, val, "")
	if len(v.errs) > 0 {
		t.Errorf("%s does not match the spec's schema:\n  %s\nbody: %s", what, strings.Join(v.errs, "\n  "), body)
	}
}

// TestSpecValidatorRejects checks the validator itself catches what it claims to.
func TestSpecValidatorRejects(t *testing.T) {
	l := newSpecLoader()
	file, _ := filepath.Abs(filepath.Join(specDir("2026-09-01-preview"), "openapi.json"))
	if _, err := os.Stat(file); err != nil {
		t.Skipf("specification not available: %v", err)
	}
	cluster := schema{file, map[string]any{"$ref": "#/definitions/HcpOpenShiftCluster"}}
	for name, tc := range map[string]struct {
		body string
		want string
	}{
		"unknown_property":        {`{"location":"x","properties":{"version":{"id":"4.19"},"platform":{},"bogus":1}}`, "properties.bogus: property not in the schema"},
		"enum":                    {`{"location":"x","properties":{"cryptoRestrictions":"Weak"}}`, "properties.cryptoRestrictions: Weak is not one of"},
		"required_location":       {`{}`, "location: required property missing"},
		"pattern":                 {`{"location":"x","properties":{"dns":{"baseDomainPrefix":"Upper"}}}`, "properties.dns.baseDomainPrefix"},
		"maximum":                 {`{"location":"x","properties":{"nodeDrainTimeoutMinutes":10081}}`, "above maximum"},
		"type":                    {`{"location":"x","tags":{"a":1}}`, "tags{a}: want a string"},
		"common_types_uuid":       {`{"location":"x","identity":{"type":"None","principalId":"nope"}}`, "identity.principalId: \"nope\" is not a uuid"},
		"arm_id":                  {`{"location":"x","properties":{"platform":{"subnetId":"subnet"}}}`, "properties.platform.subnetId"},
		"date_time_in_systemdata": {`{"location":"x","systemData":{"createdAt":"yesterday"}}`, "systemData.createdAt"},
	} {
		t.Run(name, func(t *testing.T) {
			v := &specValidator{t: t, l: l}
			var val any
			dec := json.NewDecoder(strings.NewReader(tc.body))
			dec.UseNumber()
			if err := dec.Decode(&val); err != nil {
				t.Fatal(err)
			}
			v.check(cluster, val, "")
			if !strings.Contains(strings.Join(v.errs, "\n"), tc.want) {
				t.Fatalf("want an error containing %q, got %q", tc.want, v.errs)
			}
		})
	}
}
