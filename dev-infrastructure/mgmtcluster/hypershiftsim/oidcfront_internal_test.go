package hypershiftsim

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/go-logr/logr"
	configv1 "github.com/openshift/api/config/v1"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

// frontFor starts an OIDC front whose egress admits allowed (and public addresses).
func frontFor(t *testing.T, allowed ...netip.Prefix) *oidcFront {
	t.Helper()
	p := &egressProxy{allowed: allowed, ownAddrs: interfaceAddrs}
	f, err := startOIDCFront(logr.Discard(), p)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(f.Stop)
	return f
}

// doc is the front's path of one of ns's documents, with ns's key (empty key when the front
// answers for no issuer of ns).
func doc(f *oidcFront, ns, name string) string {
	up := f.upstream(ns)
	if up == nil {
		return "/" + ns + "//" + name
	}
	return up.path("", ns, name)
}

// frontGet fetches path of the front, trusting its CA.
func frontGet(t *testing.T, f *oidcFront, path string) (int, string) {
	t.Helper()
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(f.CAPEM)
	c := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: roots, MinVersion: tls.VersionTLS12}}}
	resp, err := c.Get(f.Base + path)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// TestOIDCFrontNeverDialsTheManagementSide: an issuer URL on the host's loopback, on the
// metadata address or on a private address is refused by the egress proxy's check, before any
// connection; the front answers 502 and counts the refusal.
func TestOIDCFrontNeverDialsTheManagementSide(t *testing.T) {
	var dialled atomic.Int64
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			dialled.Add(1)
			c.Close()
		}
	}()
	f := frontFor(t)
	for _, issuer := range []string{
		"https://" + l.Addr().String(),
		"https://localhost:" + strings.Split(l.Addr().String(), ":")[1],
		"https://169.254.169.254",
		"https://10.0.0.1",
		"https://[::1]:443",
		f.Base, // the front itself
	} {
		t.Run(issuer, func(t *testing.T) {
			before := counterValue(t, "refused")
			if err := f.Set("ns1", issuer, nil); err != nil {
				t.Fatal(err)
			}
			for _, path := range []string{doc(f, "ns1", "discovery"), doc(f, "ns1", "jwks")} {
				if code, body := frontGet(t, f, path); code != http.StatusBadGateway {
					t.Errorf("%s: %d %s, want 502", path, code, body)
				}
			}
			if got := counterValue(t, "refused"); got < before+2 {
				t.Errorf("refused fetches went from %v to %v, want two more", before, got)
			}
		})
	}
	if n := dialled.Load(); n != 0 {
		t.Errorf("the front connected to the host's loopback %d times", n)
	}
	if code, _ := frontGet(t, f, "/other/"+f.upstream("ns1").key+"/discovery"); code != http.StatusNotFound {
		t.Errorf("a namespace without an issuer: %d, want 404", code)
	}
	// The port is on the sim's loopback, open to every local process: without the cluster's
	// key (in its kube-apiserver's configuration only) nothing is answered and nothing fetched.
	before := counterValue(t, "refused") + counterValue(t, "failed") + counterValue(t, "ok")
	for _, path := range []string{"/ns1/discovery", "/ns1/jwks", "/ns1/x/discovery", "/ns1/" + strings.Repeat("0", 32) + "/jwks"} {
		if code, body := frontGet(t, f, path); code != http.StatusNotFound {
			t.Errorf("%s without the cluster's key: %d %s, want 404", path, code, body)
		}
	}
	if after := counterValue(t, "refused") + counterValue(t, "failed") + counterValue(t, "ok"); after != before {
		t.Errorf("requests without the cluster's key made the front fetch (%v fetches, was %v)", after, before)
	}
}

func counterValue(t *testing.T, result string) float64 {
	t.Helper()
	return testutil.ToFloat64(hostedOIDCFetches.WithLabelValues(result))
}

// TestOIDCFrontRewritesAndBounds: the front answers the issuer's discovery document with its own
// jwks_uri and nothing else of it, passes the keys on, and refuses a document over its bound,
// one naming another issuer and a redirect.
func TestOIDCFrontRewritesAndBounds(t *testing.T) {
	var issuerURL string
	mode := "ok"
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case mode == "huge":
			_, _ = w.Write([]byte(`{"issuer":"` + issuerURL + `","x":"` + strings.Repeat("a", oidcMaxDiscovery) + `"}`))
		case mode == "other":
			_ = json.NewEncoder(w).Encode(map[string]any{"issuer": "https://other.example.com", "jwks_uri": issuerURL + "/keys"})
		case mode == "redirect":
			http.Redirect(w, r, "https://169.254.169.254/", http.StatusFound)
		case r.URL.Path == "/keys":
			_, _ = w.Write([]byte(`{"keys":[{"kty":"RSA","kid":"k1"}],"extra":"dropped"}`))
		default:
			_ = json.NewEncoder(w).Encode(map[string]any{"issuer": issuerURL, "jwks_uri": issuerURL + "/keys",
				"id_token_signing_alg_values_supported": []string{"RS256"}, "userinfo_endpoint": "https://169.254.169.254/"})
		}
	}))
	defer srv.Close()
	issuerURL = srv.URL
	ca := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})
	f := frontFor(t, netip.MustParsePrefix("127.0.0.1/32"))
	if err := f.Set("ns1", issuerURL, ca); err != nil {
		t.Fatal(err)
	}
	code, body := frontGet(t, f, doc(f, "ns1", "discovery"))
	want := `{"issuer":"` + issuerURL + `","jwks_uri":"` + f.Base + doc(f, "ns1", "jwks") + `","id_token_signing_alg_values_supported":["RS256"]}` + "\n"
	if code != http.StatusOK || body != want {
		t.Errorf("discovery: %d %s, want %s", code, body, want)
	}
	if code, body := frontGet(t, f, doc(f, "ns1", "jwks")); code != http.StatusOK || body != `{"keys":[{"kty":"RSA","kid":"k1"}]}` {
		t.Errorf("jwks: %d %s", code, body)
	}
	// Within oidcMinRefetch the front answers what it fetched: callers cannot make it fetch.
	fetched := counterValue(t, "ok")
	for range 5 {
		if code, body := frontGet(t, f, doc(f, "ns1", "discovery")); code != http.StatusOK || body != want {
			t.Fatalf("discovery again: %d %s", code, body)
		}
	}
	if got := counterValue(t, "ok"); got != fetched {
		t.Errorf("five discoveries within %s fetched %v times, want none", oidcMinRefetch, got-fetched)
	}
	for _, m := range []string{"huge", "other", "redirect"} {
		mode = m
		up := f.upstream("ns1")
		up.mu.Lock()
		delete(up.fetched, oidcDiscovery) // as once oidcMinRefetch has passed
		up.mu.Unlock()
		if code, body := frontGet(t, f, doc(f, "ns1", "discovery")); code != http.StatusBadGateway {
			t.Errorf("%s: %d %s, want 502", m, code, body)
		}
	}
}

// TestAuthenticationConfig: the provider's mappings as kube-apiserver's v1beta1 configuration,
// groups by expression (no distributed claims), and an empty list without a provider.
func TestAuthenticationConfig(t *testing.T) {
	none, err := authenticationConfig(nil, "https://front/ns/discovery", []byte("CA"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(none), `"jwt": []`) {
		t.Errorf("no provider: %s", none)
	}
	for _, tc := range []struct {
		name   string
		mutate func(*configv1.OIDCProvider)
		want   []string
	}{
		{"email_no_opinion", nil, []string{`"claim": "email"`, `"prefix": ""`, `"discoveryURL": "https://front/ns/discovery"`, `"certificateAuthority": "CA"`}},
		{"sub_no_opinion", func(p *configv1.OIDCProvider) { p.ClaimMappings.Username.Claim = "sub" },
			[]string{`"prefix": "https://login.example.com/t/v2.0#"`}},
		{"no_prefix", func(p *configv1.OIDCProvider) {
			p.ClaimMappings.Username = configv1.UsernameClaimMapping{Claim: "sub", PrefixPolicy: configv1.NoPrefix}
		}, []string{`"prefix": ""`}},
		{"groups_by_expression", func(p *configv1.OIDCProvider) {
			p.ClaimMappings.Groups = configv1.PrefixedClaimMapping{TokenClaimMapping: configv1.TokenClaimMapping{Claim: "groups"}, Prefix: "g:"}
		}, []string{`"expression": "\"groups\" in claims ? (type(claims[\"groups\"]) == string ? [\"g:\" + dyn(claims[\"groups\"])] : dyn(claims[\"groups\"]).map(g, \"g:\" + g)) : []"`}},
		{"two_audiences", func(p *configv1.OIDCProvider) { p.Issuer.Audiences = append(p.Issuer.Audiences, "b") },
			[]string{`"audienceMatchPolicy": "MatchAny"`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := oidcAuth(tc.mutate).OIDCProviders[0]
			b, err := authenticationConfig(&p, "https://front/ns/discovery", []byte("CA"))
			if err != nil {
				t.Fatal(err)
			}
			for _, w := range tc.want {
				if !strings.Contains(string(b), w) {
					t.Errorf("config lacks %s:\n%s", w, b)
				}
			}
			if strings.Contains(string(b), `"groups": {`) && strings.Contains(string(b), `"claim": "groups"`) {
				t.Errorf("groups mapped by claim name (distributed claims would be resolved):\n%s", b)
			}
		})
	}
	if err := validateIssuerForAPIServer(oidcAuth(func(p *configv1.OIDCProvider) { p.Issuer.URL = hostedSAIssuer }).OIDCProviders[0]); err == nil {
		t.Error("the service account issuer was accepted as an OIDC issuer")
	}
}
