// Package pprofmux serves the Go runtime profiles (net/http/pprof) on a service's metrics mux.
// It is the one place that decides which profile routes a service exposes and who may read
// them; frontend, backend, admin and Cluster Service call Register on the mux of their metrics
// listener and nowhere else, so the profiles are never reachable on the ARM, gRPC or public
// listener (docs/performance.md, "Profiling"; docs/security.md, "Profiles").
package pprofmux

import (
	"crypto/rand"
	"crypto/subtle"
	"encoding/hex"
	"fmt"
	"net"
	"net/http"
	"net/http/pprof"
	"os"
	"strings"
	"time"
)

// Register adds /debug/pprof/ (the index and every named profile: heap, goroutine, allocs,
// block, mutex, threadcreate), /debug/pprof/profile (CPU, ?seconds=N), /debug/pprof/trace,
// /debug/pprof/cmdline and /debug/pprof/symbol to mux, each served only on loopback and only to
// a caller presenting the token of tokenFile (Authorize). Profiles show every goroutine's stack
// and the command line, and a CPU profile or a trace costs the service CPU, so they are a door
// like any other: an empty tokenFile serves none at all.
func Register(mux *http.ServeMux, tokenFile string) {
	if tokenFile == "" {
		return
	}
	for _, r := range []struct {
		pattern string
		h       http.HandlerFunc
	}{
		{"GET /debug/pprof/", pprof.Index},
		{"GET /debug/pprof/cmdline", pprof.Cmdline},
		{"GET /debug/pprof/profile", pprof.Profile},
		{"GET /debug/pprof/symbol", pprof.Symbol},
		{"POST /debug/pprof/symbol", pprof.Symbol},
		{"GET /debug/pprof/trace", pprof.Trace},
	} {
		mux.Handle(r.pattern, loopbackOnly(withToken(tokenFile, r.h)))
	}
}

// TokenHeader carries the profile token: "Authorization: Bearer <token>".
const TokenHeader = "Authorization"

// Authorize adds the token of tokenFile to a request for a profile.
func Authorize(r *http.Request, tokenFile string) error {
	tok, err := readToken(tokenFile)
	if err != nil {
		return err
	}
	r.Header.Set(TokenHeader, "Bearer "+tok)
	return nil
}

// Client is an HTTP client whose requests carry the token of tokenFile.
func Client(tokenFile string, timeout time.Duration) *http.Client {
	return &http.Client{Timeout: timeout, Transport: tokenTransport{file: tokenFile, next: http.DefaultTransport}}
}

type tokenTransport struct {
	file string
	next http.RoundTripper
}

func (t tokenTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	if err := Authorize(r, t.file); err != nil {
		return nil, err
	}
	return t.next.RoundTrip(r)
}

// WriteTokenFile writes a new random token to path (mode 0600), for a service's
// --pprof-token-file and whoever may read its profiles.
func WriteTokenFile(path string) error {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		return fmt.Errorf("profile token: %w", err)
	}
	if err := os.WriteFile(path, []byte(hex.EncodeToString(b)+"\n"), 0o600); err != nil {
		return fmt.Errorf("profile token: %w", err)
	}
	return nil
}

func readToken(path string) (string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return "", fmt.Errorf("profile token: %w", err)
	}
	tok := strings.TrimSpace(string(b))
	if len(tok) < 16 {
		return "", fmt.Errorf("profile token %s: shorter than 16 characters", path)
	}
	return tok, nil
}

// withToken serves h only to a request carrying the file's token. The file is read on every
// request, so a new token takes effect at once.
func withToken(tokenFile string, h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		want, err := readToken(tokenFile)
		got, ok := strings.CutPrefix(r.Header.Get(TokenHeader), "Bearer ")
		if err != nil || !ok || subtle.ConstantTimeCompare([]byte(got), []byte(want)) != 1 {
			w.Header().Set("WWW-Authenticate", `Bearer realm="profiles"`)
			http.Error(w, "profiles need the service's profile token (--pprof-token-file; docs/security.md)", http.StatusUnauthorized)
			return
		}
		h(w, r)
	}
}

func loopbackOnly(h http.HandlerFunc) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if a, ok := r.Context().Value(http.LocalAddrContextKey).(net.Addr); !ok || !isLoopback(a) {
			http.Error(w, "profiles are served on loopback only: use kubectl port-forward, or the local region's metrics address (docs/security.md)", http.StatusForbidden)
			return
		}
		h(w, r)
	})
}

func isLoopback(a net.Addr) bool {
	if t, ok := a.(*net.TCPAddr); ok {
		return t.IP.IsLoopback()
	}
	host, _, err := net.SplitHostPort(a.String())
	if err != nil {
		return false
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
