package hypershiftsim_test

import (
	"context"
	"crypto"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/tls"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	configv1 "github.com/openshift/api/config/v1"
	hyperv1 "github.com/openshift/hypershift/api/hypershift/v1beta1"
	authnv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/openhcp/openhcp/dev-infrastructure/mgmtcluster/hypershiftsim"
	"github.com/openhcp/openhcp/internal/pki"
)

// testIssuer is an OIDC issuer served by the test over TLS (its own CA) on addr, signing with
// key (kid "k1").
type testIssuer struct {
	URL    string
	CAPEM  []byte
	key    *rsa.PrivateKey
	served atomic.Int64 // requests answered
}

func startTestIssuer(t *testing.T, addr string) *testIssuer {
	t.Helper()
	l, err := net.Listen("tcp", addr)
	if err != nil {
		t.Skipf("cannot listen on %s: %v", addr, err)
	}
	ca, err := pki.NewAuthority("test-oidc-issuer-ca", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	host, _, _ := net.SplitHostPort(addr)
	serving, err := ca.Issue(pki.Spec{CommonName: "issuer", Usage: pki.Server, NoOrganization: true, IPs: []net.IP{net.ParseIP(host)}, Lifetime: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	cert, err := tls.X509KeyPair(serving.CertPEM, serving.KeyPEM)
	if err != nil {
		t.Fatal(err)
	}
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	is := &testIssuer{CAPEM: ca.PEM, key: key}
	is.URL = "https://" + l.Addr().String()
	mux := http.NewServeMux()
	mux.HandleFunc("/.well-known/openid-configuration", func(w http.ResponseWriter, _ *http.Request) {
		is.served.Add(1)
		_ = json.NewEncoder(w).Encode(map[string]any{"issuer": is.URL, "jwks_uri": is.URL + "/keys",
			"id_token_signing_alg_values_supported": []string{"RS256"}, "userinfo_endpoint": "https://169.254.169.254/userinfo"})
	})
	mux.HandleFunc("/keys", func(w http.ResponseWriter, _ *http.Request) {
		is.served.Add(1)
		_ = json.NewEncoder(w).Encode(map[string]any{"keys": []any{jwk(&key.PublicKey, "k1")}})
	})
	srv := httptest.NewUnstartedServer(mux)
	srv.Listener = l
	srv.TLS = &tls.Config{Certificates: []tls.Certificate{cert}}
	srv.StartTLS()
	t.Cleanup(srv.Close)
	return is
}

func b64(b []byte) string { return base64.RawURLEncoding.EncodeToString(b) }

func jwk(k *rsa.PublicKey, kid string) map[string]any {
	return map[string]any{"kty": "RSA", "kid": kid, "use": "sig", "alg": "RS256",
		"n": b64(k.N.Bytes()), "e": b64(big.NewInt(int64(k.E)).Bytes())}
}

// signJWT makes an RS256 JWT (kid "k1") of claims with key.
func signJWT(t *testing.T, key *rsa.PrivateKey, claims map[string]any) string {
	t.Helper()
	h, _ := json.Marshal(map[string]any{"alg": "RS256", "typ": "JWT", "kid": "k1"})
	p, err := json.Marshal(claims)
	if err != nil {
		t.Fatal(err)
	}
	signed := b64(h) + "." + b64(p)
	sum := sha256.Sum256([]byte(signed))
	sig, err := rsa.SignPKCS1v15(rand.Reader, key, crypto.SHA256, sum[:])
	if err != nil {
		t.Fatal(err)
	}
	return signed + "." + b64(sig)
}

// claims are a token's claims for issuer iss and audience aud, valid for ten minutes.
func claims(iss, aud string, extra map[string]any) map[string]any {
	c := map[string]any{"iss": iss, "aud": aud, "sub": "alice", "iat": time.Now().Unix(),
		"nbf": time.Now().Add(-time.Minute).Unix(), "exp": time.Now().Add(10 * time.Minute).Unix()}
	for k, v := range extra {
		c[k] = v
	}
	return c
}

// whoAmI asks the hosted apiserver at ep who the bearer of token is (a SelfSubjectReview).
func (e *hostedEnv) whoAmI(t *testing.T, hcpNS string, ep hyperv1.APIEndpoint, token string) (authnv1.UserInfo, error) {
	t.Helper()
	cm := &corev1.ConfigMap{}
	if err := e.c.Get(context.Background(), types.NamespacedName{Namespace: hcpNS, Name: hypershiftsim.RootCAConfigMap}, cm); err != nil {
		t.Fatal(err)
	}
	cs, err := kubernetes.NewForConfig(&rest.Config{
		Host:            "https://" + net.JoinHostPort(ep.Host, strconv.Itoa(int(ep.Port))),
		TLSClientConfig: rest.TLSClientConfig{CAData: []byte(cm.Data[hypershiftsim.CABundleKey])},
		BearerToken:     token, Timeout: 10 * time.Second,
	})
	if err != nil {
		t.Fatal(err)
	}
	r, err := cs.AuthenticationV1().SelfSubjectReviews().Create(context.Background(), &authnv1.SelfSubjectReview{}, metav1.CreateOptions{})
	if err != nil {
		return authnv1.UserInfo{}, err
	}
	return r.Status.UserInfo, nil
}

// TestHostedAPIServerHonoursExternalAuth gives a served cluster an external auth (an OIDC issuer
// the test serves on 127.0.0.2, which the egress proxy admits in tests, with a CA of its own):
// the hosted kube-apiserver authenticates a token of that issuer with the cluster's claim
// mappings and validation rules, refuses one of another key, never dials an address a token or
// an issuer names outside the hosted cluster's network (distributed claims, an issuer on the
// host's loopback), and stops honouring the issuer once the external auth is removed.
func TestHostedAPIServerHonoursExternalAuth(t *testing.T) {
	issuer := startTestIssuer(t, "127.0.0.2:0")
	sinkPort, accepted := countingListener(t)
	e := startHostedEnv(t, 1, allowEgressTo127002)
	ctx := context.Background()
	key := types.NamespacedName{Namespace: "hosted-oidc", Name: "oidc"}
	hcpNS, hc, _ := e.customersRunningCluster(t, key)
	ep := hc.Status.ControlPlaneEndpoint

	const aud = "openhcp-cli"
	if err := e.c.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: "issuer-ca"},
		Data: map[string]string{"ca-bundle.crt": string(issuer.CAPEM)}}); err != nil {
		t.Fatal(err)
	}
	setAuth := func(issuerURL string, remove bool) {
		t.Helper()
		cur := &hyperv1.HostedCluster{}
		if err := e.c.Get(ctx, key, cur); err != nil {
			t.Fatal(err)
		}
		if cur.Spec.Configuration == nil {
			cur.Spec.Configuration = &hyperv1.ClusterConfiguration{}
		}
		cur.Spec.Configuration.Authentication = nil
		if !remove {
			cur.Spec.Configuration.Authentication = &configv1.AuthenticationSpec{Type: configv1.AuthenticationTypeOIDC,
				OIDCProviders: []configv1.OIDCProvider{{
					Name: "test",
					Issuer: configv1.TokenIssuer{URL: issuerURL, Audiences: []configv1.TokenAudience{aud},
						CertificateAuthority: configv1.ConfigMapNameReference{Name: "issuer-ca"}},
					ClaimMappings: configv1.TokenClaimMappings{
						Username: configv1.UsernameClaimMapping{Claim: "sub", PrefixPolicy: configv1.Prefix,
							Prefix: &configv1.UsernamePrefix{PrefixString: "oidc:"}},
						Groups: configv1.PrefixedClaimMapping{TokenClaimMapping: configv1.TokenClaimMapping{Claim: "groups"}, Prefix: "oidc-group:"},
					},
					ClaimValidationRules: []configv1.TokenClaimValidationRule{{Type: configv1.TokenValidationRuleTypeRequiredClaim,
						RequiredClaim: &configv1.TokenRequiredClaim{Claim: "tenant", RequiredValue: "t1"}}},
				}}}
		}
		if err := e.c.Update(ctx, cur); err != nil {
			t.Fatal(err)
		}
	}
	setAuth(issuer.URL, false)

	good := signJWT(t, issuer.key, claims(issuer.URL, aud, map[string]any{"tenant": "t1", "groups": []string{"devs"}}))
	poll(t, 3*time.Minute, "the hosted apiserver to authenticate a token of the cluster's issuer", func() error {
		u, err := e.whoAmI(t, hcpNS, ep, good)
		if err != nil {
			return err
		}
		if u.Username != "oidc:alice" || !slices.Contains(u.Groups, "oidc-group:devs") || !slices.Contains(u.Groups, "system:authenticated") {
			return fmt.Errorf("authenticated as %q %v, want oidc:alice in oidc-group:devs", u.Username, u.Groups)
		}
		return nil
	})

	unauthorized := func(t *testing.T, token string) {
		t.Helper()
		u, err := e.whoAmI(t, hcpNS, ep, token)
		if !apierrors.IsUnauthorized(err) {
			t.Errorf("want 401, got %+v, %v", u, err)
		}
	}
	t.Run("a_token_of_another_key_is_refused", func(t *testing.T) {
		other, err := rsa.GenerateKey(rand.Reader, 2048)
		if err != nil {
			t.Fatal(err)
		}
		unauthorized(t, signJWT(t, other, claims(issuer.URL, aud, map[string]any{"tenant": "t1"})))
	})
	t.Run("a_token_failing_a_validation_rule_is_refused", func(t *testing.T) {
		unauthorized(t, signJWT(t, issuer.key, claims(issuer.URL, aud, map[string]any{"tenant": "t2"})))
	})
	t.Run("a_token_of_another_audience_is_refused", func(t *testing.T) {
		unauthorized(t, signJWT(t, issuer.key, claims(issuer.URL, "other", map[string]any{"tenant": "t1"})))
	})
	// A distributed groups claim names an endpoint the apiserver would fetch with the issuer's
	// client, outside the egress proxy: the claim is not resolved, and nothing is dialled.
	t.Run("a_distributed_claim_never_reaches_the_hosts_loopback", func(t *testing.T) {
		sink := "https://127.0.0.1:" + strconv.Itoa(sinkPort)
		tok := signJWT(t, issuer.key, claims(issuer.URL, aud, map[string]any{"tenant": "t1",
			"_claim_names":   map[string]any{"groups": "src1"},
			"_claim_sources": map[string]any{"src1": map[string]any{"endpoint": sink + "/groups", "access_token": "x"}}}))
		u, err := e.whoAmI(t, hcpNS, ep, tok)
		t.Logf("distributed claim token: %+v, %v", u, err)
		if n := accepted.Load(); n != 0 {
			t.Errorf("a token's distributed claim made the hosted apiserver connect to 127.0.0.1:%d %d times", sinkPort, n)
		}
	})

	// An issuer on the host's loopback (not admitted by the proxy): the sim refuses to fetch it,
	// nothing connects to that port, and a token of that issuer is refused.
	t.Run("an_issuer_on_the_hosts_loopback_is_never_dialled", func(t *testing.T) {
		loopIssuer := "https://127.0.0.1:" + strconv.Itoa(sinkPort)
		refusedBefore := metricValue(t, "hypershift_sim_hosted_oidc_fetches_total", map[string]string{"result": "refused"})
		defer func() { // also when a wait below fails
			if n := accepted.Load(); n != 0 {
				t.Errorf("the cluster's issuer URL made something connect to 127.0.0.1:%d %d times", sinkPort, n)
			}
		}()
		setAuth(loopIssuer, false)
		poll(t, 2*time.Minute, "the sim to refuse the loopback issuer", func() error {
			if n := metricValue(t, "hypershift_sim_hosted_oidc_fetches_total", map[string]string{"result": "refused"}); n <= refusedBefore {
				return fmt.Errorf("no refused fetch yet")
			}
			return nil
		})
		unauthorized(t, signJWT(t, issuer.key, claims(loopIssuer, aud, map[string]any{"tenant": "t1"})))
	})

	t.Run("removing_the_external_auth_removes_the_issuer", func(t *testing.T) {
		setAuth("", true)
		poll(t, 3*time.Minute, "the token to be refused", func() error {
			u, err := e.whoAmI(t, hcpNS, ep, good)
			if apierrors.IsUnauthorized(err) {
				return nil
			}
			return fmt.Errorf("still %+v, %v", u, err)
		})
	})
}
