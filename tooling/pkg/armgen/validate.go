package armgen

import (
	"bytes"
	"fmt"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"
)

const (
	codecImport      = `"github.com/openhcp/openhcp/frontend/pkg/api/codec"`
	fieldcheckImport = `"github.com/openhcp/openhcp/frontend/pkg/api/fieldcheck"`
)

// validateFile renders validateSpec methods for the structs the ValidateRoots reach: the
// specification's required properties, enums, integer bounds, string lengths and patterns.
// Read-only properties are not checked (a body may carry them; they are ignored), nor are
// shared types (package fieldcheck owns their rules).
func (p *Package) validateFile() ([]byte, error) {
	var structs []*Struct
	seen := map[*Struct]bool{}
	var walk func(s *Struct)
	walk = func(s *Struct) {
		if s == nil || seen[s] {
			return
		}
		seen[s] = true
		structs = append(structs, s)
		for _, f := range s.Fields {
			if f.ReadOnly {
				continue
			}
			walk(f.Struct)
			walk(f.Elem)
		}
	}
	for _, r := range ValidateRoots {
		walk(p.structs[goTypeName(r)])
	}
	var b bytes.Buffer
	fmt.Fprintf(&b, header, p.Version.APIVersion)
	fmt.Fprintf(&b, "package %s\n\n", p.Version.Package)
	var body bytes.Buffer
	usesFmt, usesRegexp := false, false
	var patterns []string
	var skipped []string
	for _, s := range structs {
		fmt.Fprintf(&body, "// validateSpec checks what the specification's %s says of a body's values at path.\n", s.Def)
		fmt.Fprintf(&body, "func (x *%s) validateSpec(v *fieldcheck.Checker, path string) {\n", s.Name)
		for _, f := range s.Fields {
			if f.Embed != "" || f.ReadOnly {
				continue
			}
			at := fmt.Sprintf("specPath(path, %q)", f.JSON)
			key := s.Def + "." + f.JSON
			required := f.Required
			if reason, ok := handWritten[key+":required"]; ok {
				required = false
				skipped = append(skipped, fmt.Sprintf("%s required: %s", key, reason))
			}
			length := f.MinLength != nil || f.MaxLength != nil
			standardLength := f.MinLength != nil && *f.MinLength == 1 && f.MaxLength != nil && *f.MaxLength == 255 && required
			switch {
			case required && standardLength:
				fmt.Fprintf(&body, "v.Length(x.%s, %s)\n", f.Go, at)
			case required && f.IsString && f.Enum == nil && f.MinLength == nil && f.Format != "arm-id":
				// An empty string names nothing: it is as missing as an absent one (an empty
				// enum value or resource ID gets the enum's or the ID's own error instead).
				fmt.Fprintf(&body, "v.Required(x.%s != nil && *x.%s != \"\", %s)\n", f.Go, f.Go, at)
			case required:
				fmt.Fprintf(&body, "v.Required(x.%s != nil, %s)\n", f.Go, at)
			}
			enum := f.Enum != nil
			if reason, ok := handWritten[key+":enum"]; ok {
				enum = false
				skipped = append(skipped, fmt.Sprintf("%s enum: %s", key, reason))
			}
			if enum {
				fmt.Fprintf(&body, "v.Enum(x.%s, %s, %sValues...)\n", f.Go, at, f.Enum.Name)
			}
			if f.IsInt && (f.Min != nil || f.Max != nil) {
				lo, hi := float64(math.MinInt32), float64(math.MaxInt32)
				if f.Min != nil {
					lo = *f.Min
				}
				if f.Max != nil {
					hi = *f.Max
				}
				fmt.Fprintf(&body, "v.RangeInt(x.%s, %s, %d, %d)\n", f.Go, at, int64(lo), int64(hi))
			}
			if length && !standardLength && f.IsString {
				usesFmt = true
				switch {
				case f.MinLength != nil && f.MaxLength != nil:
					fmt.Fprintf(&body, "if x.%s != nil && (len(*x.%s) < %d || len(*x.%s) > %d) {\nv.Add(%s, \"Field '%%s' must be %d to %d characters long.\", %s)\n}\n",
						f.Go, f.Go, int(*f.MinLength), f.Go, int(*f.MaxLength), at, int(*f.MinLength), int(*f.MaxLength), at)
				case f.MaxLength != nil:
					fmt.Fprintf(&body, "if x.%s != nil && len(*x.%s) > %d {\nv.Add(%s, \"Field '%%s' must be at most %d characters long.\", %s)\n}\n",
						f.Go, f.Go, int(*f.MaxLength), at, int(*f.MaxLength), at)
				default:
					fmt.Fprintf(&body, "if x.%s != nil && len(*x.%s) < %d {\nv.Add(%s, \"Field '%%s' must be at least %d characters long.\", %s)\n}\n",
						f.Go, f.Go, int(*f.MinLength), at, int(*f.MinLength), at)
				}
			}
			if f.Pattern != "" && f.IsString {
				usesRegexp = true
				i := slices.Index(patterns, f.Pattern)
				if i < 0 {
					i = len(patterns)
					patterns = append(patterns, f.Pattern)
				}
				fmt.Fprintf(&body, "if x.%s != nil && !specPattern%d.MatchString(*x.%s) {\nv.Add(%s, \"Invalid value '%%s' for field '%%s': must match %%s.\", *x.%s, %s, specPattern%d)\n}\n",
					f.Go, i, f.Go, at, f.Go, at, i)
			}
			if f.Struct != nil {
				fmt.Fprintf(&body, "if x.%s != nil {\nx.%s.validateSpec(v, %s)\n}\n", f.Go, f.Go, at)
			}
			if f.Elem != nil {
				usesFmt = true
				fmt.Fprintf(&body, "for i := range x.%s {\nx.%s[i].validateSpec(v, fmt.Sprintf(\"%%s[%%d]\", %s, i))\n}\n", f.Go, f.Go, at)
			}
		}
		body.WriteString("}\n\n")
	}
	b.WriteString("import (\n")
	if usesFmt {
		b.WriteString("\"fmt\"\n")
	}
	if usesRegexp {
		b.WriteString("\"regexp\"\n")
	}
	b.WriteString("\n" + codecImport + "\n" + fieldcheckImport + "\n)\n\n")
	sort.Strings(skipped)
	if len(skipped) > 0 {
		b.WriteString("// Checks of the specification left to fieldcheck.Cluster, as the version's ClusterRules say:\n")
		for _, s := range skipped {
			fmt.Fprintf(&b, "//   - %s\n", s)
		}
		b.WriteString("\n")
	}
	for i, pat := range patterns {
		fmt.Fprintf(&b, "var specPattern%d = regexp.MustCompile(%s)\n", i, strconv.Quote(pat))
	}
	b.Write(body.Bytes())
	for _, u := range UpdateRoots {
		paths, err := p.updatePaths(u.Def)
		if err != nil {
			return nil, err
		}
		writeList(&b, fmt.Sprintf("%s are what a PATCH body may hold: the paths of the specification's %s,\na whole object where it allows all of it.", u.Var, u.Def), u.Var, paths)
	}
	for _, u := range UpdatableRoots {
		paths, err := p.updatablePaths(u.Def)
		if err != nil {
			return nil, err
		}
		writeList(&b, fmt.Sprintf("%s are what a write may change in a %s after its creation: the paths whose\n"+
			"x-ms-mutability (its own or, without one, its parent's) has \"update\", a whole object where all of it\nis by inheritance.", u.Var, u.Def), u.Var, paths)
	}
	fmt.Fprintf(&b, "// specCluster is what the specification says of %[1]s beyond its type, for codec.Cluster.\nvar specCluster = codec.ClusterSpec[%[1]s]{ValidateSpec: (*%[1]s).validateSpec, UpdatePaths: specClusterUpdatePaths, Updatable: specClusterUpdatable}\n\n", goTypeName("HcpOpenShiftCluster"))
	b.WriteString("// specPath is the JSON path of a property under path.\nfunc specPath(path, name string) string {\nif path == \"\" {\nreturn name\n}\nreturn path + \".\" + name\n}\n")
	return gofmt(p.Version.Package+"/zz_generated_validate.go", &b)
}

// writeList writes a generated list of paths: its comment (lines without "// "), name and values.
func writeList(b *bytes.Buffer, comment, name string, paths []string) {
	for _, l := range strings.Split(comment, "\n") {
		fmt.Fprintf(b, "// %s\n", l)
	}
	fmt.Fprintf(b, "var %s = []string{\n", name)
	for _, path := range paths {
		fmt.Fprintf(b, "%q,\n", path)
	}
	b.WriteString("}\n\n")
}
