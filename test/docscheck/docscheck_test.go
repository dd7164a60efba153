// Package docscheck checks the repository's Markdown against the tree it describes: every path,
// make target and command-line flag a doc names in backticks must exist, and no doc cites a
// document a reader of the repository does not have.
package docscheck

import (
	"bufio"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
)

// repoRoot is the repository root, two levels above this package.
const repoRoot = "../.."

// markdownFiles lists the repository's own Markdown: everything but vendored packages, run
// state and the performance run logs (data, kept as they were written).
func markdownFiles(t *testing.T) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(repoRoot, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			switch d.Name() {
			case "node_modules", ".run", ".git", "perf-data", "testdata":
				return filepath.SkipDir
			}
			return nil
		}
		if strings.HasSuffix(p, ".md") {
			out = append(out, p)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(out) < 10 {
		t.Fatalf("found only %d Markdown files under %s", len(out), repoRoot)
	}
	return out
}

// mention is one backticked span of a doc, with the line it is on.
type mention struct {
	file string
	line int
	text string // the line, for context rules
	code string // the span, without backticks
}

var codeSpan = regexp.MustCompile("`([^`\n]+)`")

// mentions returns every backticked span outside fenced code blocks.
func mentions(t *testing.T, file string) []mention {
	t.Helper()
	f, err := os.Open(file)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []mention
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	var lines []string
	for sc.Scan() {
		lines = append(lines, sc.Text())
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	fenced := false
	for i, line := range lines {
		if strings.HasPrefix(strings.TrimSpace(line), "```") {
			fenced = !fenced
			continue
		}
		if fenced {
			continue
		}
		for _, m := range codeSpan.FindAllStringSubmatch(line, -1) {
			out = append(out, mention{file: file, line: i + 1, text: context(lines, i), code: m[1]})
		}
	}
	return out
}

// context is what a mention is read with: a table row alone, or the whole paragraph (a
// sentence that names another project may wrap before the path it names).
func context(lines []string, i int) string {
	if strings.HasPrefix(strings.TrimSpace(lines[i]), "|") {
		return lines[i]
	}
	lo, hi := i, i
	for lo > 0 && strings.TrimSpace(lines[lo-1]) != "" && !strings.HasPrefix(strings.TrimSpace(lines[lo-1]), "|") {
		lo--
	}
	for hi+1 < len(lines) && strings.TrimSpace(lines[hi+1]) != "" && !strings.HasPrefix(strings.TrimSpace(lines[hi+1]), "|") {
		hi++
	}
	return strings.Join(lines[lo:hi+1], "\n")
}

// external reports whether a line talks about another project's tree (a path there is theirs,
// not ours).
var external = regexp.MustCompile(`(?i)ARO[- ]HCP|sdk-go|pinned (server|maestro)|github\.com/|openshift/|openshift-online|upstream|kubernetes/|hypershift's|maestro's|\bAzure/`)

// topLevel is the set of names at the repository root.
func topLevel(t *testing.T) map[string]bool {
	t.Helper()
	ents, err := os.ReadDir(repoRoot)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]bool{}
	for _, e := range ents {
		out[e.Name()] = true
	}
	return out
}

// paths is every file and directory of the tree, relative to the root.
type paths []string

// treePaths lists the tree; a doc inside a component may name a path relative to it
// ("pkg/controller/loops.go", "templates/mesh-policy.yaml").
func treePaths(t *testing.T) paths {
	t.Helper()
	var out paths
	err := filepath.WalkDir(repoRoot, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == "node_modules" || d.Name() == ".git" || d.Name() == ".run") {
			return filepath.SkipDir
		}
		out = append(out, "/"+rel(p))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// hasSuffix reports whether some path of the tree ends in /p, or in /dir for p = "dir.Ident".
func (ps paths) hasSuffix(p string) bool {
	alt := ""
	if dir, sym, ok := cutLast(p, "."); ok && goIdent.MatchString(sym) && !fileExt.MatchString(p) {
		alt = "/" + dir
	}
	for _, q := range ps {
		if strings.HasSuffix(q, "/"+p) || alt != "" && strings.HasSuffix(q, alt) {
			return true
		}
	}
	return false
}

var (
	goIdent  = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)
	pathLike = regexp.MustCompile(`^[A-Za-z0-9_.][A-Za-z0-9_./-]*$`)
	fileExt  = regexp.MustCompile(`\.(go|proto|sql|ya?ml|json|sh|md|tpl|txt|conf|toml)$`)
	// sourceExt: a relative path with one of these is a source file; a relative .json is usually
	// a file a program writes (a must-gather member, an image index) and is not looked for.
	sourceExt   = regexp.MustCompile(`\.(go|proto|sql|ya?ml|sh|md|tpl)$`)
	placeholder = regexp.MustCompile(`[<>{}*…$]|\.\.\.`)
)

// exists reports whether p names something in the tree: a file or directory, or a Go package
// followed by one of its identifiers ("frontend/pkg/api.Cluster").
func exists(base, p string) bool {
	if _, err := os.Stat(filepath.Join(base, p)); err == nil {
		return true
	}
	dir, sym, ok := cutLast(p, ".")
	if ok && goIdent.MatchString(sym) && !strings.Contains(sym, "/") {
		if st, err := os.Stat(filepath.Join(base, dir)); err == nil && st.IsDir() {
			return true
		}
		// a file's function: "rotate.go.RollCA" is not a form docs use; "pkg.Type.Method" is.
		if d2, _, ok := cutLast(dir, "."); ok {
			if st, err := os.Stat(filepath.Join(base, d2)); err == nil && st.IsDir() {
				return true
			}
		}
	}
	return false
}

func cutLast(s, sep string) (string, string, bool) {
	i := strings.LastIndex(s, sep)
	if i < 0 {
		return s, "", false
	}
	return s[:i], s[i+len(sep):], true
}

// TestDocPathsExist resolves every repository path a doc names in backticks. A path starting
// with a top-level name must exist from the root; a path with a file extension or under pkg/,
// cmd/ or api/ must exist under the root or one of the Go modules. Paths on a line about another
// project are that project's and are not checked.
func TestDocPathsExist(t *testing.T) {
	top := topLevel(t)
	tree := treePaths(t)
	var bad []string
	checked := 0
	for _, f := range markdownFiles(t) {
		for _, m := range mentions(t, f) {
			p := strings.TrimSpace(m.code)
			p, _, _ = strings.Cut(p, "#")
			p = strings.TrimSuffix(strings.TrimRight(p, ".,;:)"), "/")
			if p == "" || !strings.Contains(p, "/") || placeholder.MatchString(p) || !pathLike.MatchString(p) ||
				strings.HasPrefix(p, ".run/") || strings.HasPrefix(p, "state/") || strings.Contains(p, "/sa/") || strings.HasPrefix(p, "/") || strings.Contains(p, "//") {
				continue
			}
			first, _, _ := strings.Cut(p, "/")
			rooted := top[first] && first != "pkg" && first != "cmd"
			relative := sourceExt.MatchString(p) || first == "pkg" || first == "cmd" || first == "api"
			if !rooted && !relative {
				continue
			}
			if external.MatchString(m.text) {
				continue
			}
			checked++
			found := exists(repoRoot, p)
			if !found && !rooted {
				// relative: some directory of the tree holds it
				found = tree.hasSuffix(p)
			}
			if !found {
				bad = append(bad, fmt.Sprintf("%s:%d: `%s` names nothing in the tree", rel(f), m.line, m.code))
			}
		}
	}
	report(t, "paths", checked, bad)
}

// TestDocMakeTargetsExist checks that every `make <target>` a doc names is a Makefile target.
func TestDocMakeTargetsExist(t *testing.T) {
	mk, err := os.ReadFile(filepath.Join(repoRoot, "Makefile"))
	if err != nil {
		t.Fatal(err)
	}
	targets := map[string]bool{}
	for _, m := range regexp.MustCompile(`(?m)^([a-zA-Z0-9_.-]+(?:\s+[a-zA-Z0-9_.-]+)*)\s*:([^=]|$)`).FindAllStringSubmatch(string(mk), -1) {
		for _, name := range strings.Fields(m[1]) {
			targets[name] = true
		}
	}
	makeCall := regexp.MustCompile(`^make\s+([a-z][a-z0-9_-]*)`)
	var bad []string
	checked := 0
	for _, f := range markdownFiles(t) {
		for _, m := range mentions(t, f) {
			mm := makeCall.FindStringSubmatch(strings.TrimSpace(m.code))
			if mm == nil {
				continue
			}
			checked++
			if !targets[mm[1]] {
				bad = append(bad, fmt.Sprintf("%s:%d: `%s`: the Makefile has no target %q", rel(f), m.line, m.code, mm[1]))
			}
		}
	}
	report(t, "make targets", checked, bad)
}

// flagToken is a long flag as docs write it.
var flagToken = regexp.MustCompile(`(?:^|[\s(=\[])--([a-z][a-z0-9]*(?:-[a-z0-9]+)*)`)

// externalTool reports whether a line is about another program's flags.
var externalTool = regexp.MustCompile(`(?i)\b(kube-apiserver|etcd|kubectl|helm|curl|mosquitto|pgbouncer|postgres|psql|go test|go build|go run|promtool|kubelet|containerd|openssl|az |git |apt|ip netns|maestro server|maestro agent|chromium|npm|protoc|kube-controller-manager|scheduler|coredns|istio)\b`)

// TestDocFlagsExist checks that every long flag a doc names in backticks is defined somewhere in
// the code (a Go flag set, a script or a chart), unless the line is about another program's
// flags. It catches flags that were renamed or removed and still described.
func TestDocFlagsExist(t *testing.T) {
	defined := definedNames(t)
	var bad []string
	checked := 0
	for _, f := range markdownFiles(t) {
		for _, m := range mentions(t, f) {
			for _, fm := range flagToken.FindAllStringSubmatch(m.code, -1) {
				if externalTool.MatchString(m.text) || external.MatchString(m.text) {
					continue
				}
				checked++
				if !defined[fm[1]] {
					bad = append(bad, fmt.Sprintf("%s:%d: flag --%s is defined nowhere in the code", rel(f), m.line, fm[1]))
				}
			}
		}
	}
	report(t, "flags", checked, bad)
}

// definedNames collects every quoted name and every --name in the code, scripts, Makefile and
// charts: the universe a documented flag must be in.
func definedNames(t *testing.T) map[string]bool {
	t.Helper()
	quoted := regexp.MustCompile(`["'` + "`" + `]-{0,2}([a-z][a-z0-9]*(?:-[a-z0-9]+)*)[="'` + "`" + `]`)
	dashed := regexp.MustCompile(`--([a-z][a-z0-9]*(?:-[a-z0-9]+)*)`)
	out := map[string]bool{}
	err := filepath.WalkDir(repoRoot, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			switch d.Name() {
			case "node_modules", ".run", ".git", "docs":
				return filepath.SkipDir
			}
			return nil
		}
		ext := filepath.Ext(p)
		if ext != ".go" && ext != ".sh" && ext != ".yaml" && ext != ".tpl" && d.Name() != "Makefile" {
			return nil
		}
		if strings.HasSuffix(p, "_test.go") || strings.HasSuffix(p, ".pb.go") {
			return nil
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		for _, m := range quoted.FindAllSubmatch(b, -1) {
			out[string(m[1])] = true
		}
		for _, m := range dashed.FindAllSubmatch(b, -1) {
			out[string(m[1])] = true
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// citation finds references to documents a reader of the repository does not have: the
// design notes, the shared reference tree (`shared/...`, with or without `../`) and issue or
// pull request numbers, bare (`#576`), qualified (`sdk-go#232`, `owner/repo#1404`) or as a
// URL path. An issue reference is `#` and one to five digits not followed by a word character
// or `-`, so heading anchors (`#3-limits`), colours (`#336699`) and `PKCS#8` (an upper-case
// letter before the `#`) do not match; the `(?i)` comes last so that test stays case-sensitive.
var citation = regexp.MustCompile(`DESIGN\.md|\.\./shared|\bshared/|CONVENTIONS\.md|` +
	`(?:^|[^A-Z&])#\d{1,5}(?:$|[^\w-])|/(?:issues|pull)/\d+|` +
	`(?i)\bissue\s+#?\d+|\bissues?\s+#\d+`)

// TestDocsCiteOnlyTheRepository checks that docs speak of the project alone.
func TestDocsCiteOnlyTheRepository(t *testing.T) {
	var bad []string
	for _, f := range markdownFiles(t) {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for i, line := range strings.Split(string(b), "\n") {
			if citation.MatchString(line) {
				bad = append(bad, fmt.Sprintf("%s:%d: cites %q", rel(f), i+1, citation.FindString(line)))
			}
		}
	}
	report(t, "citations", 1, bad)
}

func rel(p string) string {
	r, err := filepath.Rel(repoRoot, p)
	if err != nil {
		return p
	}
	return r
}

func report(t *testing.T, what string, checked int, bad []string) {
	t.Helper()
	if checked == 0 {
		t.Fatalf("no %s found in the docs: the checker reads nothing", what)
	}
	sort.Strings(bad)
	for _, b := range bad {
		t.Error(b)
	}
	t.Logf("%d %s checked, %d wrong", checked, what, len(bad))
}

// TestCitationPattern pins what the citation pattern catches and what it leaves alone.
func TestCitationPattern(t *testing.T) {
	for _, tc := range []struct {
		line string
		want bool
	}{
		{"see `shared/reference/aro-hcp-operations.md` §3", true},
		{"see ../shared/notes", true},
		{"fixed upstream in openshift-online/maestro#576 (re-sends)", true},
		{"the same race (sdk-go#232).", true},
		{"with #576. Remove the watchdog", true},
		{"#12 at the start of a line", true},
		{"https://github.com/o/r/issues/576", true},
		{"https://github.com/o/r/pull/77", true},
		{"fixed in issue 42", true},
		{"a PKCS#8 key", false},
		{"see [limits](security.md#3-limits)", false},
		{"see [limits](#limits)", false},
		{"colour #336699 and #fff", false},
		{"HTML entity &#8212; dash", false},
		{"`internal/armdoc/documents.go`", false},
	} {
		if got := citation.MatchString(tc.line); got != tc.want {
			t.Errorf("citation.MatchString(%q) = %v, want %v", tc.line, got, tc.want)
		}
	}
}
