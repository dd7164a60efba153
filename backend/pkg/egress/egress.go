// Package egress owns the backend's rules for HTTP requests to addresses that someone else
// supplied: the ARM async notification URI (Azure-AsyncNotificationUri). Such a request must not
// become a way into the region's own network (server-side request forgery): it is HTTPS only,
// follows no redirect, and its connection is refused at dial time, after DNS resolution, when
// the address is loopback, private, link-local, CGNAT or otherwise not a public unicast address.
package egress

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strings"
	"syscall"
	"time"

	"github.com/openhcp/openhcp/internal/publicaddr"
)

// ErrRefused is wrapped by every error for a target this package will not reach.
var ErrRefused = errors.New("refused")

// Policy is what a Client may reach. The zero value is the production policy: public unicast
// addresses over HTTPS, verified against the system's roots.
type Policy struct {
	// AllowedCIDRs are prefixes reached even though the rules below refuse them. It is a test
	// and development knob (the local region's notification receivers are on loopback); in
	// production it stays empty.
	AllowedCIDRs []netip.Prefix
	// RootCAs verifies the receiver's certificate; nil means the system's roots.
	RootCAs *x509.CertPool
	// Timeout bounds one request, from the dial to the last byte of the answer (default 10s).
	Timeout time.Duration
}

// CheckAddr returns nil if a connection to addr is allowed (a public unicast address, or one in
// AllowedCIDRs), else an error wrapping ErrRefused that names the rule (publicaddr.Rule).
func (p Policy) CheckAddr(addr netip.Addr) error {
	addr = addr.Unmap().WithZone("")
	for _, allowed := range p.AllowedCIDRs {
		if allowed.Contains(addr) {
			return nil
		}
	}
	if rule := publicaddr.Rule(addr); rule != "" {
		return fmt.Errorf("address %s is %s: %w", addr, rule, ErrRefused)
	}
	return nil
}

// CheckURL refuses what is wrong with a target before any lookup: anything but an absolute
// https URL with a host, or one carrying credentials.
func CheckURL(raw string) (*url.URL, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return nil, fmt.Errorf("parse URL: %w", ErrRefused)
	}
	switch {
	case !strings.EqualFold(u.Scheme, "https"):
		return nil, fmt.Errorf("scheme %q is not https: %w", u.Scheme, ErrRefused)
	case u.Hostname() == "":
		return nil, fmt.Errorf("URL has no host: %w", ErrRefused)
	case u.User != nil:
		return nil, fmt.Errorf("URL carries credentials: %w", ErrRefused)
	}
	return u, nil
}

// control runs after DNS resolution, on the address about to be connected: every address a
// name resolves to is checked as it is dialled, so a name that resolves to a public address at
// one lookup and to a private one at the next (DNS rebinding) is refused at the second.
func (p Policy) control(_, address string, _ syscall.RawConn) error {
	ap, err := netip.ParseAddrPort(address)
	if err != nil {
		return fmt.Errorf("dial %s: %w", address, ErrRefused)
	}
	if err := p.CheckAddr(ap.Addr()); err != nil {
		return fmt.Errorf("dial %s: %w", address, err)
	}
	return nil
}

// Limits of one request; the response body limit is MaxResponseBody.
const (
	dialTimeout           = 5 * time.Second
	tlsHandshakeTimeout   = 5 * time.Second
	responseHeaderTimeout = 10 * time.Second
	maxResponseHeader     = 16 << 10
	// MaxResponseBody is as much of an answer's body as a caller should read.
	MaxResponseBody = 64 << 10
)

// Client returns an HTTP client that applies the policy to every request: HTTPS only, no proxy
// (a proxy would be dialled instead of the target, and the target never checked), no redirect
// (a 3xx is answered as it is: the caller treats it as a failure), the address checked at dial
// time, and bounded timeouts and header size.
func (p Policy) Client() *http.Client {
	timeout := p.Timeout
	if timeout <= 0 {
		timeout = 10 * time.Second
	}
	dialer := &net.Dialer{Timeout: dialTimeout, KeepAlive: 30 * time.Second, Control: p.control}
	transport := &http.Transport{
		Proxy:                  nil,
		DialContext:            dialer.DialContext,
		TLSClientConfig:        &tls.Config{RootCAs: p.RootCAs, MinVersion: tls.VersionTLS12},
		TLSHandshakeTimeout:    tlsHandshakeTimeout,
		ResponseHeaderTimeout:  min(responseHeaderTimeout, timeout),
		MaxResponseHeaderBytes: maxResponseHeader,
		MaxIdleConns:           16,
		IdleConnTimeout:        90 * time.Second,
		ForceAttemptHTTP2:      true,
	}
	return &http.Client{
		Transport: &httpsOnly{next: transport},
		Timeout:   timeout,
		CheckRedirect: func(*http.Request, []*http.Request) error {
			return http.ErrUseLastResponse
		},
	}
}

// httpsOnly refuses a request whose URL is not one CheckURL accepts, whoever built it.
type httpsOnly struct{ next http.RoundTripper }

func (h *httpsOnly) RoundTrip(req *http.Request) (*http.Response, error) {
	if _, err := CheckURL(req.URL.String()); err != nil {
		if req.Body != nil {
			_ = req.Body.Close()
		}
		return nil, err
	}
	return h.next.RoundTrip(req)
}

// ParseCIDRs reads a comma-separated list of CIDR prefixes (a bare address is its own /32 or
// /128); an empty string is an empty list.
func ParseCIDRs(s string) ([]netip.Prefix, error) {
	var out []netip.Prefix
	for _, f := range strings.Split(s, ",") {
		f = strings.TrimSpace(f)
		if f == "" {
			continue
		}
		if !strings.Contains(f, "/") {
			a, err := netip.ParseAddr(f)
			if err != nil {
				return nil, fmt.Errorf("%q is neither a CIDR prefix nor an address", f)
			}
			out = append(out, netip.PrefixFrom(a, a.BitLen()))
			continue
		}
		p, err := netip.ParsePrefix(f)
		if err != nil {
			return nil, fmt.Errorf("%q is not a CIDR prefix: %w", f, err)
		}
		if p != p.Masked() {
			return nil, fmt.Errorf("%q has host bits set; did you mean %s?", f, p.Masked())
		}
		out = append(out, p)
	}
	return out, nil
}
