package armgen

import (
	"bytes"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
)

const profilesPrefix = "profiles."

// sharedList is a property of a version's definition that SharedLists names.
type sharedList struct {
	Owner string
	Field *Field
	// Elem is the Go type of its entries (profiles.<Type>), Entry their properties.
	Elem  string
	Entry []*Field
}

// checkAgreement fails when two versions' specifications say different things of a property of
// a shared definition, or of a list of one (then the definition is not shared): the checks
// written once for every version would be wrong for one of them. What a version's rules own
// (handWritten) is left out of the comparison.
func checkAgreement(pkgs []*Package) error {
	type seen struct{ version, sig string }
	first := map[string]seen{}
	agree := func(version, key, sig string) error {
		if old, ok := first[key]; ok && old.sig != sig {
			return fmt.Errorf("shared definition property %s is not the same in every api-version:\n  %s: %s\n  %s: %s", key, old.version, old.sig, version, sig)
		}
		if _, ok := first[key]; !ok {
			first[key] = seen{version, sig}
		}
		return nil
	}
	for _, p := range pkgs {
		for _, def := range sortedKeys(p.shared) {
			for _, f := range p.shared[def] {
				key := def + "." + f.JSON
				if err := agree(p.Version.APIVersion, key, constraints(key, f)); err != nil {
					return err
				}
			}
		}
		for _, l := range p.sharedLists() {
			key := l.Owner + "." + l.Field.JSON
			if err := agree(p.Version.APIVersion, key, constraints(key, l.Field)); err != nil {
				return err
			}
		}
	}
	return nil
}

// checkRuleKeys fails when a message rule (presentIsEnough, atLeast, valueWords, absentAsEmpty),
// a hook or a checkOrder names a property no version has: a misspelt key would silently change nothing.
func checkRuleKeys(pkgs []*Package, hooks map[string]hook) error {
	known := map[string]bool{}
	for _, p := range pkgs {
		for _, s := range p.Structs {
			for _, f := range s.Fields {
				known[s.Def+"."+f.JSON] = true
			}
		}
		for def, fields := range p.shared {
			for _, f := range fields {
				known[def+"."+f.JSON] = true
			}
		}
	}
	var keys []string
	keys = append(keys, sortedKeys(presentIsEnough)...)
	keys = append(keys, sortedKeys(atLeast)...)
	keys = append(keys, sortedKeys(valueWords)...)
	keys = append(keys, sortedKeys(absentAsEmpty)...)
	for def, o := range checkOrder {
		for _, prop := range o.Props {
			keys = append(keys, def+"."+prop)
		}
	}
	for _, k := range keys {
		if !known[k] {
			return fmt.Errorf("a message rule names %s, a property no api-version has", k)
		}
	}
	for _, k := range sortedKeys(hooks) {
		if !known[k] {
			return fmt.Errorf("%s: hook %s at %s, a property no api-version has", hooks[k].At, hooks[k].Method, k)
		}
	}
	return nil
}

// constraints is what the specification says of property key's values, as text.
func constraints(key string, f *Field) string {
	num := func(p *float64) string {
		if p == nil {
			return "-"
		}
		return strconv.FormatFloat(*p, 'g', -1, 64)
	}
	required := f.Required
	if _, ok := handWritten[key+":required"]; ok {
		required = false
	}
	var enum []string
	if _, ok := handWritten[key+":enum"]; !ok && f.Enum != nil {
		for _, v := range f.Enum.Values {
			enum = append(enum, v.Value)
		}
	}
	return fmt.Sprintf("type=%s readOnly=%t required=%t enum=%v minimum=%s maximum=%s minLength=%s maxLength=%s pattern=%q format=%q arm-id types=%v minItems=%s maxItems=%s items.maxLength=%s x-ms-identifiers=%v",
		f.Type, f.ReadOnly, required, enum, num(f.Min), num(f.Max), num(f.MinLength), num(f.MaxLength), f.Pattern, f.Format, f.ArmIDTypes,
		num(f.MinItems), num(f.MaxItems), num(f.ItemMaxLength), f.Identifiers)
}

// sharedLists are the properties of p's structs that SharedLists names.
func (p *Package) sharedLists() []sharedList {
	var out []sharedList
	for _, s := range p.Structs {
		for _, f := range s.Fields {
			if slices.Contains(SharedLists, s.Def+"."+f.JSON) {
				out = append(out, sharedList{Owner: s.Def, Field: f, Elem: p.Version.Shared[f.ElemDef], Entry: p.shared[f.ElemDef]})
			}
		}
	}
	return out
}

// sharedFile renders package fieldcheck's checks of the SharedChecks definitions and the
// SharedLists properties, from the first of pkgs that has each: checkAgreement has made sure the
// others say the same. A list's most entries and a pattern that are among bs (the newest
// version's Bounds) are read from package bounds, which Cluster Service's model reads too.
func sharedFile(pkgs []*Package, bs []bound) ([]byte, error) {
	byKey := map[string]bound{}
	for _, x := range bs {
		byKey[x.Key] = x
	}
	usesBounds := false
	var enums []*Enum
	var maxItems []string
	w := &checkWriter{
		enumValues: func(e *Enum) string { return "spec" + e.Name + "Values" },
		nested:     func(string, *Field, string) string { return "" },
		counted:    func(*Field) bool { return true },
		// A name the hand-written code may use too (it checks the entries of a list too
		// long no further).
		maxItems: func(def string, f *Field) string {
			name := "specMaxItems" + goTypeName(def) + f.Go
			value := strconv.Itoa(int(*f.MaxItems))
			if x, ok := byKey[def+"."+f.JSON+":maxItems"]; ok && x.Number == *f.MaxItems {
				value, usesBounds = "bounds."+x.Name, true
			}
			if decl := fmt.Sprintf("%s = %s", name, value); !slices.Contains(maxItems, decl) {
				maxItems = append(maxItems, decl)
			}
			return name
		},
	}
	addEnums := func(fields []*Field) {
		for _, f := range fields {
			if f.Enum != nil && !f.ReadOnly && !slices.ContainsFunc(enums, func(e *Enum) bool { return e.Name == f.Enum.Name }) {
				enums = append(enums, f.Enum)
			}
		}
	}
	for _, def := range SharedChecks {
		p := sharingPackage(pkgs, def)
		if p == nil {
			return nil, fmt.Errorf("SharedChecks names %s, which no version shares", def)
		}
		target := p.Version.Shared[def]
		if !strings.HasPrefix(target, profilesPrefix) {
			return nil, fmt.Errorf("SharedChecks names %s, whose type %s is not of package profiles", def, target)
		}
		fields := p.shared[def]
		for _, f := range fields {
			if !scalar(f.Type) {
				return nil, fmt.Errorf("SharedChecks: %s.%s holds a definition, whose checks are not generated here", def, f.JSON)
			}
		}
		fmt.Fprintf(&w.body, "// spec%s checks what the specification of every api-version says of the values of\n// %s at path.\n", goTypeName(def), def)
		fmt.Fprintf(&w.body, "func spec%s(v *Checker, x *%s, path string) {\n", goTypeName(def), target)
		for _, f := range fields {
			w.field(def, f)
		}
		w.body.WriteString("}\n\n")
		addEnums(fields)
	}
	lists := map[string]sharedList{}
	for _, p := range pkgs {
		for _, l := range p.sharedLists() {
			if _, ok := lists[l.Owner+"."+l.Field.JSON]; !ok {
				lists[l.Owner+"."+l.Field.JSON] = l
			}
		}
	}
	for _, key := range SharedLists {
		l, ok := lists[key]
		if !ok {
			return nil, fmt.Errorf("SharedLists names %s, which no version has", key)
		}
		if err := w.list(l); err != nil {
			return nil, err
		}
		addEnums(l.Entry)
	}
	auth := &authWriter{w: w, byKey: byKey, defOf: map[string]string{}, target: map[string]string{}}
	if err := auth.authChecks(pkgs, SharedAuthChecks); err != nil {
		return nil, err
	}
	if w.err != nil {
		return nil, w.err
	}
	usesBounds = usesBounds || auth.usesBounds
	for _, def := range SharedAuthChecks {
		for _, p := range pkgs {
			if fields, ok := p.shared[def]; ok {
				addEnums(fields)
				break
			}
		}
	}
	var b bytes.Buffer
	fmt.Fprintf(&b, "// Code generated by gen-armtypes from internal/armspec/spec (every api-version's openapi.json). DO NOT EDIT.\n\n")
	b.WriteString("package fieldcheck\n\nimport (\n")
	if w.usesFmt {
		b.WriteString("\"fmt\"\n")
	}
	if w.usesRegexp {
		b.WriteString("\"regexp\"\n")
	}
	if auth.usesSlices {
		b.WriteString("\"slices\"\n")
	}
	// A pattern the newest version's Bounds hold is that constant.
	patterns := make([]string, len(w.patterns))
	for i, pat := range w.patterns {
		patterns[i] = strconv.Quote(pat)
		for _, x := range bs {
			if x.Pattern != "" && x.Pattern == pat {
				patterns[i], usesBounds = "bounds."+x.Name, true
				break
			}
		}
	}
	b.WriteString("\n" + profilesImport + "\n")
	if usesBounds {
		b.WriteString(boundsImport + "\n")
	}
	b.WriteString(")\n\n")
	if len(w.skipped) > 0 {
		sort.Strings(w.skipped)
		b.WriteString("// Checks of the specification left to hand-written code:\n")
		for _, s := range w.skipped {
			fmt.Fprintf(&b, "//   - %s\n", s)
		}
		b.WriteString("\n")
	}
	if len(maxItems) > 0 {
		b.WriteString("// The most entries each list may have.\nconst (\n")
		for _, m := range maxItems {
			b.WriteString(m + "\n")
		}
		b.WriteString(")\n\n")
	}
	for i, pat := range patterns {
		fmt.Fprintf(&b, "var specPattern%d = regexp.MustCompile(%s)\n", i, pat)
	}
	if len(w.patterns) > 0 {
		b.WriteString("\n")
	}
	for _, e := range enums {
		var vals []string
		for _, v := range e.Values {
			vals = append(vals, strconv.Quote(v.Value))
		}
		fmt.Fprintf(&b, "// spec%sValues is the allowed set of %s, in the specification's order.\nvar spec%sValues = []string{%s}\n\n", e.Name, e.Name, e.Name, strings.Join(vals, ", "))
	}
	b.Write(w.body.Bytes())
	b.WriteString("// specPath is the JSON path of a property under path.\nfunc specPath(path, name string) string {\nif path == \"\" {\nreturn name\n}\nreturn path + \".\" + name\n}\n")
	return gofmt("fieldcheck/zz_generated_shared.go", &b)
}

// list writes the check of a SharedLists property: its length, then (unless there are too many)
// each entry's properties and that its identifier appears once.
func (w *checkWriter) list(l sharedList) error {
	key := l.Owner + "." + l.Field.JSON
	if !strings.HasPrefix(l.Elem, profilesPrefix) {
		return fmt.Errorf("SharedLists names %s, whose entries are not of a type of package profiles", key)
	}
	ident := ""
	if ids := l.Field.Identifiers; len(ids) == 1 {
		ident = ids[0]
	}
	var identField *Field
	for _, f := range l.Entry {
		if !scalar(f.Type) {
			return fmt.Errorf("SharedLists: %s.%s holds a definition, whose checks are not generated here", l.Field.ElemDef, f.JSON)
		}
		if f.JSON == ident {
			identField = f
		}
	}
	if ident != "" && (identField == nil || identField.Type != "*string") {
		return fmt.Errorf("SharedLists: %s's identifier %s is not a string property of %s", key, ident, l.Field.ElemDef)
	}
	name := goTypeName(l.Owner) + l.Field.Go
	counted := l.Field.MinItems != nil || l.Field.MaxItems != nil
	fmt.Fprintf(&w.body, "// spec%s checks %s at path:\n// ", name, key)
	if counted {
		w.body.WriteString("its length, then ")
	}
	fmt.Fprintf(&w.body, "each entry (%s)", l.Field.ElemDef)
	if ident != "" {
		fmt.Fprintf(&w.body, " and that an entry's %s (x-ms-identifiers) appears once", ident)
	}
	w.body.WriteString(".\n")
	fmt.Fprintf(&w.body, "func spec%s(v *Checker, list []%s, path string) {\n", name, l.Elem)
	if counted {
		w.counts("list", "path", l.Owner, l.Field)
	}
	if l.Field.MaxItems != nil {
		w.body.WriteString("if len(list) > " + w.maxItems(l.Owner, l.Field) + " {\nreturn // the entries of a list too long are not checked one by one\n}\n")
	}
	if ident != "" {
		w.body.WriteString("seen := map[string]bool{}\n")
	}
	w.usesFmt = true
	w.body.WriteString("base := path\nfor i := range list {\nif v.Full() {\nreturn\n}\n// The entry and its path, as the checks of its properties name them.\nx, path := &list[i], fmt.Sprintf(\"%s[%d]\", base, i)\n")
	for _, f := range l.Entry {
		w.field(l.Field.ElemDef, f)
		if f.JSON == ident {
			fmt.Fprintf(&w.body, "if x.%s != nil {\nif seen[*x.%s] {\nv.Add(specPath(path, %q), \"The %s '%%s' appears more than once in '%%s'.\", *x.%s, base)\n}\nseen[*x.%s] = true\n}\n",
				f.Go, f.Go, f.JSON, f.JSON, f.Go, f.Go)
		}
	}
	w.body.WriteString("}\n}\n\n")
	return nil
}

// scalar says a Go type holds no definition: a value, or a list or map of values.
func scalar(goType string) bool {
	base := strings.TrimPrefix(strings.TrimPrefix(strings.TrimPrefix(goType, "[]"), "map[string]"), "*")
	return slices.Contains([]string{"string", "int32", "int64", "bool", "float64"}, base)
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// sharingPackage is the first of pkgs whose specification shares the definition def, or nil.
func sharingPackage(pkgs []*Package, def string) *Package {
	for _, q := range pkgs {
		if _, ok := q.shared[def]; ok {
			return q
		}
	}
	return nil
}
