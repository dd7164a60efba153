// Command maestro-gate runs beside the Maestro server in its pod (maestro/deploy/server) and is
// the only way into it: Maestro binds every port to the pod's loopback, and the gate serves the
// REST API with mutual TLS and an identity allow-list (package maestrogate), forwards the gRPC
// and health ports as they are (gRPC with --client-cert-forward: at its cap it keeps only proven
// connections), and serves Maestro's plaintext /metrics over TLS (--metrics).
// The pinned Maestro has no client authentication on its REST API (docs/security.md).
package main

import (
	"context"
	"crypto/tls"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/openhcp/openhcp/dev-infrastructure/mgmtcluster/maestrogate"
	"github.com/openhcp/openhcp/internal/serverlimits"
	"github.com/openhcp/openhcp/internal/tlsconfig"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "maestro-gate:", err)
		os.Exit(1)
	}
}

type config struct {
	listen, upstream, upstreamCA string
	tls                          tlsconfig.Files
	rules                        maestrogate.Rules
	forwards                     map[string]forward // by listen address
	// metricsListen serves GET /metrics of metricsTarget (Maestro's plaintext metrics on the
	// pod's loopback) over TLS with the gate's certificate.
	metricsListen, metricsTarget string
}

// forward is one byte-for-byte forward.
type forward struct {
	target string // loopback host:port
	// clientCert: the target is a TLS server that requires a client certificate of its CA, so
	// at the cap a connection it has not proven (maestrogate.ClientCertProof) makes room.
	clientCert bool
}

// limits are the forward's limits.
func (f forward) limits() maestrogate.ForwardLimits {
	if f.clientCert {
		return maestrogate.InboundClientCertForwardLimits()
	}
	return maestrogate.InboundForwardLimits()
}

func parse(args []string) (config, error) {
	fs := flag.NewFlagSet("maestro-gate", flag.ContinueOnError)
	var c config
	var allow, plainForward, clientCertForward, metrics string
	fs.StringVar(&c.listen, "listen", ":8000", "address of the REST gate (HTTPS, client certificate required)")
	fs.StringVar(&c.tls.Cert, "tls-cert", "", "server certificate (PEM), re-read when it changes (required)")
	fs.StringVar(&c.tls.Key, "tls-key", "", "server key (PEM) (required)")
	fs.StringVar(&c.tls.CA, "client-ca", "", "CA that client certificates must chain to (required)")
	fs.StringVar(&c.upstream, "upstream", "https://127.0.0.1:18000", "Maestro's REST API on the pod's loopback")
	fs.StringVar(&c.upstreamCA, "upstream-ca", "", "CA of Maestro's REST certificate (required)")
	fs.StringVar(&allow, "allow", "", "workload SPIFFE IDs (the client certificate's URI SAN) and what each may do: spiffe://<trust domain>/ns/<ns>/sa/<sa>=read-write|read-only,… (required)")
	fs.StringVar(&plainForward, "forward", "", "listen=target,… byte-for-byte forwards (health); targets must be loopback; at the cap a caller silent for a second makes room")
	fs.StringVar(&clientCertForward, "client-cert-forward", "", "listen=target,… byte-for-byte forwards to a TLS server that requires a client certificate (Maestro's gRPC); targets must be loopback; at the cap a connection the server has not yet answered twice with application data makes room (docs/security.md, \"Server limits\")")
	fs.StringVar(&metrics, "metrics", "", "listen=target: GET /metrics of Maestro's plaintext metrics on the pod's loopback (target), served over TLS with --tls-cert; no client certificate needed (docs/security.md, \"Metrics endpoints\")")
	if err := fs.Parse(args); err != nil {
		return c, err
	}
	if c.tls.Cert == "" || c.tls.Key == "" || c.tls.CA == "" || c.upstreamCA == "" {
		return c, errors.New("--tls-cert, --tls-key, --client-ca and --upstream-ca are required")
	}
	var err error
	if c.rules, err = maestrogate.ParseRules(allow); err != nil {
		return c, fmt.Errorf("--allow: %w", err)
	}
	u, err := url.Parse(c.upstream)
	if err != nil || u.Scheme != "https" || !isLoopback(u.Host) {
		return c, fmt.Errorf("--upstream %q: want https://<loopback>:<port>", c.upstream)
	}
	if metrics != "" {
		from, to, ok := strings.Cut(metrics, "=")
		if !ok || from == "" || !isLoopback(to) {
			return c, fmt.Errorf("--metrics %q: want listen=<loopback>:<port>", metrics)
		}
		c.metricsListen, c.metricsTarget = from, to
	}
	c.forwards = map[string]forward{}
	for _, fl := range []struct {
		name, value string
		clientCert  bool
	}{{"--forward", plainForward, false}, {"--client-cert-forward", clientCertForward, true}} {
		for _, f := range strings.Split(fl.value, ",") {
			if f = strings.TrimSpace(f); f == "" {
				continue
			}
			from, to, ok := strings.Cut(f, "=")
			if !ok || !isLoopback(to) {
				return c, fmt.Errorf("%s %q: want listen=<loopback>:<port>", fl.name, f)
			}
			if _, dup := c.forwards[from]; dup {
				return c, fmt.Errorf("%s %q: %s is forwarded twice", fl.name, f, from)
			}
			c.forwards[from] = forward{target: to, clientCert: fl.clientCert}
		}
	}
	return c, nil
}

func isLoopback(hostport string) bool {
	host, _, err := net.SplitHostPort(hostport)
	if err != nil {
		return false
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

func run(ctx context.Context, args []string) error {
	c, err := parse(args)
	if err != nil {
		return err
	}
	log := slog.New(slog.NewJSONHandler(os.Stderr, nil))
	for from, f := range c.forwards {
		l, err := net.Listen("tcp", from)
		if err != nil {
			return fmt.Errorf("forward %s: %w", from, err)
		}
		defer l.Close()
		go maestrogate.Forward(l, f.limits(), func(ctx context.Context) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, "tcp", f.target)
		}, log)
	}
	if c.metricsListen != "" {
		metricsTLS, err := tlsconfig.Files{Cert: c.tls.Cert, Key: c.tls.Key}.Metrics(c.metricsListen)
		if err != nil {
			return fmt.Errorf("--metrics: %w", err)
		}
		srv := metricsServer(c.metricsTarget, metricsTLS, log)
		srv.Addr = c.metricsListen
		// Capped, making room for a caller at the cap (serverlimits.HTTP.Listen), TLS when set.
		l, err := serverlimits.Metrics().Listen(srv)
		if err != nil {
			return fmt.Errorf("--metrics %s: %w", c.metricsListen, err)
		}
		go func() {
			<-ctx.Done()
			_ = srv.Close()
		}()
		go func() {
			if err := srv.Serve(l); err != nil && !errors.Is(err, http.ErrServerClosed) {
				log.Error("metrics server stopped", "error", err)
			}
		}()
	}
	serverTLS, err := c.tls.Server(c.listen)
	if err != nil {
		return fmt.Errorf("--tls-cert: %w", err)
	}
	u, _ := url.Parse(c.upstream)
	upstreamTLS, err := tlsconfig.Files{CA: c.upstreamCA}.Client(u.Host)
	if err != nil {
		return fmt.Errorf("--upstream-ca: %w", err)
	}
	var d net.Dialer
	gate := maestrogate.New(c.rules, u, maestrogate.UpstreamTransport(d.DialContext, upstreamTLS), log)
	srv := gate.Server(c.listen, serverTLS, log)
	l, err := maestrogate.ServerLimits().Listen(srv)
	if err != nil {
		return fmt.Errorf("--listen: %w", err)
	}
	go func() {
		<-ctx.Done()
		shutdown, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = srv.Shutdown(shutdown)
	}()
	log.Info("maestro gate serving", "listen", c.listen, "upstream", c.upstream, "allow", c.rules.String())
	if err := srv.Serve(l); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// metricsServer answers GET /metrics with Maestro's metrics from target (plaintext, the pod's
// loopback), and nothing else; cfg is its TLS (nil: plaintext, on loopback only).
func metricsServer(target string, cfg *tls.Config, log *slog.Logger) *http.Server {
	proxy := httputil.NewSingleHostReverseProxy(&url.URL{Scheme: "http", Host: target})
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", proxy)
	srv := serverlimits.Metrics().Server("", mux, cfg)
	srv.ErrorLog = slog.NewLogLogger(log.Handler(), slog.LevelWarn)
	return srv
}
