// Command admin runs the admin API: the SRE surface of a region, on its own mutual-TLS
// listener, every call audited in PostgreSQL. See ../../README.md for flags and
// ../../../docs/sre.md for the API.
package main

import (
	"context"
	"crypto/ed25519"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/openhcp/openhcp/admin/pkg/approval"
	"github.com/openhcp/openhcp/admin/pkg/audit"
	"github.com/openhcp/openhcp/admin/pkg/mgmtclusters"
	"github.com/openhcp/openhcp/admin/pkg/revocation"
	"github.com/openhcp/openhcp/admin/pkg/server"
	"github.com/openhcp/openhcp/admin/pkg/session"
	csv1 "github.com/openhcp/openhcp/cluster-service/api/v1"
	"github.com/openhcp/openhcp/cluster-service/pkg/srestatement"
	"github.com/openhcp/openhcp/internal/csclient"
	"github.com/openhcp/openhcp/internal/docstore/postgres"
	"github.com/openhcp/openhcp/internal/identity"
	"github.com/openhcp/openhcp/internal/pprofmux"
	"github.com/openhcp/openhcp/internal/serverlimits"
	"github.com/openhcp/openhcp/internal/svcmain"
	"github.com/openhcp/openhcp/internal/tlsconfig"
)

type options struct {
	listen         string
	urls           string
	metricsListen  string
	pprofTokenFile string
	serverTLS      tlsconfig.Files
	auditDSN       string
	storeDSN       string
	clusterService string
	csTLS          tlsconfig.Files
	maestroREST    string
	maestroCA      string
	maestroCert    string
	maestroKey     string
	timeout        time.Duration
	logLevel       string
	logDir         string
	// mgmtKubeconfigs are the management clusters' kubeconfigs by shard name.
	mgmtKubeconfigs map[string]string
	breakGlassTTL   server.BreakGlassTTL
	// statementKeyFile signs the statements Cluster Service issues SRE credentials for.
	statementKeyFile string
	// sessionKeyFile seals break-glass sessions' credentials; gatewayURL is where SREs use them.
	sessionKeyFile string
	gatewayURL     string
}

// urlList is --url's URLs, or the --listen address's when --url is empty and --listen names a
// host (not 0.0.0.0 or ::).
func (o *options) urlList() []string {
	if o.urls != "" {
		var out []string
		for _, u := range strings.Split(o.urls, ",") {
			if u = strings.TrimSpace(u); u != "" {
				out = append(out, u)
			}
		}
		return out
	}
	host, _, err := net.SplitHostPort(o.listen)
	if err != nil || host == "" {
		return nil
	}
	if ip := net.ParseIP(host); ip != nil && ip.IsUnspecified() {
		return nil
	}
	return []string{"https://" + o.listen}
}

// parseFlags reads flags, each defaulting to its environment variable. Errors name the flag.
func parseFlags(args []string, getenv func(string) string) (*options, error) {
	fs := svcmain.NewFlags("admin", getenv)
	o := &options{}
	str := fs.String
	str(&o.listen, "listen", "ADMIN_LISTEN", "127.0.0.1:8444", "address of the admin API (HTTPS, mutual TLS)")
	str(&o.pprofTokenFile, "pprof-token-file", "ADMIN_PPROF_TOKEN_FILE", "", "file (mode 0600) of the token that /debug/pprof/ callers must present as 'Authorization: Bearer <token>' on the metrics listener's loopback; empty serves no profiles (docs/security.md)")
	str(&o.urls, "url", "ADMIN_URL", "", "the admin API's URL as SREs reach it, https://host[:port] (comma-separated if several): a mutating call's Origin and every portal form must come from its origin, never from the request's Host (docs/security.md); default https://<--listen>, none when --listen's host is unspecified (0.0.0.0): portal forms are then refused")
	str(&o.metricsListen, "metrics-listen", "ADMIN_METRICS_LISTEN", "127.0.0.1:9444", "address of /metrics: plaintext on loopback, elsewhere TLS with --tls-cert (no client certificate)")
	str(&o.serverTLS.Cert, "tls-cert", "ADMIN_TLS_CERT", "", "server certificate (PEM), re-read when it changes (required)")
	str(&o.serverTLS.Key, "tls-key", "ADMIN_TLS_KEY", "", "server key (PEM) (required)")
	str(&o.serverTLS.CA, "tls-client-ca", "ADMIN_TLS_CLIENT_CA", "", "CA that SRE client certificates chain to (required); a certificate of another CA fails the handshake")
	str(&o.auditDSN, "audit-db-dsn", "ADMIN_AUDIT_DB_DSN", "", "PostgreSQL DSN of the audit log, as a login that may only insert into and read the audit table (required; password from PGPASSFILE)")
	str(&o.storeDSN, "db-dsn", "ADMIN_DB_DSN", "", "PostgreSQL DSN of the ARM document store, as a login outside the store's owner group (postgres.GrantAdminLogin): it reads documents, updates customers' resource documents for day-2 changes and inserts maintenance requests only (required)")
	str(&o.clusterService, "cluster-service", "ADMIN_CLUSTER_SERVICE", "", "Cluster Service gRPC address host:port (required)")
	str(&o.csTLS.CA, "cluster-service-ca", "ADMIN_CLUSTER_SERVICE_CA", "", "CA of Cluster Service's certificate (required)")
	str(&o.csTLS.Cert, "cluster-service-cert", "ADMIN_CLUSTER_SERVICE_CERT", "", "client certificate for Cluster Service, the sre identity (required)")
	str(&o.csTLS.Key, "cluster-service-key", "ADMIN_CLUSTER_SERVICE_KEY", "", "client key for Cluster Service (required)")
	str(&o.maestroREST, "maestro-rest", "ADMIN_MAESTRO_REST", "", "Maestro REST API base URL, https://host:port (optional: without it describe shows no resource bundles)")
	str(&o.maestroCA, "maestro-ca", "ADMIN_MAESTRO_CA", "", "CA of Maestro's REST certificate")
	str(&o.maestroCert, "maestro-cert", "ADMIN_MAESTRO_CERT", "", "client certificate for Maestro's REST API (its gate admits the admin API, read-only, by it); required with --maestro-rest")
	str(&o.maestroKey, "maestro-key", "ADMIN_MAESTRO_KEY", "", "client key for Maestro's REST API")
	str(&o.logLevel, "log-level", "ADMIN_LOG_LEVEL", "info", "debug, info, warn or error")
	str(&o.logDir, "log-dir", "ADMIN_LOG_DIR", "", "directory of the region's service logs (*.log) that must-gather searches for a cluster's IDs (optional; a local region's)")
	var mgmt string
	str(&mgmt, "management-kubeconfigs", "ADMIN_MANAGEMENT_KUBECONFIGS", "", "shard=kubeconfig,… : a read-only kubeconfig per management cluster, for shard health (/readyz) and must-gather's HostedCluster/NodePool objects and events (optional: without it, health is unknown)")
	str(&o.statementKeyFile, "sre-statement-key", "ADMIN_SRE_STATEMENT_KEY", "",
		"Ed25519 private key (PKCS#8 PEM, mode 0600) that signs the statement naming the SRE of each break-glass request and each maintenance request; Cluster Service and the maintenance service verify them with the public key (--sre-statement-public-key) (optional: without it break-glass requests and maintenance writes answer 503)")
	str(&o.sessionKeyFile, "session-key-file", "ADMIN_SESSION_KEY_FILE", "",
		"the region's break-glass session key (32 bytes base64, mode 0600), the same file as the gateway's --session-key-file: it seals each session's cluster credential in the database (optional: without it break-glass requests answer 503)")
	str(&o.gatewayURL, "gateway-url", "ADMIN_GATEWAY_URL", "", "the break-glass gateway's public URL, https://host:port: sessions are used at <it>/sessions/<id> (required with --session-key-file)")
	timeout := fs.FlagSet.Duration("timeout", 30*time.Second, "timeout of each call to another service")
	ttl := server.DefaultBreakGlassTTL()
	fs.DurationVar(&o.breakGlassTTL.Min, "breakglass-ttl-min", ttl.Min, "shortest SRE break-glass credential lifetime")
	fs.DurationVar(&o.breakGlassTTL.Max, "breakglass-ttl-max", ttl.Max, "longest SRE break-glass credential lifetime")
	fs.DurationVar(&o.breakGlassTTL.Default, "breakglass-ttl-default", ttl.Default, "SRE break-glass credential lifetime when the request names none")
	fs.DurationVar(&o.breakGlassTTL.ReadOnlyMax, "breakglass-ttl-read-only-max", ttl.ReadOnlyMax, "longest read-only SRE break-glass credential lifetime (read-only needs no approval, so it is kept short)")
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	o.timeout = *timeout
	var err error
	if o.mgmtKubeconfigs, err = mgmtclusters.ParseKubeconfigs(mgmt); err != nil {
		return nil, fmt.Errorf("invalid value for --management-kubeconfigs: %w", err)
	}
	// The admin API knows its callers by their certificates only: there is no plaintext mode.
	if err := svcmain.Require(
		svcmain.Required{Value: o.serverTLS.Cert, Flag: "tls-cert", Env: "ADMIN_TLS_CERT"},
		svcmain.Required{Value: o.serverTLS.Key, Flag: "tls-key", Env: "ADMIN_TLS_KEY"},
		svcmain.Required{Value: o.serverTLS.CA, Flag: "tls-client-ca", Env: "ADMIN_TLS_CLIENT_CA"},
		svcmain.Required{Value: o.auditDSN, Flag: "audit-db-dsn", Env: "ADMIN_AUDIT_DB_DSN"},
		svcmain.Required{Value: o.storeDSN, Flag: "db-dsn", Env: "ADMIN_DB_DSN"},
		svcmain.Required{Value: o.clusterService, Flag: "cluster-service", Env: "ADMIN_CLUSTER_SERVICE"},
		svcmain.Required{Value: o.csTLS.CA, Flag: "cluster-service-ca", Env: "ADMIN_CLUSTER_SERVICE_CA"},
		svcmain.Required{Value: o.csTLS.Cert, Flag: "cluster-service-cert", Env: "ADMIN_CLUSTER_SERVICE_CERT"},
		svcmain.Required{Value: o.csTLS.Key, Flag: "cluster-service-key", Env: "ADMIN_CLUSTER_SERVICE_KEY"},
	); err != nil {
		return nil, err
	}
	for _, d := range []struct{ val, flag string }{{o.auditDSN, "audit-db-dsn"}, {o.storeDSN, "db-dsn"}} {
		if err := tlsconfig.RequireDatabaseTLS(d.val); err != nil {
			return nil, fmt.Errorf("--%s: %w", d.flag, err)
		}
	}
	if err := svcmain.HostPorts(svcmain.Address{Value: o.listen, Flag: "listen"}, svcmain.Address{Value: o.metricsListen, Flag: "metrics-listen"},
		svcmain.Address{Value: o.clusterService, Flag: "cluster-service"}); err != nil {
		return nil, err
	}
	for _, u := range o.urlList() {
		if !strings.HasPrefix(u, "https://") {
			return nil, fmt.Errorf("invalid value %q for --url: must be an https:// URL", u)
		}
	}
	if o.maestroREST != "" && !strings.HasPrefix(o.maestroREST, "https://") {
		return nil, fmt.Errorf("invalid value %q for --maestro-rest: must be an https:// URL", o.maestroREST)
	}
	if o.maestroREST != "" && (o.maestroCert == "" || o.maestroKey == "") {
		return nil, errors.New("--maestro-rest needs --maestro-cert and --maestro-key: Maestro's REST API admits only known client certificates")
	}
	if o.sessionKeyFile != "" && !strings.HasPrefix(o.gatewayURL, "https://") {
		return nil, fmt.Errorf("invalid value %q for --gateway-url: --session-key-file needs the gateway's https:// URL", o.gatewayURL)
	}
	if o.timeout <= 0 {
		return nil, fmt.Errorf("invalid value %s for --timeout: must be positive", o.timeout)
	}
	if err := o.breakGlassTTL.Validate(); err != nil {
		return nil, fmt.Errorf("--breakglass-ttl-min/max/default/read-only-max: %w", err)
	}
	if _, err := svcmain.Level(o.logLevel); err != nil {
		return nil, err
	}
	return o, nil
}

func main() { svcmain.Main("admin", parseFlags, run) }

func run(o *options) error {
	level, _ := svcmain.Level(o.logLevel) // checked by parseFlags
	log := svcmain.Logger(level)

	// A request without a certificate reaches the handler, which answers 401 (and audits it);
	// a certificate of another CA fails the handshake.
	apiTLS, err := o.serverTLS.ServerClientAuth(o.listen, tls.VerifyClientCertIfGiven)
	if err != nil {
		return fmt.Errorf("--listen %s: %w", o.listen, err)
	}
	metricsTLS, err := o.serverTLS.Metrics(o.metricsListen)
	if err != nil {
		return fmt.Errorf("--metrics-listen %s: %w", o.metricsListen, err)
	}
	// parseFlags requires the TLS files: the admin API never calls Cluster Service in plaintext.
	conn, err := csclient.Dial(o.clusterService, o.csTLS)
	if err != nil {
		return fmt.Errorf("--cluster-service %s: %w", o.clusterService, err)
	}
	defer conn.Close()

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	openCtx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	auditLog, err := audit.Open(openCtx, o.auditDSN)
	if err != nil {
		return fmt.Errorf("--audit-db-dsn: %w", err)
	}
	defer auditLog.Close()
	formKey, err := auditLog.PortalFormKey(openCtx)
	if err != nil {
		return fmt.Errorf("--audit-db-dsn: %w", err)
	}
	go pruneAudit(ctx, auditLog, log)
	revocations := revocation.New(auditLog.Pool())
	if err := revocations.Check(openCtx); err != nil {
		return fmt.Errorf("--audit-db-dsn: %w", err)
	}
	approvals := approval.New(auditLog.Pool())
	if err := approvals.Check(openCtx); err != nil {
		return fmt.Errorf("--audit-db-dsn: %w", err)
	}
	var sessions *session.Store
	if o.sessionKeyFile != "" {
		key, err := session.ReadKeyFile(o.sessionKeyFile)
		if err != nil {
			return fmt.Errorf("--session-key-file: %w", err)
		}
		sessions = session.New(auditLog.Pool(), key)
		if err := sessions.Check(openCtx); err != nil {
			return fmt.Errorf("--audit-db-dsn: %w", err)
		}
	}
	st, err := postgres.Open(openCtx, o.storeDSN, postgres.Options{ReadOnly: true, Logger: log})
	if err != nil {
		return fmt.Errorf("--db-dsn: %w", err)
	}
	defer st.Close()

	var statementKey ed25519.PrivateKey
	if o.statementKeyFile != "" {
		if statementKey, err = srestatement.ReadKey(o.statementKeyFile); err != nil {
			return fmt.Errorf("--sre-statement-key: %w", err)
		}
	}
	cfg := server.Config{
		Audit: auditLog, Revocations: revocations, Store: st, FormKey: formKey,
		Clusters: csv1.NewClustersClient(conn), NodePools: csv1.NewNodePoolsClient(conn), Shards: csv1.NewProvisionShardsClient(conn),
		ExternalAuths: csv1.NewExternalAuthsClient(conn), UpgradePolicies: csv1.NewUpgradePoliciesClient(conn),
		Credentials: csv1.NewCredentialsClient(conn), BreakGlassTTL: o.breakGlassTTL, StatementKey: statementKey, Approvals: approvals,
		Logger: log, Timeout: o.timeout, LogDir: o.logDir, GatewayURL: o.gatewayURL, URLs: o.urlList(),
	}
	if len(cfg.URLs) == 0 {
		log.Warn("no --url and --listen names no host: no origin is the admin API's own, so every portal form and every call with an Origin header is refused", "listen", o.listen)
	}
	if sessions != nil {
		cfg.Sessions = sessions
	}
	if len(o.mgmtKubeconfigs) > 0 {
		mc, err := mgmtclusters.New(o.mgmtKubeconfigs)
		if err != nil {
			return fmt.Errorf("--management-kubeconfigs: %w", err)
		}
		cfg.ManagementClusters = mc
	}
	if o.maestroREST != "" {
		mTLS, err := tlsconfig.Files{CA: o.maestroCA, Cert: o.maestroCert, Key: o.maestroKey}.Expecting(identity.MaestroServer).Client(strings.TrimPrefix(o.maestroREST, "https://"))
		if err != nil {
			return fmt.Errorf("--maestro-ca: %w", err)
		}
		cfg.Maestro = server.MaestroREST{URL: strings.TrimRight(o.maestroREST, "/"),
			Client: &http.Client{Timeout: o.timeout, Transport: &http.Transport{TLSClientConfig: mTLS}}}
	}
	srv, err := server.New(cfg)
	if err != nil {
		return err
	}
	metricsMux := http.NewServeMux()
	metricsMux.Handle("GET /metrics", srv.MetricsHandler())
	metricsMux.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) { w.Write([]byte("ok\n")) })
	// Profiles on the metrics listener only, as every other service of the region: never on the
	// SRE listener, whose callers are people (docs/performance.md, "Profiling").
	pprofmux.Register(metricsMux, o.pprofTokenFile)
	// Limits (timeouts, header size, connection cap): internal/serverlimits, docs/security.md.
	limits := []serverlimits.HTTP{serverlimits.API(), serverlimits.Metrics()}
	// A must-gather may take two --timeout's worth of calls (mustgather.go); its answer must
	// not be cut by the write timeout when --timeout is raised.
	limits[0].WriteTimeout = max(limits[0].WriteTimeout, 2*o.timeout+10*time.Second)
	servers := []serverlimits.Served{
		{Limits: limits[0], Server: limits[0].Server(o.listen, srv.Handler(), apiTLS)},
		{Limits: limits[1], Server: limits[1].Server(o.metricsListen, metricsMux, metricsTLS)},
	}
	return serverlimits.ServeHTTP(ctx, log, 30*time.Second, servers...)
}

// auditPruneEvery is how often the audit log's expired records are deleted.
const auditPruneEvery = time.Hour

// pruneAudit deletes the audit records older than the retention (audit.Log.Prune) now and
// every auditPruneEvery until ctx ends. A failure is logged and retried at the next tick:
// pruning never stands between an admin call and its audit record.
func pruneAudit(ctx context.Context, l *audit.Log, log *slog.Logger) {
	t := time.NewTicker(auditPruneEvery)
	defer t.Stop()
	for {
		pctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
		n, err := l.Prune(pctx)
		cancel()
		switch {
		case err != nil && ctx.Err() == nil:
			log.Error("audit log pruning failed; retrying later", "error", err)
		case n > 0:
			log.Info("audit log pruned", "deleted", n)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}
