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
// shared types (their checks are functions of package fieldcheck, shared.go).
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
	w := &checkWriter{
		enumValues: func(e *Enum) string { return e.Name + "Values" },
		nested: func(def string, f *Field, at string) string {
			switch {
			case f.Struct != nil && absent(def, f):
				// Checked as an empty one when absent (absentAsEmpty).
				return fmt.Sprintf("if x.%s == nil {\n(&%s{}).validateSpec(v, %s)\n} else {\nx.%s.validateSpec(v, %s)\n}\n", f.Go, f.Struct.Name, at, f.Go, at)
			case f.Struct != nil:
				return fmt.Sprintf("if x.%s != nil {\nx.%s.validateSpec(v, %s)\n}\n", f.Go, f.Go, at)
			case f.Elem != nil:
				return fmt.Sprintf("for i := range x.%s {\nx.%s[i].validateSpec(v, fmt.Sprintf(\"%%s[%%d]\", %s, i))\n}\n", f.Go, f.Go, at)
			}
			return ""
		},
		// A list of a shared definition is counted with its entries, by fieldcheck (shared.go).
		counted:  func(f *Field) bool { _, shared := p.Version.Shared[f.ElemDef]; return !shared },
		maxItems: func(_ string, f *Field) string { return strconv.Itoa(int(*f.MaxItems)) },
	}
	w.hooks, w.hooked = p.hooks, map[string]bool{}
	p.hooked = w.hooked
	for _, s := range structs {
		fmt.Fprintf(&w.body, "// validateSpec checks what the specification's %s says of a body's values at path.\n", s.Def)
		if o, ok := checkOrder[s.Def]; ok {
			fmt.Fprintf(&w.body, "// It checks %s before its other properties: %s.\n", strings.Join(o.Props, ", then "), o.Why)
		}
		fmt.Fprintf(&w.body, "func (x *%s) validateSpec(v *fieldcheck.Checker, path string) {\n", s.Name)
		for _, f := range ordered(s) {
			w.field(s.Def, f)
		}
		w.body.WriteString("}\n\n")
	}
	if w.err != nil {
		return nil, fmt.Errorf("%s: %w", p.Version.APIVersion, w.err)
	}
	usesFmt, usesRegexp, patterns, skipped, body := w.usesFmt, w.usesRegexp, w.patterns, w.skipped, &w.body
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
		b.WriteString("// Checks of the specification left to fieldcheck, as the version's rules say, and the\n// hand-written checks called at a property (fieldcheck.Checker methods marked //armgen:hook):\n")
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

// checkWriter renders the checks of a definition's properties: a version's validateSpec methods
// and fieldcheck's functions of the shared definitions (shared.go). The value checked is x.
type checkWriter struct {
	body       bytes.Buffer
	usesFmt    bool
	usesRegexp bool
	patterns   []string
	skipped    []string
	// enumValues is the name of an enum's allowed set.
	enumValues func(*Enum) string
	// nested is the code that checks the struct property f of def holds (or each entry of a
	// list of them) at at; "" when none.
	nested func(def string, f *Field, at string) string
	// counted says whether the bounds of an array's length are checked with its property.
	counted func(f *Field) bool
	// maxItems is how the code names the most entries property f of def may have.
	maxItems func(def string, f *Field) string
	// hooks are the hand-written checks to call at their property (nil: none are written), and
	// hooked records those written.
	hooks  map[string]hook
	hooked map[string]bool
	// err is the first property whose checks cannot be written.
	err error
}

// field writes the checks of property f of definition def.
func (w *checkWriter) field(def string, f *Field) {
	if f.ReadOnly {
		return
	}
	body := &w.body
	at := fmt.Sprintf("specPath(path, %q)", f.JSON)
	key := def + "." + f.JSON
	h, hooked := w.hooks[key]
	if hooked {
		w.hooked[key] = true
		w.skipped = append(w.skipped, fmt.Sprintf("%s: fieldcheck.Checker.%s (its doc comment says why)", key, h.Method))
	}
	if hooked && h.Guard {
		fmt.Fprintf(body, "if v.%s(x.%s, %s) {\n", h.Method, f.Go, at)
	}
	required := f.Required
	if reason, ok := handWritten[key+":required"]; ok {
		required = false
		w.skipped = append(w.skipped, fmt.Sprintf("%s required: %s", key, reason))
	}
	_, presenceOnly := presentIsEnough[key]
	words, inWords := valueWords[key]
	length := (f.MinLength != nil || f.MaxLength != nil) && !inWords
	standardLength := f.MinLength != nil && *f.MinLength == 1 && f.MaxLength != nil && *f.MaxLength == 255 && required
	switch {
	case required && standardLength:
		fmt.Fprintf(body, "v.Length(x.%s, %s)\n", f.Go, at)
	case required && f.IsString && f.Enum == nil && f.MinLength == nil && f.Format != "arm-id" && !presenceOnly:
		// An empty string names nothing: it is as missing as an absent one (an empty
		// enum value or resource ID gets the enum's or the ID's own error instead).
		fmt.Fprintf(body, "v.Required(x.%s != nil && *x.%s != \"\", %s)\n", f.Go, f.Go, at)
	case required:
		fmt.Fprintf(body, "v.Required(x.%s != nil, %s)\n", f.Go, at)
	}
	enum := f.Enum != nil
	if reason, ok := handWritten[key+":enum"]; ok {
		enum = false
		w.skipped = append(w.skipped, fmt.Sprintf("%s enum: %s", key, reason))
	}
	if enum {
		fmt.Fprintf(body, "v.Enum(x.%s, %s, %s...)\n", f.Go, at, w.enumValues(f.Enum))
	}
	if f.IsInt && f.Min != nil && f.Max == nil && atLeast[key] {
		fmt.Fprintf(body, "v.AtLeast(x.%s, %s, %d)\n", f.Go, at, int64(*f.Min))
	} else if f.IsInt && (f.Min != nil || f.Max != nil) {
		lo, hi := float64(math.MinInt32), float64(math.MaxInt32)
		if f.Min != nil {
			lo = *f.Min
		}
		if f.Max != nil {
			hi = *f.Max
		}
		fmt.Fprintf(body, "v.RangeInt(x.%s, %s, %d, %d)\n", f.Go, at, int64(lo), int64(hi))
	}
	if length && !standardLength && f.IsString {
		w.usesFmt = true
		switch {
		case f.MinLength != nil && f.MaxLength != nil:
			fmt.Fprintf(body, "if x.%s != nil && (len(*x.%s) < %d || len(*x.%s) > %d) {\nv.Add(%s, \"Field '%%s' must be %d to %d characters long.\", %s)\n}\n",
				f.Go, f.Go, int(*f.MinLength), f.Go, int(*f.MaxLength), at, int(*f.MinLength), int(*f.MaxLength), at)
		case f.MaxLength != nil:
			fmt.Fprintf(body, "if x.%s != nil && len(*x.%s) > %d {\nv.Add(%s, \"Field '%%s' must be at most %d characters long.\", %s)\n}\n",
				f.Go, f.Go, int(*f.MaxLength), at, int(*f.MaxLength), at)
		default:
			fmt.Fprintf(body, "if x.%s != nil && len(*x.%s) < %d {\nv.Add(%s, \"Field '%%s' must be at least %d characters long.\", %s)\n}\n",
				f.Go, f.Go, int(*f.MinLength), at, int(*f.MinLength), at)
		}
	}
	if f.Pattern != "" && f.IsString {
		w.usesRegexp = true
		i := slices.Index(w.patterns, f.Pattern)
		if i < 0 {
			i = len(w.patterns)
			w.patterns = append(w.patterns, f.Pattern)
		}
		if inWords {
			// The pattern and the length as one rule, said in words.
			var bounds []string
			if f.MinLength != nil {
				bounds = append(bounds, fmt.Sprintf("len(*x.%s) < %d", f.Go, int(*f.MinLength)))
			}
			if f.MaxLength != nil {
				bounds = append(bounds, fmt.Sprintf("len(*x.%s) > %d", f.Go, int(*f.MaxLength)))
			}
			bounds = append(bounds, fmt.Sprintf("!specPattern%d.MatchString(*x.%s)", i, f.Go))
			if f.MaxLength != nil {
				words = strings.ReplaceAll(words, "{maxLength}", strconv.Itoa(int(*f.MaxLength)))
			}
			fmt.Fprintf(body, "if x.%s != nil && (%s) {\nv.Add(%s, \"Invalid value '%%s' for field '%%s': %s.\", *x.%s, %s)\n}\n",
				f.Go, strings.Join(bounds, " || "), at, words, f.Go, at)
		} else {
			fmt.Fprintf(body, "if x.%s != nil && !specPattern%d.MatchString(*x.%s) {\nv.Add(%s, \"Invalid value '%%s' for field '%%s': must match %%s.\", *x.%s, %s, specPattern%d)\n}\n",
				f.Go, i, f.Go, at, f.Go, at, i)
		}
	}
	if (f.MinItems != nil || f.MaxItems != nil) && w.counted(f) {
		w.counts("x."+f.Go, at, def, f)
	}
	if f.ItemMaxLength != nil {
		w.usesFmt = true
		// The message names an entry by the property's name in the singular ("mirrors": "Each mirror").
		fmt.Fprintf(body, "for i, e := range x.%s {\nif len(e) > %d {\nv.Add(fmt.Sprintf(\"%%s[%%d]\", %s, i), \"Each %s must be at most %d characters long.\")\n}\n}\n",
			f.Go, int(*f.ItemMaxLength), at, strings.TrimSuffix(f.JSON, "s"), int(*f.ItemMaxLength))
	}
	if f.Format == "arm-id" && f.IsString {
		w.armID(key, f, at)
	}
	code := w.nested(def, f, at)
	if strings.Contains(code, "fmt.") {
		w.usesFmt = true
	}
	body.WriteString(code)
	switch {
	case hooked && h.Guard:
		body.WriteString("}\n")
	case hooked:
		fmt.Fprintf(body, "v.%s(x.%s, %s)\n", h.Method, f.Go, at)
	}
}

// armID writes the check that property f (key), a resource ID, names a resource of the type the
// specification allows (x-ms-arm-id-details), unless handWritten leaves it to fieldcheck.
func (w *checkWriter) armID(key string, f *Field, at string) {
	if reason, ok := handWritten[key+":format"]; ok {
		w.skipped = append(w.skipped, fmt.Sprintf("%s format arm-id: %s", key, reason))
		return
	}
	if len(f.ArmIDTypes) != 1 || f.ArmIDTypes[0] == "" {
		if w.err == nil {
			w.err = fmt.Errorf("%s is a resource ID of the types %q (x-ms-arm-id-details.allowedResources); the generated check takes exactly one", key, f.ArmIDTypes)
		}
		return
	}
	fmt.Fprintf(&w.body, "if x.%s != nil {\nv.ArmID(*x.%s, %s, %q)\n}\n", f.Go, f.Go, at, f.ArmIDTypes[0])
}

// absent says property f of def is checked as an empty one when absent (absentAsEmpty).
func absent(def string, f *Field) bool {
	_, ok := absentAsEmpty[def+"."+f.JSON]
	return ok
}

// ordered are s's properties in the order they are checked: checkOrder's, then the rest in the
// specification's order.
func ordered(s *Struct) []*Field {
	o, ok := checkOrder[s.Def]
	if !ok {
		return s.Fields
	}
	var out []*Field
	for _, name := range o.Props {
		for _, f := range s.Fields {
			if f.JSON == name {
				out = append(out, f)
			}
		}
	}
	for _, f := range s.Fields {
		if !slices.Contains(o.Props, f.JSON) {
			out = append(out, f)
		}
	}
	return out
}

// counts writes the bounds of the length of array value (property f of def) at at.
func (w *checkWriter) counts(value, at, def string, f *Field) {
	body := &w.body
	most := ""
	if f.MaxItems != nil {
		most = w.maxItems(def, f)
	}
	switch {
	case f.MinItems != nil && f.MaxItems != nil:
		fmt.Fprintf(body, "if %s != nil && (len(%s) < %d || len(%s) > %s) {\nv.Add(%s, \"Field '%%s' must have %d to %d entries, not %%d.\", %s, len(%s))\n}\n",
			value, value, int(*f.MinItems), value, most, at, int(*f.MinItems), int(*f.MaxItems), at, value)
	case f.MaxItems != nil:
		fmt.Fprintf(body, "if len(%s) > %s {\nv.Add(%s, \"At most %d entries are allowed in '%%s', not %%d.\", %s, len(%s))\n}\n",
			value, most, at, int(*f.MaxItems), at, value)
	default:
		fmt.Fprintf(body, "if %s != nil && len(%s) < %d {\nv.Add(%s, \"Field '%%s' must have at least %d entries, not %%d.\", %s, len(%s))\n}\n",
			value, value, int(*f.MinItems), at, int(*f.MinItems), at, value)
	}
}

// checkHooksWritten fails when a hook is written in none of pkgs' checks (its property is not
// among the definitions ValidateRoots reach): the hand-written check would silently not run.
func checkHooksWritten(pkgs []*Package, hooks map[string]hook) error {
	for _, key := range sortedKeys(hooks) {
		if !slices.ContainsFunc(pkgs, func(p *Package) bool { return p.hooked[key] }) {
			return fmt.Errorf("%s: hook %s at %s, which is not a property of a definition the generated checks reach (ValidateRoots)", hooks[key].At, hooks[key].Method, key)
		}
	}
	return nil
}
