package armspec

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"net/url"
	"path"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/openhcp/openhcp/internal/arm"
)

// This file validates JSON values against the Swagger 2.0 schemas of the specification, as far
// as the RP's responses need: $ref across files (common-types), allOf, type, format, enum,
// pattern, lengths, ranges, item counts, required (read-only properties included) and
// additionalProperties. An object schema that declares properties is closed: a property it does
// not declare is a violation, so a version that renders a field of a newer version fails.

// Violation is one mismatch of a value with its schema, at a JSON path ("properties.api.url",
// "value[1].tags{env}"; "(root)" for the whole body).
type Violation struct {
	Path    string
	Message string
}

func (v Violation) String() string { return v.Path + ": " + v.Message }

// Violations is every mismatch of a body; as an error it lists them one a line.
type Violations []Violation

func (vs Violations) Error() string {
	lines := make([]string, len(vs))
	for i, v := range vs {
		lines[i] = v.String()
	}
	return strings.Join(lines, "\n")
}

// schemaRef is a schema node with the file it came from, for relative $refs.
type schemaRef struct {
	file string
	node map[string]any
}

// ValidateResponse checks a response of an operation: the status code is one the operation
// declares (an error status may use "default"), the headers the spec declares for it are set
// (header may be nil to skip this), and the body matches the declared schema, or is empty when
// none is declared. It returns Violations, or another error when the spec itself is broken.
func (s *Spec) ValidateResponse(opID string, status int, header http.Header, body []byte) error {
	o, ok := s.ops[opID]
	if !ok {
		return fmt.Errorf("operation %s is not in the specification of %s", opID, s.APIVersion)
	}
	code := strconv.Itoa(status)
	responses := asMap(o.node["responses"])
	r, ok := responses[code].(map[string]any)
	if !ok && status >= 400 {
		code = "default"
		r, ok = responses[code].(map[string]any)
	}
	if !ok {
		return Violations{{"(status)", fmt.Sprintf("%s does not declare status %d (declared: %s)", opID, status, strings.Join(o.Responses(), ", "))}}
	}
	var vs Violations
	if header != nil {
		for _, h := range o.ResponseHeaders(code) {
			if header.Get(h) == "" {
				vs = append(vs, Violation{"(header " + h + ")", "declared header missing"})
			}
		}
	}
	sch, ok := r["schema"].(map[string]any)
	if !ok {
		if len(bytes.TrimSpace(body)) != 0 {
			vs = append(vs, Violation{"(root)", fmt.Sprintf("%s %s declares no body, got %d bytes", opID, code, len(body))})
		}
		return result(vs, nil)
	}
	more, err := validateBody(schemaRef{s.file, sch}, body)
	return result(append(vs, more...), err)
}

// ValidateDefinition checks a body against a definition of the api-version's openapi.json
// ("HcpOpenShiftCluster").
func (s *Spec) ValidateDefinition(name string, body []byte) error {
	vs, err := validateBody(schemaRef{s.file, map[string]any{"$ref": "#/definitions/" + name}}, body)
	return result(vs, err)
}

// ValidateCommon checks a body against a definition of ARM's common types
// ("ErrorResponse", "OperationStatusResult"), for the parts of ARM's contract that no
// operation of the spec declares.
func ValidateCommon(name string, body []byte) error {
	vs, err := validateBody(schemaRef{commonTypes, map[string]any{"$ref": "#/definitions/" + name}}, body)
	return result(vs, err)
}

func result(vs Violations, err error) error {
	if err != nil {
		return err
	}
	if len(vs) == 0 {
		return nil
	}
	return vs
}

func validateBody(s schemaRef, body []byte) (Violations, error) {
	var val any
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	if err := dec.Decode(&val); err != nil {
		return Violations{{"(root)", fmt.Sprintf("body is not JSON: %v", err)}}, nil
	}
	if dec.More() {
		return Violations{{"(root)", "body has data after the JSON value"}}, nil
	}
	return validateValue(s, val)
}

// validateValue checks a decoded value (numbers as json.Number).
func validateValue(s schemaRef, val any) (vs Violations, err error) {
	w := &walker{}
	defer func() {
		if r := recover(); r != nil {
			se, ok := r.(specError)
			if !ok {
				panic(r)
			}
			vs, err = nil, se
		}
	}()
	w.check(s, val, "")
	return w.errs, nil
}

// specError is a broken specification (a $ref that does not resolve); it aborts the walk.
type specError struct{ error }

type walker struct{ errs Violations }

func (w *walker) fail(p, format string, args ...any) {
	if p == "" {
		p = "(root)"
	}
	w.errs = append(w.errs, Violation{p, fmt.Sprintf(format, args...)})
}

// deref follows $ref until a node without one.
func deref(s schemaRef) schemaRef {
	for range 32 {
		ref, ok := s.node["$ref"].(string)
		if !ok {
			return s
		}
		file, frag, _ := strings.Cut(ref, "#")
		target := s.file
		if file != "" {
			target = path.Clean(path.Join(path.Dir(s.file), file))
		}
		doc, err := loadFile(target)
		if err != nil {
			panic(specError{fmt.Errorf("$ref %s in %s: %w", ref, s.file, err)})
		}
		var cur any = doc
		for _, k := range strings.Split(strings.Trim(frag, "/"), "/") {
			cur = asMap(cur)[k]
		}
		node, ok := cur.(map[string]any)
		if !ok {
			panic(specError{fmt.Errorf("$ref %s in %s does not resolve", ref, s.file)})
		}
		s = schemaRef{target, node}
	}
	panic(specError{fmt.Errorf("$ref loop at %s", s.file)})
}

// objectShape is an object schema with its allOf parents merged.
type objectShape struct {
	props      map[string]schemaRef
	required   map[string]bool
	additional *schemaRef // schema of additional properties; nil: none allowed when props declared
	anyExtra   bool       // additionalProperties: true, or no properties declared at all
}

func shapeOf(s schemaRef) objectShape {
	sh := objectShape{props: map[string]schemaRef{}, required: map[string]bool{}}
	closed := false // additionalProperties: false somewhere in the chain
	var walk func(s schemaRef)
	walk = func(s schemaRef) {
		s = deref(s)
		for _, a := range asSlice(s.node["allOf"]) {
			walk(schemaRef{s.file, asMap(a)})
		}
		for k, p := range asMap(s.node["properties"]) {
			sh.props[k] = schemaRef{s.file, asMap(p)}
		}
		for _, r := range asSlice(s.node["required"]) {
			if name, ok := r.(string); ok {
				sh.required[name] = true
			}
		}
		switch ap := s.node["additionalProperties"].(type) {
		case map[string]any:
			sh.additional = &schemaRef{s.file, ap}
		case bool:
			sh.anyExtra = sh.anyExtra || ap
			closed = closed || !ap
		}
	}
	walk(s)
	if len(sh.props) == 0 && sh.additional == nil && !closed {
		sh.anyExtra = true // an object schema with nothing declared takes anything
	}
	return sh
}

func join(p, k string) string {
	if p == "" {
		return k
	}
	return p + "." + k
}

func (w *walker) check(s schemaRef, val any, p string) {
	if val == nil && s.node["x-nullable"] == true {
		return // x-nullable beside a $ref (userAssignedIdentities values) allows null
	}
	s = deref(s)
	n := s.node
	if val == nil && n["x-nullable"] == true {
		return
	}
	typ, _ := n["type"].(string)
	if typ == "" && (n["properties"] != nil || n["allOf"] != nil || n["additionalProperties"] != nil) {
		typ = "object"
	}
	switch typ {
	case "object":
		w.checkObject(s, val, p)
		return
	case "array":
		w.checkArray(s, val, p)
		return
	case "string":
		str, ok := val.(string)
		if !ok {
			w.fail(p, "want a string, got %s", jsonType(val))
			return
		}
		w.checkString(n, str, p)
	case "integer", "number":
		w.checkNumber(n, typ, val, p)
	case "boolean":
		if _, ok := val.(bool); !ok {
			w.fail(p, "want a boolean, got %s", jsonType(val))
		}
	case "":
		// No type: anything goes.
	default:
		w.fail(p, "schema type %q not supported by this validator", typ)
	}
	if enum := asSlice(n["enum"]); enum != nil {
		found := false
		for _, e := range enum {
			if fmt.Sprint(e) == fmt.Sprint(val) {
				found = true
			}
		}
		if !found {
			w.fail(p, "%v is not one of %v", val, enum)
		}
	}
}

func (w *walker) checkObject(s schemaRef, val any, p string) {
	obj, ok := val.(map[string]any)
	if !ok {
		w.fail(p, "want an object, got %s", jsonType(val))
		return
	}
	sh := shapeOf(s)
	req := make([]string, 0, len(sh.required))
	for k := range sh.required {
		req = append(req, k)
	}
	sort.Strings(req)
	for _, k := range req {
		if _, ok := obj[k]; !ok {
			w.fail(join(p, k), "required property missing")
		}
	}
	keys := make([]string, 0, len(obj))
	for k := range obj {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		pv := obj[k]
		if ps, ok := sh.props[k]; ok {
			w.check(ps, pv, join(p, k))
			continue
		}
		switch {
		case sh.additional != nil:
			w.check(*sh.additional, pv, p+"{"+k+"}")
		case !sh.anyExtra:
			w.fail(join(p, k), "property not in the schema")
		}
	}
}

func (w *walker) checkArray(s schemaRef, val any, p string) {
	n := s.node
	arr, ok := val.([]any)
	if !ok {
		w.fail(p, "want an array, got %s", jsonType(val))
		return
	}
	if m, ok := num(n["minItems"]); ok && float64(len(arr)) < m {
		w.fail(p, "%d items, fewer than minItems %v", len(arr), m)
	}
	if m, ok := num(n["maxItems"]); ok && float64(len(arr)) > m {
		w.fail(p, "%d items, more than maxItems %v", len(arr), m)
	}
	if items, ok := n["items"].(map[string]any); ok {
		for i, it := range arr {
			w.check(schemaRef{s.file, items}, it, fmt.Sprintf("%s[%d]", p, i))
		}
	}
}

func (w *walker) checkNumber(n map[string]any, typ string, val any, p string) {
	jn, ok := val.(json.Number)
	if !ok {
		w.fail(p, "want a %s, got %s", typ, jsonType(val))
		return
	}
	f, err := jn.Float64()
	if err != nil {
		w.fail(p, "bad number %s", jn)
		return
	}
	if typ == "integer" && f != math.Trunc(f) {
		w.fail(p, "want an integer, got %s", jn)
	}
	switch n["format"] {
	case "int32":
		if f < math.MinInt32 || f > math.MaxInt32 {
			w.fail(p, "%s out of int32 range", jn)
		}
	case "int64":
		if _, err := strconv.ParseInt(jn.String(), 10, 64); err != nil {
			w.fail(p, "%s is not an int64", jn)
		}
	}
	if m, ok := num(n["minimum"]); ok && f < m {
		w.fail(p, "%s below minimum %v", jn, m)
	}
	if m, ok := num(n["maximum"]); ok && f > m {
		w.fail(p, "%s above maximum %v", jn, m)
	}
}

var uuidRE = regexp.MustCompile(`^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$`)

func (w *walker) checkString(n map[string]any, s, p string) {
	if m, ok := num(n["minLength"]); ok && float64(len([]rune(s))) < m {
		w.fail(p, "%q shorter than minLength %v", s, m)
	}
	if m, ok := num(n["maxLength"]); ok && float64(len([]rune(s))) > m {
		w.fail(p, "%q longer than maxLength %v", s, m)
	}
	if pat, ok := n["pattern"].(string); ok {
		if re, err := compilePattern(pat); err != nil {
			w.fail(p, "pattern %q does not compile: %v", pat, err)
		} else if !re.MatchString(s) {
			w.fail(p, "%q does not match %s", s, pat)
		}
	}
	if s == "" {
		// A format describes a value that exists. A required property the resource has no
		// value for (api.url before the control plane is up, the vnet integration subnet of
		// a cluster created by an api-version without it) is rendered "", as ARO-HCP does
		// (docs/api.md); type, enum, pattern and lengths still apply to it.
		return
	}
	switch n["format"] {
	case "date-time":
		if _, err := time.Parse(time.RFC3339Nano, s); err != nil {
			w.fail(p, "%q is not a date-time", s)
		}
	case "uuid":
		if !uuidRE.MatchString(s) {
			w.fail(p, "%q is not a uuid", s)
		}
	case "uri":
		if u, err := url.Parse(s); err != nil || u.Scheme == "" || u.Host == "" {
			w.fail(p, "%q is not an absolute URI", s)
		}
	case "arm-id":
		if tenantScoped(n) && tenantIDRE.MatchString(s) {
			break // e.g. a built-in role definition: /providers/Microsoft.Authorization/roleDefinitions/{guid}
		}
		if _, err := arm.ParseResourceID(s); err != nil {
			w.fail(p, "%q is not a resource ID: %v", s, err)
		}
	}
}

// patterns caches compiled patterns; the spec has a few dozen.
var patterns = struct {
	sync.Mutex
	m map[string]*regexp.Regexp
}{m: map[string]*regexp.Regexp{}}

func compilePattern(p string) (*regexp.Regexp, error) {
	patterns.Lock()
	defer patterns.Unlock()
	if re, ok := patterns.m[p]; ok {
		return re, nil
	}
	re, err := regexp.Compile(p)
	if err != nil {
		return nil, err
	}
	patterns.m[p] = re
	return re, nil
}

// tenantIDRE is a tenant-level resource ID: /providers/{namespace}/{type}/{name}[/{type}/{name}…].
var tenantIDRE = regexp.MustCompile(`^/providers/[^/]+(/[^/]+/[^/]+)+$`)

// tenantScoped says whether an arm-id schema allows resources at tenant scope
// (x-ms-arm-id-details.allowedResources[].scopes contains "Tenant").
func tenantScoped(n map[string]any) bool {
	for _, a := range asSlice(asMap(n["x-ms-arm-id-details"])["allowedResources"]) {
		for _, sc := range asSlice(asMap(a)["scopes"]) {
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

func jsonType(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case map[string]any:
		return "an object"
	case []any:
		return "an array"
	case string:
		return "a string"
	case json.Number:
		return "a number"
	case bool:
		return "a boolean"
	}
	return fmt.Sprintf("%T", v)
}
