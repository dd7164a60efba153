package armgen

import (
	"bytes"
	"encoding/json"
	"fmt"
	"path"
	"sort"
	"strings"
)

// sameAs renders the types file of a version whose schemas repeat base's: aliases of base's
// resource types, after checking that every definition the roots reach is the same.
func sameAs(specRoot string, v Version, base *Package) ([]byte, error) {
	if base == nil {
		return nil, fmt.Errorf("%s: SameAs %s must come earlier in Versions", v.APIVersion, v.SameAs)
	}
	specs := &specSet{root: specRoot, files: map[string]*Obj{}}
	file := specFile(v.APIVersion)
	if _, err := specs.load(file); err != nil {
		return nil, err
	}
	mine, err := reachable(specs, file)
	if err != nil {
		return nil, err
	}
	theirs, err := reachable(base.specs, base.file)
	if err != nil {
		return nil, err
	}
	var names []string
	for n := range mine {
		names = append(names, n)
	}
	for n := range theirs {
		if _, ok := mine[n]; !ok {
			names = append(names, n)
		}
	}
	sort.Strings(names)
	for _, n := range names {
		if mine[n] != theirs[n] {
			return nil, fmt.Errorf("%s declares the schema of %s, but its definition %s differs:\n  %s: %s\n  %s: %s",
				v.APIVersion, v.SameAs, n, v.APIVersion, mine[n], v.SameAs, theirs[n])
		}
	}
	var b bytes.Buffer
	fmt.Fprintf(&b, header, v.APIVersion)
	fmt.Fprintf(&b, "package %s\n\n", v.Package)
	fmt.Fprintf(&b, "import %q\n\n", "github.com/openhcp/openhcp/frontend/pkg/api/"+base.Version.Package)
	fmt.Fprintf(&b, "// The resources of %s are %s's: the generator checked that every definition they\n// reach is the same in both specifications (descriptions aside).\ntype (\n", v.APIVersion, v.SameAs)
	for _, r := range base.Roots {
		fmt.Fprintf(&b, "%s = %s.%s\n", r, base.Version.Package, r)
	}
	b.WriteString(")\n")
	return gofmt(v.Package+"/zz_generated_types.go", &b)
}

// reachable maps every definition the Roots reach to its canonical JSON without descriptions.
func reachable(specs *specSet, file string) (map[string]string, error) {
	out := map[string]string{}
	var visit func(from, ref string) error
	visit = func(from, ref string) error {
		d, err := specs.resolve(from, ref)
		if err != nil {
			return err
		}
		key := path.Base(d.File) + "#" + d.Name
		if _, ok := out[key]; ok {
			return nil
		}
		out[key] = ""
		var refs []string
		out[key] = canonical(d.Schema, &refs)
		for _, r := range refs {
			if err := visit(d.File, r); err != nil {
				return err
			}
		}
		return nil
	}
	for _, r := range Roots {
		if err := visit(file, "#/definitions/"+r); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// canonical is v as JSON with sorted keys and without documentation, collecting $refs.
func canonical(v any, refs *[]string) string {
	switch x := v.(type) {
	case *Obj:
		keys := append([]string(nil), x.Keys...)
		sort.Strings(keys)
		var parts []string
		for _, k := range keys {
			if k == "description" || k == "title" || k == "x-ms-examples" {
				continue
			}
			if k == "$ref" {
				*refs = append(*refs, x.str(k))
			}
			kb, _ := json.Marshal(k)
			parts = append(parts, string(kb)+":"+canonical(x.M[k], refs))
		}
		return "{" + strings.Join(parts, ",") + "}"
	case []any:
		var parts []string
		for _, e := range x {
			parts = append(parts, canonical(e, refs))
		}
		return "[" + strings.Join(parts, ",") + "]"
	default:
		b, _ := json.Marshal(x)
		return string(b)
	}
}
