package deploy

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"

	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/openhcp/openhcp/dev-infrastructure/images"
	"github.com/openhcp/openhcp/dev-infrastructure/localregion"
	"github.com/openhcp/openhcp/dev-infrastructure/mgmtcluster/crds"
	"github.com/openhcp/openhcp/dev-infrastructure/node"
	"github.com/openhcp/openhcp/internal/pki"
)

const (
	postgresService = "postgres"
	postgresPort    = 5432
	// The PgBouncer in front of PostgreSQL, for the Maestro server (pgserver.Bouncer). It
	// presents PostgreSQL's certificate, which therefore names it too. Port 6432 is where Azure
	// Database for PostgreSQL's built-in PgBouncer listens.
	bouncerService = "postgres-bouncer"
	bouncerPort    = 6432
	// backendServer is the backend's metrics server identity: the region's backend identity is
	// a client certificate (Cluster Service authorizes the backend by it).
	backendServer = "backend-metrics"
	// monitorServer is the Monitor's metrics server identity, for the same reason.
	monitorServer = "monitor-metrics"
	// maintenanceServer is the maintenance service's metrics server identity, for the same
	// reason.
	maintenanceServer = "maintenance-metrics"
)

// workload is one service-cluster chart: its release, namespace (the workload's identity
// namespace in config/, which the mesh policy requires), image and the ports region.json
// needs on the host.
type workload struct {
	chart, namespace, image string
	ports                   []string
}

var workloads = map[string]workload{
	"maestro-server":  {"maestro/deploy/server", "openhcp-maestro", "maestro", []string{"https", "grpc", "metrics"}},
	"cluster-service": {"cluster-service/deploy", "openhcp-cluster-service", "cluster-service", []string{"grpc", "metrics"}},
	"backend":         {"backend/deploy", "openhcp-backend", "backend", []string{"metrics"}},
	// The fleet Monitor, beside the backend (config identities.monitor).
	"monitor": {"backend/deploy/monitor", "openhcp-backend", "monitor", []string{"metrics"}},
	// The maintenance service, beside the backend (config identities.maintenance).
	"maintenance": {"backend/deploy/maintenance", "openhcp-backend", "maintenance", []string{"metrics"}},
	"frontend":    {"frontend/deploy", "openhcp-frontend", "frontend", []string{"https", "metrics"}},
	"admin":       {"admin/deploy", "openhcp-admin", "admin", []string{"https", "metrics"}},
	// The break-glass gateway, in the admin API's namespace (config identities.gateway).
	"gateway": {"admin/deploy/gateway", "openhcp-admin", "gateway", []string{"https", "metrics"}},
}

// serviceImages are the images of the service cluster's charts.
var serviceImages = []string{"maestro", "maestro-gate", "cluster-service", "backend", "monitor", "maintenance", "frontend", "admin", "gateway", prometheusName}

// ServiceCluster installs the service cluster's charts on the node (a
// localregion.ExternalServiceCluster): PostgreSQL and the broker stay on the host, exposed to
// the pods as Services of OutsideNamespace; every Secret the charts name is made from the region
// PKI and the launcher's database logins; each workload's ports are forwarded to host loopback
// ports for region.json.
type ServiceCluster struct {
	Node *node.Node
	// Root is the repository root; Rendered the region's rendered config directory.
	Root, Rendered string
	Helm, HelmHome string
	// ImagesDir holds the built images' values files (values/<image>.yaml).
	ImagesDir string
	// Dir holds the files Secrets are made from (0700), removed with the node's directory.
	Dir string
	// Clusters are the management clusters whose kubeconfigs the admin API gets and whose
	// workloads Prometheus scrapes.
	Clusters []*NodeCluster

	mu       sync.Mutex
	prepared bool
	postgres node.OutsideService
	// bouncer is the Maestro server's way to PostgreSQL; postgres when the region runs none.
	bouncer   node.OutsideService
	broker    node.OutsideService
	installed []string
	// gatewayURL is the host forward of the gateway's https port once it is installed: the
	// admin API's --gateway-url (breakGlass.gatewayURL), so hcpctl's break-glass kubeconfigs
	// on this host reach it.
	gatewayURL string
	// adminURL is the host forward of the admin API's https port once it is installed: its
	// --url (the chart's url), the one origin its portal's forms may come from, as hcpctl
	// portal and SREs reach it.
	adminURL string
	// made are the namespaces and Secrets ("<namespace>/<name>") made so far: workloads that
	// share a namespace (admin and gateway) make each once.
	made     map[string]bool
	forwards context.Context
	cancel   context.CancelFunc
	// prometheusRules are the rule files the region's Prometheus evaluates, once installed.
	prometheusRules []string
}

func svcName(name, namespace string) string { return name + "." + namespace + ".svc" }

// ServerNames are the names the pods dial each server by.
func (s *ServiceCluster) ServerNames() map[string][]string {
	full := func(name, ns string) []string {
		return []string{svcName(name, ns), svcName(name, ns) + "." + node.ClusterDomain}
	}
	return map[string][]string{
		pki.Postgres:       append(full(postgresService, OutsideNamespace), full(bouncerService, OutsideNamespace)...),
		pki.MaestroServer:  full("maestro-server", workloads["maestro-server"].namespace),
		pki.ClusterService: full("cluster-service", workloads["cluster-service"].namespace),
		pki.Frontend:       full("frontend", workloads["frontend"].namespace),
		"admin":            full("admin", workloads["admin"].namespace),
		"gateway":          full("gateway", workloads["gateway"].namespace),
	}
}

// prepare exposes PostgreSQL and the broker to the pods and installs Istio's CRDs (the charts
// render mesh policy; here it is stored and schema-checked, and enforced by nothing).
func (s *ServiceCluster) prepare(ctx context.Context, env localregion.ServiceEnv) error {
	if s.prepared {
		return nil
	}
	if err := os.MkdirAll(s.Dir, 0o700); err != nil {
		return err
	}
	var err error
	if s.postgres, err = s.Node.ExposeHost(ctx, OutsideNamespace, postgresService, postgresPort, env.PostgresAddr); err != nil {
		return err
	}
	s.bouncer = s.postgres
	if env.BouncerAddr != "" {
		if s.bouncer, err = s.Node.ExposeHost(ctx, OutsideNamespace, bouncerService, bouncerPort, env.BouncerAddr); err != nil {
			return err
		}
	}
	if s.broker, err = s.Node.ExposeHost(ctx, OutsideNamespace, brokerService, brokerPort, env.BrokerAddr); err != nil {
		return err
	}
	rc, err := clientcmd.BuildConfigFromFlags("", s.Node.HostKubeconfig)
	if err != nil {
		return err
	}
	istio, err := crds.IstioCRDs()
	if err != nil {
		return err
	}
	if err := crds.InstallCRDs(ctx, rc, istio); err != nil {
		return fmt.Errorf("istio CRDs: %w", err)
	}
	s.forwards, s.cancel = context.WithCancel(context.WithoutCancel(ctx))
	s.prepared = true
	return nil
}

// Install makes the workload's Secrets, installs its chart with helm --wait and forwards its
// ports to the host.
func (s *ServiceCluster) Install(ctx context.Context, env localregion.ServiceEnv, name string) (map[string]string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.prepare(ctx, env); err != nil {
		return nil, err
	}
	if name == prometheusName {
		return s.installPrometheus(ctx, env)
	}
	w, ok := workloads[name]
	if !ok {
		return nil, fmt.Errorf("no chart for workload %q", name)
	}
	if s.made == nil {
		s.made = map[string]bool{}
	}
	if !s.made[w.namespace] {
		if _, err := s.Node.Kubectl(ctx, "create", "namespace", w.namespace); err != nil {
			return nil, err
		}
		s.made[w.namespace] = true
	}
	secrets, err := s.secrets(env, name)
	if err != nil {
		return nil, err
	}
	for secret, files := range secrets {
		if s.made[w.namespace+"/"+secret] {
			continue
		}
		s.made[w.namespace+"/"+secret] = true
		args := []string{"create", "secret", "generic", secret, "-n", w.namespace}
		for key, file := range files {
			args = append(args, "--from-file="+key+"="+file)
		}
		if _, err := s.Node.Kubectl(ctx, args...); err != nil {
			return nil, fmt.Errorf("secret %s/%s: %w", w.namespace, secret, err)
		}
	}
	rel := s.Release(name, s.ImagesDir)
	env.Step("helm install %s (%s) into namespace %s", rel.Name, rel.Chart, rel.Namespace)
	if err := helmInstall(ctx, s.Node, s.Root, s.Helm, s.HelmHome, "install", rel); err != nil {
		return nil, err
	}
	s.installed = append(s.installed, name)
	out := map[string]string{}
	for _, p := range w.ports {
		addr, err := forwardServicePort(s.forwards, s.Node, w.namespace, name, p)
		if err != nil {
			return nil, err
		}
		out[p] = addr
	}
	switch name {
	case "gateway":
		s.gatewayURL = "https://" + out["https"]
	case "admin":
		// The admin API's own origin is the forward, which exists only once the chart made its
		// Service: one upgrade gives it the URL, before anyone is told the address.
		s.adminURL = "https://" + out["https"]
		env.Step("helm upgrade admin with its url (%s)", s.adminURL)
		if err := helmInstall(ctx, s.Node, s.Root, s.Helm, s.HelmHome, "upgrade", s.Release(name, s.ImagesDir)); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// Release is the helm release of a workload with the images of imagesDir.
func (s *ServiceCluster) Release(name, imagesDir string) Release {
	w := workloads[name]
	set := []string{
		// No Prometheus operator on the node: its CRDs (ServiceMonitor, PrometheusRule) are absent.
		"serviceMonitor.enabled=false", "prometheusRule.enabled=false",
		// The dev region's config leaves PostgreSQL's address to the deployer (docs/deploy.md).
		"database.host=" + s.postgres.Host, "database.port=" + strconv.Itoa(s.postgres.Port),
	}
	switch name {
	case "maestro-server":
		set = append(set, "broker.host="+s.broker.Host, "broker.port="+strconv.Itoa(s.broker.Port),
			// Later --set wins: the server's connections go through the bouncer.
			"database.host="+s.bouncer.Host, "database.port="+strconv.Itoa(s.bouncer.Port))
	case "cluster-service":
		set = append(set, "pullSecret.secret=cluster-service-pull-secret")
	case "monitor":
		// Each management cluster's kube-apiserver /readyz, probed with the Secret secrets makes.
		for i, c := range s.Clusters {
			pre := fmt.Sprintf("shardProbes[%d].", i)
			set = append(set, pre+"shard="+c.Stamp, pre+"url="+c.monitorProbeURL(), pre+"secret="+c.monitorProbeSecret())
		}
	case "admin":
		var stamps []string
		for _, c := range s.Clusters {
			stamps = append(stamps, c.Stamp)
		}
		set = append(set, "managementClusters={"+strings.Join(stamps, ",")+"}")
		if s.gatewayURL != "" {
			set = append(set, "breakGlass.gatewayURL="+s.gatewayURL)
		}
		if s.adminURL != "" {
			set = append(set, "url="+s.adminURL)
		}
	}
	values := []string{filepath.Join(s.Rendered, name+".yaml"), filepath.Join(imagesDir, "values", w.image+".yaml")}
	if name == "maestro-server" {
		// The gate container's image, nested under gate: (images.Spec.ValuesKey).
		values = append(values, filepath.Join(imagesDir, "values", "maestro-gate.yaml"))
	}
	return Release{Name: name, Chart: w.chart, Namespace: w.namespace, Values: values, Set: set}
}

// Upgrade runs helm upgrade --wait of every installed service chart with the images of
// imagesDir, in install order, as a new release does.
func (s *ServiceCluster) Upgrade(ctx context.Context, imagesDir string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, name := range s.installed {
		if err := helmInstall(ctx, s.Node, s.Root, s.Helm, s.HelmHome, "upgrade", s.Release(name, imagesDir)); err != nil {
			return err
		}
	}
	return nil
}

// PrometheusRules are the rule files the region's Prometheus was installed with.
func (s *ServiceCluster) PrometheusRules() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.prometheusRules...)
}

// Namespaces are the installed workloads' namespaces by workload.
func (s *ServiceCluster) Namespaces() map[string]string {
	out := map[string]string{}
	for _, n := range s.installed {
		out[n] = workloads[n].namespace
	}
	return out
}

// Stop ends the host forwards; the releases go with the node.
func (s *ServiceCluster) Stop() {
	if s.cancel != nil {
		s.cancel()
	}
}

// secrets are the Secrets a workload's chart mounts (names from config/rendered/dev-local,
// docs/deploy.md#service-cluster-charts): Secret name → key → file.
func (s *ServiceCluster) secrets(env localregion.ServiceEnv, name string) (map[string]map[string]string, error) {
	p := env.PKI
	tls := func(identity, ca string) (map[string]string, error) {
		f, err := p.Files(identity)
		if err != nil {
			return nil, err
		}
		return map[string]string{"tls.crt": f.Cert, "tls.key": f.Key, "ca.crt": ca}, nil
	}
	db := func(service string) (map[string]string, error) {
		pw, ok := env.DBPasswords[service]
		if !ok {
			return nil, fmt.Errorf("no database password of %s", service)
		}
		file := filepath.Join(s.Dir, service+".db-password")
		if err := os.WriteFile(file, []byte(pw), 0o600); err != nil {
			return nil, err
		}
		return map[string]string{"db.password": file, "ca.crt": p.CAFile}, nil
	}
	out := map[string]map[string]string{}
	var errs []error
	// add("name")(files, err) records a Secret or its error.
	add := func(secret string) func(map[string]string, error) {
		return func(files map[string]string, err error) {
			if err != nil {
				errs = append(errs, fmt.Errorf("secret %s: %w", secret, err))
				return
			}
			out[secret] = files
		}
	}
	switch name {
	case "maestro-server":
		add("maestro-db")(db("maestro"))
		// gRPC clients (Cluster Service) chain to the region CA.
		add("maestro-server-tls")(tls(pki.MaestroServer, p.CAFile))
		add("maestro-server-mqtt")(tls(pki.MaestroServer, p.CAFile))
	case "cluster-service":
		add("cluster-service-db")(db("cluster-service"))
		// Callers are the region's services and SREs: the bundle of both CAs.
		add("cluster-service-tls")(tls(pki.ClusterService, p.CAFile))
		add("cluster-service-maestro-client")(tls(pki.ClusterService, p.CAFile))
		out["cluster-service-kek"] = map[string]string{"kek": env.KEKFile}
		out["cluster-service-pull-secret"] = map[string]string{".dockerconfigjson": env.PullSecretFile}
		// The management clusters' public sealing keys (installed before Cluster Service).
		add("cluster-service-sealing-keys")(sealingKeys(env.SealingKeysDir))
		// The admin API's statement public key: an SRE break-glass credential is issued only
		// for a statement it verifies.
		add("cluster-service-sre-statement")(statementPublicKey(env))
	case "backend":
		add("backend-db")(db("backend"))
		add("backend-cluster-service-client")(tls(pki.Backend, p.CAFile))
		// Its name for the Service, and loopback for region.json's host forward.
		if err := p.Add(backendServer, pki.Spec{CommonName: backendServer, Usage: pki.Server,
			DNSNames: []string{"localhost", svcName("backend", workloads["backend"].namespace)},
			IPs:      []net.IP{net.IPv4(127, 0, 0, 1), net.IPv6loopback}}, pki.ServiceCA); err != nil {
			return nil, err
		}
		add("backend-tls")(tls(backendServer, p.CAFile))
	case "monitor":
		add("monitor-db")(db("monitor"))
		add("monitor-cluster-service-client")(tls(pki.Monitor, p.CAFile))
		if err := p.Add(monitorServer, pki.Spec{CommonName: monitorServer, Usage: pki.Server,
			DNSNames: []string{"localhost", svcName("monitor", workloads["monitor"].namespace)},
			IPs:      []net.IP{net.IPv4(127, 0, 0, 1), net.IPv6loopback}}, pki.ServiceCA); err != nil {
			return nil, err
		}
		add("monitor-tls")(tls(monitorServer, p.CAFile))
		// Its /readyz probe of each management cluster's kube-apiserver (Release sets
		// shardProbes).
		for _, c := range s.Clusters {
			cert, key, ca, err := c.writeMonitorProbeCertificate(filepath.Join(s.Dir, "monitor-probes"))
			add(c.monitorProbeSecret())(map[string]string{"tls.crt": cert, "tls.key": key, "ca.crt": ca}, err)
		}
	case "maintenance":
		add("maintenance-db")(db("maintenance"))
		add("maintenance-cluster-service-client")(tls(pki.Maintenance, p.CAFile))
		if err := p.Add(maintenanceServer, pki.Spec{CommonName: maintenanceServer, Usage: pki.Server,
			DNSNames: []string{"localhost", svcName("maintenance", workloads["maintenance"].namespace)},
			IPs:      []net.IP{net.IPv4(127, 0, 0, 1), net.IPv6loopback}}, pki.ServiceCA); err != nil {
			return nil, err
		}
		add("maintenance-tls")(tls(maintenanceServer, p.CAFile))
		// The admin API's statement public key: the service carries out only the requests the
		// admin API signed.
		add("maintenance-sre-statement")(statementPublicKey(env))
	case "frontend":
		add("frontend-db")(db("frontend"))
		// Only ARM calls the ARM API: its client CA.
		add("frontend-tls")(tls(pki.Frontend, p.ARMCAFile))
		add("frontend-cluster-service-client")(tls(pki.Frontend, p.CAFile))
	case "admin":
		add("admin-db")(db("admin"))
		add("admin-tls")(tls("admin", p.PersonCAFile))
		// Cluster Service knows the admin API as the sre identity (cluster-service/pkg/authz).
		add("admin-cluster-service-client")(tls(pki.SRE, p.CAFile))
		out["admin-maestro-ca"] = map[string]string{"ca.crt": p.CAFile}
		// The statement signing key, the private half of what Cluster Service and the
		// maintenance service verify with: without it SRE break-glass requests and
		// maintenance writes answer 503.
		if env.SREStatementKeyFile == "" {
			errs = append(errs, errors.New("secret admin-sre-statement: no SRE statement key"))
		} else {
			out["admin-sre-statement"] = map[string]string{"sre-statement.key": env.SREStatementKeyFile}
		}
		kc, err := s.adminKubeconfigs(env)
		add("admin-management-kubeconfigs")(kc, err)
	case "gateway":
		// The gateway logs in to the admin database as the admin service.
		add("gateway-db")(db("admin"))
		// Only SREs call the gateway: the person CA.
		add("gateway-tls")(tls("gateway", p.PersonCAFile))
		out["breakglass-session-key"] = map[string]string{"session.key": env.SessionKeyFile}
	}
	switch name {
	case "frontend", "backend", "monitor", "maintenance", "cluster-service", "admin", "gateway":
		// The chart's ServiceMonitor verifies the metrics server by the CA that issued its
		// certificate (service-base.serviceMonitor).
		out[name+"-metrics-ca"] = map[string]string{"ca.crt": p.CAFile}
	}
	return out, errors.Join(errs...)
}

// statementPublicKey is the Secret file of the admin API's statement public key (the launcher
// writes the pair before Cluster Service starts, secrets.go).
func statementPublicKey(env localregion.ServiceEnv) (map[string]string, error) {
	if env.SREStatementPublicKeyFile == "" {
		return nil, errors.New("no SRE statement public key")
	}
	return map[string]string{"sre-statement.pub": env.SREStatementPublicKeyFile}, nil
}

// adminKubeconfigs writes, for each management cluster, the admin API's read-only kubeconfig
// (the one the launcher made for the host) with its credentials inline and the server the pods
// reach (NodeCluster.podServer): the node's in-cluster address, or the Service of a control
// plane of its own.
func (s *ServiceCluster) adminKubeconfigs(env localregion.ServiceEnv) (map[string]string, error) {
	out := map[string]string{}
	for _, mc := range env.ManagementClusters {
		cfg, err := clientcmd.LoadFromFile(mc.AdminKubeconfig)
		if err != nil {
			return nil, err
		}
		if err := clientcmdapi.FlattenConfig(cfg); err != nil {
			return nil, fmt.Errorf("kubeconfig of %s: %w", mc.Name, err)
		}
		server := ""
		for _, nc := range s.Clusters {
			if nc.Stamp == mc.Name {
				server = nc.podServer()
			}
		}
		if server == "" {
			return nil, fmt.Errorf("management cluster %s is none of the node's", mc.Name)
		}
		for _, c := range cfg.Clusters {
			c.Server = server
		}
		file := filepath.Join(s.Dir, mc.ProvisionShard+".kubeconfig")
		if err := clientcmd.WriteToFile(*cfg, file); err != nil {
			return nil, err
		}
		out[mc.ProvisionShard] = file
	}
	return out, nil
}

// imagesFor lists every image make deploy builds.
func imagesFor() ([]images.Spec, error) {
	return images.Select(append(append([]string{}, chartImages...), serviceImages...)...)
}

// sealingKeys are the Secret files of the management clusters' public sealing keys in dir, one
// key "<consumer>.pub" each (secretseal.KeyDir).
func sealingKeys(dir string) (map[string]string, error) {
	if dir == "" {
		return nil, errors.New("no sealing keys directory")
	}
	pubs, err := filepath.Glob(filepath.Join(dir, "*.pub"))
	if err != nil {
		return nil, err
	}
	if len(pubs) == 0 {
		return nil, fmt.Errorf("no management cluster's public key in %s", dir)
	}
	out := map[string]string{}
	for _, p := range pubs {
		out[filepath.Base(p)] = p
	}
	return out, nil
}
