// Command hypershift-sim plays the HyperShift operator against one management cluster's
// kube-apiserver. See README.md beside this file for its flags and docs/hypershift-sim.md for
// what it models.
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
	"path/filepath"
	"syscall"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/client-go/tools/clientcmd"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/openhcp/openhcp/dev-infrastructure/mgmtcluster/hypershiftsim"
	"github.com/openhcp/openhcp/internal/secretseal"
	"github.com/openhcp/openhcp/internal/tlsconfig"
)

type config struct {
	kubeconfig         string
	metricsAddr        string
	metricsCertDir     string
	healthAddr         string
	availableDelay     time.Duration
	upgradeDelay       time.Duration
	deleteDelay        time.Duration
	nodePoolReadyDelay time.Duration
	signDelay          time.Duration
	revokeDelay        time.Duration
	failClusters       string
	neverAvailable     bool
	logLevel           string
	hostedAPIServers   int
	kubeAPIServer      string
	hostedDir          string
	hostedAddress      string
	unsealKeyFile      string
	hostedLogDir       string
	hostedSocketDir    string
	etcd               string
	hostedEtcdQuota    string
	hostedMemoryLimit  string
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:], os.LookupEnv); err != nil {
		fmt.Fprintln(os.Stderr, "hypershift-sim:", err)
		os.Exit(1)
	}
}

// run parses args (with environment fallbacks from lookupEnv) and runs the manager until ctx ends.
func run(ctx context.Context, args []string, lookupEnv func(string) (string, bool)) error {
	envOr := func(key, def string) string {
		if v, ok := lookupEnv(key); ok {
			return v
		}
		return def
	}
	var c config
	fs := flag.NewFlagSet("hypershift-sim", flag.ContinueOnError)
	fs.StringVar(&c.kubeconfig, "kubeconfig", envOr("KUBECONFIG", ""), "kubeconfig of the management cluster (env KUBECONFIG; empty: in-cluster config)")
	fs.StringVar(&c.metricsAddr, "metrics-addr", envOr("HYPERSHIFT_SIM_METRICS_ADDR", "127.0.0.1:8080"), "listen address for /metrics; \"0\" disables (env HYPERSHIFT_SIM_METRICS_ADDR)")
	fs.StringVar(&c.metricsCertDir, "metrics-cert-dir", envOr("HYPERSHIFT_SIM_METRICS_CERT_DIR", ""), "directory with tls.crt and tls.key: /metrics is served over TLS with that certificate; required when --metrics-addr is not on loopback (env HYPERSHIFT_SIM_METRICS_CERT_DIR)")
	fs.StringVar(&c.healthAddr, "health-addr", envOr("HYPERSHIFT_SIM_HEALTH_ADDR", "127.0.0.1:8081"), "listen address for /healthz and /readyz (env HYPERSHIFT_SIM_HEALTH_ADDR)")
	fs.StringVar(&c.failClusters, "fail-clusters", envOr("HYPERSHIFT_SIM_FAIL_CLUSTERS", ""), "comma-separated namespace/name of HostedClusters that end Degraded (env HYPERSHIFT_SIM_FAIL_CLUSTERS)")
	fs.StringVar(&c.logLevel, "log-level", envOr("HYPERSHIFT_SIM_LOG_LEVEL", "info"), "debug, info, warn or error (env HYPERSHIFT_SIM_LOG_LEVEL)")
	fs.StringVar(&c.kubeAPIServer, "kube-apiserver", envOr("HYPERSHIFT_SIM_KUBE_APISERVER", ""), "the pinned kube-apiserver binary run for each served HostedCluster (env HYPERSHIFT_SIM_KUBE_APISERVER)")
	fs.StringVar(&c.unsealKeyFile, "unseal-key-file", envOr("HYPERSHIFT_SIM_UNSEAL_KEY_FILE", ""), "this management cluster's private sealing key (mode 0600): sealed Secrets of ManifestWorks are opened into the Secrets they name; empty: none are (env HYPERSHIFT_SIM_UNSEAL_KEY_FILE)")
	fs.StringVar(&c.hostedDir, "hosted-dir", envOr("HYPERSHIFT_SIM_HOSTED_DIR", ""), "directory for the hosted kube-apiservers' files, one directory per control-plane namespace (env HYPERSHIFT_SIM_HOSTED_DIR)")
	fs.StringVar(&c.hostedAddress, "hosted-address", envOr("HYPERSHIFT_SIM_HOSTED_ADDRESS", hypershiftsim.DefaultHostedAPIAddress), "IP address the hosted kube-apiservers bind and advertise, name in their serving certificates and report as api.url (a pod's IP in a chart) (env HYPERSHIFT_SIM_HOSTED_ADDRESS)")
	fs.StringVar(&c.hostedLogDir, "hosted-log-dir", envOr("HYPERSHIFT_SIM_HOSTED_LOG_DIR", ""), "directory for the hosted kube-apiservers' logs; empty: --hosted-dir (env HYPERSHIFT_SIM_HOSTED_LOG_DIR)")
	fs.StringVar(&c.hostedSocketDir, "hosted-socket-dir", envOr("HYPERSHIFT_SIM_HOSTED_SOCKET_DIR", ""), "directory under which each hosted etcd gets a short one of its own (0700) for its unix sockets (etcd serves no TCP port); a short path: a socket's may not exceed 107 bytes; empty: the system's temporary directory (env HYPERSHIFT_SIM_HOSTED_SOCKET_DIR)")
	fs.StringVar(&c.etcd, "etcd", envOr("HYPERSHIFT_SIM_ETCD", ""), "the pinned etcd binary: each served HostedCluster gets an etcd of its own (env HYPERSHIFT_SIM_ETCD)")
	fs.StringVar(&c.hostedEtcdQuota, "hosted-etcd-quota", envOr("HYPERSHIFT_SIM_HOSTED_ETCD_QUOTA", resource.NewQuantity(hypershiftsim.DefaultHostedEtcdQuota, resource.BinarySI).String()),
		"each served HostedCluster's etcd space quota, a Kubernetes quantity such as 512Mi: what one customer may fill, for their own cluster alone (env HYPERSHIFT_SIM_HOSTED_ETCD_QUOTA)")
	fs.StringVar(&c.hostedMemoryLimit, "hosted-memory-limit", envOr("HYPERSHIFT_SIM_HOSTED_MEMORY_LIMIT", resource.NewQuantity(hypershiftsim.DefaultHostedMemoryLimit, resource.BinarySI).String()),
		"each served HostedCluster's memory limit, a Kubernetes quantity such as 640Mi: over it (its kube-apiserver's and etcd's anonymous resident memory together) the sim kills the larger of the two, as a pod's memory limit would (env HYPERSHIFT_SIM_HOSTED_MEMORY_LIMIT)")
	fs.IntVar(&c.hostedAPIServers, "hosted-apiservers", defaultHostedAPIServers, "how many HostedClusters get a real kube-apiserver; the others stay status-only; 0 disables (env HYPERSHIFT_SIM_HOSTED_APISERVERS)")
	durations := []struct {
		p         *time.Duration
		name, env string
		def       time.Duration
		usage     string
	}{
		{&c.availableDelay, "available-delay", "HYPERSHIFT_SIM_AVAILABLE_DELAY", 3 * time.Second, "time from a HostedCluster rollout's start to Available"},
		{&c.upgradeDelay, "upgrade-delay", "HYPERSHIFT_SIM_UPGRADE_DELAY", 0, "time from an upgrade's start (a new release image after a completed rollout) to Completed; 0: --available-delay"},
		{&c.deleteDelay, "delete-delay", "HYPERSHIFT_SIM_DELETE_DELAY", 2 * time.Second, "time from deletion to finalizer removal, for HostedClusters and NodePools"},
		{&c.nodePoolReadyDelay, "nodepool-ready-delay", "HYPERSHIFT_SIM_NODEPOOL_READY_DELAY", 2 * time.Second, "time for a NodePool to reach spec.replicas once its HostedCluster is Available"},
		{&c.signDelay, "break-glass-sign-delay", "HYPERSHIFT_SIM_BREAK_GLASS_SIGN_DELAY", time.Second, "time from a break-glass CSR's approval to its certificate"},
		{&c.revokeDelay, "break-glass-revoke-delay", "HYPERSHIFT_SIM_BREAK_GLASS_REVOKE_DELAY", 2 * time.Second, "time a revocation trusts the previous break-glass signer next to the new one"},
	}
	for _, d := range durations {
		*d.p = d.def
		fs.Var(durationValue{d.p}, d.name, fmt.Sprintf("%s (env %s; default %s)", d.usage, d.env, d.def))
	}
	fs.BoolVar(&c.neverAvailable, "never-available", false, "keep every HostedCluster Progressing for ever (env HYPERSHIFT_SIM_NEVER_AVAILABLE)")
	// Environment values are applied before the command line, so flags win; a bad value stops
	// start-up naming the variable.
	envFlags := map[string]string{"HYPERSHIFT_SIM_NEVER_AVAILABLE": "never-available", "HYPERSHIFT_SIM_HOSTED_APISERVERS": "hosted-apiservers"}
	for _, d := range durations {
		envFlags[d.env] = d.name
	}
	for env, name := range envFlags {
		if v, ok := lookupEnv(env); ok {
			if err := fs.Set(name, v); err != nil {
				return fmt.Errorf("env %s (--%s): %w", env, name, err)
			}
		}
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil
		}
		return err
	}

	failClusters, err := hypershiftsim.ParseClusterList(c.failClusters)
	if err != nil {
		return fmt.Errorf("--fail-clusters: %w", err)
	}
	for _, a := range []struct{ flag, v string }{{"metrics-addr", c.metricsAddr}, {"health-addr", c.healthAddr}} {
		if a.v == "0" && a.flag == "metrics-addr" {
			continue
		}
		if _, _, err := net.SplitHostPort(a.v); err != nil {
			return fmt.Errorf("--%s %q: %w", a.flag, a.v, err)
		}
	}
	// Plaintext only on loopback (docs/security.md, "Metrics endpoints"): on a pod's address,
	// /metrics is TLS with the sim's serving certificate.
	if c.metricsAddr != "0" && c.metricsCertDir == "" {
		if err := tlsconfig.RequireLoopback(c.metricsAddr); err != nil {
			return fmt.Errorf("--metrics-addr: %w (--metrics-cert-dir)", err)
		}
	}
	if c.metricsCertDir != "" {
		if _, err := tls.LoadX509KeyPair(filepath.Join(c.metricsCertDir, "tls.crt"), filepath.Join(c.metricsCertDir, "tls.key")); err != nil {
			return fmt.Errorf("--metrics-cert-dir: %w", err)
		}
	}
	var level slog.Level
	if err := level.UnmarshalText([]byte(c.logLevel)); err != nil {
		return fmt.Errorf("--log-level: %w", err)
	}
	if c.hostedLogDir == "" {
		c.hostedLogDir = c.hostedDir
	}
	if err := hypershiftsim.ValidHostedAddress(c.hostedAddress); err != nil {
		return fmt.Errorf("--hosted-address: %w", err)
	}
	quota, err := resource.ParseQuantity(c.hostedEtcdQuota)
	if err != nil || quota.Sign() <= 0 {
		return fmt.Errorf("--hosted-etcd-quota=%q: want a positive quantity such as 512Mi", c.hostedEtcdQuota)
	}
	memoryLimit, err := resource.ParseQuantity(c.hostedMemoryLimit)
	if err != nil || memoryLimit.Sign() <= 0 {
		return fmt.Errorf("--hosted-memory-limit=%q: want a positive quantity such as 640Mi", c.hostedMemoryLimit)
	}
	hosted := hypershiftsim.HostedAPIOptions{Max: c.hostedAPIServers, APIServerPath: c.kubeAPIServer, EtcdPath: c.etcd,
		EtcdQuotaBytes: quota.Value(), MemoryLimitBytes: memoryLimit.Value(), Dir: c.hostedDir, LogDir: c.hostedLogDir, Address: c.hostedAddress, SocketDir: c.hostedSocketDir}
	if err := hosted.Validate(); err != nil {
		return fmt.Errorf("--hosted-apiservers=%d: %w (set --kube-apiserver, --etcd and --hosted-dir, or --hosted-apiservers=0)", c.hostedAPIServers, err)
	}
	handler := slog.NewJSONHandler(os.Stderr, &slog.HandlerOptions{Level: level})
	slog.SetDefault(slog.New(handler))
	ctrl.SetLogger(logr.FromSlogHandler(handler))

	restCfg, err := clientcmd.BuildConfigFromFlags("", c.kubeconfig)
	if err != nil {
		return fmt.Errorf("--kubeconfig %q: %w", c.kubeconfig, err)
	}
	// Each cluster costs a handful of writes over its life; the client must not be what limits a
	// load test, the apiserver's --max-requests-inflight is.
	restCfg.QPS, restCfg.Burst = 200, 400
	scheme, err := hypershiftsim.NewScheme()
	if err != nil {
		return err
	}
	// The health and metrics listeners are ours (servers.go), not controller-runtime's.
	mgr, err := ctrl.NewManager(restCfg, ctrl.Options{
		Scheme:                 scheme,
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
	})
	if err != nil {
		return fmt.Errorf("create manager: %w", err)
	}
	var unsealKey *secretseal.PrivateKey
	if c.unsealKeyFile != "" {
		if unsealKey, err = secretseal.ReadPrivateKey(c.unsealKeyFile); err != nil {
			return fmt.Errorf("--unseal-key-file: %w", err)
		}
	}
	opts := hypershiftsim.Options{
		UnsealKey:      unsealKey,
		AvailableDelay: c.availableDelay, UpgradeDelay: c.upgradeDelay, DeleteDelay: c.deleteDelay, NodePoolReadyDelay: c.nodePoolReadyDelay,
		FailClusters: failClusters, NeverAvailable: c.neverAvailable,
		BreakGlass: hypershiftsim.BreakGlassOptions{SignDelay: c.signDelay, RevokeDelay: c.revokeDelay},
		HostedAPI:  hosted,
	}
	if err := hypershiftsim.Setup(mgr, opts); err != nil {
		return err
	}
	// Ready once the informers have synced, i.e. the sim sees the cluster's objects.
	informers := func(req *http.Request) error {
		ctx, cancel := context.WithTimeout(req.Context(), time.Second)
		defer cancel()
		if !mgr.GetCache().WaitForCacheSync(ctx) {
			return errors.New("informer caches not synced")
		}
		return nil
	}
	servers := map[string]*http.Server{"health probe": healthServer(c.healthAddr,
		map[string]healthz.Checker{"ping": healthz.Ping}, map[string]healthz.Checker{"informers": informers})}
	if c.metricsAddr != "0" {
		if servers["metrics"], err = metricsServer(c.metricsAddr, c.metricsCertDir); err != nil {
			return err
		}
	}
	for name, srv := range servers {
		r, err := runnable(name, srv)
		if err != nil {
			return err
		}
		if err := mgr.Add(r); err != nil {
			return fmt.Errorf("add the %s server: %w", name, err)
		}
	}

	slog.Info("hypershift-sim starting", "apiserver", restCfg.Host, "availableDelay", c.availableDelay,
		"deleteDelay", c.deleteDelay, "nodePoolReadyDelay", c.nodePoolReadyDelay,
		"failClusters", len(failClusters), "neverAvailable", c.neverAvailable, "hostedAPIServers", c.hostedAPIServers, "hostedAddress", c.hostedAddress, "unsealing", unsealKey != nil,
		"metricsAddr", c.metricsAddr, "healthAddr", c.healthAddr)
	return mgr.Start(ctx)
}

// defaultHostedAPIServers is the cap on real hosted kube-apiservers per sim: each costs a
// kube-apiserver process (docs/performance.md, "Hosted control planes: memory and start time").
const defaultHostedAPIServers = 4

// durationValue is a flag.Value that refuses negative durations.
type durationValue struct{ p *time.Duration }

func (d durationValue) String() string {
	if d.p == nil {
		return ""
	}
	return d.p.String()
}

func (d durationValue) Set(s string) error {
	v, err := time.ParseDuration(s)
	if err != nil {
		return err
	}
	if v < 0 {
		return fmt.Errorf("%s is negative", s)
	}
	*d.p = v
	return nil
}
