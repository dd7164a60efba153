package svcmain

import (
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/openhcp/openhcp/internal/serverlimits"
	"github.com/openhcp/openhcp/internal/tlsconfig"
)

// Metrics is a service's metrics listener (--metrics-listen) and its server: GET /healthz and,
// once served, GET /metrics, plus whatever the service adds to Mux (profiles). It is plaintext
// on loopback only; elsewhere (a pod, where the kubelet probes and Prometheus scrapes the pod's
// address) TLS with the service's certificate, re-read when it changes, and no client
// certificate (tlsconfig.Files.Metrics). It runs with serverlimits.Metrics' limits.
type Metrics struct {
	Mux *http.ServeMux
	l   net.Listener
	srv *http.Server
}

// ListenMetrics listens on addr at once, so that a bad address, or a missing certificate off
// loopback, stops start-up with an error naming --metrics-listen.
func ListenMetrics(addr string, files tlsconfig.Files) (*Metrics, error) {
	cfg, err := files.Metrics(addr)
	if err != nil {
		return nil, fmt.Errorf("--metrics-listen %s / --tls-cert: %w", addr, err)
	}
	limits := serverlimits.Metrics()
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("ok")) })
	srv := limits.Server(addr, mux, cfg)
	l, err := limits.Listen(srv)
	if err != nil {
		return nil, fmt.Errorf("--metrics-listen %s: %w", addr, err)
	}
	return &Metrics{Mux: mux, l: l, srv: srv}, nil
}

// Addr is the address it listens on.
func (m *Metrics) Addr() net.Addr { return m.l.Addr() }

// Serve adds reg's GET /metrics and serves in the background until Close; a server that stops
// for another reason is logged.
func (m *Metrics) Serve(reg prometheus.Gatherer, log *slog.Logger) {
	m.Mux.Handle("GET /metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	go func() {
		if err := m.srv.Serve(m.l); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Error("metrics server", "error", err)
		}
	}()
}

// Close stops the server and its listener.
func (m *Metrics) Close() error {
	err := m.srv.Close()
	if cerr := m.l.Close(); err == nil && !errors.Is(cerr, net.ErrClosed) {
		err = cerr
	}
	return err
}
