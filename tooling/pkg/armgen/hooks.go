package armgen

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// FieldcheckDir is where package fieldcheck lives under the repository root: the generator reads
// its hooks there (discoverHooks).
const FieldcheckDir = "frontend/pkg/api/fieldcheck"

// hookMarker is the directive that makes a method of fieldcheck.Checker a hook: a line
// "//armgen:hook Definition.property" in its doc comment. Go's doc tools leave directives out of
// the comment's text, which says why the check is hand-written.
const hookMarker = "//armgen:hook"

// hook is a hand-written check of package fieldcheck that a version's generated checks call at a
// property's place: a method of fieldcheck.Checker taking the property's value and its path. It
// is what the specification cannot state (meaning), or the checks of a shared definition
// (generated into package fieldcheck, which a version's code cannot call unexported), each at its
// property's place so that a body with several problems is answered in the order of its
// properties.
type hook struct {
	// Method is the Checker method.
	Method string
	// Guard: the method returns a bool, which says whether the property's generated checks apply
	// (they are written inside it), instead of running after them.
	Guard bool
	// At is the method's file and line, for the generator's errors.
	At string
}

// discoverHooks reads the hooks of package fieldcheck in dir, keyed "Definition.property": the
// methods of *Checker whose doc comment carries hookMarker. A marker anywhere else, a method that
// does not take (value, path string) and return nothing or a bool, one without a reason in its
// doc comment, or two hooks at one property, fail: a check that silently did not run would be a
// hole in the validation.
func discoverHooks(dir string) (map[string]hook, error) {
	names, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		return nil, fmt.Errorf("list fieldcheck's files: %w", err)
	}
	sort.Strings(names)
	fset := token.NewFileSet()
	hooks := map[string]hook{}
	for _, name := range names {
		base := filepath.Base(name)
		if strings.HasSuffix(base, "_test.go") || strings.HasPrefix(base, "zz_generated") {
			continue
		}
		src, err := os.ReadFile(name)
		if err != nil {
			return nil, fmt.Errorf("read %s: %w", name, err)
		}
		file, err := parser.ParseFile(fset, name, src, parser.ParseComments)
		if err != nil {
			return nil, fmt.Errorf("parse %s: %w", name, err)
		}
		placed := map[*ast.Comment]bool{}
		for _, decl := range file.Decls {
			fn, ok := decl.(*ast.FuncDecl)
			if !ok || fn.Doc == nil {
				continue
			}
			var keys []string
			for _, c := range fn.Doc.List {
				if key, ok := strings.CutPrefix(c.Text, hookMarker); ok {
					placed[c] = true
					keys = append(keys, strings.TrimSpace(key))
				}
			}
			if len(keys) == 0 {
				continue
			}
			at := fset.Position(fn.Pos()).String()
			guard, err := hookSignature(fn)
			if err != nil {
				return nil, fmt.Errorf("%s: %s is marked armgen:hook but %w", at, fn.Name.Name, err)
			}
			if strings.TrimSpace(fn.Doc.Text()) == "" {
				return nil, fmt.Errorf("%s: hook %s has no doc comment saying why the check is hand-written", at, fn.Name.Name)
			}
			for _, key := range keys {
				if def, prop, ok := strings.Cut(key, "."); !ok || def == "" || prop == "" || strings.ContainsAny(key, " \t") {
					return nil, fmt.Errorf("%s: hook %s names %q, not Definition.property", at, fn.Name.Name, key)
				}
				if old, ok := hooks[key]; ok {
					return nil, fmt.Errorf("%s: hook %s at %s, which %s (%s) already checks", at, fn.Name.Name, key, old.Method, old.At)
				}
				hooks[key] = hook{Method: fn.Name.Name, Guard: guard, At: at}
			}
		}
		for _, g := range file.Comments {
			for _, c := range g.List {
				if strings.HasPrefix(c.Text, hookMarker) && !placed[c] {
					return nil, fmt.Errorf("%s: %q is not in the doc comment of a method of *Checker", fset.Position(c.Pos()), c.Text)
				}
			}
		}
	}
	return hooks, nil
}

// hookSignature checks that fn can be called at a property, v.<Method>(x.<Field>, path), and
// reports whether it is a guard (it returns a bool).
func hookSignature(fn *ast.FuncDecl) (guard bool, err error) {
	if fn.Recv == nil || len(fn.Recv.List) != 1 {
		return false, fmt.Errorf("is not a method of *Checker")
	}
	if star, ok := fn.Recv.List[0].Type.(*ast.StarExpr); !ok || !isIdent(star.X, "Checker") {
		return false, fmt.Errorf("is not a method of *Checker")
	}
	if !fn.Name.IsExported() {
		return false, fmt.Errorf("is not exported (a version package calls it)")
	}
	var params []ast.Expr
	for _, p := range fn.Type.Params.List {
		for range max(len(p.Names), 1) {
			params = append(params, p.Type)
		}
	}
	if len(params) != 2 || !isIdent(params[1], "string") {
		return false, fmt.Errorf("does not take (value, path string)")
	}
	results := fn.Type.Results
	switch {
	case results == nil || len(results.List) == 0:
		return false, nil
	case len(results.List) == 1 && len(results.List[0].Names) <= 1 && isIdent(results.List[0].Type, "bool"):
		return true, nil
	}
	return false, fmt.Errorf("returns neither nothing nor a bool")
}

func isIdent(e ast.Expr, name string) bool {
	id, ok := e.(*ast.Ident)
	return ok && id.Name == name
}
