package server

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"

	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"

	csv1 "github.com/openhcp/openhcp/cluster-service/api/v1"
)

// TestViolationPathsNameRequestFields reads this package's source and checks every field path a
// violation can carry (each `v.add(path, …)`), so no rule reports a misspelt or stale field: a
// path must name a field of the request the function validates (its `req` parameter) or, in a
// helper, of some request; and a field of a request the frontend sends (one whose fields carry
// arm_path) must map to an ARM path through csv1.ARMPath, unless it is not from the request
// body ("-") or only holds others ("."; "is required" of a whole message) — the frontend's own
// mistakes. A helper's `field` or `prefix` parameter stands for every path its callers pass.
func TestViolationPathsNameRequestFields(t *testing.T) {
	// The rules live in the model package; the request-level checks and the calls into the
	// model (which pass each rule its path) live here: walk both.
	fset := token.NewFileSet()
	var funcs []*ast.FuncDecl
	for dir, name := range map[string]string{".": "server", "../model": "model"} {
		pkgs, err := parser.ParseDir(fset, dir, func(fi fs.FileInfo) bool { return !strings.HasSuffix(fi.Name(), "_test.go") }, 0)
		if err != nil {
			t.Fatal(err)
		}
		pkg, ok := pkgs[name]
		if !ok {
			t.Fatalf("no package %s in %s", name, dir)
		}
		for _, f := range pkg.Files {
			for _, d := range f.Decls {
				if fd, ok := d.(*ast.FuncDecl); ok && fd.Body != nil {
					funcs = append(funcs, fd)
				}
			}
		}
	}
	r := newResolver(funcs)

	all := allRequestPaths(t)
	checked := 0
	for _, fd := range funcs {
		root := requestRoot(fd)
		ast.Inspect(fd.Body, func(n ast.Node) bool {
			call, ok := n.(*ast.CallExpr)
			if !ok {
				return true
			}
			fn, ok := call.Fun.(*ast.SelectorExpr)
			if !ok || (fn.Sel.Name != "add" && fn.Sel.Name != "Add") || !isIdent(fn.X, "v") || len(call.Args) < 2 {
				return true
			}
			where := fset.Position(call.Args[0].Pos()).String()
			candidates := all
			if root != nil {
				candidates = map[protoreflect.FullName][]string{root.FullName(): requestPaths(root)}
			}
			for _, pattern := range r.patterns(fd, call.Args[0]) {
				checked++
				if pattern == "spec" {
					continue // "is required" of the merged spec, which ApplyXUpdate never leaves nil
				}
				if strings.HasPrefix(pattern, `spec\.`) {
					checkMergedSpecPath(t, where, pattern)
					continue
				}
				checkViolationPath(t, where, pattern, candidates)
			}
			// The description names no proto field: the frontend passes it on as it is.
			for _, arg := range call.Args[1:] {
				switch arg.(type) {
				case *ast.BasicLit, *ast.Ident, *ast.IndexExpr:
					for _, text := range r.patterns(fd, arg) {
						if name := protoFieldIn(text, all); name != "" {
							t.Errorf("%s: the description names the proto field %s", fset.Position(arg.Pos()), name)
						}
					}
				}
			}
			return true
		})
	}
	if checked < 100 {
		t.Fatalf("found only %d violation paths; the source walk is broken", checked)
	}
}

// protoFieldIn is a field name with an underscore (a proto name, never an ARM one) that text,
// a pattern, contains as a word; "" if none.
func protoFieldIn(text string, requests map[protoreflect.FullName][]string) string {
	words := regexp.MustCompile(`[a-z0-9]+(\\?_[a-z0-9]+)+`).FindAllString(text, -1)
	for _, paths := range requests {
		for _, p := range paths {
			for _, seg := range strings.Split(p, ".") {
				name, _, _ := strings.Cut(seg, "[")
				for _, w := range words {
					if strings.ReplaceAll(w, `\`, "") == name {
						return name
					}
				}
			}
		}
	}
	return ""
}

// checkViolationPath requires pattern to match a field path of one of candidates, and every
// match in a request the frontend sends to map to an ARM path.
func checkViolationPath(t *testing.T, where, pattern string, candidates map[protoreflect.FullName][]string) {
	t.Helper()
	re := regexp.MustCompile("^" + pattern + "$")
	matched := 0
	for name, paths := range candidates {
		md := messageByName(t, name)
		for _, p := range paths {
			if !re.MatchString(p) {
				continue
			}
			matched++
			if !fromFrontend(md) {
				continue
			}
			if _, ok := csv1.ARMPath(md, p); ok {
				continue
			}
			if notFromBody(md, p) {
				continue
			}
			if last := lastField(md, p); last != nil {
				if a := csv1.ARMPathOf(last); a == "-" || a == "." {
					continue
				}
			}
			t.Errorf("%s: %s.%s has no ARM path", where, name, p)
		}
	}
	if matched == 0 {
		t.Errorf("%s: violation path %q names no field of %v", where, pattern, keys(candidates))
	}
}

// mergedSpecs are the specs an update validates after merging a partial update into them
// (validate*Spec with the prefix "spec"); updateViolations readdresses their violations to the
// update message of the same field names.
var mergedSpecs = map[protoreflect.FullName]protoreflect.MessageDescriptor{
	(&csv1.NodePoolSpec{}).ProtoReflect().Descriptor().FullName():     (&csv1.UpdateNodePoolRequest{}).ProtoReflect().Descriptor(),
	(&csv1.ExternalAuthSpec{}).ProtoReflect().Descriptor().FullName(): (&csv1.UpdateExternalAuthRequest{}).ProtoReflect().Descriptor(),
}

// checkMergedSpecPath requires a "spec.…" pattern to name a field of a merged spec and, where
// the update can change that field, to reach an ARM path once readdressed to the update
// request; a field an update cannot change (the platform) has no target, as the frontend
// cannot have sent it.
func checkMergedSpecPath(t *testing.T, where, pattern string) {
	t.Helper()
	re := regexp.MustCompile("^" + pattern + "$")
	matched := 0
	for specName, req := range mergedSpecs {
		md := messageByName(t, specName)
		update := req.Fields().ByName("update").Message()
		for _, p := range requestPaths(md) {
			if !re.MatchString("spec." + p) {
				continue
			}
			matched++
			q, ok := csv1.UpdateFieldPath(update, p)
			if !ok {
				continue
			}
			if _, ok := csv1.ARMPath(req, "update."+q); !ok {
				t.Errorf("%s: spec.%s of %s, readdressed to update.%s, has no ARM path", where, p, specName, q)
			}
		}
	}
	if matched == 0 {
		t.Errorf("%s: violation path %q names no field of a merged spec", where, pattern)
	}
}

// requestRoot is the request message a function validates: the type of its parameter `req`.
func requestRoot(fd *ast.FuncDecl) protoreflect.MessageDescriptor {
	for _, p := range fd.Type.Params.List {
		st, ok := p.Type.(*ast.StarExpr)
		if !ok {
			continue
		}
		sel, ok := st.X.(*ast.SelectorExpr)
		if !ok || !isIdent(sel.X, "csv1") || !strings.HasSuffix(sel.Sel.Name, "Request") {
			continue
		}
		for _, n := range p.Names {
			if n.Name == "req" {
				d, err := protoregistry.GlobalFiles.FindDescriptorByName("openhcp.clusterservice.v1." + protoreflect.FullName(sel.Sel.Name))
				if err == nil {
					return d.(protoreflect.MessageDescriptor)
				}
			}
		}
	}
	return nil
}

// anySegment stands for a value the source does not spell out (a map's keys from a function).
const anySegment = `[a-z0-9_]+`

// resolver turns path expressions into regular expressions, one per path they can spell.
type resolver struct {
	helpers map[string]*ast.FuncDecl // functions that take *violations
	// params holds, for each helper, the patterns its callers pass as `field` or `prefix`.
	params map[string]map[string][]string
}

func newResolver(funcs []*ast.FuncDecl) *resolver {
	r := &resolver{helpers: map[string]*ast.FuncDecl{}, params: map[string]map[string][]string{}}
	for _, fd := range funcs {
		if fd.Recv != nil {
			continue
		}
		for _, p := range fd.Type.Params.List {
			if st, ok := p.Type.(*ast.StarExpr); ok && (isIdent(st.X, "violations") || isIdent(st.X, "Violations")) {
				r.helpers[fd.Name.Name] = fd
			}
		}
	}
	// Helpers call helpers: resolve from the callers in, a few levels deep.
	for range 6 {
		next := map[string]map[string][]string{}
		for _, fd := range funcs {
			ast.Inspect(fd.Body, func(n ast.Node) bool {
				call, ok := n.(*ast.CallExpr)
				if !ok {
					return true
				}
				fn := calledName(call)
				if fn == nil || r.helpers[fn.Name] == nil {
					return true
				}
				for i, name := range paramNames(r.helpers[fn.Name]) {
					if (name == "field" || name == "prefix") && i < len(call.Args) {
						if next[fn.Name] == nil {
							next[fn.Name] = map[string][]string{}
						}
						next[fn.Name][name] = union(next[fn.Name][name], r.patterns(fd, call.Args[i]))
					}
				}
				return true
			})
		}
		r.params = next
	}
	return r
}

// patterns are the regular expressions of the paths e can spell in fd. Identifiers are resolved
// where the source spells their values: a helper's parameter from its callers, a key ranging
// over a map literal, an index of a value ranging over a slice literal, a variable defined
// before; an index (fieldIndex, indexed, %d) is [0].
func (r *resolver) patterns(fd *ast.FuncDecl, e ast.Expr) []string {
	switch x := e.(type) {
	case *ast.BasicLit:
		if s, err := strconv.Unquote(x.Value); err == nil {
			return []string{regexp.QuoteMeta(s)}
		}
	case *ast.BinaryExpr:
		if x.Op == token.ADD {
			return product(r.patterns(fd, x.X), r.patterns(fd, x.Y))
		}
	case *ast.CallExpr:
		if fn := calledName(x); fn != nil && (fn.Name == "fieldIndex" || fn.Name == "indexed" || fn.Name == "Indexed") && len(x.Args) == 2 {
			return product(r.patterns(fd, x.Args[0]), []string{`\[0\]`})
		}
		if sel, ok := x.Fun.(*ast.SelectorExpr); ok && isIdent(sel.X, "fmt") && sel.Sel.Name == "Sprintf" && len(x.Args) > 0 {
			if lit, ok := x.Args[0].(*ast.BasicLit); ok {
				format, _ := strconv.Unquote(lit.Value)
				out, args := []string{""}, x.Args[1:]
				for _, part := range regexp.MustCompile(`%[sd]|[^%]+`).FindAllString(format, -1) {
					switch {
					case part == "%d":
						out, args = product(out, []string{"0"}), args[min(1, len(args)):]
					case part == "%s" && len(args) > 0:
						out, args = product(out, r.patterns(fd, args[0])), args[1:]
					default:
						out = product(out, []string{regexp.QuoteMeta(part)})
					}
				}
				return out
			}
		}
	case *ast.Ident:
		if isParam(fd, x.Name) {
			return r.params[fd.Name.Name][x.Name] // none when no caller passes one
		}
		if vals := identValues(fd, x, -1); vals != nil {
			return vals
		}
		if rhs := definedAs(fd, x); rhs != nil {
			return r.patterns(fd, rhs)
		}
	case *ast.IndexExpr:
		if id, ok := x.X.(*ast.Ident); ok {
			if lit, ok := x.Index.(*ast.BasicLit); ok {
				i, _ := strconv.Atoi(lit.Value)
				if vals := identValues(fd, id, i); vals != nil {
					return vals
				}
			}
		}
	}
	return []string{anySegment}
}

// calledName is the function a call names: f(...) in its own package, model.F(...) in the
// model package; nil for anything else.
func calledName(call *ast.CallExpr) *ast.Ident {
	switch fn := call.Fun.(type) {
	case *ast.Ident:
		return fn
	case *ast.SelectorExpr:
		if isIdent(fn.X, "model") {
			return fn.Sel
		}
	}
	return nil
}

func product(a, b []string) []string {
	var out []string
	for _, x := range a {
		for _, y := range b {
			out = append(out, x+y)
		}
	}
	return out
}

func union(a, b []string) []string {
	seen := map[string]bool{}
	var out []string
	for _, s := range append(append([]string(nil), a...), b...) {
		if !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	sort.Strings(out)
	return out
}

func paramNames(fd *ast.FuncDecl) []string {
	var names []string
	for _, p := range fd.Type.Params.List {
		for _, n := range p.Names {
			names = append(names, n.Name)
		}
	}
	return names
}

func isParam(fd *ast.FuncDecl, name string) bool {
	return slices.Contains(paramNames(fd), name)
}

// identValues are the values id takes in a range over a literal in fd: the keys of a map
// literal (id the key), or the elements of a slice literal (id the value; with index >= 0, the
// element's own elements at that index).
func identValues(fd *ast.FuncDecl, id *ast.Ident, index int) []string {
	var vals []string
	ast.Inspect(fd.Body, func(n ast.Node) bool {
		rs, ok := n.(*ast.RangeStmt)
		if !ok || id.Pos() < rs.Body.Pos() || id.Pos() > rs.Body.End() {
			return true
		}
		cl, ok := rs.X.(*ast.CompositeLit)
		if !ok {
			return true
		}
		isKey, isValue := rs.Key != nil && isIdent(rs.Key, id.Name), rs.Value != nil && isIdent(rs.Value, id.Name)
		for _, elt := range cl.Elts {
			var e ast.Expr
			switch {
			case isKey:
				if kv, ok := elt.(*ast.KeyValueExpr); ok {
					e = kv.Key
				}
			case isValue && index < 0:
				e = elt
			case isValue:
				if inner, ok := elt.(*ast.CompositeLit); ok && index < len(inner.Elts) {
					e = inner.Elts[index]
				}
			}
			if lit, ok := e.(*ast.BasicLit); ok {
				if s, err := strconv.Unquote(lit.Value); err == nil {
					vals = append(vals, regexp.QuoteMeta(s))
				}
			}
		}
		return true
	})
	return vals
}

// definedAs is the expression id was last defined with (id := expr) before its use in fd.
func definedAs(fd *ast.FuncDecl, id *ast.Ident) ast.Expr {
	var rhs ast.Expr
	ast.Inspect(fd.Body, func(n ast.Node) bool {
		as, ok := n.(*ast.AssignStmt)
		if ok && as.Pos() < id.Pos() && as.Tok == token.DEFINE && len(as.Lhs) == 1 && len(as.Rhs) == 1 && isIdent(as.Lhs[0], id.Name) {
			rhs = as.Rhs[0]
		}
		return true
	})
	return rhs
}

// allRequestPaths is every field path of every request message of Cluster Service's API.
func allRequestPaths(t *testing.T) map[protoreflect.FullName][]string {
	t.Helper()
	out := map[protoreflect.FullName][]string{}
	protoregistry.GlobalFiles.RangeFilesByPackage("openhcp.clusterservice.v1", func(fd protoreflect.FileDescriptor) bool {
		for i := 0; i < fd.Messages().Len(); i++ {
			md := fd.Messages().Get(i)
			if strings.HasSuffix(string(md.Name()), "Request") {
				out[md.FullName()] = requestPaths(md)
			}
		}
		return true
	})
	if len(out) < 10 {
		t.Fatalf("only %d request messages registered", len(out))
	}
	return out
}

// requestPaths lists the field paths of md as violations spell them ("a.b[0].c").
func requestPaths(md protoreflect.MessageDescriptor) []string {
	var out []string
	var walk func(md protoreflect.MessageDescriptor, prefix string, depth int)
	walk = func(md protoreflect.MessageDescriptor, prefix string, depth int) {
		if depth > 8 {
			return
		}
		for i := 0; i < md.Fields().Len(); i++ {
			fd := md.Fields().Get(i)
			p := prefix + string(fd.Name())
			if fd.IsList() {
				out = append(out, p)
				p += "[0]"
			}
			out = append(out, p)
			// A field not from the request body ("-") may still hold validated fields (an SRE
			// credential's person): walk it too; checkViolationPath asks no ARM path of them.
			if fd.Message() != nil && !fd.IsMap() {
				walk(fd.Message(), p+".", depth+1)
			}
		}
	}
	walk(md, "", 0)
	return out
}

// notFromBody: some field on path (not the last) is not from the ARM request body ("-"), so
// nothing under it has an ARM path.
func notFromBody(md protoreflect.MessageDescriptor, path string) bool {
	segs := strings.Split(path, ".")
	for i := 1; i < len(segs); i++ {
		if f := lastField(md, strings.Join(segs[:i], ".")); f != nil && csv1.ARMPathOf(f) == "-" {
			return true
		}
	}
	return false
}

// fromFrontend: the frontend sends md with a customer's fields (its fields carry arm_path).
func fromFrontend(md protoreflect.MessageDescriptor) bool {
	return md.Fields().Len() > 0 && csv1.ARMPathOf(md.Fields().Get(0)) != ""
}

// lastField is the field a path ends in.
func lastField(md protoreflect.MessageDescriptor, path string) protoreflect.FieldDescriptor {
	var fd protoreflect.FieldDescriptor
	for _, seg := range strings.Split(path, ".") {
		if md == nil {
			return nil
		}
		name, _, _ := strings.Cut(seg, "[")
		if fd = md.Fields().ByName(protoreflect.Name(name)); fd == nil {
			return nil
		}
		md = fd.Message()
	}
	return fd
}

func messageByName(t *testing.T, name protoreflect.FullName) protoreflect.MessageDescriptor {
	t.Helper()
	d, err := protoregistry.GlobalFiles.FindDescriptorByName(name)
	if err != nil {
		t.Fatal(err)
	}
	return d.(protoreflect.MessageDescriptor)
}

func keys(m map[protoreflect.FullName][]string) []protoreflect.FullName {
	var out []protoreflect.FullName
	for k := range m {
		out = append(out, k)
	}
	return out
}

func isIdent(e ast.Expr, name string) bool {
	id, ok := e.(*ast.Ident)
	return ok && id.Name == name
}
