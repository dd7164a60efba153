// Command backend drives OpenHCP's asynchronous ARM operations to a terminal state.
package main

import (
	"context"
	"crypto/x509"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"strconv"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/openhcp/openhcp/backend/pkg/controller"
	"github.com/openhcp/openhcp/backend/pkg/egress"
	"github.com/openhcp/openhcp/backend/pkg/leader"
	"github.com/openhcp/openhcp/backend/pkg/metrics"
	csv1 "github.com/openhcp/openhcp/cluster-service/api/v1"
	"github.com/openhcp/openhcp/internal/csclient"
	"github.com/openhcp/openhcp/internal/docstore/storeconfig"
	"github.com/openhcp/openhcp/internal/pprofmux"
	"github.com/openhcp/openhcp/internal/svcmain"
	"github.com/openhcp/openhcp/internal/tlsconfig"
)

type flags struct {
	store          storeconfig.Flags
	clusterService string
	metricsListen  string
	pprofTokenFile string
	metricsTLS     tlsconfig.Files
	csTLS          tlsconfig.Files
	cfg            controller.Config
	statusMode     string
	leaderElect    bool
	lease          leader.Config
	// notifyAllowedCIDRs and notifyCA are the notification policy's test and development
	// knobs (applyNotificationFlags).
	notifyAllowedCIDRs string
	notifyCA           string
}

// parseFlags reads flags, each defaulting to its environment variable. Errors name the flag.
func parseFlags(args []string, getenv func(string) string) (flags, error) {
	fs := svcmain.NewFlags("backend", getenv)
	var f flags
	f.store.Register(fs.FlagSet, "BACKEND", getenv)
	str, dur := fs.String, fs.Duration
	str(&f.clusterService, "cluster-service", "BACKEND_CLUSTER_SERVICE", "127.0.0.1:8090", "Cluster Service gRPC address")
	str(&f.pprofTokenFile, "pprof-token-file", "BACKEND_PPROF_TOKEN_FILE", "", "file (mode 0600) of the token that /debug/pprof/ callers must present as 'Authorization: Bearer <token>' on the metrics listener's loopback; empty serves no profiles (docs/security.md)")
	str(&f.metricsListen, "metrics-listen", "BACKEND_METRICS_LISTEN", "127.0.0.1:8081", "address for /metrics and /healthz: plaintext on loopback, elsewhere TLS with --tls-cert (no client certificate), as a pod's must be for its probes and Prometheus")
	str(&f.metricsTLS.Cert, "tls-cert", "BACKEND_TLS_CERT", "", "server certificate (PEM) of --metrics-listen, re-read when it changes; required when that address is not loopback")
	str(&f.metricsTLS.Key, "tls-key", "BACKEND_TLS_KEY", "", "server key (PEM) of --metrics-listen")
	str(&f.csTLS.CA, "cluster-service-ca", "BACKEND_CLUSTER_SERVICE_CA", "", "CA file that verifies Cluster Service; with the cert flags enables TLS")
	str(&f.csTLS.Cert, "cluster-service-cert", "BACKEND_CLUSTER_SERVICE_CERT", "", "client certificate for Cluster Service (the backend identity; re-read when it changes)")
	str(&f.csTLS.Key, "cluster-service-key", "BACKEND_CLUSTER_SERVICE_KEY", "", "client key for Cluster Service")
	dur(&f.cfg.ResyncPeriod, "resync-period", "BACKEND_RESYNC_PERIOD", 30*time.Second, "how often every active operation is rechecked without events")
	dur(&f.cfg.CreateDeadline, "create-deadline", "BACKEND_CREATE_DEADLINE", 60*time.Minute, "create/update operations fail after this long")
	dur(&f.cfg.DeleteDeadline, "delete-deadline", "BACKEND_DELETE_DEADLINE", 12*time.Hour, "delete operations fail after this long")
	fs.Int(&f.cfg.Workers, "workers", "BACKEND_WORKERS", 4, "operations reconciled at once")
	str(&f.statusMode, "status-mode", "BACKEND_STATUS_MODE", "watch", "watch: follow the store's change feed and Cluster Service's watch stream; poll: list active operations every --poll-interval and ask Cluster Service for each, as the ARO HCP backend did")
	dur(&f.cfg.PollInterval, "poll-interval", "BACKEND_POLL_INTERVAL", 10*time.Second, "how often poll mode lists active operations")
	fs.Bool(&f.leaderElect, "leader-elect", "BACKEND_LEADER_ELECT", true, "take the leader lease in the document store before processing, so only one replica writes")
	dur(&f.lease.LeaseDuration, "lease-duration", "BACKEND_LEASE_DURATION", 15*time.Second, "a replica takes over the lease after seeing no renewal for this long; failover time after a crash")
	str(&f.lease.Holder, "replica-id", "BACKEND_REPLICA_ID", svcmain.ReplicaID("backend"), "this replica's name in the leader lease (default hostname-pid)")
	dur(&f.cfg.NotifyGiveUp, "notification-give-up", "BACKEND_NOTIFICATION_GIVE_UP", time.Hour, "how long after an operation ended its async notification is retried")
	str(&f.notifyAllowedCIDRs, "notification-allowed-cidrs", "BACKEND_NOTIFICATION_ALLOWED_CIDRS", "", "TEST AND DEVELOPMENT ONLY: comma-separated CIDR prefixes (or addresses) that async notifications may reach although they are loopback, private or link-local; empty (the default) refuses every such address")
	str(&f.notifyCA, "notification-ca", "BACKEND_NOTIFICATION_CA", "", "TEST AND DEVELOPMENT ONLY: CA file (PEM) that verifies notification receivers instead of the system's roots")
	if err := fs.Parse(args); err != nil {
		return flags{}, err
	}
	f.cfg.StatusMode = controller.StatusMode(f.statusMode)
	if err := f.store.Validate(); err != nil {
		return flags{}, err
	}
	switch {
	case f.cfg.ResyncPeriod < time.Second:
		return flags{}, errors.New("--resync-period must be at least 1s")
	case f.cfg.Workers < 1:
		return flags{}, errors.New("--workers must be at least 1")
	case f.cfg.CreateDeadline <= 0 || f.cfg.DeleteDeadline <= 0:
		return flags{}, errors.New("--create-deadline and --delete-deadline must be positive")
	case f.cfg.StatusMode != controller.ModeWatch && f.cfg.StatusMode != controller.ModePoll:
		return flags{}, errors.New("--status-mode must be watch or poll, not " + strconv.Quote(f.statusMode))
	case f.cfg.PollInterval < time.Second:
		return flags{}, errors.New("--poll-interval must be at least 1s")
	case f.lease.LeaseDuration < 2*time.Second:
		return flags{}, errors.New("--lease-duration must be at least 2s")
	case f.lease.Holder == "":
		return flags{}, errors.New("--replica-id must not be empty")
	case f.cfg.NotifyGiveUp <= 0:
		return flags{}, errors.New("--notification-give-up must be positive")
	}
	return f, nil
}

func main() { svcmain.Main("backend", parseFlags, start) }

func start(f flags) error {
	log := slog.New(slog.NewJSONHandler(os.Stderr, nil)).With("service", "backend")
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, f, log); err != nil {
		log.Error("backend stopped", "error", err)
		return err
	}
	return nil
}

// applyNotificationFlags reads --notification-allowed-cidrs and --notification-ca into the
// controller's configuration; a bad value stops start-up naming the flag.
func applyNotificationFlags(f *flags, log *slog.Logger) error {
	cidrs, err := egress.ParseCIDRs(f.notifyAllowedCIDRs)
	if err != nil {
		return fmt.Errorf("--notification-allowed-cidrs: %w", err)
	}
	f.cfg.NotifyAllowedCIDRs = cidrs
	if len(cidrs) > 0 {
		log.Warn("async notifications may reach these otherwise refused addresses (a test and development setting)", "allowedCIDRs", f.notifyAllowedCIDRs)
	}
	if f.notifyCA != "" {
		pem, err := os.ReadFile(f.notifyCA)
		if err != nil {
			return fmt.Errorf("--notification-ca: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return fmt.Errorf("--notification-ca %s: no PEM certificate in it", f.notifyCA)
		}
		f.cfg.NotifyRootCAs = pool
	}
	return nil
}

func run(ctx context.Context, f flags, log *slog.Logger) error {
	if err := applyNotificationFlags(&f, log); err != nil {
		return err
	}
	metricsSrv, err := svcmain.ListenMetrics(f.metricsListen, f.metricsTLS)
	if err != nil {
		return err
	}
	defer metricsSrv.Close()
	conn, err := csclient.Dial(f.clusterService, f.csTLS)
	if err != nil {
		return fmt.Errorf("--cluster-service %s: %w", f.clusterService, err)
	}
	defer conn.Close()

	st, err := f.store.Open(ctx, log)
	if err != nil {
		return fmt.Errorf("open document store: %w", err)
	}
	defer st.Close()

	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	opMetrics := metrics.New(reg)
	pprofmux.Register(metricsSrv.Mux, f.pprofTokenFile)
	metricsSrv.Serve(reg, log)

	log.Info("backend started", "clusterService", f.clusterService, "metrics", f.metricsListen, "resyncPeriod", f.cfg.ResyncPeriod,
		"statusMode", f.cfg.StatusMode, "leaderElect", f.leaderElect, "replica", f.lease.Holder)
	cs := csv1.NewClustersClient(conn)
	f.cfg.NodePools = csv1.NewNodePoolsClient(conn)
	f.cfg.ExternalAuths = csv1.NewExternalAuthsClient(conn)
	f.cfg.Credentials = csv1.NewCredentialsClient(conn)
	if !f.leaderElect {
		return controller.New(st, cs, log, opMetrics, f.cfg).Run(ctx)
	}
	f.lease.Log = log
	f.lease.Registerer = reg
	elector, err := leader.New(st, f.lease)
	if err != nil {
		return err
	}
	cfg := f.cfg
	cfg.Fence = elector
	// A fresh controller each term: nothing a lost term learned is trusted by the next.
	return elector.Run(ctx, func(ctx context.Context) {
		_ = controller.New(st, cs, log, opMetrics, cfg).Run(ctx)
	})
}
