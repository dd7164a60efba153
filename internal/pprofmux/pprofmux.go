// Package pprofmux serves the Go runtime profiles (net/http/pprof) on a service's metrics mux.
// It is the one place that decides which profile routes a service exposes; frontend, backend and
// Cluster Service call Register on the mux of their metrics listener and nowhere else, so the
// profiles are never reachable on the ARM, gRPC or public listener (docs/performance.md,
// "Profiling").
package pprofmux

import (
	"net/http"
	"net/http/pprof"
)

// Register adds /debug/pprof/ (the index and every named profile: heap, goroutine, allocs,
// block, mutex, threadcreate), /debug/pprof/profile (CPU, ?seconds=N), /debug/pprof/trace,
// /debug/pprof/cmdline and /debug/pprof/symbol to mux.
func Register(mux *http.ServeMux) {
	mux.HandleFunc("GET /debug/pprof/", pprof.Index)
	mux.HandleFunc("GET /debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("GET /debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("GET /debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("POST /debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("GET /debug/pprof/trace", pprof.Trace)
}
