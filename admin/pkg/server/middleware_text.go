package server

import (
	"net/http"
	"sort"
	"strings"
	"unicode/utf8"
)

// isText says s is text every store of ours takes: UTF-8 without NUL. PostgreSQL's text and
// jsonb refuse the others, so a caller's NUL or stray byte that reached a query or a write
// would fail it with an error that is not the caller's to read (a 500).
func isText(s string) bool {
	return utf8.ValidString(s) && strings.IndexByte(s, 0) < 0
}

// textRefusal refuses, with a 400 naming it, a path wildcard of pattern or a query parameter
// (its name or a value) that is not text (isText): /admin/v1/clusters/a%00b names "id",
// ?person=a%00b names "person", a parameter whose name is not text names "query". The audit
// record of such a call stores the bytes escaped (audit.Storable).
func textRefusal(pattern string, r *http.Request) *apiError {
	for _, name := range wildcards(pattern) {
		if !isText(r.PathValue(name)) {
			return badRequest(name, "the path's %s holds a NUL character or bytes that are not UTF-8", name)
		}
	}
	q := r.URL.Query()
	names := make([]string, 0, len(q))
	for k := range q {
		names = append(names, k)
	}
	sort.Strings(names) // the same parameter is named whatever the map's order
	for _, k := range names {
		if !isText(k) {
			return badRequest("query", "a query parameter's name holds a NUL character or bytes that are not UTF-8")
		}
		for _, v := range q[k] {
			if !isText(v) {
				return badRequest(k, "query parameter %s holds a NUL character or bytes that are not UTF-8", k)
			}
		}
	}
	return nil
}

// wildcards are the names of pattern's wildcards: "GET /portal/clusters/{id...}" has "id".
func wildcards(pattern string) []string {
	var out []string
	for {
		i := strings.IndexByte(pattern, '{')
		if i < 0 {
			return out
		}
		j := strings.IndexByte(pattern[i:], '}')
		if j < 0 {
			return out
		}
		if name := strings.TrimSuffix(pattern[i+1:i+j], "..."); name != "$" {
			out = append(out, name)
		}
		pattern = pattern[i+j+1:]
	}
}
