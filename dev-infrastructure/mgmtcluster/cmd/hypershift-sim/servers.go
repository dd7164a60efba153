package main

import (
	"fmt"
	"net/http"
	"path/filepath"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/openhcp/openhcp/internal/serverlimits"
	"github.com/openhcp/openhcp/internal/tlsconfig"
)

// The sim's health and metrics listeners are built here, from serverlimits.Metrics() as every
// metrics listener of the region, rather than by controller-runtime (HealthProbeBindAddress,
// metricsserver), whose servers bound only the request headers: a caller trickling a body or
// holding an idle connection kept it for as long as it liked.

// healthServer serves /healthz (live) and /readyz (ready) on addr, each check also at
// /healthz/<name> and /readyz/<name>, as controller-runtime's probe server does.
func healthServer(addr string, live, ready map[string]healthz.Checker) *http.Server {
	mux := http.NewServeMux()
	for path, checks := range map[string]map[string]healthz.Checker{"/healthz": live, "/readyz": ready} {
		h := http.StripPrefix(path, &healthz.Handler{Checks: checks})
		mux.Handle(path, h)
		mux.Handle(path+"/", h)
	}
	return serverlimits.Metrics().Server(addr, mux, nil)
}

// metricsServer serves controller-runtime's registry (the sim's own metrics are registered
// there) at GET /metrics on addr: over TLS with certDir's tls.crt and tls.key, re-read when they
// change, or plaintext without certDir (loopback only; run checks it).
func metricsServer(addr, certDir string) (*http.Server, error) {
	var cfg *tlsconfig.Files
	if certDir != "" {
		cfg = &tlsconfig.Files{Cert: filepath.Join(certDir, "tls.crt"), Key: filepath.Join(certDir, "tls.key")}
	}
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", promhttp.HandlerFor(ctrlmetrics.Registry, promhttp.HandlerOpts{ErrorHandling: promhttp.HTTPErrorOnError}))
	srv := serverlimits.Metrics().Server(addr, mux, nil)
	if cfg != nil {
		tc, err := cfg.Server(addr)
		if err != nil {
			return nil, fmt.Errorf("--metrics-cert-dir: %w", err)
		}
		srv.TLSConfig = tc
	}
	return srv, nil
}

// runnable listens for srv (capped at serverlimits.Metrics().MaxConns, TLS when srv has a TLS
// config) and returns it as a manager runnable, shut down when the manager stops.
func runnable(name string, srv *http.Server) (*manager.Server, error) {
	l, err := serverlimits.Metrics().Listen(srv)
	if err != nil {
		return nil, fmt.Errorf("%s: listen on %s: %w", name, srv.Addr, err)
	}
	grace := 10 * time.Second
	return &manager.Server{Name: name, Server: srv, Listener: l, ShutdownTimeout: &grace}, nil
}
