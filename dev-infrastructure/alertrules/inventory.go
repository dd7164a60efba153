package alertrules

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
)

// optsKinds are the option structs client_golang (and k8s.io/component-base/metrics, which
// mirrors them) builds a metric from, with the series names each kind exposes.
var optsKinds = map[string][]string{
	"CounterOpts":   {""},
	"GaugeOpts":     {""},
	"HistogramOpts": {"_bucket", "_sum", "_count"},
	"SummaryOpts":   {"", "_sum", "_count"},
}

// MetricNames reads the Go source under dirs (recursively, test files and testdata excluded) and
// returns every Prometheus series name a metric defined there exposes, mapped to where it is
// defined. A metric is found where its options are written as a composite literal of
// CounterOpts, GaugeOpts, HistogramOpts or SummaryOpts (Namespace, Subsystem and Name joined as
// prometheus.BuildFQName does) or where a descriptor is made with NewDesc. Names may be string
// literals or constants, concatenated with +: a constant of the same package, or pkg.Name where
// exactly one scanned package defines Name. A name built any other way (a function call, an
// ambiguous constant) is not resolved and so not found: the check that uses this fails closed.
func MetricNames(dirs ...string) (map[string]string, error) {
	var pkgs []*sourcePackage
	for _, root := range dirs {
		pkgDirs := map[string][]string{}
		err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if d.IsDir() {
				if path != root && (d.Name() == "testdata" || d.Name() == "vendor" || strings.HasPrefix(d.Name(), ".")) {
					return filepath.SkipDir
				}
				return nil
			}
			if strings.HasSuffix(path, ".go") && !strings.HasSuffix(path, "_test.go") {
				pkgDirs[filepath.Dir(path)] = append(pkgDirs[filepath.Dir(path)], path)
			}
			return nil
		})
		if err != nil {
			return nil, fmt.Errorf("read metric definitions under %s: %w", root, err)
		}
		for _, files := range pkgDirs {
			p, err := parsePackage(files)
			if err != nil {
				return nil, err
			}
			pkgs = append(pkgs, p)
		}
	}
	// Constants another package may refer to as pkg.Name: only names defined once are usable.
	exported := map[string][]constRef{}
	for _, p := range pkgs {
		for n, v := range p.consts {
			exported[n] = append(exported[n], constRef{p, v})
		}
	}
	names := map[string]string{}
	for _, p := range pkgs {
		p.metricNames(exported, names)
	}
	return names, nil
}

// sourcePackage is the parsed files of one folder that can define a metric, and its constants.
type sourcePackage struct {
	fset   *token.FileSet
	files  []*ast.File
	consts map[string]ast.Expr
}

func parsePackage(files []string) (*sourcePackage, error) {
	p := &sourcePackage{fset: token.NewFileSet(), consts: map[string]ast.Expr{}}
	for _, f := range files {
		src, err := os.ReadFile(f)
		if err != nil {
			return nil, fmt.Errorf("read %s: %w", f, err)
		}
		// Only files that can define a metric or a constant are parsed; the rest is skipped.
		if !strings.Contains(string(src), "Opts") && !strings.Contains(string(src), "NewDesc") &&
			!strings.Contains(string(src), "const") {
			continue
		}
		af, err := parser.ParseFile(p.fset, f, src, parser.SkipObjectResolution)
		if err != nil {
			return nil, fmt.Errorf("parse %s: %w", f, err)
		}
		p.files = append(p.files, af)
		for _, decl := range af.Decls {
			gd, ok := decl.(*ast.GenDecl)
			if !ok || gd.Tok != token.CONST {
				continue
			}
			for _, spec := range gd.Specs {
				vs := spec.(*ast.ValueSpec)
				for i, n := range vs.Names {
					if i < len(vs.Values) {
						p.consts[n.Name] = vs.Values[i]
					}
				}
			}
		}
	}
	return p, nil
}

// constRef is a constant's value expression and the package it is evaluated in.
type constRef struct {
	pkg  *sourcePackage
	expr ast.Expr
}

// eval resolves a constant string expression in the context of package p.
func (p *sourcePackage) eval(e ast.Expr, exported map[string][]constRef, depth int) (string, bool) {
	if depth > 10 {
		return "", false
	}
	switch e := e.(type) {
	case *ast.BasicLit:
		if e.Kind != token.STRING {
			return "", false
		}
		s, err := strconv.Unquote(e.Value)
		return s, err == nil
	case *ast.Ident:
		if v, ok := p.consts[e.Name]; ok {
			return p.eval(v, exported, depth+1)
		}
	case *ast.SelectorExpr:
		// pkg.Name: the one other scanned package that defines Name, evaluated in its context.
		var found []constRef
		for _, c := range exported[e.Sel.Name] {
			if c.pkg != p {
				found = append(found, c)
			}
		}
		if len(found) == 1 {
			return found[0].pkg.eval(found[0].expr, exported, depth+1)
		}
	case *ast.ParenExpr:
		return p.eval(e.X, exported, depth+1)
	case *ast.BinaryExpr:
		if e.Op == token.ADD {
			l, okl := p.eval(e.X, exported, depth+1)
			r, okr := p.eval(e.Y, exported, depth+1)
			return l + r, okl && okr
		}
	}
	return "", false
}

// metricNames adds the metrics the package defines to names.
func (p *sourcePackage) metricNames(exported map[string][]constRef, names map[string]string) {
	eval := func(e ast.Expr, _ int) (string, bool) { return p.eval(e, exported, 0) }
	for _, af := range p.files {
		ast.Inspect(af, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.CompositeLit:
				suffixes, ok := optsKinds[typeName(n.Type)]
				if !ok {
					return true
				}
				parts := map[string]string{}
				for _, el := range n.Elts {
					kv, ok := el.(*ast.KeyValueExpr)
					if !ok {
						continue
					}
					key, ok := kv.Key.(*ast.Ident)
					if !ok {
						continue
					}
					if v, ok := eval(kv.Value, 0); ok {
						parts[key.Name] = v
					}
				}
				name := buildFQName(parts["Namespace"], parts["Subsystem"], parts["Name"])
				if name == "" {
					return true
				}
				for _, s := range suffixes {
					add(names, name+s, p.fset.Position(n.Pos()))
				}
			case *ast.CallExpr:
				if typeName(n.Fun) == "NewDesc" && len(n.Args) > 0 {
					if name, ok := eval(n.Args[0], 0); ok && name != "" {
						add(names, name, p.fset.Position(n.Pos()))
					}
				}
			}
			return true
		})
	}
}

func add(names map[string]string, name string, pos token.Position) {
	if _, ok := names[name]; !ok {
		names[name] = fmt.Sprintf("%s:%d", pos.Filename, pos.Line)
	}
}

// typeName is the last identifier of a (possibly package-qualified) name.
func typeName(e ast.Expr) string {
	switch e := e.(type) {
	case *ast.Ident:
		return e.Name
	case *ast.SelectorExpr:
		return e.Sel.Name
	}
	return ""
}

// buildFQName joins the non-empty parts with "_"; an empty name means no metric, as in
// prometheus.BuildFQName.
func buildFQName(namespace, subsystem, name string) string {
	if name == "" {
		return ""
	}
	var parts []string
	for _, p := range []string{namespace, subsystem, name} {
		if p != "" {
			parts = append(parts, p)
		}
	}
	return strings.Join(parts, "_")
}

// Sorted returns the names of an inventory in order, for messages.
func Sorted(names map[string]string) []string {
	out := make([]string, 0, len(names))
	for n := range names {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}
