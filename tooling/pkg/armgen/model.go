package armgen

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
	"unicode"
)

// Field is one property of a generated struct.
type Field struct {
	JSON, Go, Type string
	Required       bool
	ReadOnly       bool
	Mutability     []string
	Enum           *Enum
	// Struct is the generated struct the field holds (nil for scalars and shared types).
	Struct *Struct
	// Elem is the generated struct of an array's entries.
	Elem *Struct

	Min, Max             *float64
	MinLength, MaxLength *float64
	Pattern              string
	Format               string
	// ArmIDTypes are the resource types a resource ID (format arm-id) may name
	// (x-ms-arm-id-details.allowedResources).
	ArmIDTypes      []string
	IsString, IsInt bool
	// MinItems and MaxItems bound an array's length; ItemMaxLength an array's string entries.
	MinItems, MaxItems *float64
	ItemMaxLength      *float64
	// ElemDef is the definition an array's entries refer to.
	ElemDef string
	// Identifiers are the properties that identify an entry of an array (x-ms-identifiers).
	Identifiers []string
}

// Struct is one generated struct.
type Struct struct {
	Name, Def string
	Fields    []*Field
}

// Alias is a type declared as another package's type.
type Alias struct{ Name, Target string }

// Enum is a string enum of the specification.
type Enum struct {
	Name   string
	Values []EnumValue
}

// EnumValue is one allowed value.
type EnumValue struct{ Name, Value string }

// Package is what the generator writes for one api-version.
type Package struct {
	Version Version
	Structs []*Struct
	Aliases []Alias
	Enums   []*Enum
	// Roots are the Go names of the resources' types.
	Roots []string

	specs   *specSet
	file    string
	structs map[string]*Struct
	aliased map[string]bool
	enums   map[string]*Enum
	// shared are the properties of each shared definition the roots reach, for the checks
	// written into package fieldcheck (shared.go).
	shared map[string][]*Field
	// hooks are package fieldcheck's hand-written checks to call at their property, and hooked
	// those its generated checks call (validateFile).
	hooks  map[string]hook
	hooked map[string]bool
}

// Build reads the specification of v under specRoot (internal/armspec/spec).
func Build(specRoot string, v Version) (*Package, error) {
	p := &Package{
		Version: v,
		specs:   &specSet{root: specRoot, files: map[string]*Obj{}},
		file:    specFile(v.APIVersion),
		structs: map[string]*Struct{},
		aliased: map[string]bool{},
		enums:   map[string]*Enum{},
		shared:  map[string][]*Field{},
	}
	if _, err := p.specs.load(p.file); err != nil {
		return nil, err
	}
	for _, r := range Roots {
		d, err := p.specs.resolve(p.file, "#/definitions/"+r)
		if err != nil {
			return nil, err
		}
		name, err := p.visit(d, false)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", v.APIVersion, err)
		}
		p.Roots = append(p.Roots, name)
	}
	slices.SortFunc(p.Enums, func(a, b *Enum) int { return strings.Compare(a.Name, b.Name) })
	return p, nil
}

func specFile(apiVersion string) string {
	return "redhatopenshift/resource-manager/Microsoft.RedHatOpenShift/hcpopenshiftclusters/preview/" + apiVersion + "/openapi.json"
}

func goTypeName(def string) string {
	if n, ok := typeNames[def]; ok {
		return n
	}
	return def
}

func isObject(s *Obj) bool {
	return s.str("type") == "object" && s.obj("additionalProperties") == nil || s.obj("properties") != nil || s.get("allOf") != nil
}

// visit returns the Go name of an object definition, declaring it: an alias for a shared
// definition, a struct otherwise. underShared is set below a shared type, whose own
// sub-structures are not generated (only aliases of shared ones are declared).
func (p *Package) visit(d *Def, underShared bool) (string, error) {
	if t, ok := external[d.Name]; ok {
		return t, nil
	}
	name := goTypeName(d.Name)
	if target, ok := p.Version.Shared[d.Name]; ok {
		if !p.aliased[name] {
			p.aliased[name] = true
			p.Aliases = append(p.Aliases, Alias{Name: name, Target: target})
			fields, err := p.fields(d, nil, true)
			if err != nil {
				return "", err
			}
			p.shared[d.Name] = fields
		}
		return name, nil
	}
	if underShared {
		_, err := p.fields(d, nil, true)
		return name, err
	}
	if _, ok := p.structs[name]; ok {
		return name, nil
	}
	s := &Struct{Name: name, Def: d.Name}
	p.structs[name] = s
	p.Structs = append(p.Structs, s)
	fields, err := p.fields(d, s, false)
	if err != nil {
		return "", err
	}
	s.Fields = fields
	return name, nil
}

// props flattens a definition's allOf parents (first) and its own properties.
func (p *Package) props(d *Def) (keys []string, schemas map[string]*Obj, files map[string]string, required map[string]bool, err error) {
	schemas, files, required = map[string]*Obj{}, map[string]string{}, map[string]bool{}
	for _, a := range d.Schema.list("allOf") {
		ao, _ := a.(*Obj)
		parent, err := p.specs.resolve(d.File, ao.str("$ref"))
		if err != nil {
			return nil, nil, nil, nil, err
		}
		pk, ps, pf, pr, err := p.props(parent)
		if err != nil {
			return nil, nil, nil, nil, err
		}
		for _, k := range pk {
			if _, ok := schemas[k]; !ok {
				keys = append(keys, k)
			}
			schemas[k], files[k] = ps[k], pf[k]
		}
		for k := range pr {
			required[k] = true
		}
	}
	props := d.Schema.obj("properties")
	if props == nil {
		props = &Obj{}
	}
	for _, k := range props.Keys {
		if _, ok := schemas[k]; !ok {
			keys = append(keys, k)
		}
		schemas[k], files[k] = props.obj(k), d.File
	}
	for _, k := range d.Schema.strings("required") {
		required[k] = true
	}
	return keys, schemas, files, required, nil
}

func (p *Package) fields(d *Def, s *Struct, underShared bool) ([]*Field, error) {
	keys, schemas, files, required, err := p.props(d)
	if err != nil {
		return nil, err
	}
	var out []*Field
	for _, k := range keys {
		f, err := p.field(k, schemas[k], files[k], s, underShared)
		if err != nil {
			return nil, fmt.Errorf("%s.%s: %w", d.Name, k, err)
		}
		f.Required = required[k]
		out = append(out, f)
	}
	return out, nil
}

func (p *Package) field(jsonName string, ps *Obj, file string, owner *Struct, underShared bool) (*Field, error) {
	f := &Field{JSON: jsonName, Go: goFieldName(jsonName), ReadOnly: ps.bool("readOnly"), Mutability: ps.strings("x-ms-mutability")}
	constraints := []*Obj{ps}
	t, err := p.goType(ps, file, underShared, f, &constraints)
	if err != nil {
		return nil, err
	}
	f.Type = t
	// A property's own keywords win over the referenced definition's.
	for i := len(constraints) - 1; i >= 0; i-- {
		c := constraints[i]
		if v, ok := c.num("minimum"); ok {
			f.Min = &v
		}
		if v, ok := c.num("maximum"); ok {
			f.Max = &v
		}
		if v, ok := c.num("minLength"); ok {
			f.MinLength = &v
		}
		if v, ok := c.num("maxLength"); ok {
			f.MaxLength = &v
		}
		if v := c.str("pattern"); v != "" {
			f.Pattern = v
		}
		if v := c.str("format"); v != "" {
			f.Format = v
		}
		if d := c.obj("x-ms-arm-id-details"); d != nil {
			f.ArmIDTypes = nil
			for _, r := range d.list("allowedResources") {
				ro, _ := r.(*Obj)
				f.ArmIDTypes = append(f.ArmIDTypes, ro.str("type"))
			}
		}
	}
	f.Identifiers = ps.strings("x-ms-identifiers")
	if v, ok := ps.num("minItems"); ok {
		f.MinItems = &v
	}
	if v, ok := ps.num("maxItems"); ok {
		f.MaxItems = &v
	}
	if items := ps.obj("items"); items != nil {
		item := items
		if ref := items.str("$ref"); ref != "" {
			d, err := p.specs.resolve(file, ref)
			if err != nil {
				return nil, err
			}
			item, f.ElemDef = d.Schema, d.Name
		}
		if v, ok := item.num("maxLength"); ok && item.str("type") == "string" {
			f.ItemMaxLength = &v
		}
	}
	if f.Enum != nil && !underShared {
		if err := p.addEnum(f.Enum); err != nil {
			return nil, err
		}
	} else if f.Enum != nil {
		_ = p.addEnum(f.Enum)
	}
	return f, nil
}

func (p *Package) goType(ps *Obj, file string, underShared bool, f *Field, constraints *[]*Obj) (string, error) {
	if ref := ps.str("$ref"); ref != "" {
		d, err := p.specs.resolve(file, ref)
		if err != nil {
			return "", err
		}
		if isObject(d.Schema) {
			name, err := p.visit(d, underShared)
			if err != nil {
				return "", err
			}
			if f != nil && !underShared {
				f.Struct = p.structs[name]
			}
			return "*" + name, nil
		}
		*constraints = append(*constraints, d.Schema)
		return p.scalar(d.Schema, d.Name, f)
	}
	switch ps.str("type") {
	case "array":
		items := ps.obj("items")
		if items == nil {
			return "", fmt.Errorf("array without items")
		}
		elem, err := p.goType(items, file, underShared, nil, &[]*Obj{})
		if err != nil {
			return "", err
		}
		elem = strings.TrimPrefix(elem, "*")
		if f != nil && !underShared {
			f.Elem = p.structs[elem]
		}
		return "[]" + elem, nil
	case "object":
		ap := ps.obj("additionalProperties")
		if ap == nil {
			return "", fmt.Errorf("inline object without additionalProperties is not supported")
		}
		v, err := p.goType(ap, file, underShared, nil, &[]*Obj{})
		if err != nil {
			return "", err
		}
		if ap.str("$ref") == "" {
			v = strings.TrimPrefix(v, "*")
		}
		return "map[string]" + v, nil
	}
	return p.scalar(ps, "", f)
}

func (p *Package) scalar(s *Obj, defName string, f *Field) (string, error) {
	switch s.str("type") {
	case "string":
		if f != nil {
			f.IsString = true
			if vals := s.list("enum"); len(vals) > 0 {
				f.Enum = enumOf(s, defName)
			}
		}
		return "*string", nil
	case "integer":
		if f != nil {
			f.IsInt = true
		}
		if s.str("format") == "int64" {
			return "*int64", nil
		}
		return "*int32", nil
	case "boolean":
		return "*bool", nil
	case "number":
		return "*float64", nil
	}
	return "", fmt.Errorf("unsupported schema type %q", s.str("type"))
}

func enumOf(s *Obj, defName string) *Enum {
	xe := s.obj("x-ms-enum")
	name := xe.str("name")
	if name == "" {
		name = defName
	}
	e := &Enum{Name: name}
	names := map[string]string{}
	for _, v := range xe.list("values") {
		vo, _ := v.(*Obj)
		names[vo.str("value")] = vo.str("name")
	}
	for _, v := range s.strings("enum") {
		n := names[v]
		if n == "" {
			n = v
		}
		e.Values = append(e.Values, EnumValue{Name: identifier(n), Value: v})
	}
	return e
}

func (p *Package) addEnum(e *Enum) error {
	if e.Name == "" {
		return fmt.Errorf("enum %v has no name (x-ms-enum.name)", e.Values)
	}
	if old, ok := p.enums[e.Name]; ok {
		if !slices.Equal(old.Values, e.Values) {
			return fmt.Errorf("enum %s is declared twice with different values", e.Name)
		}
		return nil
	}
	p.enums[e.Name] = e
	p.Enums = append(p.Enums, e)
	return nil
}

var nonIdent = regexp.MustCompile(`[^A-Za-z0-9]+`)

// identifier turns an enum value's name into a Go identifier part ("Premium_LRS" -> "PremiumLRS").
func identifier(s string) string {
	parts := nonIdent.Split(s, -1)
	var b strings.Builder
	for _, part := range parts {
		if part == "" {
			continue
		}
		r := []rune(part)
		r[0] = unicode.ToUpper(r[0])
		b.WriteString(string(r))
	}
	return b.String()
}

// initialisms are the words Go spells in capitals.
var initialisms = map[string]string{
	"Id": "ID", "Url": "URL", "Cidr": "CIDR", "Cidrs": "CIDRs", "Dns": "DNS", "Api": "API",
	"Kms": "KMS", "Vm": "VM", "Os": "OS", "Ca": "CA",
}

// goFieldName is the Go name of a JSON property ("vnetIntegrationSubnetId" -> "VnetIntegrationSubnetID").
func goFieldName(j string) string {
	var words []string
	start := 0
	r := []rune(j)
	for i := 1; i <= len(r); i++ {
		if i == len(r) || unicode.IsUpper(r[i]) {
			words = append(words, string(r[start:i]))
			start = i
		}
	}
	var b strings.Builder
	for _, w := range words {
		w = string(unicode.ToUpper([]rune(w)[0])) + w[len(string([]rune(w)[0])):]
		if x, ok := initialisms[w]; ok {
			w = x
		}
		b.WriteString(w)
	}
	return b.String()
}
