package server

import (
	"os"
	"regexp"
	"strings"
	"testing"
)

var routeCell = regexp.MustCompile("^`(GET|POST|PUT|PATCH|DELETE) /(admin|portal)/")

// TestRoutesAreDocumented keeps docs/sre.md's route table equal to the routes served, with the
// permission each needs.
func TestRoutesAreDocumented(t *testing.T) {
	b, err := os.ReadFile("../../../docs/sre.md")
	if err != nil {
		t.Fatal(err)
	}
	documented := map[string]string{}
	for _, line := range strings.Split(string(b), "\n") {
		cells := strings.Split(line, "|")
		if len(cells) < 4 || !routeCell.MatchString(strings.TrimSpace(cells[1])) {
			continue
		}
		documented[strings.Trim(strings.TrimSpace(cells[1]), "`")] = strings.TrimSpace(cells[2])
	}
	s := &Server{}
	n := 0
	for _, rt := range s.routes() {
		if rt.pattern == "/" {
			continue
		}
		n++
		perm, ok := documented[rt.pattern]
		if !ok || perm != string(rt.perm) {
			t.Errorf("route %s (permission %s): docs/sre.md says %q (listed: %t)", rt.pattern, rt.perm, perm, ok)
		}
	}
	if len(documented) != n {
		t.Errorf("docs/sre.md lists %d routes, the server serves %d", len(documented), n)
	}
}

// TestRoutesHaveExamples: docs/sre.md shows a call of every /admin/ route — a line of the
// guide's `sre` helper with the route's method (-X, or none for GET) and its path, path
// parameters filled in.
func TestRoutesHaveExamples(t *testing.T) {
	b, err := os.ReadFile("../../../docs/sre.md")
	if err != nil {
		t.Fatal(err)
	}
	var calls []string
	for _, line := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(line, "sre ") {
			calls = append(calls, line)
		}
	}
	param := regexp.MustCompile(`\\\{[a-z]+(\\\.\\\.\\\.)?\\\}`)
	for _, rt := range (&Server{}).routes() {
		method, path, _ := strings.Cut(rt.pattern, " ")
		if !strings.HasPrefix(path, "/admin/") {
			continue // the portal's pages are for a browser (hcpctl portal), and "/" is the 404
		}
		pathRE := param.ReplaceAllStringFunc(regexp.QuoteMeta(path), func(p string) string {
			if strings.Contains(p, `\.\.\.`) {
				return `[^"]+`
			}
			return `[^/"?\s]+`
		})
		re := regexp.MustCompile(`\$ADMIN` + pathRE + `($|["?])`)
		found := false
		for _, c := range calls {
			m := "GET"
			if i := strings.Index(c, "-X "); i >= 0 {
				m = strings.Fields(c[i+3:])[0]
			}
			found = found || (m == method && re.MatchString(c))
		}
		if !found {
			t.Errorf("docs/sre.md has no example call (a line `sre <group> [-X %s] \"$ADMIN%s…\"`) of %s", method, path, rt.pattern)
		}
	}
}
