package gateway

import (
	"net/http/httptest"
	"strings"
	"testing"
)

// TestVerb: the audit record's verb comes from the method, the watch query and an upgrade; a
// method of the caller's own is bounded.
func TestVerb(t *testing.T) {
	for _, tc := range []struct {
		method, target, upgrade, want string
	}{
		{"GET", "/api/v1/pods", "", "get"},
		{"GET", "/api/v1/pods?watch=true", "", "watch"},
		{"GET", "/api/v1/pods?watch=1", "", "watch"},
		{"GET", "/api/v1/pods?watch=false", "", "get"},
		{"POST", "/api/v1/namespaces/a/pods", "", "create"},
		{"PUT", "/api/v1/namespaces/a/pods/p", "", "update"},
		{"PATCH", "/api/v1/namespaces/a/pods/p", "", "patch"},
		{"DELETE", "/api/v1/namespaces/a/pods/p", "", "delete"},
		{"POST", "/api/v1/namespaces/a/pods/p/exec", "SPDY/3.1", "connect"},
		{"GET", "/api/v1/namespaces/a/pods/p/portforward", "websocket", "connect"},
		{"OPTIONS", "/api", "", "options"},
		// Any other token is the caller's, recorded lower-cased and cut at maxVerb.
		{"PROPFIND", "/api", "", "propfind"},
		{strings.Repeat("X", 100_000), "/api", "", strings.Repeat("x", maxVerb)},
	} {
		t.Run(cut(tc.method, 16)+" "+tc.target+" "+tc.upgrade, func(t *testing.T) {
			r := httptest.NewRequest(tc.method, tc.target, nil)
			if tc.upgrade != "" {
				r.Header.Set("Connection", "Upgrade")
				r.Header.Set("Upgrade", tc.upgrade)
			}
			if got := verb(r); got != tc.want {
				t.Fatalf("verb = %.60q (%d bytes), want %.60q", got, len(got), tc.want)
			}
		})
	}
}
