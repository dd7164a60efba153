package localregion

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"path/filepath"
	"time"

	"github.com/openhcp/openhcp/dev-infrastructure/mgmtcluster"
	"github.com/openhcp/openhcp/internal/pgserver"
	"github.com/openhcp/openhcp/internal/pki"
)

// ExternalServiceCluster runs the service cluster's workloads (the Maestro server, Cluster
// Service, the backend, the frontend and the admin API) instead of Up's processes: make
// deploy's Helm charts on the real node (dev-infrastructure/localregion/deploy). Up keeps what
// stays outside a cluster (the PKI, PostgreSQL, the broker), prepares every database login and
// secret, installs the workloads one by one in dependency order, and writes region.json from
// the host addresses Install returns, in make run's format.
type ExternalServiceCluster interface {
	// ServerNames are the DNS names, by PKI identity (pki.Postgres, pki.Broker,
	// pki.MaestroServer, pki.ClusterService, pki.Frontend, "admin", "gateway"), that the workloads dial
	// that server by; its certificate gets them besides localhost and the loopback addresses.
	ServerNames() map[string][]string
	// Install starts one workload ("maestro-server", "cluster-service", "backend", "frontend",
	// "admin", "gateway") and returns once it is ready, with a host loopback address (host:port) for
	// each of its ports by name ("https", "grpc", "metrics").
	Install(ctx context.Context, env ServiceEnv, workload string) (map[string]string, error)
	// Stop removes what Install made that the region's own Stop would not.
	Stop()
}

// ServiceEnv is what the service cluster's workloads need from the region.
type ServiceEnv struct {
	PKI *pki.Region
	// PostgresAddr and BrokerAddr are host:port on the host's loopback.
	PostgresAddr, BrokerAddr string
	// BouncerAddr is the PgBouncer in front of PostgreSQL (host:port on loopback, the same
	// certificate as PostgreSQL) that the Maestro server connects through; empty when it
	// connects directly (Config.MaestroDirectDB).
	BouncerAddr string
	// DBPasswords are the database login passwords by service ("maestro", "cluster-service",
	// "frontend", "backend", "admin").
	DBPasswords map[string]string
	// KEKFile is Cluster Service's key-encryption key and PullSecretFile the hosted clusters'
	// pull secret (secrets.go); SessionKeyFile the break-glass session key (gateway.go).
	KEKFile, PullSecretFile, SessionKeyFile string
	// SREStatementKeyFile is the admin API's statement signing key (Ed25519 PKCS#8 PEM, 0600)
	// and SREStatementPublicKeyFile its public half (PKIX PEM), which Cluster Service and the
	// maintenance service verify SREs' requests with (secrets.go).
	SREStatementKeyFile, SREStatementPublicKeyFile string
	// SealingKeysDir holds each management cluster's public sealing key, "<consumer>.pub"
	// (Cluster Service's --sealing-keys-dir); no private key is in it.
	SealingKeysDir string
	// ManagementClusters are the region's management clusters (installed before Cluster
	// Service).
	ManagementClusters []ManagementClusterInfo
	EnvName, Location  string
	Step               func(format string, args ...any)
}

// serverSpec is a server identity's certificate with the names the service cluster dials it by.
func (r *Region) serverSpec(cn string, usage pki.Usage) pki.Spec {
	s := pki.Spec{CommonName: cn, Usage: usage}
	if r.cfg.ServiceCluster == nil {
		return s
	}
	names := r.cfg.ServiceCluster.ServerNames()[cn]
	if len(names) == 0 {
		return s
	}
	s.DNSNames = append([]string{"localhost"}, names...)
	s.IPs = []net.IP{net.IPv4(127, 0, 0, 1), net.IPv6loopback}
	return s
}

// addServiceClusterNames reissues the server certificates of the service cluster's servers with
// the names its workloads dial them by.
func (r *Region) addServiceClusterNames() error {
	if r.cfg.ServiceCluster == nil {
		return nil
	}
	for _, id := range []struct {
		cn    string
		usage pki.Usage
	}{
		{pki.Postgres, pki.Server},
		{pki.MaestroServer, pki.Server | pki.Client},
		{pki.ClusterService, pki.Server | pki.Client},
		{pki.Frontend, pki.Server | pki.Client},
	} {
		if err := r.pki.Add(id.cn, r.serverSpec(id.cn, id.usage), pki.ServiceCA); err != nil {
			return fmt.Errorf("certificate of %s for the service cluster: %w", id.cn, err)
		}
	}
	return nil
}

func (r *Region) serviceEnv() ServiceEnv {
	kek, _ := r.ClusterServiceKEK()
	sealingPub, _ := r.sealingKeyFiles("")
	statementKey, statementPub := r.sreStatementKeyFiles()
	r.mu.Lock()
	pw := make(map[string]string, len(r.dbPasswords))
	for k, v := range r.dbPasswords {
		pw[k] = v
	}
	r.mu.Unlock()
	return ServiceEnv{PKI: r.pki, PostgresAddr: r.Info.Postgres.Addr, BouncerAddr: r.Info.Postgres.BouncerAddr, BrokerAddr: hostOf(r.Info.MQTT.URL[len("mqtts://"):]),
		DBPasswords: pw, KEKFile: kek, PullSecretFile: filepath.Join(r.secretsDir(), "pull-secret.json"), SessionKeyFile: r.sessionKeyFile(),
		SREStatementKeyFile: statementKey, SREStatementPublicKeyFile: statementPub,
		SealingKeysDir:     sealingPub,
		ManagementClusters: append([]ManagementClusterInfo(nil), r.Info.ManagementClusters...),
		EnvName:            r.cfg.EnvName, Location: r.cfg.Location, Step: r.step}
}

// install runs ServiceCluster.Install and checks it returned every port the region needs.
func (r *Region) install(ctx context.Context, workload string, ports ...string) (map[string]string, error) {
	r.step("installing %s on the service cluster", workload)
	ep, err := r.cfg.ServiceCluster.Install(ctx, r.serviceEnv(), workload)
	if err != nil {
		return nil, fmt.Errorf("install %s: %w", workload, err)
	}
	for _, p := range ports {
		if ep[p] == "" {
			return nil, fmt.Errorf("install %s: no host address for port %s", workload, p)
		}
	}
	return ep, nil
}

// installMaestroServer is startMaestroServer on the service cluster.
func (r *Region) installMaestroServer(ctx context.Context) (mgmtcluster.MaestroREST, error) {
	ep, err := r.install(ctx, "maestro-server", "https", "grpc", "metrics")
	if err != nil {
		return mgmtcluster.MaestroREST{}, err
	}
	// The chart's gate admits Cluster Service and the admin API only; the launcher registers
	// consumers for Cluster Service, as it does with the process region.
	cfg, err := r.clientTLS(pki.ClusterService).For(pki.MaestroServer).Files().Client(ep["https"])
	if err != nil {
		return mgmtcluster.MaestroREST{}, err
	}
	client := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{TLSClientConfig: cfg}}
	rest := mgmtcluster.MaestroREST{URL: "https://" + ep["https"], Client: client}
	r.Info.Maestro = MaestroInfo{REST: rest.URL, GRPC: ep["grpc"], MetricsURL: "https://" + ep["metrics"] + "/metrics",
		ClientTLS: r.clientTLS(pki.ClusterService).For(pki.MaestroServer)}
	return rest, nil
}

// installServices installs Cluster Service (and registers the shards), the backend, the
// frontend, the admin API and the break-glass gateway, as Up starts them as processes otherwise.
func (r *Region) installServices(ctx context.Context, pg *pgserver.Server) error {
	if _, err := r.clusterServiceSecretArgs(); err != nil {
		return err
	}
	ep, err := r.install(ctx, "cluster-service", "grpc", "metrics")
	if err != nil {
		return err
	}
	r.Info.ClusterService = ServiceInfo{GRPC: ep["grpc"], ClientTLS: r.clusterServiceClientTLS(pki.SRE), MetricsURL: "https://" + ep["metrics"] + "/metrics"}
	if err := r.registerShards(ctx, ep["grpc"]); err != nil {
		return err
	}
	if ep, err = r.install(ctx, "backend", "metrics"); err != nil {
		return err
	}
	r.Info.Backend = ServiceInfo{MetricsURL: "https://" + ep["metrics"] + "/metrics"}
	if ep, err = r.install(ctx, "frontend", "https", "metrics"); err != nil {
		return err
	}
	r.Info.Frontend = FrontendInfo{URL: "https://" + ep["https"], ClientTLS: r.clientTLS(pki.ARM).For(pki.Frontend), MetricsURL: "https://" + ep["metrics"] + "/metrics"}
	if err := r.waitHealthy(ctx, r.Info.Frontend.URL+"/healthz"); err != nil {
		return err
	}
	// The admin login's grants name the document store's tables, which the frontend's
	// migrations have made by now.
	if err := r.issueAdminIdentities(); err != nil {
		return err
	}
	if _, err := r.prepareAdminDatabase(ctx, pg); err != nil {
		return err
	}
	// The gateway before the admin API, whose break-glass kubeconfigs name it.
	if err := r.installGateway(ctx); err != nil {
		return err
	}
	if ep, err = r.install(ctx, "admin", "https", "metrics"); err != nil {
		return err
	}
	r.Info.Admin.URL = "https://" + ep["https"]
	r.Info.Admin.ServerName = pki.ServerName(adminIdentity)
	r.Info.Admin.MetricsURL = "https://" + ep["metrics"] + "/metrics"
	if err := r.waitHealthy(ctx, r.Info.Admin.URL+"/healthz"); err != nil {
		return err
	}
	if err := r.installMonitor(ctx, pg); err != nil {
		return err
	}
	if err := r.installMaintenance(ctx, pg); err != nil {
		return err
	}
	return r.installPrometheus(ctx)
}

// installMaintenance is startMaintenance on the service cluster: the chart's replicas (one holds
// the campaign lease) behind one Service, whose host forward region.json names. Its login to the
// document store is made first; the chart keeps the binary's poll intervals (make run's shorter
// ones are the launcher's own).
func (r *Region) installMaintenance(ctx context.Context, pg *pgserver.Server) error {
	if _, err := r.documentStoreLogin(ctx, pg, maintenanceName); err != nil {
		return err
	}
	ep, err := r.install(ctx, maintenanceName, "metrics")
	if err != nil {
		return err
	}
	metrics := "https://" + ep["metrics"]
	r.Info.Maintenance = ServiceInfo{MetricsURL: metrics + "/metrics"}
	return r.waitHealthy(ctx, metrics+"/healthz")
}

// installMonitor is startMonitor on the service cluster: the chart's replicas behind one
// Service, whose host forward region.json lists as the one replica URL. Its login to the
// document store is made first; the service cluster gives it each management cluster's /readyz
// probe (the chart's shardProbes).
func (r *Region) installMonitor(ctx context.Context, pg *pgserver.Server) error {
	if _, err := r.documentStoreLogin(ctx, pg, monitorName); err != nil {
		return err
	}
	ep, err := r.install(ctx, monitorName, "metrics")
	if err != nil {
		return err
	}
	metrics := "https://" + ep["metrics"]
	r.Info.Monitor = MonitorInfo{Replicas: []ServiceInfo{{MetricsURL: metrics + "/metrics"}}, StaleAfter: "3m"}
	return r.waitHealthy(ctx, metrics+"/healthz")
}

// installPrometheus is startPrometheus on the service cluster: region.json names its host
// forward, which admits SRE persons' certificates only, as make run's.
func (r *Region) installPrometheus(ctx context.Context) error {
	ep, err := r.install(ctx, "prometheus", "https")
	if err != nil {
		return err
	}
	sre, err := r.Info.Admin.SRE("bob")
	if err != nil {
		return fmt.Errorf("prometheus: its default client: %w", err)
	}
	rules, err := ShippedRuleFiles(r.cfg.Root)
	if err != nil {
		return err
	}
	info := PrometheusInfo{URL: "https://" + ep["https"], ClientTLS: sre.ClientTLS(r.pki.CAFile).For(pki.Prometheus),
		ClientCAFile: r.pki.PersonCAFile, Interval: promDuration(r.cfg.PrometheusInterval), RuleFiles: rules}
	client, err := info.HTTPClient(5 * time.Second)
	if err != nil {
		return err
	}
	ready := mgmtcluster.HTTPReady(client, info.URL+"/-/ready")
	wait, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	for err := ready(wait); err != nil; err = ready(wait) {
		select {
		case <-wait.Done():
			return fmt.Errorf("prometheus at %s: %w", info.URL, err)
		case <-time.After(500 * time.Millisecond):
		}
	}
	r.Info.Prometheus = &info
	return nil
}

// installGateway is startGateways on the service cluster: the chart's replicas behind one
// Service, so region.json lists one URL, the host forward that the admin API's --gateway-url
// names too (ServiceCluster.Install of "admin").
func (r *Region) installGateway(ctx context.Context) error {
	if err := r.issueGatewayIdentity(); err != nil {
		return err
	}
	if err := r.writeSessionKey(); err != nil {
		return err
	}
	ep, err := r.install(ctx, "gateway", "https", "metrics")
	if err != nil {
		return err
	}
	r.Info.Gateway = GatewayInfo{URLs: []string{"https://" + ep["https"]}, CAFile: r.pki.CAFile,
		MetricsURLs: []string{"https://" + ep["metrics"] + "/metrics"}, SessionKeyFile: r.sessionKeyFile()}
	// The gateway listener admits SRE certificates only; /readyz on metrics says the admin
	// database answers.
	return r.waitHealthy(ctx, "https://"+ep["metrics"]+"/readyz")
}

// waitHealthy waits until a host address of the service cluster answers 200, verified with the
// region CA (so the certificate names 127.0.0.1 too).
func (r *Region) waitHealthy(ctx context.Context, u string) error {
	probe, err := r.probeClient(hostOf(u), "")
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	for {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
		resp, err := probe.Do(req)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
			err = fmt.Errorf("%s", resp.Status)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%s from the host: %w", u, err)
		case <-time.After(500 * time.Millisecond):
		}
	}
}
