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
	"strings"
	"testing"
	"time"

	"github.com/openhcp/openhcp/internal/identity"
	"github.com/openhcp/openhcp/internal/serverlimits"
)

func TestGateDecidesByVerifiedIdentityAndMethod(t *testing.T) {
	var reached []string
	upstream := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		reached = append(reached, r.Method+" "+r.URL.Path)
		w.WriteHeader(http.StatusTeapot)
	}))
	defer upstream.Close()
	u, _ := url.Parse(upstream.URL)
	rules, err := WorkloadRules(identity.DefaultTrustDomain, map[string]Access{identity.ClusterService: ReadWrite, identity.SRE: ReadOnly})
	if err != nil {
		t.Fatal(err)
	}
	gate := New(rules, u, http.DefaultTransport, slog.New(slog.NewTextHandler(io.Discard, nil)))
	id := func(name, trustDomain string) []*url.URL {
		i, ok := identity.Of(name, trustDomain)
		if !ok {
			t.Fatalf("no workload %s", name)
		}
		return []*url.URL{i.URL()}
	}
	td := identity.DefaultTrustDomain
	for _, tc := range []struct {
		name, cn, method string
		uris             []*url.URL
		want             int
	}{
		{"no_verified_certificate_is_401", "", http.MethodGet, nil, http.StatusUnauthorized},
		{"unknown_identity_is_403", "frontend", http.MethodGet, id(identity.Frontend, td), http.StatusForbidden},
		{"read_only_get_is_proxied", "admin", http.MethodGet, id(identity.SRE, td), http.StatusTeapot},
		{"read_only_head_is_proxied", "admin", http.MethodHead, id(identity.SRE, td), http.StatusTeapot},
		{"read_only_delete_is_403", "admin", http.MethodDelete, id(identity.SRE, td), http.StatusForbidden},
		{"read_only_post_is_403", "admin", http.MethodPost, id(identity.SRE, td), http.StatusForbidden},
		{"read_only_patch_is_403", "admin", http.MethodPatch, id(identity.SRE, td), http.StatusForbidden},
		{"read_write_delete_is_proxied", "cluster-service", http.MethodDelete, id(identity.ClusterService, td), http.StatusTeapot},
		{"the_right_common_name_without_a_uri_is_403", "cluster-service", http.MethodDelete, nil, http.StatusForbidden},
		{"the_right_common_name_with_another_workloads_id_is_403", "cluster-service", http.MethodDelete, id(identity.Frontend, td), http.StatusForbidden},
		{"the_right_workload_of_another_trust_domain_is_403", "cluster-service", http.MethodDelete, id(identity.ClusterService, "evil.example"), http.StatusForbidden},
		{"two_ids_are_no_identity", "cluster-service", http.MethodGet, append(id(identity.ClusterService, td), id(identity.SRE, td)...), http.StatusForbidden},
		{"any_common_name_with_the_right_id_is_served", "someone", http.MethodDelete, id(identity.ClusterService, td), http.StatusTeapot},
	} {
		t.Run(tc.name, func(t *testing.T) {
			reached = nil
			r := httptest.NewRequest(tc.method, "/api/maestro/v1/resource-bundles/x", nil)
			if tc.cn != "" {
				r.TLS = &tls.ConnectionState{VerifiedChains: [][]*x509.Certificate{{{Subject: pkix.Name{CommonName: tc.cn}, URIs: tc.uris,
					NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour)}}}}
			}
			w := httptest.NewRecorder()
			gate.ServeHTTP(w, r)
			if w.Code != tc.want {
				t.Fatalf("%s as %q %v: %d, want %d", tc.method, tc.cn, tc.uris, w.Code, tc.want)
			}
			if proxied := len(reached) > 0; proxied != (tc.want == http.StatusTeapot) {
				t.Fatalf("upstream reached = %v (%v) for status %d", proxied, reached, w.Code)
			}
		})
	}
	// The gate's callers keep their connections alive: a chain verified at the handshake and
	// expired since is refused as no certificate is.
	for _, tc := range []struct {
		name               string
		leafUntil, caUntil time.Duration // from now
		want               int
	}{
		{"chain_still_valid_is_proxied", time.Hour, 48 * time.Hour, http.StatusTeapot},
		{"leaf_expired_since_the_handshake_is_401", -time.Second, 48 * time.Hour, http.StatusUnauthorized},
		{"CA_expired_since_the_handshake_is_401", time.Hour, -time.Second, http.StatusUnauthorized},
	} {
		t.Run(tc.name, func(t *testing.T) {
			reached = nil
			now := time.Now()
			leaf := &x509.Certificate{Subject: pkix.Name{CommonName: "cluster-service"}, URIs: id(identity.ClusterService, td),
				NotBefore: now.Add(-2 * time.Hour), NotAfter: now.Add(tc.leafUntil)}
			ca := &x509.Certificate{Subject: pkix.Name{CommonName: "service CA"}, NotBefore: now.Add(-2 * time.Hour), NotAfter: now.Add(tc.caUntil)}
			r := httptest.NewRequest(http.MethodDelete, "/api/maestro/v1/resource-bundles/x", nil)
			r.TLS = &tls.ConnectionState{VerifiedChains: [][]*x509.Certificate{{leaf, ca}}}
			w := httptest.NewRecorder()
			gate.ServeHTTP(w, r)
			if w.Code != tc.want {
				t.Fatalf("got %d %q, want %d", w.Code, w.Body.String(), tc.want)
			}
			if proxied := len(reached) > 0; proxied != (tc.want == http.StatusTeapot) {
				t.Fatalf("upstream reached = %v (%v) for status %d", proxied, reached, w.Code)
			}
		})
	}
	t.Run("an_unverified_peer_certificate_is_not_an_identity", func(t *testing.T) {
		r := httptest.NewRequest(http.MethodGet, "/", nil)
		r.TLS = &tls.ConnectionState{PeerCertificates: []*x509.Certificate{{Subject: pkix.Name{CommonName: "cluster-service"}, URIs: id(identity.ClusterService, td)}}}
		w := httptest.NewRecorder()
		gate.ServeHTTP(w, r)
		if w.Code != http.StatusUnauthorized {
			t.Fatalf("got %d, want 401", w.Code)
		}
	})
}

func TestParseRules(t *testing.T) {
	const (
		cs    = "spiffe://cluster.local/ns/openhcp-cluster-service/sa/cluster-service"
		admin = "spiffe://cluster.local/ns/openhcp-admin/sa/admin"
	)
	for _, tc := range []struct {
		name, in, want string
		ok             bool
	}{
		{"two_ids_sorted", cs + "=read-write," + admin + "=read-only", admin + "=read-only," + cs + "=read-write", true},
		{"one_id", admin + "=read-only", admin + "=read-only", true},
		{"empty_is_refused", "", "", false},
		{"no_access_is_refused", admin, "", false},
		{"unknown_access_is_refused", admin + "=write", "", false},
		{"no_id_is_refused", "=read-only", "", false},
		{"a_common_name_is_refused", "admin=read-only", "", false},
		{"another_scheme_is_refused", "https://cluster.local/ns/a/sa/b=read-only", "", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, err := ParseRules(tc.in)
			if (err == nil) != tc.ok {
				t.Fatalf("ParseRules(%q) error = %v, want ok=%v", tc.in, err, tc.ok)
			}
			if tc.ok && r.String() != tc.want {
				t.Fatalf("ParseRules(%q) = %s, want %s", tc.in, r, tc.want)
			}
		})
	}
}

func TestWorkloadRulesRefuseAnUnknownName(t *testing.T) {
	if _, err := WorkloadRules(identity.DefaultTrustDomain, map[string]Access{"admin": ReadOnly}); err == nil {
		t.Fatal(`"admin" is no workload name (the admin API's workload is identity.SRE), yet it was accepted`)
	}
}

// TestGateServerBoundsSlowCallers: the REST gate cuts a caller that trickles its body or sits
// idle, not only one slow with its headers (it once set ReadHeaderTimeout alone).
func TestGateServerBoundsSlowCallers(t *testing.T) {
	gate := New(Rules{}, &url.URL{Scheme: "https", Host: "127.0.0.1:1"}, http.DefaultTransport, slog.New(slog.NewTextHandler(io.Discard, nil)))
	srv := gate.Server("127.0.0.1:0", nil, slog.New(slog.NewTextHandler(io.Discard, nil)))
	want := serverlimits.API()
	for _, d := range want.Unlike(srv) {
		t.Errorf("gate server %s", d)
	}
	// The server wraps its handler (serverlimits ages connections), so the gate is known by its
	// answer: a request without a client certificate is refused by it.
	w := httptest.NewRecorder()
	srv.Handler.ServeHTTP(w, httptest.NewRequest(http.MethodGet, "/api/maestro/v1/resource-bundles", nil))
	if w.Code != http.StatusUnauthorized || !strings.Contains(w.Body.String(), "client certificate is required") {
		t.Errorf("gate server answered %d %q; want the gate's 401", w.Code, w.Body.String())
	}
}
