// Package pprofmux serves the Go runtime profiles (net/http/pprof) on a service's metrics mux.
// It is the one place that decides which profile routes a service exposes and who may read
// them; frontend, backend, admin and Cluster Service call Register on the mux of their metrics
// listener and nowhere else, so the profiles are never reachable on the ARM, gRPC or public
// listener (docs/performance.md, "Profiling"; docs/security.md, "Profiles").
package pprofmux

import (
	"net"
	"net/http"
	"net/http/pprof"
)

// Register adds /debug/pprof/ (the index and every named profile: heap, goroutine, allocs,
// block, mutex, threadcreate), /debug/pprof/profile (CPU, ?seconds=N), /debug/pprof/trace,
// /debug/pprof/cmdline and /debug/pprof/symbol to mux, each served only on loopback
// (loopbackOnly).
func Register(mux *http.ServeMux) {
	mux.Handle("GET /debug/pprof/", loopbackOnly(pprof.Index))
	mux.Handle("GET /debug/pprof/cmdline", loopbackOnly(pprof.Cmdline))
	mux.Handle("GET /debug/pprof/profile", loopbackOnly(pprof.Profile))
	mux.Handle("GET /debug/pprof/symbol", loopbackOnly(pprof.Symbol))
	mux.Handle("POST /debug/pprof/symbol", loopbackOnly(pprof.Symbol))
	mux.Handle("GET /debug/pprof/trace", loopbackOnly(pprof.Trace))
}

// loopbackOnly serves h only to connections that reached the listener at a loopback address.
// The metrics listener is plaintext on loopback and TLS without client certificates
// elsewhere, so a profile (memory contents, command line, CPU time on demand) has no caller
// identity to check; what it has is the address: on loopback the caller is on the machine (the
// local region) or came through kubectl port-forward, which Kubernetes RBAC authorizes
// (pods/portforward). A connection to a pod's or node's address, which any pod of the cluster
// or a scraper can open, gets 403.
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
