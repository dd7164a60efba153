// Command monitor is the fleet Monitor: replicas share every hosted cluster, node pool and
// management cluster through leases in the document store, check them continuously and export
// their health as metrics (docs/monitor.md).
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
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/openhcp/openhcp/backend/pkg/monitor"
	csv1 "github.com/openhcp/openhcp/cluster-service/api/v1"
	"github.com/openhcp/openhcp/internal/docstore/storeconfig"
	"github.com/openhcp/openhcp/internal/identity"
	"github.com/openhcp/openhcp/internal/serverlimits"
	"github.com/openhcp/openhcp/internal/tlsconfig"
)

type flags struct {
	store          storeconfig.Flags
	clusterService string
	csTLS          tlsconfig.Files
	metricsListen  string
	metricsTLS     tlsconfig.Files
	share          monitor.ShareConfig
	limits         monitor.Limits
	interval       time.Duration
	probes         probeFlags
}

// probeFlags is --shard-probe, repeated: shard=url,ca,cert,key.
type probeFlags []probeFlag

type probeFlag struct {
	shard, url string
	tls        tlsconfig.Files
}

func (p *probeFlags) String() string { return fmt.Sprint(len(*p)) }

func (p *probeFlags) Set(v string) error {
	shard, rest, ok := strings.Cut(v, "=")
	parts := strings.Split(rest, ",")
	if !ok || shard == "" || len(parts) != 4 || parts[0] == "" {
		return fmt.Errorf("want shard=url,ca-file,cert-file,key-file, not %q", v)
	}
	*p = append(*p, probeFlag{shard: shard, url: parts[0], tls: tlsconfig.Files{CA: parts[1], Cert: parts[2], Key: parts[3]}})
	return nil
}

func env(name, def string) string {
	if v, ok := os.LookupEnv(name); ok {
		return v
	}
	return def
}

func envDuration(name string, def time.Duration) time.Duration {
	if v, ok := os.LookupEnv(name); ok {
		d, err := time.ParseDuration(v)
		if err != nil {
			fail(fmt.Sprintf("%s=%q is not a duration", name, v))
		}
		return d
	}
	return def
}

func parseFlags() flags {
	var f flags
	f.store.Register(flag.CommandLine, "MONITOR", os.Getenv)
	flag.StringVar(&f.clusterService, "cluster-service", env("MONITOR_CLUSTER_SERVICE", "127.0.0.1:8090"), "Cluster Service gRPC address (env MONITOR_CLUSTER_SERVICE)")
	flag.StringVar(&f.csTLS.CA, "cluster-service-ca", env("MONITOR_CLUSTER_SERVICE_CA", ""), "CA file that verifies Cluster Service; with the cert flags enables TLS (env MONITOR_CLUSTER_SERVICE_CA)")
	flag.StringVar(&f.csTLS.Cert, "cluster-service-cert", env("MONITOR_CLUSTER_SERVICE_CERT", ""), "client certificate for Cluster Service (the monitor identity; re-read when it changes) (env MONITOR_CLUSTER_SERVICE_CERT)")
	flag.StringVar(&f.csTLS.Key, "cluster-service-key", env("MONITOR_CLUSTER_SERVICE_KEY", ""), "client key for Cluster Service (env MONITOR_CLUSTER_SERVICE_KEY)")
	flag.StringVar(&f.metricsListen, "metrics-listen", env("MONITOR_METRICS_LISTEN", "127.0.0.1:8083"), "address for /metrics and /healthz: plaintext on loopback, elsewhere TLS with --tls-cert (env MONITOR_METRICS_LISTEN)")
	flag.StringVar(&f.metricsTLS.Cert, "tls-cert", env("MONITOR_TLS_CERT", ""), "server certificate (PEM) of --metrics-listen; required when that address is not loopback (env MONITOR_TLS_CERT)")
	flag.StringVar(&f.metricsTLS.Key, "tls-key", env("MONITOR_TLS_KEY", ""), "server key (PEM) of --metrics-listen (env MONITOR_TLS_KEY)")
	flag.StringVar(&f.share.Holder, "replica-id", env("MONITOR_REPLICA_ID", defaultReplicaID()), "this replica's name in the leases (env MONITOR_REPLICA_ID; default hostname-pid)")
	flag.IntVar(&f.share.Buckets, "buckets", 16, "buckets the fleet is cut into; the same on every replica")
	flag.DurationVar(&f.share.LeaseDuration, "lease-duration", envDuration("MONITOR_LEASE_DURATION", 15*time.Second), "a dead replica's buckets move after this long (env MONITOR_LEASE_DURATION)")
	flag.DurationVar(&f.interval, "interval", envDuration("MONITOR_INTERVAL", 30*time.Second), "how often every owned cluster, node pool and shard is checked (env MONITOR_INTERVAL)")
	flag.DurationVar(&f.limits.StaleAfter, "stale-after", envDuration("MONITOR_STALE_AFTER", 3*time.Minute), "a shard whose feedback path has not worked for this long makes its clusters stale (env MONITOR_STALE_AFTER)")
	flag.DurationVar(&f.limits.PendingSLO, "pending-slo", envDuration("MONITOR_PENDING_SLO", 10*time.Minute), "a pending cluster or node pool is stuck after this long (env MONITOR_PENDING_SLO)")
	flag.DurationVar(&f.limits.ChangeSLO, "change-slo", envDuration("MONITOR_CHANGE_SLO", time.Hour), "an install, update or uninstall without an observed status change for this long is stuck (env MONITOR_CHANGE_SLO)")
	flag.Var(&f.probes, "shard-probe", "shard=url,ca-file,cert-file,key-file: GET url (the shard's kube-apiserver /readyz) with that TLS; repeat per shard")
	flag.Parse()
	if err := f.store.Validate(); err != nil {
		fail(err.Error())
	}
	switch {
	case f.share.Holder == "":
		fail("--replica-id must not be empty")
	case f.share.Buckets < 1 || f.share.Buckets > 1024:
		fail("--buckets must be between 1 and 1024")
	case f.share.LeaseDuration < 2*time.Second:
		fail("--lease-duration must be at least 2s")
	case f.interval < time.Second:
		fail("--interval must be at least 1s")
	case f.limits.StaleAfter <= 0 || f.limits.PendingSLO <= 0 || f.limits.ChangeSLO <= 0:
		fail("--stale-after, --pending-slo and --change-slo must be positive")
	}
	return f
}

func defaultReplicaID() string {
	h, err := os.Hostname()
	if err != nil {
		h = "monitor"
	}
	return h + "-" + strconv.Itoa(os.Getpid())
}

func fail(msg string) {
	fmt.Fprintln(os.Stderr, "monitor: "+msg)
	os.Exit(2)
}

func main() {
	f := parseFlags()
	log := slog.New(slog.NewJSONHandler(os.Stderr, nil)).With("service", "monitor", "replica", f.share.Holder)
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, f, log); err != nil {
		log.Error("monitor stopped", "error", err)
		os.Exit(1)
	}
}

func probes(f flags) (map[string]monitor.Probe, error) {
	out := map[string]monitor.Probe{}
	for _, p := range f.probes {
		probe, err := monitor.NewReadyzProbe(p.url, p.tls)
		if err != nil {
			return nil, fmt.Errorf("--shard-probe %s: %w", p.shard, err)
		}
		out[p.shard] = probe
	}
	return out, nil
}

func run(ctx context.Context, f flags, log *slog.Logger) error {
	metricsTLS, err := f.metricsTLS.Metrics(f.metricsListen)
	if err != nil {
		return fmt.Errorf("--metrics-listen %s / --tls-cert: %w", f.metricsListen, err)
	}
	mlis, err := net.Listen("tcp", f.metricsListen)
	if err != nil {
		return fmt.Errorf("--metrics-listen %s: %w", f.metricsListen, err)
	}
	if metricsTLS != nil {
		mlis = tls.NewListener(mlis, metricsTLS)
	}
	defer mlis.Close()
	pr, err := probes(f)
	if err != nil {
		return err
	}
	csTLS, err := f.csTLS.Expecting(identity.ClusterService).Client(f.clusterService)
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
	st, err := f.store.Open(ctx, log)
	if err != nil {
		return fmt.Errorf("open document store: %w", err)
	}
	defer st.Close()

	f.share.Log = log
	sharer, err := monitor.NewSharer(st, f.share)
	if err != nil {
		return err
	}
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	metrics := monitor.NewMetrics(reg, func() int { return len(sharer.Held()) }, f.share.Buckets)
	checker := monitor.NewChecker(monitor.CheckerConfig{
		Clusters: csv1.NewClustersClient(conn), NodePools: csv1.NewNodePoolsClient(conn), Shards: csv1.NewProvisionShardsClient(conn),
		Probes: pr, Owner: sharer, Limits: f.limits, Metrics: metrics, Log: log, Reports: st, Replica: f.share.Holder,
	})

	mux := http.NewServeMux()
	mux.Handle("GET /metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("ok")) })
	limits := serverlimits.Metrics()
	srv := limits.Server("", mux, nil)
	go func() {
		if err := srv.Serve(serverlimits.LimitListener(mlis, limits.MaxConns)); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Error("metrics server", "error", err)
		}
	}()
	defer srv.Close()
	log.Info("monitor started", "clusterService", f.clusterService, "metrics", f.metricsListen, "interval", f.interval,
		"buckets", f.share.Buckets, "leaseDuration", f.share.LeaseDuration, "probedShards", len(pr))
	monitor.Run(ctx, sharer, checker, f.interval, log)
	return nil
}
