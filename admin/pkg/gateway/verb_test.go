package gateway

import (
	"net/http/httptest"
	"strings"
	"testing"
)

// TestVerb: the audit record's verb comes from the method, the watch query and an upgrade to a
// connect subresource; a method of the caller's own is bounded. An Upgrade header on any other
// request does not make it a connect: the kube-apiserver ignores it there and deletes, creates
// or watches as the method says, so the record must say so too.
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
		{"POST", "/api/v1/namespaces/a/pods/p/attach", "SPDY/3.1", "connect"},
		{"GET", "/api/v1/namespaces/a/pods/p/proxy/x", "websocket", "connect"},
		{"GET", "/api/v1/namespaces/a/services/s/proxy/x", "websocket", "connect"},
		{"GET", "/api/v1/nodes/n/proxy/metrics", "websocket", "connect"},
		{"DELETE", "/api/v1/namespaces/default/configmaps/victim", "websocket", "delete"},
		{"POST", "/api/v1/namespaces/default/configmaps", "SPDY/3.1", "create"},
		{"PATCH", "/api/v1/namespaces/a/pods/p", "websocket", "patch"},
		{"GET", "/api/v1/namespaces/a/configmaps?watch=true", "websocket", "watch"},
		// A namespace called pods and an object called exec are not a pod's exec.
		{"DELETE", "/api/v1/namespaces/pods/configmaps/exec", "websocket", "delete"},
		{"DELETE", "/api/v1/namespaces/a/pods/p/exec", "websocket", "delete"},
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
			if got := verb(r, r.URL.Path); got != tc.want {
				t.Fatalf("verb = %.60q (%d bytes), want %.60q", got, len(got), tc.want)
			}
		})
	}
}
