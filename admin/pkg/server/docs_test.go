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
