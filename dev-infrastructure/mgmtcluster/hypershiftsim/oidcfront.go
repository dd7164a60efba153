package hypershiftsim

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/subtle"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/openhcp/openhcp/internal/pki"
	"github.com/openhcp/openhcp/internal/serverlimits"
)

// The OIDC front: a hosted kube-apiserver given a cluster's external auth fetches its issuer's
// discovery document and keys with an HTTP client of its own (k8s.io/apiserver's OIDC
// authenticator), not through the egress selector, so a customer's issuer URL would make it
// dial whatever it names from the management side (its loopback, private and link-local
// addresses: an SSRF). The sim therefore names, in the authentication configuration it writes,
// a discoveryURL on this front (the sim's loopback, TLS with a CA of its own which the
// configuration names): the front fetches the issuer's discovery document with the egress
// proxy's own check and dial (egressProxy.dial: public unicast addresses only, plus the test
// knob), answers a document that keeps only the issuer, the signing algorithms and a jwks_uri
// on the front, and fetches the keys the same way. The apiserver never dials the issuer.

// The documents the front answers for a cluster, by the last element of their paths.
const (
	oidcDiscovery = "discovery"
	oidcJWKS      = "jwks"
)

// Limits of the OIDC front: an issuer is the customer's, and may be hostile (huge, slow).
const (
	// oidcFetchTimeout bounds each fetch from an issuer (connection, TLS, headers and body).
	oidcFetchTimeout = 10 * time.Second
	// oidcMaxDiscovery and oidcMaxJWKS bound the documents read from an issuer.
	oidcMaxDiscovery = 64 << 10
	oidcMaxJWKS      = 512 << 10
	// oidcMinRefetch is how long a fetched discovery document or key set is answered again
	// before the issuer is asked again: a token with an unknown key ID makes the apiserver fetch
	// the keys, and the tokens a customer presents are theirs to choose.
	oidcMinRefetch = 10 * time.Second
)

var hostedOIDCFetches = prometheus.NewCounterVec(prometheus.CounterOpts{
	Name: "hypershift_sim_hosted_oidc_fetches_total",
	Help: "Fetches of external auth issuers' discovery documents and keys by the sim's OIDC front, by result: ok, refused (not the hosted cluster's network; nothing dialled), failed.",
}, []string{"result"})

func init() {
	ctrlmetrics.Registry.MustRegister(hostedOIDCFetches)
	for _, r := range []string{"ok", "refused", "failed"} {
		hostedOIDCFetches.WithLabelValues(r)
	}
}

// oidcFront serves, per control-plane namespace, its issuer's discovery document and keys to
// that cluster's kube-apiserver.
type oidcFront struct {
	log    logr.Logger
	egress *egressProxy
	l      net.Listener
	srv    *http.Server
	// CAPEM is the CA of the front's serving certificate, which the authentication
	// configuration names; Base is its URL.
	CAPEM []byte
	Base  string

	mu      sync.Mutex
	issuers map[string]*oidcUpstream // by control-plane namespace
}

// oidcUpstream is one cluster's issuer and what the front last fetched of it.
type oidcUpstream struct {
	issuer string
	caPEM  []byte // the issuer's CA bundle; empty means the system's roots
	client *http.Client
	// key is in the front's paths for this cluster: the front listens on TCP, which any local
	// process may reach, and only the cluster's kube-apiserver is told the key (in its
	// authentication configuration, a file of the sim's). A path without it is a 404.
	key string

	mu      sync.Mutex
	fetched map[string]*fetched // by document: oidcDiscovery, oidcJWKS
	jwksURI string
	lastErr string
}

// startOIDCFront serves the front on a port of the sim's loopback (its kube-apiservers run
// beside it, on the host under make run and in the sim's pod under make deploy), fetching
// through egress.
func startOIDCFront(log logr.Logger, egress *egressProxy) (*oidcFront, error) {
	ca, err := pki.NewAuthority("hypershift-sim-oidc-front", caValidity)
	if err != nil {
		return nil, fmt.Errorf("oidc front: %w", err)
	}
	serving, err := ca.Issue(pki.Spec{CommonName: "hypershift-sim-oidc-front", Usage: pki.Server, NoOrganization: true,
		IPs: []net.IP{net.IPv4(127, 0, 0, 1)}, Lifetime: caValidity})
	if err != nil {
		return nil, fmt.Errorf("oidc front: %w", err)
	}
	cert, err := tls.X509KeyPair(serving.CertPEM, serving.KeyPEM)
	if err != nil {
		return nil, fmt.Errorf("oidc front: %w", err)
	}
	f := &oidcFront{log: log, egress: egress, CAPEM: ca.PEM, issuers: map[string]*oidcUpstream{}}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /{ns}/{key}/"+oidcDiscovery, f.serve(oidcDiscovery, f.discoveryBody))
	mux.HandleFunc("GET /{ns}/{key}/"+oidcJWKS, f.serve(oidcJWKS, jwksBody))
	// The API servers' limits (connections capped, silent ones closed for room, timeouts):
	// the port is on the sim's loopback, where any local process may open connections.
	limits := serverlimits.API()
	f.srv = limits.Server("127.0.0.1:0", mux, &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12})
	l, err := limits.Listen(f.srv)
	if err != nil {
		return nil, fmt.Errorf("oidc front: %w", err)
	}
	f.l, f.Base = l, "https://"+l.Addr().String()
	go func() { _ = f.srv.Serve(l) }()
	log.Info("hosted kube-apiservers' OIDC front listening", "url", f.Base)
	return f, nil
}

// Stop closes the front.
func (f *oidcFront) Stop() { _ = f.srv.Close() }

// DiscoveryURL is where the kube-apiserver of hcpNS fetches its issuer's discovery document
// ("" when the front answers for no issuer of hcpNS: Set first).
func (f *oidcFront) DiscoveryURL(hcpNS string) string {
	up := f.upstream(hcpNS)
	if up == nil {
		return ""
	}
	return up.path(f.Base, hcpNS, oidcDiscovery)
}

// path is the front's URL of one of hcpNS's documents.
func (up *oidcUpstream) path(base, hcpNS, doc string) string {
	return base + "/" + hcpNS + "/" + up.key + "/" + doc
}

// Set makes the front answer for hcpNS's issuer (with its CA bundle, empty for the system's
// roots), or for none when issuer is empty. What was fetched of an earlier issuer is dropped.
func (f *oidcFront) Set(hcpNS, issuer string, caPEM []byte) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if issuer == "" {
		delete(f.issuers, hcpNS)
		return nil
	}
	cur := f.issuers[hcpNS]
	if cur != nil && cur.issuer == issuer && bytes.Equal(cur.caPEM, caPEM) {
		return nil
	}
	var roots *x509.CertPool
	if len(caPEM) > 0 {
		roots = x509.NewCertPool()
		if !roots.AppendCertsFromPEM(caPEM) {
			return fmt.Errorf("the issuer's CA bundle holds no PEM certificate")
		}
	}
	key := ""
	if cur != nil {
		key = cur.key // the configuration written for the cluster keeps its URLs
	} else {
		b := make([]byte, 16)
		if _, err := rand.Read(b); err != nil {
			return fmt.Errorf("the front's key for %s: %w", hcpNS, err)
		}
		key = hex.EncodeToString(b)
	}
	f.issuers[hcpNS] = &oidcUpstream{issuer: issuer, caPEM: caPEM, client: f.client(roots), key: key, fetched: map[string]*fetched{}}
	return nil
}

// client fetches from an issuer: every connection by the egress proxy's check and dial (never an
// environment proxy), no redirect followed, bounded in time.
func (f *oidcFront) client(roots *x509.CertPool) *http.Client {
	return &http.Client{
		Timeout: oidcFetchTimeout,
		Transport: &http.Transport{
			Proxy: nil,
			DialContext: func(ctx context.Context, _, addr string) (net.Conn, error) {
				return f.egress.dial(ctx, addr)
			},
			TLSClientConfig:        &tls.Config{RootCAs: roots, MinVersion: tls.VersionTLS12},
			TLSHandshakeTimeout:    oidcFetchTimeout,
			ResponseHeaderTimeout:  oidcFetchTimeout,
			MaxResponseHeaderBytes: 64 << 10,
			DisableKeepAlives:      true,
		},
		CheckRedirect: func(*http.Request, []*http.Request) error {
			return errors.New("the issuer redirected; redirects are not followed")
		},
	}
}

func (f *oidcFront) upstream(hcpNS string) *oidcUpstream {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.issuers[hcpNS]
}

// caller is the upstream a request of the front is for: nil (answer 404) unless its path
// carries the cluster's key.
func (f *oidcFront) caller(r *http.Request) *oidcUpstream {
	up := f.upstream(r.PathValue("ns"))
	if up == nil || subtle.ConstantTimeCompare([]byte(r.PathValue("key")), []byte(up.key)) != 1 {
		return nil
	}
	return up
}

// discoveryDoc is what the front keeps of an issuer's discovery document.
type discoveryDoc struct {
	Issuer  string   `json:"issuer"`
	JWKSURI string   `json:"jwks_uri"`
	Algs    []string `json:"id_token_signing_alg_values_supported,omitempty"`
}

// fetched is a document of an issuer as the front answers it, and when it was fetched.
type fetched struct {
	body []byte
	at   time.Time
}

// serve answers one of a cluster's documents (what names it): what was fetched of it within
// oidcMinRefetch, else fetch's answer now.
func (f *oidcFront) serve(what string, fetch func(ctx context.Context, up *oidcUpstream, hcpNS string) ([]byte, error)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		hcpNS := r.PathValue("ns")
		up := f.caller(r)
		if up == nil {
			http.NotFound(w, r)
			return
		}
		up.mu.Lock()
		defer up.mu.Unlock()
		doc := up.fetched[what]
		if doc == nil || time.Since(doc.at) >= oidcMinRefetch {
			body, err := fetch(r.Context(), up, hcpNS)
			if f.failed(w, hcpNS, up, what, err) {
				return
			}
			doc = &fetched{body: body, at: time.Now()}
			up.fetched[what] = doc
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(doc.body)
	}
}

// discoveryBody is the discovery document the front answers: the issuer's, with the front's
// jwks_uri.
func (f *oidcFront) discoveryBody(ctx context.Context, up *oidcUpstream, hcpNS string) ([]byte, error) {
	doc, err := up.fetchDiscovery(ctx)
	if err != nil {
		return nil, err
	}
	doc.JWKSURI = up.path(f.Base, hcpNS, oidcJWKS)
	b, err := json.Marshal(doc)
	return append(b, '\n'), err
}

func jwksBody(ctx context.Context, up *oidcUpstream, _ string) ([]byte, error) {
	return up.fetchJWKS(ctx)
}

// failed answers a failed fetch (502, no detail: the kube-apiserver logs what it is told) and
// logs it when it differs from the last; it reports whether err is set. Called with up.mu held.
func (f *oidcFront) failed(w http.ResponseWriter, hcpNS string, up *oidcUpstream, what string, err error) bool {
	if err == nil {
		up.lastErr = ""
		return false
	}
	if msg := err.Error(); msg != up.lastErr {
		up.lastErr = msg
		f.log.Info("external auth issuer not fetched; the hosted kube-apiserver does not honour it", "controlPlaneNamespace", hcpNS,
			"issuer", up.issuer, "what", what, "err", msg)
	}
	http.Error(w, "the issuer could not be fetched", http.StatusBadGateway)
	return true
}

// fetchDiscovery reads the issuer's discovery document, which must name the issuer itself and
// an https jwks_uri (remembered for fetchJWKS). Called with up.mu held.
func (up *oidcUpstream) fetchDiscovery(ctx context.Context) (discoveryDoc, error) {
	var doc discoveryDoc
	body, err := up.get(ctx, strings.TrimSuffix(up.issuer, "/")+"/.well-known/openid-configuration", oidcMaxDiscovery)
	if err != nil {
		return doc, err
	}
	if err := json.Unmarshal(body, &doc); err != nil {
		return doc, fmt.Errorf("discovery document: %w", err)
	}
	if doc.Issuer != up.issuer {
		return doc, fmt.Errorf("discovery document names issuer %q, not %q", doc.Issuer, up.issuer)
	}
	if u, err := url.Parse(doc.JWKSURI); err != nil || u.Scheme != "https" || u.Host == "" {
		return doc, fmt.Errorf("discovery document's jwks_uri %q is not an https URL", doc.JWKSURI)
	}
	up.jwksURI = doc.JWKSURI
	return doc, nil
}

// fetchJWKS reads the issuer's key set (discovering its URL first if need be) and returns it
// re-encoded with its keys only. Called with up.mu held.
func (up *oidcUpstream) fetchJWKS(ctx context.Context) ([]byte, error) {
	if up.jwksURI == "" {
		if _, err := up.fetchDiscovery(ctx); err != nil {
			return nil, err
		}
	}
	body, err := up.get(ctx, up.jwksURI, oidcMaxJWKS)
	if err != nil {
		return nil, err
	}
	var set struct {
		Keys []json.RawMessage `json:"keys"`
	}
	if err := json.Unmarshal(body, &set); err != nil {
		return nil, fmt.Errorf("key set: %w", err)
	}
	return json.Marshal(set)
}

// get fetches an https URL of the issuer through the egress proxy's check and dial, reading at
// most max bytes of a 200 answer.
func (up *oidcUpstream) get(ctx context.Context, rawURL string, max int64) ([]byte, error) {
	body, err := up.getOnce(ctx, rawURL, max)
	result := "ok"
	switch {
	case errors.Is(err, errEgressRefused):
		result = "refused"
	case err != nil:
		result = "failed"
	}
	hostedOIDCFetches.WithLabelValues(result).Inc()
	return body, err
}

func (up *oidcUpstream) getOnce(ctx context.Context, rawURL string, max int64) ([]byte, error) {
	u, err := url.Parse(rawURL)
	if err != nil || u.Scheme != "https" || u.Host == "" {
		return nil, fmt.Errorf("%q is not an https URL", rawURL)
	}
	ctx, cancel := context.WithTimeout(ctx, oidcFetchTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, rawURL, nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Accept", "application/json")
	resp, err := up.client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("GET %s: %w", rawURL, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET %s: %s", rawURL, resp.Status)
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, max+1))
	if err != nil {
		return nil, fmt.Errorf("GET %s: %w", rawURL, err)
	}
	if int64(len(body)) > max {
		return nil, fmt.Errorf("GET %s: the answer is over %d bytes", rawURL, max)
	}
	return body, nil
}
