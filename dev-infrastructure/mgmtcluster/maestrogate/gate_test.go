package maestrogate

import (
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"testing"
)

func TestGateDecidesByVerifiedIdentityAndMethod(t *testing.T) {
	var reached []string
	upstream := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		reached = append(reached, r.Method+" "+r.URL.Path)
		w.WriteHeader(http.StatusTeapot)
	}))
	defer upstream.Close()
	u, _ := url.Parse(upstream.URL)
	gate := New(Rules{"cluster-service": ReadWrite, "admin": ReadOnly}, u, http.DefaultTransport, slog.New(slog.NewTextHandler(io.Discard, nil)))

	for _, tc := range []struct {
		name, cn, method string
		want             int
	}{
		{"no_verified_certificate_is_401", "", http.MethodGet, http.StatusUnauthorized},
		{"unknown_identity_is_403", "frontend", http.MethodGet, http.StatusForbidden},
		{"read_only_get_is_proxied", "admin", http.MethodGet, http.StatusTeapot},
		{"read_only_head_is_proxied", "admin", http.MethodHead, http.StatusTeapot},
		{"read_only_delete_is_403", "admin", http.MethodDelete, http.StatusForbidden},
		{"read_only_post_is_403", "admin", http.MethodPost, http.StatusForbidden},
		{"read_only_patch_is_403", "admin", http.MethodPatch, http.StatusForbidden},
		{"read_write_delete_is_proxied", "cluster-service", http.MethodDelete, http.StatusTeapot},
	} {
		t.Run(tc.name, func(t *testing.T) {
			reached = nil
			r := httptest.NewRequest(tc.method, "/api/maestro/v1/resource-bundles/x", nil)
			if tc.cn != "" {
				r.TLS = &tls.ConnectionState{VerifiedChains: [][]*x509.Certificate{{{Subject: pkix.Name{CommonName: tc.cn}}}}}
			}
			w := httptest.NewRecorder()
			gate.ServeHTTP(w, r)
			if w.Code != tc.want {
				t.Fatalf("%s as %q: %d, want %d", tc.method, tc.cn, w.Code, tc.want)
			}
			if proxied := len(reached) > 0; proxied != (tc.want == http.StatusTeapot) {
				t.Fatalf("upstream reached = %v (%v) for status %d", proxied, reached, w.Code)
			}
		})
	}
	t.Run("an_unverified_peer_certificate_is_not_an_identity", func(t *testing.T) {
		r := httptest.NewRequest(http.MethodGet, "/", nil)
		r.TLS = &tls.ConnectionState{PeerCertificates: []*x509.Certificate{{Subject: pkix.Name{CommonName: "cluster-service"}}}}
		w := httptest.NewRecorder()
		gate.ServeHTTP(w, r)
		if w.Code != http.StatusUnauthorized {
			t.Fatalf("got %d, want 401", w.Code)
		}
	})
}

func TestParseRules(t *testing.T) {
	for _, tc := range []struct {
		in, want string
		ok       bool
	}{
		{"cluster-service=read-write,admin=read-only", "admin=read-only,cluster-service=read-write", true},
		{"admin=read-only", "admin=read-only", true},
		{"", "", false},
		{"admin", "", false},
		{"admin=write", "", false},
		{"=read-only", "", false},
	} {
		r, err := ParseRules(tc.in)
		if (err == nil) != tc.ok {
			t.Errorf("ParseRules(%q) error = %v, want ok=%v", tc.in, err, tc.ok)
			continue
		}
		if tc.ok && r.String() != tc.want {
			t.Errorf("ParseRules(%q) = %s, want %s", tc.in, r, tc.want)
		}
	}
}
