// Command frontend runs the ARM resource provider: the ARM API on --listen and Prometheus
// metrics on --metrics-listen. See ../../README.md for flags and their environment variables.
package main

import (
	"context"
	"crypto/tls"
	"fmt"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	csv1 "github.com/openhcp/openhcp/cluster-service/api/v1"
	"github.com/openhcp/openhcp/frontend/pkg/clusterstatus"
	"github.com/openhcp/openhcp/frontend/pkg/frontend"
	"github.com/openhcp/openhcp/frontend/pkg/rolesets"
	"github.com/openhcp/openhcp/internal/armdoc"
	"github.com/openhcp/openhcp/internal/csclient"
	"github.com/openhcp/openhcp/internal/docstore/storeconfig"
	"github.com/openhcp/openhcp/internal/pprofmux"
	"github.com/openhcp/openhcp/internal/serverlimits"
	"github.com/openhcp/openhcp/internal/svcmain"
	"github.com/openhcp/openhcp/internal/tlsconfig"
)

type options struct {
	listen, metricsListen string
	pprofTokenFile        string
	store                 storeconfig.Flags
	clusterService        string
	location              string
	serverTLS             tlsconfig.Files
	csTLS                 tlsconfig.Files
	retryAfter            time.Duration
	csTimeout             time.Duration
	listItemsBytes        int
	logLevel              string
	roleSetsFile          string
	clientSubjects        string
}

// parseFlags reads flags, each defaulting to its environment variable. Errors name the flag.
func parseFlags(args []string, getenv func(string) string) (*options, error) {
	fs := svcmain.NewFlags("frontend", getenv)
	o := &options{}
	str, dur := fs.String, fs.Duration
	str(&o.listen, "listen", "FRONTEND_LISTEN", "127.0.0.1:8443", "address of the ARM API")
	str(&o.pprofTokenFile, "pprof-token-file", "FRONTEND_PPROF_TOKEN_FILE", "", "file (mode 0600) of the token that /debug/pprof/ callers must present as 'Authorization: Bearer <token>' on the metrics listener's loopback; empty serves no profiles (docs/security.md)")
	str(&o.metricsListen, "metrics-listen", "FRONTEND_METRICS_LISTEN", "127.0.0.1:9443", "address of /metrics: plaintext on loopback, elsewhere TLS with --tls-cert (no client certificate)")
	o.store.Register(fs.FlagSet, "FRONTEND", getenv)
	str(&o.clusterService, "cluster-service", "FRONTEND_CLUSTER_SERVICE", "", "Cluster Service gRPC address host:port (required)")
	str(&o.location, "location", "FRONTEND_LOCATION", "", "Azure region served, e.g. eastus (required)")
	str(&o.serverTLS.Cert, "tls-cert", "FRONTEND_TLS_CERT", "", "server certificate (PEM), re-read when it changes; without it the listeners must be loopback; with it --tls-client-ca and --arm-client-subjects are required")
	str(&o.serverTLS.Key, "tls-key", "FRONTEND_TLS_KEY", "", "server key (PEM)")
	str(&o.serverTLS.CA, "tls-client-ca", "FRONTEND_TLS_CLIENT_CA", "", "CA that ARM's client certificate must chain to (mutual TLS); a certificate of another CA fails the handshake")
	str(&o.csTLS.CA, "cluster-service-ca", "FRONTEND_CLUSTER_SERVICE_CA", "", "CA of Cluster Service's certificate; without TLS files the address must be loopback")
	str(&o.csTLS.Cert, "cluster-service-cert", "FRONTEND_CLUSTER_SERVICE_CERT", "", "client certificate for Cluster Service (PEM)")
	str(&o.csTLS.Key, "cluster-service-key", "FRONTEND_CLUSTER_SERVICE_KEY", "", "client key for Cluster Service (PEM)")
	dur(&o.retryAfter, "retry-after", "FRONTEND_RETRY_AFTER", 5*time.Second, "Retry-After advised on async responses")
	dur(&o.csTimeout, "cluster-service-timeout", "FRONTEND_CLUSTER_SERVICE_TIMEOUT", 30*time.Second, "timeout of each Cluster Service call")
	fs.Int(&o.listItemsBytes, "list-cache-bytes", "FRONTEND_LIST_CACHE_BYTES", frontend.DefaultListItemsBytes, "bytes of rendered clusters kept for later lists (docs/api.md); items past it are dropped and rendered again")
	str(&o.logLevel, "log-level", "FRONTEND_LOG_LEVEL", "info", "debug, info, warn or error")
	str(&o.roleSetsFile, "operator-identity-roles-file", "FRONTEND_OPERATOR_IDENTITY_ROLES_FILE", "", "JSON catalogue of hcpOperatorIdentityRoleSets, against which a cluster's operator names are checked (format: docs/api.md); default: the built-in one")
	str(&o.clientSubjects, "arm-client-subjects", "FRONTEND_ARM_CLIENT_SUBJECTS", "", "comma-separated subject common names of the client certificates allowed to call the ARM API (ARM's); required with --tls-client-ca")
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	if err := svcmain.Require(
		svcmain.Required{Value: o.clusterService, Flag: "cluster-service", Env: "FRONTEND_CLUSTER_SERVICE"},
		svcmain.Required{Value: o.location, Flag: "location", Env: "FRONTEND_LOCATION"},
	); err != nil {
		return nil, err
	}
	if err := o.store.Validate(); err != nil {
		return nil, err
	}
	if err := svcmain.HostPorts(svcmain.Address{Value: o.listen, Flag: "listen"}, svcmain.Address{Value: o.metricsListen, Flag: "metrics-listen"},
		svcmain.Address{Value: o.clusterService, Flag: "cluster-service"}); err != nil {
		return nil, err
	}
	if o.retryAfter < time.Second {
		return nil, fmt.Errorf("invalid value %s for --retry-after: at least 1s", o.retryAfter)
	}
	if o.csTimeout <= 0 || o.csTimeout >= armdoc.NotFoundGrace {
		// A call still running when the backend's grace ends would see its create failed, or
		// its delete sent again, under it.
		return nil, fmt.Errorf("invalid value %s for --cluster-service-timeout: must be positive and under %s, the backend's grace for a call the frontend has recorded but not made", o.csTimeout, armdoc.NotFoundGrace)
	}
	if o.listItemsBytes <= 0 {
		return nil, fmt.Errorf("invalid value %d for --list-cache-bytes: must be positive", o.listItemsBytes)
	}
	if o.clientSubjects != "" && o.serverTLS.CA == "" {
		return nil, fmt.Errorf("--arm-client-subjects needs --tls-client-ca: subjects can only be checked on verified client certificates")
	}
	// Zero trust: once the ARM API speaks TLS, only ARM's certificate gets in.
	if o.serverTLS.Enabled() && (o.serverTLS.CA == "" || strings.TrimSpace(o.clientSubjects) == "") {
		return nil, fmt.Errorf("--tls-cert needs --tls-client-ca and --arm-client-subjects: the ARM API admits only ARM's client certificate")
	}
	if _, err := svcmain.Level(o.logLevel); err != nil {
		return nil, err
	}
	return o, nil
}

func main() { svcmain.Main("frontend", parseFlags, run) }

func run(o *options) error {
	level, _ := svcmain.Level(o.logLevel) // checked by parseFlags
	log := svcmain.Logger(level)

	// A request without a certificate reaches middlewareClientCertificate, which answers 401
	// with an ARM error body (and lets /healthz through); a certificate of another CA fails the
	// handshake.
	apiTLS, err := o.serverTLS.ServerClientAuth(o.listen, tls.VerifyClientCertIfGiven)
	if err != nil {
		return fmt.Errorf("--listen %s: %w", o.listen, err)
	}
	metricsTLS, err := o.serverTLS.Metrics(o.metricsListen)
	if err != nil {
		return fmt.Errorf("--metrics-listen %s: %w", o.metricsListen, err)
	}
	conn, err := csclient.Dial(o.clusterService, o.csTLS)
	if err != nil {
		return fmt.Errorf("--cluster-service %s: %w", o.clusterService, err)
	}
	defer conn.Close()

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	openCtx, cancel := context.WithTimeout(ctx, 30*time.Second)
	st, err := o.store.Open(openCtx, log)
	cancel()
	if err != nil {
		return err
	}
	defer st.Close()

	var roleSets *rolesets.Catalogue
	if o.roleSetsFile != "" {
		if roleSets, err = rolesets.Load(o.roleSetsFile); err != nil {
			return fmt.Errorf("--operator-identity-roles-file: %w", err)
		}
	}
	var subjects []string
	for _, cn := range strings.Split(o.clientSubjects, ",") {
		if cn = strings.TrimSpace(cn); cn != "" {
			subjects = append(subjects, cn)
		}
	}
	// GETs and lists read Cluster Service's status from its WatchClusters stream, kept here;
	// until the stream has caught up (and whenever it breaks) they call Cluster Service.
	clusters := csv1.NewClustersClient(conn)
	statuses := clusterstatus.New()
	go statuses.Follow(ctx, log, clusterstatus.WatchOf(clusters))
	srv, err := frontend.NewServer(frontend.Config{
		Store:                 st,
		Clusters:              clusters,
		ClusterStatus:         statuses,
		NodePools:             csv1.NewNodePoolsClient(conn),
		ExternalAuths:         csv1.NewExternalAuthsClient(conn),
		Credentials:           csv1.NewCredentialsClient(conn),
		Versions:              csv1.NewVersionsClient(conn),
		Location:              o.location,
		Logger:                log,
		RetryAfter:            o.retryAfter,
		ClusterServiceTimeout: o.csTimeout,
		ListItemsBytes:        o.listItemsBytes,
		Ready:                 st.Ping,
		RoleSets:              roleSets,
		ClientSubjects:        subjects,
	})
	if err != nil {
		return err
	}
	handshakes, err := tlsconfig.NewHandshakeMetric(srv.Registerer(), "frontend")
	if err != nil {
		return fmt.Errorf("register the TLS handshake metric: %w", err)
	}
	handshakes.Count(apiTLS, "arm")
	handshakes.Count(metricsTLS, "metrics")
	// Limits (timeouts, header size, connection cap): internal/serverlimits, docs/security.md.
	limits := []serverlimits.HTTP{serverlimits.API(), serverlimits.Metrics()}
	servers := []serverlimits.Served{
		{Limits: limits[0], Server: limits[0].Server(o.listen, srv.Handler(), apiTLS)},
		{Limits: limits[1], Server: limits[1].Server(o.metricsListen, metricsMux(srv, o.pprofTokenFile), metricsTLS)},
	}
	return serverlimits.ServeHTTP(ctx, log, 30*time.Second, servers...)
}

func metricsMux(srv *frontend.Server, pprofTokenFile string) http.Handler {
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", srv.MetricsHandler())
	pprofmux.Register(mux, pprofTokenFile)
	return mux
}
