package armgen

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// authWriter renders fieldcheck's checks of the SharedAuthChecks definitions, in the words an
// external auth's problems have always had ("The field '…' is required.", "… is 257 characters
// long; at most 256 are allowed."). An external auth's model holds no presence, so an empty
// string is an absent one there: a required string that is "" is missing, an optional enum that
// is "" is left out (Cluster Service's default applies). A keyword it does not know fails the
// generator, so the specification cannot gain a bound the checks silently leave out.
type authWriter struct {
	w *checkWriter
	// byKey are the Bounds: a bound among them is written as its constant of package bounds.
	byKey      map[string]bound
	usesBounds bool
	usesSlices bool
	// defOf is the definition of a shared type's Go name, target the type of package profiles
	// of a definition.
	defOf, target map[string]string
}

// authChecks writes spec<Type> for each of defs, with the fields of p (the first version that
// shares it; checkAgreement has made sure the others say the same).
func (a *authWriter) authChecks(pkgs []*Package, defs []string) error {
	for _, def := range defs {
		p := sharingPackage(pkgs, def)
		if p == nil {
			return fmt.Errorf("SharedAuthChecks names %s, which no version shares", def)
		}
		for d, t := range p.Version.Shared {
			a.defOf[goTypeName(d)], a.target[d] = d, t
		}
		target := p.Version.Shared[def]
		body := &a.w.body
		fmt.Fprintf(body, "// spec%s checks what the specification of every api-version says of the values of\n// %s at path, in an external auth's words.\n", goTypeName(def), def)
		fmt.Fprintf(body, "func spec%s(v *Checker, x *%s, path string) {\n", goTypeName(def), target)
		for _, f := range p.shared[def] {
			if err := a.field(def, f); err != nil {
				return err
			}
		}
		body.WriteString("}\n\n")
	}
	return nil
}

// most is the Go expression of a bound of key: its constant when Bounds lists it.
func (a *authWriter) most(key string, n float64) string {
	if x, ok := a.byKey[key]; ok && x.Number == n {
		a.usesBounds = true
		return "bounds." + x.Name
	}
	return strconv.Itoa(int(n))
}

// field writes the checks of property f of definition def.
func (a *authWriter) field(def string, f *Field) error {
	if f.ReadOnly {
		return nil
	}
	key := def + "." + f.JSON
	body := &a.w.body
	at := fmt.Sprintf("specPath(path, %q)", f.JSON)
	unsupported := func(what string) error {
		return fmt.Errorf("SharedAuthChecks: %s has %s, which the external auth's checks do not write", key, what)
	}
	if f.Min != nil || f.Max != nil || f.ItemMaxLength != nil || (f.Pattern != "" && handWritten[key+":pattern"] == "") {
		return unsupported("a minimum, maximum, pattern or entry length")
	}
	if f.Format != "" && handWritten[key+":format"] == "" {
		return unsupported("format " + f.Format)
	}
	if f.Format != "" {
		a.w.skipped = append(a.w.skipped, fmt.Sprintf("%s format %s: %s", key, f.Format, handWritten[key+":format"]))
	}
	switch {
	case f.Type == "*string":
		if f.MinLength != nil && (*f.MinLength != 1 || !f.Required) {
			return unsupported("a minLength other than 1 of a required string")
		}
		var checks []string
		if f.Required {
			checks = append(checks, fmt.Sprintf("if x.%[1]s == nil || *x.%[1]s == \"\" {\nv.Add(%[2]s, \"The field '%%s' is required.\", %[2]s)\n}", f.Go, at))
		}
		// After the required check, in its else, the value is there.
		present := fmt.Sprintf("x.%[1]s != nil && *x.%[1]s != \"\" && ", f.Go)
		if f.Required {
			present = ""
		}
		if f.MaxLength != nil {
			most := a.most(key+":maxLength", *f.MaxLength)
			checks = append(checks, fmt.Sprintf("if %[4]slen(*x.%[1]s) > %[2]s {\nv.Add(%[3]s, \"The field '%%s' is %%d characters long; at most %%d are allowed.\", %[3]s, len(*x.%[1]s), %[2]s)\n}", f.Go, most, at, present))
		}
		if f.Enum != nil {
			a.usesSlices = true
			var vals []string
			for _, e := range f.Enum.Values {
				vals = append(vals, e.Value)
			}
			words := vals[len(vals)-1]
			if len(vals) > 1 {
				words = strings.Join(vals[:len(vals)-1], ", ") + " or " + words
			}
			checks = append(checks, fmt.Sprintf("if %[5]s!slices.Contains(%[2]s, *x.%[1]s) {\nv.Add(%[3]s, \"The value '%%s' is not allowed for '%%s': %[4]s.\", *x.%[1]s, %[3]s)\n}", f.Go, a.w.enumValues(f.Enum), at, words, present))
		}
		// One problem a property: the first that applies.
		if len(checks) > 0 {
			body.WriteString(strings.Join(checks, " else ") + "\n")
		}
	case f.Type == "[]string" || strings.HasPrefix(f.Type, "[]"):
		if f.MinItems != nil && *f.MinItems != 1 {
			return unsupported("a minItems other than 1")
		}
		var checks []string
		if f.MinItems != nil {
			checks = append(checks, fmt.Sprintf("if len(x.%s) == 0 {\nv.Add(%[2]s, \"The field '%%s' must have at least one entry.\", %[2]s)\n}", f.Go, at))
		} else if f.Required {
			return unsupported("required without minItems")
		}
		if f.MaxItems != nil {
			most := a.most(key+":maxItems", *f.MaxItems)
			checks = append(checks, fmt.Sprintf("if len(x.%[1]s) > %[2]s {\nv.Add(%[3]s, \"The field '%%s' has %%d entries; at most %%d are allowed.\", %[3]s, len(x.%[1]s), %[2]s)\n}", f.Go, most, at))
		}
		if len(checks) > 0 {
			body.WriteString(strings.Join(checks, " else ") + "\n")
		}
		if elem := strings.TrimPrefix(f.Type, "[]"); elem != "string" {
			d, ok := a.defOf[elem]
			if !ok || !slices.Contains(SharedAuthChecks, d) {
				return unsupported("entries of " + elem + ", which SharedAuthChecks does not name")
			}
			a.w.usesFmt = true
			fmt.Fprintf(body, "for i := range x.%s {\nspec%s(v, &x.%s[i], fmt.Sprintf(\"%%s[%%d]\", %s, i))\n}\n", f.Go, goTypeName(d), f.Go, at)
		}
	case strings.HasPrefix(f.Type, "*") && a.defOf[strings.TrimPrefix(f.Type, "*")] != "":
		d := a.defOf[strings.TrimPrefix(f.Type, "*")]
		if !slices.Contains(SharedAuthChecks, d) {
			return unsupported("a " + d + ", which SharedAuthChecks does not name")
		}
		call := fmt.Sprintf("spec%s(v, x.%s, %s)", goTypeName(d), f.Go, at)
		switch _, asEmpty := absentAsEmpty[key]; {
		case asEmpty:
			fmt.Fprintf(body, "if x.%[1]s == nil {\nspec%[2]s(v, &%[3]s{}, %[4]s)\n} else {\n%[5]s\n}\n", f.Go, goTypeName(d), a.target[d], at, call)
		case f.Required:
			fmt.Fprintf(body, "if x.%[1]s == nil {\nv.Add(%[2]s, \"The field '%%s' is required.\", %[2]s)\n} else {\n%[3]s\n}\n", f.Go, at, call)
		default:
			fmt.Fprintf(body, "if x.%s != nil {\n%s\n}\n", f.Go, call)
		}
	default:
		if f.Required || f.Enum != nil || f.MinLength != nil || f.MaxLength != nil || f.MinItems != nil || f.MaxItems != nil {
			return unsupported("type " + f.Type)
		}
	}
	return nil
}
