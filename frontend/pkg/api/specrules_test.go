package api_test

import (
	"encoding/json"
	"fmt"
	"io/fs"
	"path"
	"slices"
	"strings"
	"testing"

	"github.com/openhcp/openhcp/frontend/pkg/api"
	"github.com/openhcp/openhcp/internal/armspec"
)

// specRule is one constraint of the specification on a writable scalar property: a value that
// breaks it, and the JSON path the error must name.
type specRule struct {
	path string // dotted JSON path from the resource's root
	bad  any
	what string
}

// specRules walks the specification of one api-version from a resource definition and lists,
// for every writable (not readOnly) property reached through objects, each enum it must be one
// of and each integer bound it must stay within. Arrays and maps are not entered (their
// entries' rules are tested by the strict and node pool tests).
func specRules(t *testing.T, apiVersion, root string) []specRule {
	t.Helper()
	files := map[string]map[string]any{}
	load := func(name string) map[string]any {
		if f, ok := files[name]; ok {
			return f
		}
		b, err := fs.ReadFile(armspec.FS(), name)
		if err != nil {
			t.Fatal(err)
		}
		var f map[string]any
		if err := json.Unmarshal(b, &f); err != nil {
			t.Fatal(err)
		}
		files[name] = f
		return f
	}
	resolve := func(from, ref string) (string, map[string]any) {
		file, frag, _ := strings.Cut(ref, "#")
		if file == "" {
			file = from
		} else {
			file = path.Clean(path.Join(path.Dir(from), file))
		}
		name := strings.TrimPrefix(frag, "/definitions/")
		d, _ := load(file)["definitions"].(map[string]any)[name].(map[string]any)
		if d == nil {
			t.Fatalf("%s: unresolved $ref %s", from, ref)
		}
		return file, d
	}
	var rules []specRule
	var walk func(file string, def map[string]any, at string, depth int)
	walk = func(file string, def map[string]any, at string, depth int) {
		if depth > 8 {
			return
		}
		for _, a := range asList(def["allOf"]) {
			f, d := resolve(file, a.(map[string]any)["$ref"].(string))
			walk(f, d, at, depth+1)
		}
		props, _ := def["properties"].(map[string]any)
		for name, p := range props {
			ps := p.(map[string]any)
			if ps["readOnly"] == true {
				continue
			}
			target := name
			if at != "" {
				target = at + "." + name
			}
			scalar, sfile := ps, file
			if ref, ok := ps["$ref"].(string); ok {
				f, d := resolve(file, ref)
				if _, obj := d["properties"]; obj || d["allOf"] != nil {
					walk(f, d, target, depth+1)
					continue
				}
				scalar, sfile = d, f
			}
			_ = sfile
			if enum := asList(scalar["enum"]); len(enum) > 0 {
				rules = append(rules, specRule{target, "NotInTheEnum", fmt.Sprintf("enum %v", enum)})
			}
			if ps["type"] == "integer" || scalar["type"] == "integer" {
				if lo, ok := ps["minimum"].(float64); ok {
					rules = append(rules, specRule{target, lo - 1, fmt.Sprintf("minimum %v", lo)})
				}
				if hi, ok := ps["maximum"].(float64); ok {
					rules = append(rules, specRule{target, hi + 1, fmt.Sprintf("maximum %v", hi)})
				}
			}
		}
	}
	file := path.Join(armspec.VersionDir(apiVersion), "openapi.json")
	_, def := resolve(file, "#/definitions/"+root)
	walk(file, def, "", 0)
	slices.SortFunc(rules, func(a, b specRule) int { return strings.Compare(a.path+a.what, b.path+b.what) })
	return rules
}

func asList(v any) []any { l, _ := v.([]any); return l }

// withValue sets the dotted path in a JSON body, creating the objects on the way.
func withValue(t *testing.T, body, dotted string, v any) []byte {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal([]byte(body), &m); err != nil {
		t.Fatal(err)
	}
	parts := strings.Split(dotted, ".")
	cur := m
	for _, p := range parts[:len(parts)-1] {
		next, ok := cur[p].(map[string]any)
		if !ok {
			next = map[string]any{}
			cur[p] = next
		}
		cur = next
	}
	cur[parts[len(parts)-1]] = v
	b, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestEverySpecEnumAndBoundIsEnforced: for each api-version, every enum and integer bound the
// specification puts on a writable property of a cluster or a node pool is refused with the
// property's path as the error's target, whether the check is generated (zz_generated_validate.go)
// or shared (fieldcheck).
func TestEverySpecEnumAndBoundIsEnforced(t *testing.T) {
	for _, name := range api.Versions() {
		cv, _ := api.Lookup(name)
		body := clusterBodyFor(name)
		for _, r := range specRules(t, name, "HcpOpenShiftCluster") {
			t.Run(name+"/cluster/"+r.path+"/"+r.what, func(t *testing.T) {
				_, err := cv.DecodeCluster(withValue(t, body, r.path, r.bad))
				if !slices.Contains(targets(err), r.path) {
					t.Errorf("value %v at %s (%s): error targets %v, want %s", r.bad, r.path, r.what, targets(err), r.path)
				}
			})
		}
		nv := npVersion(t, name)
		for _, r := range specRules(t, name, "NodePool") {
			t.Run(name+"/nodepool/"+r.path+"/"+r.what, func(t *testing.T) {
				_, err := nv.DecodeNodePool(withValue(t, nodePoolBody, r.path, r.bad), nil)
				if !slices.Contains(targets(err), r.path) {
					t.Errorf("value %v at %s (%s): error targets %v, want %s", r.bad, r.path, r.what, targets(err), r.path)
				}
			})
		}
	}
}
