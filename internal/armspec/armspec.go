// Package armspec owns the official ARM OpenAPI specification of Microsoft.RedHatOpenShift
// hcpOpenShiftClusters (vendored under spec/, see README.md for where it comes from) and
// validates response bodies against it. Tests of the frontend and the e2e suite use it, so a
// response that a client generated from the spec could not read fails a test.
package armspec

import (
	"bytes"
	"embed"
	"encoding/json"
	"fmt"
	"io/fs"
	"path"
	"sort"
	"strings"
	"sync"
)

//go:embed spec
var embedded embed.FS

// checksums is the SHA-256 of every vendored file (sha256sum's format), so a file that goes
// missing or is edited by hand fails TestVendoredSpecIsComplete.
//
//go:embed SHA256SUMS
var checksums string

// specFS is the vendored tree, rooted at spec/.
var specFS = mustSub(embedded, "spec")

func mustSub(f fs.FS, dir string) fs.FS {
	s, err := fs.Sub(f, dir)
	if err != nil {
		panic(err)
	}
	return s
}

// versionsRoot is the folder of the api-versions inside the vendored tree.
const versionsRoot = "redhatopenshift/resource-manager/Microsoft.RedHatOpenShift/hcpopenshiftclusters/preview"

// commonTypes is the common-types file the specs reference for ARM's shared definitions.
const commonTypes = "common-types/resource-management/v6/types.json"

// FS is the vendored specification, rooted where the upstream repository's specification/
// folder is (e.g. "common-types/resource-management/v6/types.json").
func FS() fs.FS { return specFS }

// Versions lists the api-versions the vendored specification has, oldest first.
func Versions() []string {
	ents, err := fs.ReadDir(specFS, versionsRoot)
	if err != nil {
		panic(fmt.Sprintf("armspec: the vendored specification is incomplete: %v", err))
	}
	var out []string
	for _, e := range ents {
		if e.IsDir() {
			out = append(out, e.Name())
		}
	}
	sort.Strings(out)
	return out
}

// VersionDir is the folder of one api-version inside FS (openapi.json and examples/).
func VersionDir(apiVersion string) string { return path.Join(versionsRoot, apiVersion) }

// Example is one file of an api-version's examples/ folder.
type Example struct {
	File        string                     `json:"-"`
	Title       string                     `json:"-"` // its key in x-ms-examples ("" from Examples)
	OperationID string                     `json:"operationId"`
	Parameters  map[string]json.RawMessage `json:"parameters"`
	Responses   map[string]struct {
		Headers map[string]string `json:"headers"`
		Body    json.RawMessage   `json:"body"`
	} `json:"responses"`
}

// Examples returns the examples of an api-version whose file name starts with prefix
// ("" for all), sorted by file name. An api-version without examples is an error.
func Examples(apiVersion, prefix string) ([]*Example, error) {
	dir := path.Join(VersionDir(apiVersion), "examples")
	files, err := fs.Glob(specFS, path.Join(dir, prefix+"*.json"))
	if err != nil {
		return nil, fmt.Errorf("list examples of %s: %w", apiVersion, err)
	}
	if len(files) == 0 {
		return nil, fmt.Errorf("no examples %s* in %s", prefix, dir)
	}
	sort.Strings(files)
	out := make([]*Example, 0, len(files))
	for _, f := range files {
		b, err := fs.ReadFile(specFS, f)
		if err != nil {
			return nil, fmt.Errorf("read example: %w", err)
		}
		x := &Example{File: path.Base(f)}
		if err := json.Unmarshal(b, x); err != nil {
			return nil, fmt.Errorf("parse example %s: %w", f, err)
		}
		out = append(out, x)
	}
	return out, nil
}

// files parses and caches the JSON files of the tree; they never change.
var files = struct {
	sync.Mutex
	docs map[string]map[string]any
}{docs: map[string]map[string]any{}}

func loadFile(name string) (map[string]any, error) {
	files.Lock()
	defer files.Unlock()
	if d, ok := files.docs[name]; ok {
		return d, nil
	}
	b, err := fs.ReadFile(specFS, name)
	if err != nil {
		return nil, fmt.Errorf("read spec file: %w", err)
	}
	var d map[string]any
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	if err := dec.Decode(&d); err != nil {
		return nil, fmt.Errorf("parse spec file %s: %w", name, err)
	}
	files.docs[name] = d
	return d, nil
}

// Spec is one api-version's openapi.json.
type Spec struct {
	APIVersion string
	file       string
	ops        map[string]*Operation
	byPath     []*Operation
}

// Operation is one operation of the spec.
type Operation struct {
	ID     string
	Method string // upper case
	Path   string // the spec's template, e.g. /subscriptions/{subscriptionId}/...
	node   map[string]any
	file   string // the openapi file, whose folder the x-ms-examples $refs are relative to
}

var specs = struct {
	sync.Mutex
	m map[string]*Spec
}{m: map[string]*Spec{}}

// Load returns the specification of an api-version; an api-version the vendored tree does not
// have is an error.
func Load(apiVersion string) (*Spec, error) {
	specs.Lock()
	defer specs.Unlock()
	if s, ok := specs.m[apiVersion]; ok {
		return s, nil
	}
	file := path.Join(VersionDir(apiVersion), "openapi.json")
	doc, err := loadFile(file)
	if err != nil {
		return nil, fmt.Errorf("load the specification of api-version %s: %w", apiVersion, err)
	}
	s := &Spec{APIVersion: apiVersion, file: file, ops: map[string]*Operation{}}
	for p, item := range asMap(doc["paths"]) {
		for method, op := range asMap(item) {
			m, ok := op.(map[string]any)
			if !ok {
				continue
			}
			id, ok := m["operationId"].(string)
			if !ok {
				continue
			}
			o := &Operation{ID: id, Method: strings.ToUpper(method), Path: p, node: m, file: file}
			s.ops[id] = o
			s.byPath = append(s.byPath, o)
		}
	}
	sort.Slice(s.byPath, func(i, j int) bool { return s.byPath[i].ID < s.byPath[j].ID })
	specs.m[apiVersion] = s
	return s, nil
}

// Operation returns an operation by its operationId.
func (s *Spec) Operation(id string) (*Operation, bool) {
	o, ok := s.ops[id]
	return o, ok
}

// Operations lists the operations, sorted by operationId.
func (s *Spec) Operations() []*Operation { return append([]*Operation(nil), s.byPath...) }

// Match finds the operation serving method on a request path (without the query). Literal
// segments compare case-insensitively, as ARM routes do; {parameters} match any segment.
func (s *Spec) Match(method, requestPath string) (*Operation, bool) {
	segs := splitPath(requestPath)
	for _, o := range s.byPath {
		if o.Method == strings.ToUpper(method) && matchTemplate(splitPath(o.Path), segs) {
			return o, true
		}
	}
	return nil, false
}

func splitPath(p string) []string { return strings.Split(strings.Trim(p, "/"), "/") }

func matchTemplate(tmpl, segs []string) bool {
	if len(tmpl) != len(segs) {
		return false
	}
	for i, t := range tmpl {
		if strings.HasPrefix(t, "{") && strings.HasSuffix(t, "}") {
			if segs[i] == "" {
				return false
			}
			continue
		}
		if !strings.EqualFold(t, segs[i]) {
			return false
		}
	}
	return true
}

// Examples reads the examples the operation references (its x-ms-examples), sorted by file
// name. Title is the key the spec gives each. A reference to a file that is not in the vendored
// tree, or that does not parse, is an error: an example is never dropped silently.
func (o *Operation) Examples() ([]*Example, error) {
	refs := asMap(o.node["x-ms-examples"])
	out := make([]*Example, 0, len(refs))
	for title, r := range refs {
		ref, _ := asMap(r)["$ref"].(string)
		if ref == "" {
			return nil, fmt.Errorf("%s: x-ms-examples %q has no $ref", o.ID, title)
		}
		name := path.Join(path.Dir(o.file), ref)
		b, err := fs.ReadFile(specFS, name)
		if err != nil {
			return nil, fmt.Errorf("%s: example %q: %w", o.ID, title, err)
		}
		x := &Example{File: path.Base(name), Title: title}
		if err := json.Unmarshal(b, x); err != nil {
			return nil, fmt.Errorf("%s: parse example %s: %w", o.ID, name, err)
		}
		out = append(out, x)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].File < out[j].File })
	return out, nil
}

// Responses lists the status codes the operation declares ("200", "default", ...).
func (o *Operation) Responses() []string {
	var out []string
	for k := range asMap(o.node["responses"]) {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// ResponseHeaders lists the headers the spec declares for a status code of the operation.
func (o *Operation) ResponseHeaders(code string) []string {
	var out []string
	for h := range asMap(asMap(asMap(o.node["responses"])[code])["headers"]) {
		out = append(out, h)
	}
	sort.Strings(out)
	return out
}

func asSlice(v any) []any {
	s, _ := v.([]any)
	return s
}

func asMap(v any) map[string]any {
	m, _ := v.(map[string]any)
	return m
}
