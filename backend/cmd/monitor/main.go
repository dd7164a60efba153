// Command monitor is the fleet Monitor: replicas share every hosted cluster, node pool and
// management cluster through leases in the document store, check them continuously and export
// their health as metrics (docs/monitor.md).
package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/openhcp/openhcp/backend/pkg/monitor"
	csv1 "github.com/openhcp/openhcp/cluster-service/api/v1"
	"github.com/openhcp/openhcp/internal/csclient"
	"github.com/openhcp/openhcp/internal/docstore/storeconfig"
	"github.com/openhcp/openhcp/internal/svcmain"
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
	probeHosted    bool
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

// parseFlags reads flags, each defaulting to its environment variable. Errors name the flag.
func parseFlags(args []string, getenv func(string) string) (flags, error) {
	fs := svcmain.NewFlags("monitor", getenv)
	var f flags
	f.store.Register(fs.FlagSet, "MONITOR", getenv)
	str, dur := fs.String, fs.Duration
	str(&f.clusterService, "cluster-service", "MONITOR_CLUSTER_SERVICE", "127.0.0.1:8090", "Cluster Service gRPC address")
	str(&f.csTLS.CA, "cluster-service-ca", "MONITOR_CLUSTER_SERVICE_CA", "", "CA file that verifies Cluster Service; with the cert flags enables TLS")
	str(&f.csTLS.Cert, "cluster-service-cert", "MONITOR_CLUSTER_SERVICE_CERT", "", "client certificate for Cluster Service (the monitor identity; re-read when it changes)")
	str(&f.csTLS.Key, "cluster-service-key", "MONITOR_CLUSTER_SERVICE_KEY", "", "client key for Cluster Service")
	str(&f.metricsListen, "metrics-listen", "MONITOR_METRICS_LISTEN", "127.0.0.1:8083", "address for /metrics and /healthz: plaintext on loopback, elsewhere TLS with --tls-cert")
	str(&f.metricsTLS.Cert, "tls-cert", "MONITOR_TLS_CERT", "", "server certificate (PEM) of --metrics-listen; required when that address is not loopback")
	str(&f.metricsTLS.Key, "tls-key", "MONITOR_TLS_KEY", "", "server key (PEM) of --metrics-listen")
	str(&f.share.Holder, "replica-id", "MONITOR_REPLICA_ID", svcmain.ReplicaID("monitor"), "this replica's name in the leases (default hostname-pid)")
	fs.IntVar(&f.share.Buckets, "buckets", 16, "buckets the fleet is cut into; the same on every replica")
	dur(&f.share.LeaseDuration, "lease-duration", "MONITOR_LEASE_DURATION", 15*time.Second, "a dead replica's buckets move after this long")
	dur(&f.interval, "interval", "MONITOR_INTERVAL", 30*time.Second, "how often every owned cluster, node pool and shard is checked")
	dur(&f.limits.StaleAfter, "stale-after", "MONITOR_STALE_AFTER", 3*time.Minute, "a shard whose feedback path has not worked for this long makes its clusters stale")
	dur(&f.limits.FeedbackStaleAfter, "feedback-stale-after", "MONITOR_FEEDBACK_STALE_AFTER", monitor.DefaultFeedbackStaleAfter,
		"a cluster whose last feedback (Cluster Service's feedback_time, moved by its --feedback-heartbeat) is older than this is stale")
	dur(&f.limits.PendingSLO, "pending-slo", "MONITOR_PENDING_SLO", 10*time.Minute, "a pending cluster or node pool is stuck after this long")
	dur(&f.limits.ChangeSLO, "change-slo", "MONITOR_CHANGE_SLO", time.Hour, "an install, update or uninstall without an observed status change for this long is stuck")
	fs.Bool(&f.probeHosted, "probe-hosted-apiservers", "MONITOR_PROBE_HOSTED_APISERVERS", true, "probe each ready cluster's hosted kube-apiserver (status.api_url /readyz, no credential) every pass; a failure makes it unhealthy")
	fs.Var(&f.probes, "shard-probe", "shard=url,ca-file,cert-file,key-file: GET url (the shard's kube-apiserver /readyz) with that TLS; repeat per shard")
	if err := fs.Parse(args); err != nil {
		return flags{}, err
	}
	if err := f.store.Validate(); err != nil {
		return flags{}, err
	}
	switch {
	case f.share.Holder == "":
		return flags{}, errors.New("--replica-id must not be empty")
	case f.share.Buckets < 1 || f.share.Buckets > 1024:
		return flags{}, fmt.Errorf("invalid value %d for --buckets: must be between 1 and 1024", f.share.Buckets)
	case f.share.LeaseDuration < 2*time.Second:
		return flags{}, fmt.Errorf("invalid value %s for --lease-duration: must be at least 2s", f.share.LeaseDuration)
	case f.interval < time.Second:
		return flags{}, fmt.Errorf("invalid value %s for --interval: must be at least 1s", f.interval)
	case f.limits.StaleAfter <= 0 || f.limits.FeedbackStaleAfter <= 0 || f.limits.PendingSLO <= 0 || f.limits.ChangeSLO <= 0:
		return flags{}, errors.New("--stale-after, --feedback-stale-after, --pending-slo and --change-slo must be positive")
	}
	return f, nil
}

func main() { svcmain.Main("monitor", parseFlags, start) }

func start(f flags) error {
	log := slog.New(slog.NewJSONHandler(os.Stderr, nil)).With("service", "monitor", "replica", f.share.Holder)
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, f, log); err != nil {
		log.Error("monitor stopped", "error", err)
		return err
	}
	return nil
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
	metricsSrv, err := svcmain.ListenMetrics(f.metricsListen, f.metricsTLS)
	if err != nil {
		return err
	}
	defer metricsSrv.Close()
	pr, err := probes(f)
	if err != nil {
		return err
	}
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

	f.share.Log = log
	sharer, err := monitor.NewSharer(st, f.share)
	if err != nil {
		return err
	}
	var hosted monitor.HostedProbe
	if f.probeHosted {
		hosted = monitor.NewHostedAPIServerProbe()
	}
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	metrics := monitor.NewMetrics(reg, func() int { return len(sharer.Held()) }, f.share.Buckets)
	checker := monitor.NewChecker(monitor.CheckerConfig{
		Clusters: csv1.NewClustersClient(conn), NodePools: csv1.NewNodePoolsClient(conn), Shards: csv1.NewProvisionShardsClient(conn),
		Probes: pr, HostedProbe: hosted, Owner: sharer, Limits: f.limits, Metrics: metrics, Log: log, Reports: st, Replica: f.share.Holder,
	})

	metricsSrv.Serve(reg, log)
	log.Info("monitor started", "clusterService", f.clusterService, "metrics", f.metricsListen, "interval", f.interval,
		"buckets", f.share.Buckets, "leaseDuration", f.share.LeaseDuration, "probedShards", len(pr), "probeHostedAPIServers", f.probeHosted)
	monitor.Run(ctx, sharer, checker, f.interval, log)
	return nil
}
