// Command cluster-service serves the Cluster Service gRPC API and runs the controller that
// sends clusters to their management clusters through Maestro.
package main

import (
	"context"
	"crypto/ed25519"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/signal"
	"regexp"
	"strconv"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	"github.com/openhcp/openhcp/cluster-service/pkg/authz"
	"github.com/openhcp/openhcp/cluster-service/pkg/controller"
	"github.com/openhcp/openhcp/cluster-service/pkg/maestro"
	"github.com/openhcp/openhcp/cluster-service/pkg/manifests"
	"github.com/openhcp/openhcp/cluster-service/pkg/placement"
	"github.com/openhcp/openhcp/cluster-service/pkg/server"
	"github.com/openhcp/openhcp/cluster-service/pkg/srestatement"
	"github.com/openhcp/openhcp/cluster-service/pkg/store"
	"github.com/openhcp/openhcp/cluster-service/pkg/versions"
	"github.com/openhcp/openhcp/internal/envelope"
	"github.com/openhcp/openhcp/internal/identity"
	"github.com/openhcp/openhcp/internal/pprofmux"
	"github.com/openhcp/openhcp/internal/readyz"
	"github.com/openhcp/openhcp/internal/secretseal"
	"github.com/openhcp/openhcp/internal/serverlimits"
	"github.com/openhcp/openhcp/internal/svcmain"
	"github.com/openhcp/openhcp/internal/tlsconfig"
)

// baseDomainRE: lowercase DNS labels, at least two, short enough to leave room for the
// cluster's namespace label in front.
var baseDomainRE = regexp.MustCompile(`^([a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?\.)+[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$`)

var uuidRE = regexp.MustCompile(`^[0-9a-fA-F]{8}-([0-9a-fA-F]{4}-){3}[0-9a-fA-F]{12}$`)

type config struct {
	listen, metricsListen string
	pprofTokenFile        string
	dbDSN                 string
	maestroGRPC           string
	maestroREST           string
	maestroSourceID       string
	envName               string
	resyncPeriod          time.Duration
	republishAfter        time.Duration
	staleStatusAfter      time.Duration
	feedbackHeartbeat     time.Duration
	tombstoneRetention    time.Duration
	workers               int
	releaseImageRepo      string
	pullSecretFile        string
	kekFile               string
	kekRetiredDir         string
	sreStatementKeyFile   string
	versionsFile          string
	devIdentityClientID   string
	baseDomain            string
	oidcIssuerBaseURL     string
	shutdownTimeout       time.Duration
	logLevel              slog.Level
	breakGlassValidity    time.Duration
	placementPolicy       placement.Policy
	pollFeedbackOnly      bool
	readSecretsLive       bool
	fixedRepublishWait    bool
	statusFromMaestroOnly bool
	statusEventsInOrder   bool
	resyncAtOnce          bool
	readBeforeWrite       bool
	pipelinedWrites       bool
	serverTLS             tlsconfig.Files
	trustDomain           string
	maestroTLS            tlsconfig.Files
	sealingKeysDir        string
}

// parseConfig reads flags, falling back to CLUSTER_SERVICE_* environment variables. Every bad
// value is an error that names its flag.
func parseConfig(args []string, getenv func(string) string) (config, error) {
	var c config
	fs := flag.NewFlagSet("cluster-service", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	env := func(name, def string) string {
		if v := getenv("CLUSTER_SERVICE_" + name); v != "" {
			return v
		}
		return def
	}
	str := func(p *string, name, envName, def, usage string) {
		fs.StringVar(p, name, env(envName, def), usage+" (env CLUSTER_SERVICE_"+envName+")")
	}
	var resync, republish, staleStatus, heartbeat, retention, shutdown, workers, logLevel string
	var breakGlassValidity, placementPolicy, feedbackWatch, watchSecrets, republishAdaptive, statusFromWatch, statusEventsFirst, readBeforeWrite, pipelinedWrites, resyncSpread string
	str(&feedbackWatch, "feedback-watch", "FEEDBACK_WATCH", "true",
		"ask Maestro agents to watch a HostedCluster's or NodePool's status while a transition is in flight (false: always poll, every --status-sync-interval of the agent; a benchmark baseline and ops knob)")
	str(&watchSecrets, "watch-secrets", "WATCH_SECRETS", "true",
		"while a cluster's HostedCluster is watched, ask the agent to watch its secrets too, so that its status syncs read them from a cache (false: read live from the kube-apiserver on every sync, the rule before 2026-11-25; a benchmark baseline)")
	str(&placementPolicy, "placement-policy", "PLACEMENT_POLICY", "least-loaded",
		"how a new cluster's shard is chosen among active shards with room: least-loaded, or spread:<label> (e.g. spread:zone: the label value with the fewest clusters first)")
	str(&breakGlassValidity, "break-glass-validity", "BREAK_GLASS_VALIDITY", controller.DefaultCredentialValidity.String(),
		"lifetime of break-glass kubeconfigs (10m to 168h)")
	str(&c.listen, "listen", "LISTEN", "127.0.0.1:8090", "gRPC listen address; a non-loopback address needs --tls-cert/--tls-key")
	str(&c.pprofTokenFile, "pprof-token-file", "PPROF_TOKEN_FILE", "", "file (mode 0600) of the token that /debug/pprof/ callers must present as 'Authorization: Bearer <token>' on the metrics listener's loopback; empty serves no profiles (docs/security.md)")
	str(&c.metricsListen, "metrics-listen", "METRICS_LISTEN", "127.0.0.1:8091", "address for /metrics, /healthz and /readyz: plaintext on loopback, elsewhere TLS with --tls-cert (no client certificate)")
	str(&c.dbDSN, "db-dsn", "DB_DSN", "", "PostgreSQL DSN; required")
	str(&c.maestroGRPC, "maestro-grpc", "MAESTRO_GRPC", "", "Maestro gRPC source server host:port; required")
	str(&c.maestroREST, "maestro-rest", "MAESTRO_REST", "", "Maestro REST API base URL; required")
	str(&c.sealingKeysDir, "sealing-keys-dir", "SEALING_KEYS_DIR", "",
		"directory of management clusters' public sealing keys (<consumer>.pub): a cluster's pull secret and etcd key reach Maestro sealed to its management cluster's key; empty or no file for a management cluster: in clear (docs/security.md)")
	str(&c.maestroSourceID, "maestro-source-id", "MAESTRO_SOURCE_ID", maestro.DefaultSourceID, "Maestro source ID of this service")
	str(&c.envName, "env-name", "ENV_NAME", manifests.DefaultEnv, "environment name in cluster namespaces (ocm-<env>-<id>)")
	str(&resync, "resync-period", "RESYNC_PERIOD", "5m", "how often every cluster is re-read from Maestro without events")
	str(&resyncSpread, "resync-spread", "RESYNC_SPREAD", "true",
		"spread each periodic resync's reads evenly over --resync-period instead of queueing every cluster at once (false: the rule before 2026-11-25, a benchmark baseline; the resync at start-up is always at once; docs/cluster-service.md)")
	str(&republish, "republish-after", "REPUBLISH_AFTER", controller.DefaultRepublishAfter.String(),
		"a work whose Maestro status is still for an older generation this long is sent again (the pinned agent can lose a spec update; docs/maestro.md); doubles per retry up to 10m (≥1s)")
	str(&staleStatus, "stale-status-after", "STALE_STATUS_AFTER", controller.DefaultStaleStatusAfter.String(),
		"a cluster or node pool not READY or ERROR whose work's Maestro status has not changed this long has its work sent again, so the agent reports afresh a status the pinned Maestro server lost (docs/reliability.md, defect 2); doubles per retry up to 10m (≥1s)")
	str(&heartbeat, "feedback-heartbeat", "FEEDBACK_HEARTBEAT", controller.DefaultFeedbackHeartbeat.String(),
		"a READY or ERROR cluster whose last feedback is this old has its work sent again, so its agent reports on a new generation and the cluster's feedback_time moves (the Monitor's stale-feedback verdict, docs/monitor.md); one status write per cluster per period; 0 disables (else ≥1s)")
	str(&republishAdaptive, "republish-adaptive", "REPUBLISH_ADAPTIVE", "true",
		"adapt --republish-after to the agent: a never-reported work waits 4× longer, and a shard whose agent is slow to report waits 2× its slowest recent report (up to 2m); false: the plain rule, a benchmark baseline (docs/maestro.md)")
	str(&statusFromWatch, "status-from-watch", "STATUS_FROM_WATCH", "true",
		"after a work's status event, take its status from the event instead of reading the work back from Maestro's REST API (false: always read; a benchmark baseline, docs/maestro.md)")
	str(&statusEventsFirst, "status-events-first", "STATUS_EVENTS_FIRST", "true",
		"reconcile a cluster or node pool whose work's status changed before those queued for other reasons (creates, spec changes, resyncs), so a finished transition is not reported behind new work (false: one queue in arrival order; a benchmark baseline, docs/cluster-service.md)")
	str(&readBeforeWrite, "maestro-read-before-write", "MAESTRO_READ_BEFORE_WRITE", "false",
		"read every work from Maestro before creating or patching it, instead of trusting what this process last wrote (true: the rule before 2026-11-24, a benchmark baseline; docs/maestro.md)")
	str(&pipelinedWrites, "store-pipelined-writes", "STORE_PIPELINED_WRITES", "false",
		"hold the store's write lock for no client round trip in creates and status writes (read first, then take the lock and write in one pipeline): creates answered faster under load, but HostedCluster Available -> ARM Succeeded measured slower (docs/perf-data/run-log-2026-11.md, \"Pipelined writes\"), so opt-in")
	str(&retention, "tombstone-retention", "TOMBSTONE_RETENTION", "168h", "how long DELETED events stay replayable for WatchClusters")
	str(&workers, "workers", "WORKERS", "4", "clusters reconciled at once")
	str(&c.releaseImageRepo, "release-image-repository", "RELEASE_IMAGE_REPOSITORY", manifests.DefaultReleaseImageRepository, "repository of OpenShift release images")
	str(&c.versionsFile, "versions-file", "VERSIONS_FILE", "", "JSON version catalogue (channel groups, versions, end of life, upgrade edges; checked at start-up); default: the catalogue built in")
	str(&c.pullSecretFile, "pull-secret-file", "PULL_SECRET_FILE", "", "file with the .dockerconfigjson given to hosted clusters; default: no credentials")
	str(&c.kekFile, "secret-kek-file", "SECRET_KEK_FILE", "",
		"file (mode 0600) with the active key-encryption key, base64 of 32 bytes: customer secrets are stored encrypted under it (docs/security.md); required")
	str(&c.kekRetiredDir, "secret-kek-retired-dir", "SECRET_KEK_RETIRED_DIR", "",
		"directory of earlier key-encryption keys (files 0600) that still decrypt rows written before a rotation; at start-up their rows are rewrapped under --secret-kek-file")
	str(&c.sreStatementKeyFile, "sre-statement-public-key", "SRE_STATEMENT_PUBLIC_KEY", "",
		"Ed25519 public key (PEM) of the admin API's --sre-statement-key: an SRE break-glass credential is issued only for a statement it verifies (docs/sre.md#break-glass); empty: every SRE credential is refused")
	str(&c.devIdentityClientID, "dev-workload-identity-client-id", "DEV_WORKLOAD_IDENTITY_CLIENT_ID", "",
		"development regions only: client ID (UUID) used for every workload identity of a cluster that has none; empty fails such clusters")
	str(&c.baseDomain, "base-domain", "BASE_DOMAIN", manifests.DefaultBaseDomain,
		"the region's DNS base domain: a new cluster's is <namespace>.<base-domain> (HostedCluster spec.dns.baseDomain; its console is console-openshift-console.apps.<prefix or name>.<that>)")
	str(&c.oidcIssuerBaseURL, "oidc-issuer-base-url", "OIDC_ISSUER_BASE_URL", manifests.DefaultOIDCIssuerBaseURL,
		"https URL under which each new cluster's OIDC issuer is <url>/<cluster id> (HostedCluster spec.issuerURL)")
	str(&shutdown, "shutdown-timeout", "SHUTDOWN_TIMEOUT", "30s", "how long to wait for requests and watches to finish on SIGTERM")
	str(&logLevel, "log-level", "LOG_LEVEL", "info", "debug, info, warn or error")
	str(&c.serverTLS.Cert, "tls-cert", "TLS_CERT", "", "server certificate; with --tls-key enables TLS on --listen")
	str(&c.serverTLS.Key, "tls-key", "TLS_KEY", "", "server key")
	str(&c.serverTLS.CA, "tls-client-ca", "TLS_CLIENT_CA", "", "the service CA (during a rollover, the old and the new one) that client certificates must chain to; required with --tls-cert: callers are authorized per method by their certificate's SPIFFE ID (docs/security.md)")
	str(&c.trustDomain, "trust-domain", "TRUST_DOMAIN", identity.DefaultTrustDomain, "the SPIFFE trust domain of the workloads allowed to call (spiffe://<trust domain>/ns/<namespace>/sa/<service account>)")
	str(&c.maestroTLS.CA, "maestro-ca", "MAESTRO_CA", "", "CA that verifies Maestro; any Maestro TLS flag enables TLS to Maestro")
	str(&c.maestroTLS.Cert, "maestro-cert", "MAESTRO_CERT", "", "client certificate for Maestro")
	str(&c.maestroTLS.Key, "maestro-key", "MAESTRO_KEY", "", "client key for Maestro")
	fs.Usage = func() {}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fs.SetOutput(os.Stderr)
			fs.PrintDefaults()
		}
		return c, err
	}
	if fs.NArg() > 0 {
		return c, fmt.Errorf("unexpected arguments: %v", fs.Args())
	}

	var err error
	if c.resyncPeriod, err = time.ParseDuration(resync); err != nil || c.resyncPeriod < time.Second {
		return c, fmt.Errorf("--resync-period: %q is not a duration of at least 1s", resync)
	}
	if c.republishAfter, err = time.ParseDuration(republish); err != nil || c.republishAfter < time.Second {
		return c, fmt.Errorf("--republish-after: %q is not a duration of at least 1s", republish)
	}
	if c.staleStatusAfter, err = time.ParseDuration(staleStatus); err != nil || c.staleStatusAfter < time.Second {
		return c, fmt.Errorf("--stale-status-after: %q is not a duration of at least 1s", staleStatus)
	}
	if c.feedbackHeartbeat, err = time.ParseDuration(heartbeat); err != nil || (c.feedbackHeartbeat != 0 && c.feedbackHeartbeat < time.Second) {
		return c, fmt.Errorf("--feedback-heartbeat: %q is not 0 or a duration of at least 1s", heartbeat)
	}
	if c.tombstoneRetention, err = time.ParseDuration(retention); err != nil || c.tombstoneRetention < time.Minute {
		return c, fmt.Errorf("--tombstone-retention: %q is not a duration of at least 1m", retention)
	}
	if c.shutdownTimeout, err = time.ParseDuration(shutdown); err != nil || c.shutdownTimeout < 0 {
		return c, fmt.Errorf("--shutdown-timeout: %q is not a duration", shutdown)
	}
	if c.workers, err = strconv.Atoi(workers); err != nil || c.workers < 1 || c.workers > 256 {
		return c, fmt.Errorf("--workers: %q is not a number between 1 and 256", workers)
	}
	if c.breakGlassValidity, err = time.ParseDuration(breakGlassValidity); err != nil || c.breakGlassValidity < 10*time.Minute || c.breakGlassValidity > 168*time.Hour {
		return c, fmt.Errorf("--break-glass-validity: %q is not a duration between 10m and 168h", breakGlassValidity)
	}
	for _, b := range []struct {
		name, value string
		field       *bool
		when        bool // field is set when the flag has this value
	}{
		{"feedback-watch", feedbackWatch, &c.pollFeedbackOnly, false},
		{"watch-secrets", watchSecrets, &c.readSecretsLive, false},
		{"republish-adaptive", republishAdaptive, &c.fixedRepublishWait, false},
		{"status-from-watch", statusFromWatch, &c.statusFromMaestroOnly, false},
		{"status-events-first", statusEventsFirst, &c.statusEventsInOrder, false},
		{"resync-spread", resyncSpread, &c.resyncAtOnce, false},
		{"maestro-read-before-write", readBeforeWrite, &c.readBeforeWrite, true},
		{"store-pipelined-writes", pipelinedWrites, &c.pipelinedWrites, true},
	} {
		v, err := strconv.ParseBool(b.value)
		if err != nil {
			return c, fmt.Errorf("--%s: %q is not true or false", b.name, b.value)
		}
		*b.field = v == b.when
	}
	if c.placementPolicy, err = placement.ParsePolicy(placementPolicy); err != nil {
		return c, fmt.Errorf("--placement-policy: %w", err)
	}
	if c.logLevel, err = svcmain.Level(logLevel); err != nil {
		return c, err
	}
	if c.devIdentityClientID != "" && !uuidRE.MatchString(c.devIdentityClientID) {
		return c, fmt.Errorf("--dev-workload-identity-client-id: %q is not a UUID", c.devIdentityClientID)
	}
	if !baseDomainRE.MatchString(c.baseDomain) || len(c.baseDomain) > 190 {
		return c, fmt.Errorf("--base-domain: %q is not a lowercase DNS name of at least two labels and at most 190 characters", c.baseDomain)
	}
	if u, err := url.Parse(c.oidcIssuerBaseURL); err != nil || u.Scheme != "https" || u.Host == "" || u.RawQuery != "" || u.Fragment != "" || len(c.oidcIssuerBaseURL) > 200 {
		return c, fmt.Errorf("--oidc-issuer-base-url: %q is not an https URL without query or fragment (at most 200 characters)", c.oidcIssuerBaseURL)
	}
	if err := manifests.ValidateEnv(c.envName); err != nil {
		return c, fmt.Errorf("--env-name: %w", err)
	}
	for name, addr := range map[string]string{"--listen": c.listen, "--metrics-listen": c.metricsListen} {
		if _, _, err := net.SplitHostPort(addr); err != nil {
			return c, fmt.Errorf("%s: %q is not host:port", name, addr)
		}
	}
	switch {
	case c.dbDSN == "":
		return c, errors.New("--db-dsn is required")
	case c.kekFile == "":
		return c, errors.New("--secret-kek-file is required: Cluster Service stores etcd encryption keys and break-glass private keys only encrypted")
	case c.maestroGRPC == "":
		return c, errors.New("--maestro-grpc is required")
	case c.maestroREST == "":
		return c, errors.New("--maestro-rest is required")
	}
	if err := tlsconfig.RequireDatabaseTLS(c.dbDSN); err != nil {
		return c, fmt.Errorf("--db-dsn: %w", err)
	}
	if _, _, err := net.SplitHostPort(c.maestroGRPC); err != nil {
		return c, fmt.Errorf("--maestro-grpc: %q is not host:port", c.maestroGRPC)
	}
	if c.sealingKeysDir != "" {
		if st, err := os.Stat(c.sealingKeysDir); err != nil || !st.IsDir() {
			return c, fmt.Errorf("--sealing-keys-dir: %q is not a directory", c.sealingKeysDir)
		}
	}
	// Plaintext only on loopback: checked here so the message names the flag.
	if _, err := c.serverTLS.Server(c.listen, "h2"); err != nil {
		return c, fmt.Errorf("--listen / --tls-cert / --tls-key: %w", err)
	}
	if c.serverTLS.Enabled() && c.serverTLS.CA == "" {
		return c, errors.New("--tls-cert needs --tls-client-ca: Cluster Service authorizes each caller by its client certificate")
	}
	if _, err := c.serverTLS.Metrics(c.metricsListen); err != nil {
		return c, fmt.Errorf("--metrics-listen: %w", err)
	}
	if _, err := c.maestroTLS.Client(c.maestroGRPC); err != nil {
		return c, fmt.Errorf("--maestro-grpc / --maestro-ca: %w", err)
	}
	if !c.maestroTLS.Enabled() {
		if err := tlsconfig.RequireLoopback(urlHost(c.maestroREST)); err != nil {
			return c, fmt.Errorf("--maestro-rest: %w", err)
		}
	}
	return c, nil
}

func urlHost(u string) string {
	if i := len("https://"); len(u) > i && u[:i] == "https://" {
		u = u[i:]
	} else if i := len("http://"); len(u) > i && u[:i] == "http://" {
		u = u[i:]
	}
	for i, r := range u {
		if r == '/' {
			return u[:i]
		}
	}
	return u
}

func main() {
	svcmain.Main("cluster-service", parseConfig, func(c config) error {
		log := svcmain.Logger(c.logLevel).With("service", "cluster-service")
		ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
		defer stop()
		if err := run(ctx, c, log); err != nil {
			log.Error("cluster-service stopped", "error", err)
			return err
		}
		log.Info("cluster-service stopped")
		return nil
	})
}

func run(ctx context.Context, c config, log *slog.Logger) error {
	serverTLS, err := c.serverTLS.Server(c.listen, "h2")
	if err != nil {
		return fmt.Errorf("--tls-cert: %w", err)
	}
	metricsTLS, err := c.serverTLS.Metrics(c.metricsListen)
	if err != nil {
		return fmt.Errorf("--metrics-listen: %w", err)
	}
	maestroTLS, err := c.maestroTLS.Expecting(identity.MaestroServer).Client(c.maestroGRPC)
	if err != nil {
		return fmt.Errorf("--maestro-ca: %w", err)
	}
	mcfg := manifests.Config{Env: c.envName, ReleaseImageRepository: c.releaseImageRepo, DevWorkloadIdentityClientID: c.devIdentityClientID}
	if c.pullSecretFile != "" {
		if mcfg.PullSecret, err = os.ReadFile(c.pullSecretFile); err != nil {
			return fmt.Errorf("--pull-secret-file: %w", err)
		}
	}

	catalogue, err := versions.Load(c.versionsFile)
	if err != nil {
		return fmt.Errorf("--versions-file: %w", err)
	}

	var sreKey ed25519.PublicKey
	if c.sreStatementKeyFile != "" {
		if sreKey, err = srestatement.ReadPublicKey(c.sreStatementKeyFile); err != nil {
			return fmt.Errorf("--sre-statement-public-key: %w", err)
		}
	}

	keys, err := envelope.LoadFiles(c.kekFile, c.kekRetiredDir)
	if err != nil {
		return fmt.Errorf("--secret-kek-file: %w", err)
	}

	// The database (with migrations) is ready before the port opens, so the first request works.
	st, err := store.Open(ctx, c.dbDSN, log, keys)
	if err != nil {
		return fmt.Errorf("open store: %w", err)
	}
	defer st.Close()
	st.SetPipelinedWrites(c.pipelinedWrites)
	// A rotation ends here: rows still under a retired key (or from before encryption) move to
	// the active one, so the retired keys can go once this has run.
	n, err := st.ReencryptSecrets(ctx)
	if err != nil {
		return fmt.Errorf("re-encrypt secrets under --secret-kek-file: %w", err)
	}
	log.Info("secrets at rest are under the active key-encryption key", "key_id", keys.ActiveKeyID(), "keys_in_ring", len(keys.KeyIDs()), "re_encrypted", n)

	mc, err := maestro.New(ctx, maestro.Config{GRPCAddr: c.maestroGRPC, RESTURL: c.maestroREST, SourceID: c.maestroSourceID, TLS: maestroTLS,
		ReadBeforeWrite: c.readBeforeWrite}, log)
	if err != nil {
		return fmt.Errorf("maestro client: %w", err)
	}
	defer mc.Close()

	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	handshakes, err := tlsconfig.NewHandshakeMetric(reg, "cluster_service")
	if err != nil {
		return fmt.Errorf("register the TLS handshake metric: %w", err)
	}
	handshakes.Count(serverTLS, "grpc")
	handshakes.Count(metricsTLS, "metrics")
	srv := server.New(st, server.Config{Env: c.envName, BaseDomain: c.baseDomain, OIDCIssuerBaseURL: c.oidcIssuerBaseURL, Log: log, Registerer: reg, Versions: catalogue, Policy: c.placementPolicy,
		SREStatementKey: sreKey, CustomerCredentialValidity: c.breakGlassValidity, Manifests: mcfg})
	ctrl := controller.New(st, mc, controller.Config{Manifests: mcfg, Policy: c.placementPolicy, ResyncPeriod: c.resyncPeriod, Workers: c.workers,
		TombstoneRetention: c.tombstoneRetention, Registerer: reg, Versions: catalogue,
		PollFeedbackOnly: c.pollFeedbackOnly, ReadSecretsLive: c.readSecretsLive, RepublishAfter: c.republishAfter, StaleStatusAfter: c.staleStatusAfter, FeedbackHeartbeat: c.feedbackHeartbeat,
		FixedRepublishWait: c.fixedRepublishWait, StatusFromMaestroOnly: c.statusFromMaestroOnly,
		StatusEventsInOrder: c.statusEventsInOrder, ResyncAtOnce: c.resyncAtOnce, SealingKeys: sealingKeys(c.sealingKeysDir)}, log)
	credCtrl := controller.NewCredentials(st, mc, controller.CredentialsConfig{Manifests: mcfg, Validity: c.breakGlassValidity, Registerer: reg}, log)

	// Message size, streams per connection, handshake timeout, keepalive enforcement and the
	// connection cap: internal/serverlimits, docs/security.md.
	grpcLimits := serverlimits.GRPCDefaults()
	opts := append(grpcLimits.ServerOptions(), srv.ServerOptions()...)
	if serverTLS != nil {
		// Mutual TLS authenticates the caller; authz, chained after the logging interceptors,
		// authorizes it per method. Plaintext (loopback only) has no identities to check.
		opts = append(opts, grpc.Creds(credentials.NewTLS(serverTLS)))
		opts = append(opts, authz.ServerOptions(c.trustDomain)...)
	}
	g := grpc.NewServer(opts...)
	srv.Register(g)
	hs := health.NewServer()
	healthpb.RegisterHealthServer(g, srv.Health(hs))

	lis, err := grpcLimits.Listen(c.listen)
	if err != nil {
		return fmt.Errorf("--listen %s: %w", c.listen, err)
	}
	metricsLimits := serverlimits.Metrics()
	hsrv := metricsLimits.Server(c.metricsListen, metricsMux(reg, st, log, c.pprofTokenFile), metricsTLS)
	mlis, err := metricsLimits.Listen(hsrv)
	if err != nil {
		lis.Close()
		return fmt.Errorf("--metrics-listen %s: %w", c.metricsListen, err)
	}

	errc := make(chan error, 3)
	go func() { errc <- g.Serve(lis) }()
	go func() {
		if err := hsrv.Serve(mlis); err != nil && !errors.Is(err, http.ErrServerClosed) {
			errc <- fmt.Errorf("metrics server: %w", err)
		}
	}()
	cctx, cancelCtrl := context.WithCancel(ctx)
	defer cancelCtrl()
	ctrlDone := make(chan error, 1)
	go func() { ctrlDone <- ctrl.Run(cctx) }()
	credDone := make(chan error, 1)
	go func() {
		err := credCtrl.Run(cctx)
		if err != nil {
			log.Error("break-glass controller stopped", "error", err)
		}
		credDone <- err
	}()
	hs.SetServingStatus("", healthpb.HealthCheckResponse_SERVING)
	log.Info("cluster-service started", "listen", c.listen, "tls", serverTLS != nil, "metrics", c.metricsListen,
		"maestro_grpc", c.maestroGRPC, "maestro_rest", c.maestroREST, "env", c.envName, "resync_period", c.resyncPeriod, "sealing_keys_dir", c.sealingKeysDir)

	var runErr error
	select {
	case <-ctx.Done():
		log.Info("shutting down")
	case err := <-errc:
		runErr = err
	case err := <-ctrlDone:
		runErr = fmt.Errorf("controller stopped: %w", err)
		ctrlDone <- err
	}

	// Graceful: stop taking requests, let unary calls finish, end watches after the timeout.
	hs.Shutdown()
	srv.Drain()
	stopped := make(chan struct{})
	go func() { g.GracefulStop(); close(stopped) }()
	select {
	case <-stopped:
	case <-time.After(c.shutdownTimeout):
		g.Stop()
	}
	cancelCtrl()
	<-ctrlDone
	<-credDone
	sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = hsrv.Shutdown(sctx)
	return runErr
}

// metricsMux serves --metrics-listen: /metrics, the profiles, /healthz and /readyz (the
// database answers).
func metricsMux(reg *prometheus.Registry, db interface{ Ping(context.Context) error }, log *slog.Logger, pprofTokenFile string) *http.ServeMux {
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	pprofmux.Register(mux, pprofTokenFile)
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("ok")) })
	mux.Handle("GET /readyz", readyz.Handler(log, readyz.Check{Name: "database", Func: db.Ping}))
	return mux
}

// sealingKeys is the controller's source of management clusters' sealing keys: none without
// --sealing-keys-dir.
func sealingKeys(dir string) controller.SealingKeys {
	if dir == "" {
		return nil
	}
	return secretseal.KeyDir(dir)
}
