// Command gateway runs the break-glass gateway: the only path of an SRE into a hosted cluster.
// It serves https://<gateway>/sessions/<id>/<kube path> to SREs' person certificates, reads
// sessions from the admin database, proxies with each session's credential, and audits every
// request. It holds no state of its own, so replicas run side by side. See
// ../../../docs/sre.md#break-glass-gateway.
package main

import (
	"context"
	"crypto/tls"
	"fmt"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/openhcp/openhcp/admin/pkg/audit"
	"github.com/openhcp/openhcp/admin/pkg/gateway"
	"github.com/openhcp/openhcp/admin/pkg/revocation"
	"github.com/openhcp/openhcp/admin/pkg/session"
	"github.com/openhcp/openhcp/internal/pprofmux"
	"github.com/openhcp/openhcp/internal/readyz"
	"github.com/openhcp/openhcp/internal/serverlimits"
	"github.com/openhcp/openhcp/internal/svcmain"
	"github.com/openhcp/openhcp/internal/tlsconfig"
)

type options struct {
	listen         string
	metricsListen  string
	pprofTokenFile string
	serverTLS      tlsconfig.Files
	auditDSN       string
	sessionKeyFile string
	poll           time.Duration
	logLevel       string
}

// parseFlags reads flags, each defaulting to its environment variable. Errors name the flag.
func parseFlags(args []string, getenv func(string) string) (*options, error) {
	fs := svcmain.NewFlags("gateway", getenv)
	o := &options{}
	str := fs.String
	str(&o.listen, "listen", "GATEWAY_LISTEN", "127.0.0.1:8445", "address of the gateway (HTTPS, mutual TLS): https://<this>/sessions/<session ID>/<kube API path>")
	str(&o.metricsListen, "metrics-listen", "GATEWAY_METRICS_LISTEN", "127.0.0.1:9445", "address of /metrics, /healthz and /readyz: plaintext on loopback, elsewhere TLS with --tls-cert (no client certificate)")
	str(&o.pprofTokenFile, "pprof-token-file", "GATEWAY_PPROF_TOKEN_FILE", "", "file (mode 0600) of the token that /debug/pprof/ callers must present as 'Authorization: Bearer <token>' on the metrics listener's loopback; empty serves no profiles")
	str(&o.serverTLS.Cert, "tls-cert", "GATEWAY_TLS_CERT", "", "server certificate (PEM), the gateway workload's service certificate, re-read when it changes (required)")
	str(&o.serverTLS.Key, "tls-key", "GATEWAY_TLS_KEY", "", "server key (PEM) (required)")
	str(&o.serverTLS.CA, "tls-client-ca", "GATEWAY_TLS_CLIENT_CA", "", "the person CA that SRE client certificates chain to (required); a connection without one of its certificates fails the handshake")
	str(&o.auditDSN, "audit-db-dsn", "GATEWAY_AUDIT_DB_DSN", "", "PostgreSQL DSN of the admin database (sessions, revocation list, audit log), as the admin service's login (required; password from PGPASSFILE)")
	str(&o.sessionKeyFile, "session-key-file", "GATEWAY_SESSION_KEY_FILE", "", "the region's session key (32 bytes base64, mode 0600), the same file as the admin API's --session-key-file: it opens the sessions' sealed credentials (required)")
	str(&o.logLevel, "log-level", "GATEWAY_LOG_LEVEL", "info", "debug, info, warn or error")
	fs.Duration(&o.poll, "session-poll", "GATEWAY_SESSION_POLL", gateway.DefaultPoll, "how often the states of sessions with open requests are re-read: a session closed through another replica or the admin API cuts its streams within this")
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	// The gateway knows its callers by their certificates only: there is no plaintext mode.
	if err := svcmain.Require(
		svcmain.Required{Value: o.serverTLS.Cert, Flag: "tls-cert", Env: "GATEWAY_TLS_CERT"},
		svcmain.Required{Value: o.serverTLS.Key, Flag: "tls-key", Env: "GATEWAY_TLS_KEY"},
		svcmain.Required{Value: o.serverTLS.CA, Flag: "tls-client-ca", Env: "GATEWAY_TLS_CLIENT_CA"},
		svcmain.Required{Value: o.auditDSN, Flag: "audit-db-dsn", Env: "GATEWAY_AUDIT_DB_DSN"},
		svcmain.Required{Value: o.sessionKeyFile, Flag: "session-key-file", Env: "GATEWAY_SESSION_KEY_FILE"},
	); err != nil {
		return nil, err
	}
	if err := tlsconfig.RequireDatabaseTLS(o.auditDSN); err != nil {
		return nil, fmt.Errorf("--audit-db-dsn: %w", err)
	}
	if err := svcmain.HostPorts(svcmain.Address{Value: o.listen, Flag: "listen"}, svcmain.Address{Value: o.metricsListen, Flag: "metrics-listen"}); err != nil {
		return nil, err
	}
	if o.poll < 100*time.Millisecond || o.poll > time.Minute {
		return nil, fmt.Errorf("invalid value %s for --session-poll: must be between 100ms and 1m", o.poll)
	}
	if _, err := svcmain.Level(o.logLevel); err != nil {
		return nil, err
	}
	return o, nil
}

func main() { svcmain.Main("gateway", parseFlags, run) }

func run(o *options) error {
	level, _ := svcmain.Level(o.logLevel) // checked by parseFlags
	log := svcmain.Logger(level)

	// Every caller is a person: a connection without a certificate of the person CA fails the
	// handshake.
	apiTLS, err := o.serverTLS.ServerClientAuth(o.listen, tls.RequireAndVerifyClientCert)
	if err != nil {
		return fmt.Errorf("--listen %s: %w", o.listen, err)
	}
	metricsTLS, err := o.serverTLS.Metrics(o.metricsListen)
	if err != nil {
		return fmt.Errorf("--metrics-listen %s: %w", o.metricsListen, err)
	}
	key, err := session.ReadKeyFile(o.sessionKeyFile)
	if err != nil {
		return fmt.Errorf("--session-key-file: %w", err)
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	openCtx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	auditLog, err := audit.Open(openCtx, o.auditDSN)
	if err != nil {
		return fmt.Errorf("--audit-db-dsn: %w", err)
	}
	defer auditLog.Close()
	revocations := revocation.New(auditLog.Pool())
	if err := revocations.Check(openCtx); err != nil {
		return fmt.Errorf("--audit-db-dsn: %w", err)
	}
	sessions := session.New(auditLog.Pool(), key)
	if err := sessions.Check(openCtx); err != nil {
		return fmt.Errorf("--audit-db-dsn: %w", err)
	}
	gw, err := gateway.New(gateway.Config{Sessions: sessions, Revocations: revocations, Audit: auditLog, Logger: log, Poll: o.poll})
	if err != nil {
		return err
	}
	go gw.Run(ctx)

	metricsMux := http.NewServeMux()
	metricsMux.Handle("GET /metrics", gw.MetricsHandler())
	metricsMux.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) { w.Write([]byte("ok\n")) })
	metricsMux.Handle("GET /readyz", readyz.Handler(log, readyz.Check{Name: "admin-database", Func: gw.Ready}))
	pprofmux.Register(metricsMux, o.pprofTokenFile)

	// Watches and exec streams live as long as their session: no write timeout on the gateway
	// listener (the session's expiry bounds every request instead).
	limits := []serverlimits.HTTP{serverlimits.API(), serverlimits.Metrics()}
	limits[0].WriteTimeout = 0
	limits[0].ReadTimeout = 0
	servers := []serverlimits.Served{
		{Limits: limits[0], Server: limits[0].Server(o.listen, gw.Handler(), apiTLS)},
		{Limits: limits[1], Server: limits[1].Server(o.metricsListen, metricsMux, metricsTLS)},
	}
	return serverlimits.ServeHTTP(ctx, log, 30*time.Second, servers...)
}
