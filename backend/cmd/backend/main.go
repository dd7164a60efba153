// Command backend drives OpenHCP's asynchronous ARM operations to a terminal state.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"os/signal"
	"strconv"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/openhcp/openhcp/backend/pkg/operations"
	csv1 "github.com/openhcp/openhcp/cluster-service/api/v1"
	"github.com/openhcp/openhcp/internal/store/postgres"
	"github.com/openhcp/openhcp/internal/tlsconfig"
)

type flags struct {
	dbDSN          string
	clusterService string
	metricsListen  string
	csTLS          tlsconfig.Files
	cfg            operations.Config
}

func env(name, def string) string {
	if v, ok := os.LookupEnv(name); ok {
		return v
	}
	return def
}

func envDuration(name string, def time.Duration) time.Duration {
	if v, ok := os.LookupEnv(name); ok {
		if d, err := time.ParseDuration(v); err == nil {
			return d
		}
		fmt.Fprintf(os.Stderr, "backend: %s=%q is not a duration\n", name, v)
		os.Exit(2)
	}
	return def
}

func parseFlags() flags {
	var f flags
	flag.StringVar(&f.dbDSN, "db-dsn", env("BACKEND_DB_DSN", ""), "PostgreSQL DSN of the document store (env BACKEND_DB_DSN); required")
	flag.StringVar(&f.clusterService, "cluster-service", env("BACKEND_CLUSTER_SERVICE", "127.0.0.1:8090"), "Cluster Service gRPC address (env BACKEND_CLUSTER_SERVICE)")
	flag.StringVar(&f.metricsListen, "metrics-listen", env("BACKEND_METRICS_LISTEN", "127.0.0.1:8081"), "address for /metrics and /healthz (env BACKEND_METRICS_LISTEN)")
	flag.StringVar(&f.csTLS.CA, "cluster-service-ca", env("BACKEND_CLUSTER_SERVICE_CA", ""), "CA file that verifies Cluster Service; with the cert flags enables TLS (env BACKEND_CLUSTER_SERVICE_CA)")
	flag.StringVar(&f.csTLS.Cert, "cluster-service-cert", env("BACKEND_CLUSTER_SERVICE_CERT", ""), "client certificate for Cluster Service (env BACKEND_CLUSTER_SERVICE_CERT)")
	flag.StringVar(&f.csTLS.Key, "cluster-service-key", env("BACKEND_CLUSTER_SERVICE_KEY", ""), "client key for Cluster Service (env BACKEND_CLUSTER_SERVICE_KEY)")
	flag.DurationVar(&f.cfg.ResyncPeriod, "resync-period", envDuration("BACKEND_RESYNC_PERIOD", 30*time.Second), "how often every active operation is rechecked without events (env BACKEND_RESYNC_PERIOD)")
	flag.DurationVar(&f.cfg.CreateDeadline, "create-deadline", envDuration("BACKEND_CREATE_DEADLINE", 60*time.Minute), "create/update operations fail after this long (env BACKEND_CREATE_DEADLINE)")
	flag.DurationVar(&f.cfg.DeleteDeadline, "delete-deadline", envDuration("BACKEND_DELETE_DEADLINE", 12*time.Hour), "delete operations fail after this long (env BACKEND_DELETE_DEADLINE)")
	workers, err := strconv.Atoi(env("BACKEND_WORKERS", "4"))
	if err != nil {
		fmt.Fprintf(os.Stderr, "backend: BACKEND_WORKERS: %v\n", err)
		os.Exit(2)
	}
	flag.IntVar(&f.cfg.Workers, "workers", workers, "operations reconciled at once (env BACKEND_WORKERS)")
	flag.Parse()
	switch {
	case f.dbDSN == "":
		fail("--db-dsn is required")
	case f.cfg.ResyncPeriod < time.Second:
		fail("--resync-period must be at least 1s")
	case f.cfg.Workers < 1:
		fail("--workers must be at least 1")
	case f.cfg.CreateDeadline <= 0 || f.cfg.DeleteDeadline <= 0:
		fail("--create-deadline and --delete-deadline must be positive")
	}
	return f
}

func fail(msg string) {
	fmt.Fprintln(os.Stderr, "backend: "+msg)
	os.Exit(2)
}

func main() {
	f := parseFlags()
	log := slog.New(slog.NewJSONHandler(os.Stderr, nil)).With("service", "backend")
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, f, log); err != nil {
		log.Error("backend stopped", "error", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, f flags, log *slog.Logger) error {
	csTLS, err := f.csTLS.Client(f.clusterService)
	if err != nil {
		return fmt.Errorf("--cluster-service: %w", err)
	}
	creds := insecure.NewCredentials()
	if csTLS != nil {
		creds = credentials.NewTLS(csTLS)
	}
	conn, err := grpc.NewClient(f.clusterService, grpc.WithTransportCredentials(creds))
	if err != nil {
		return fmt.Errorf("dial cluster service %s: %w", f.clusterService, err)
	}
	defer conn.Close()

	st, err := postgres.Open(ctx, f.dbDSN, postgres.Options{})
	if err != nil {
		return fmt.Errorf("open document store: %w", err)
	}
	defer st.Close()

	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	metrics := operations.NewMetrics(reg)
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("ok")) })
	srv := &http.Server{Addr: f.metricsListen, Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() {
		if err := srv.ListenAndServe(); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Error("metrics server", "error", err)
		}
	}()
	defer srv.Close()

	log.Info("backend started", "clusterService", f.clusterService, "metrics", f.metricsListen, "resyncPeriod", f.cfg.ResyncPeriod)
	return operations.New(st, csv1.NewClustersClient(conn), log, metrics, f.cfg).Run(ctx)
}
