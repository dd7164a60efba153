package httplabel

import "testing"

func TestMethod(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"GET", "GET"}, {"PUT", "PUT"}, {"PATCH", "PATCH"}, {"DELETE", "DELETE"}, {"POST", "POST"},
		{"HEAD", "HEAD"}, {"OPTIONS", "OPTIONS"}, {"CONNECT", "CONNECT"}, {"TRACE", "TRACE"},
		{"get", Other}, {"NOCERT10009", Other}, {"", Other}, {"PROPFIND", Other},
	} {
		if got := Method(tc.in); got != tc.want {
			t.Errorf("Method(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}
