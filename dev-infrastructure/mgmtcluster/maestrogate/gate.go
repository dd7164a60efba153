// Package maestrogate is the door in front of the pinned Maestro server's REST API, which has
// no client authentication of its own: the gate requires a client certificate, admits only the
// workload identities (SPIFFE IDs, internal/identity) it lists, and lets a read-only identity
// send reads only. The REST API itself must be reachable by nothing but the gate (a private
// network namespace locally, the pod's own loopback in a chart); docs/security.md says why.
package maestrogate

import (
	"context"
	"crypto/tls"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"sort"
	"strings"
	"time"

	"github.com/openhcp/openhcp/internal/identity"
	"github.com/openhcp/openhcp/internal/serverlimits"
)

// Access is what an identity may do through the gate.
type Access int

const (
	// ReadOnly admits GET and HEAD.
	ReadOnly Access = iota + 1
	// ReadWrite admits every method Maestro serves.
	ReadWrite
)

func (a Access) String() string {
	switch a {
	case ReadOnly:
		return "read-only"
	case ReadWrite:
		return "read-write"
	}
	return fmt.Sprintf("Access(%d)", int(a))
}

// Rules maps a workload's SPIFFE ID, as the verified client certificate carries it
// (internal/identity), to what it may do. An identity not listed is refused, and so is a
// certificate without exactly one SPIFFE ID, whatever its common name says.
type Rules map[identity.ID]Access

// WorkloadRules are rules for the named workloads of identity.Workloads in trustDomain.
func WorkloadRules(trustDomain string, byName map[string]Access) (Rules, error) {
	r := Rules{}
	for name, access := range byName {
		id, ok := identity.Of(name, trustDomain)
		if !ok {
			return nil, fmt.Errorf("maestro gate rules: %q is no workload", name)
		}
		r[id] = access
	}
	return r, nil
}

// ParseRules reads "<SPIFFE ID>=read-write,<SPIFFE ID>=read-only" (the maestro-gate's --allow).
func ParseRules(s string) (Rules, error) {
	r := Rules{}
	for _, item := range strings.Split(s, ",") {
		item = strings.TrimSpace(item)
		if item == "" {
			continue
		}
		// A SPIFFE ID holds no '=' (identity.Parse refuses one), so the last one separates.
		i := strings.LastIndex(item, "=")
		if i < 0 {
			return nil, fmt.Errorf("allow %q: want <SPIFFE ID>=read-only|read-write", item)
		}
		id, err := identity.Parse(item[:i])
		if err != nil {
			return nil, fmt.Errorf("allow %q: %w", item, err)
		}
		switch item[i+1:] {
		case "read-only":
			r[id] = ReadOnly
		case "read-write":
			r[id] = ReadWrite
		default:
			return nil, fmt.Errorf("allow %q: access must be read-only or read-write", item)
		}
	}
	if len(r) == 0 {
		return nil, fmt.Errorf("allow %q: no identity", s)
	}
	return r, nil
}

// String is the inverse of ParseRules, sorted.
func (r Rules) String() string {
	out := make([]string, 0, len(r))
	for id, a := range r {
		out = append(out, id.String()+"="+a.String())
	}
	sort.Strings(out)
	return strings.Join(out, ",")
}

// Gate is the REST API's http.Handler: it decides, then proxies to Upstream.
type Gate struct {
	rules Rules
	proxy *httputil.ReverseProxy
	log   *slog.Logger
}

// New returns a gate that forwards admitted requests to upstream (Maestro's REST base URL) over
// transport, which must verify Maestro's certificate.
func New(rules Rules, upstream *url.URL, transport http.RoundTripper, log *slog.Logger) *Gate {
	proxy := &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.SetURL(upstream)
			// Maestro learns nothing from the caller's headers; the identity stays here.
			pr.Out.Header.Del("Authorization")
		},
		Transport: transport,
		ErrorHandler: func(w http.ResponseWriter, r *http.Request, err error) {
			log.Error("maestro REST upstream failed", "method", r.Method, "path", r.URL.Path, "error", err)
			http.Error(w, "maestro REST API unavailable", http.StatusBadGateway)
		},
	}
	return &Gate{rules: rules, proxy: proxy, log: log}
}

// Identity is the SPIFFE ID of the client certificate the handshake verified: ErrNoID without
// a verified certificate, or for one that carries no single SPIFFE ID.
func Identity(r *http.Request) (identity.ID, error) {
	if r.TLS == nil {
		return identity.ID{}, identity.ErrNoID
	}
	return identity.FromVerifiedChains(r.TLS.VerifiedChains)
}

func (g *Gate) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.TLS == nil || len(r.TLS.VerifiedChains) == 0 || len(r.TLS.VerifiedChains[0]) == 0 {
		// The listener requires a verified certificate, so this is a gate served without one.
		http.Error(w, "a client certificate is required", http.StatusUnauthorized)
		return
	}
	cn := r.TLS.VerifiedChains[0][0].Subject.CommonName
	// The handshake verified the chain once; callers keep their connections alive, so the chain
	// must still be valid at this request.
	if err := identity.CheckValidAt(r.TLS.VerifiedChains, time.Now()); err != nil {
		g.log.Warn("maestro REST call refused", "subject", cn, "method", r.Method, "path", r.URL.Path, "reason", "certificate no longer valid", "error", err)
		http.Error(w, "a valid client certificate is required: "+err.Error(), http.StatusUnauthorized)
		return
	}
	id, err := Identity(r)
	if err != nil {
		g.log.Warn("maestro REST call refused", "subject", cn, "method", r.Method, "path", r.URL.Path, "reason", "no workload identity", "error", err)
		http.Error(w, fmt.Sprintf("the client certificate of %q carries no workload identity", cn), http.StatusForbidden)
		return
	}
	access, known := g.rules[id]
	switch {
	case !known:
		g.log.Warn("maestro REST call refused", "identity", id.String(), "method", r.Method, "path", r.URL.Path, "reason", "identity not allowed")
		http.Error(w, fmt.Sprintf("identity %s may not call Maestro's REST API", id), http.StatusForbidden)
	case access == ReadOnly && r.Method != http.MethodGet && r.Method != http.MethodHead:
		g.log.Warn("maestro REST call refused", "identity", id.String(), "method", r.Method, "path", r.URL.Path, "reason", "read-only identity")
		http.Error(w, fmt.Sprintf("identity %s may only read Maestro's REST API", id), http.StatusForbidden)
	default:
		g.proxy.ServeHTTP(w, r)
	}
}

// UpstreamTransport returns the transport to Maestro's REST API: dial connects where the API
// listens (inside a network namespace, or a pod's loopback), tlsConfig verifies Maestro.
func UpstreamTransport(dial func(ctx context.Context, network, addr string) (net.Conn, error), tlsConfig *tls.Config) *http.Transport {
	return &http.Transport{DialContext: dial, TLSClientConfig: tlsConfig, ForceAttemptHTTP2: false,
		MaxIdleConnsPerHost: 16}
}

// ServerLimits are the limits of the REST gate's listener: those of the region's
// request/response APIs (serverlimits.API), as Maestro's REST API neither streams nor watches.
func ServerLimits() serverlimits.HTTP { return serverlimits.API() }

// Server is the gate's HTTPS server on addr with ServerLimits (headers, body, response and idle
// timeouts), logging to log. Serve it on ServerLimits().Listen's listener (capped, TLS) with
// Serve.
func (g *Gate) Server(addr string, tlsConfig *tls.Config, log *slog.Logger) *http.Server {
	srv := ServerLimits().Server(addr, g, tlsConfig)
	srv.ErrorLog = slog.NewLogLogger(log.Handler(), slog.LevelWarn)
	return srv
}
