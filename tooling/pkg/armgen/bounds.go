package armgen

import (
	"bytes"
	"fmt"
	"strconv"
	"strings"
)

// boundsImport is the package the Bounds constants are written to.
const boundsImport = `"github.com/openhcp/openhcp/internal/armspec/bounds"`

// boundsPath is the generated file of package bounds, under the repository root.
const boundsPath = "internal/armspec/bounds/zz_generated_bounds.go"

// bound is one of the Bounds: its key, its constant's name and its value as Go source.
type bound struct {
	Key, Name, Value string
	// Number is the value of a numeric bound, Pattern that of a pattern.
	Number  float64
	Pattern string
}

// boundKeywords name the constants' last part by the keyword they hold.
var boundKeywords = map[string]string{
	"minimum": "Minimum", "maximum": "Maximum", "minLength": "MinLength", "maxLength": "MaxLength",
	"minItems": "MinItems", "maxItems": "MaxItems", "items.maxLength": "ItemsMaxLength", "pattern": "Pattern",
}

// newestBounds builds the newest api-version's specification (its own file, whatever SameAs says)
// and looks up each of keys in it.
func newestBounds(specRoot string, keys []string) ([]bound, error) {
	newest := Versions[len(Versions)-1]
	p, err := Build(specRoot, Version{APIVersion: newest.APIVersion, Package: newest.Package})
	if err != nil {
		return nil, fmt.Errorf("bounds: %w", err)
	}
	return p.bounds(keys)
}

// bounds looks up keys ("Definition.property:keyword") in p's definitions; a key whose
// definition, property or keyword p's specification does not have is an error.
func (p *Package) bounds(keys []string) ([]bound, error) {
	fields := map[string]*Field{}
	for _, s := range p.Structs {
		for _, f := range s.Fields {
			fields[s.Def+"."+f.JSON] = f
		}
	}
	var out []bound
	for _, key := range keys {
		prop, keyword, ok := strings.Cut(key, ":")
		suffix, known := boundKeywords[keyword]
		if !ok || !known {
			return nil, fmt.Errorf("bounds: %s names no keyword of %v", key, sortedKeys(boundKeywords))
		}
		f, ok := fields[prop]
		if !ok {
			return nil, fmt.Errorf("bounds: %s names a property %s's specification does not have", key, p.Version.APIVersion)
		}
		def, _, _ := strings.Cut(prop, ".")
		b := bound{Key: key, Name: goTypeName(def) + f.Go + suffix}
		if keyword == "pattern" {
			if f.Pattern == "" {
				return nil, fmt.Errorf("bounds: %s: %s's specification states no pattern there", key, p.Version.APIVersion)
			}
			b.Pattern, b.Value = f.Pattern, "`"+f.Pattern+"`"
			if strings.Contains(f.Pattern, "`") {
				b.Value = strconv.Quote(f.Pattern)
			}
			out = append(out, b)
			continue
		}
		n := map[string]*float64{
			"minimum": f.Min, "maximum": f.Max, "minLength": f.MinLength, "maxLength": f.MaxLength,
			"minItems": f.MinItems, "maxItems": f.MaxItems, "items.maxLength": f.ItemMaxLength,
		}[keyword]
		if n == nil {
			return nil, fmt.Errorf("bounds: %s: %s's specification states no %s there", key, p.Version.APIVersion, keyword)
		}
		b.Number, b.Value = *n, strconv.FormatFloat(*n, 'f', -1, 64)
		out = append(out, b)
	}
	return out, nil
}

// boundsFile renders package bounds.
func boundsFile(apiVersion string, bs []bound) ([]byte, error) {
	var b bytes.Buffer
	fmt.Fprintf(&b, header, apiVersion)
	b.WriteString("// Package bounds holds the structural bounds of the newest api-version's ARM specification that\n" +
		"// hand-written code reads: Cluster Service's model and the frontend's checks of the shared types.\n" +
		"// A bound an older api-version states otherwise (or not at all) is that version's own rule, which\n" +
		"// the frontend's checks of that version keep. The list is the generator's (armgen.Bounds).\n" +
		"package bounds\n\n")
	b.WriteString("const (\n")
	for _, x := range bs {
		fmt.Fprintf(&b, "// %s is %s in %s's specification.\n%s = %s\n", x.Name, x.Key, apiVersion, x.Name, x.Value)
	}
	b.WriteString(")\n")
	return gofmt(boundsPath, &b)
}
