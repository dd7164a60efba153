package localregion

import (
	"context"
	"encoding/json"
	"fmt"
	"io/fs"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/openhcp/openhcp/dev-infrastructure/mgmtcluster"
	"github.com/openhcp/openhcp/internal/pki"
)

// The region's Prometheus: Debian's prometheus (make deps), one process, a child of the launcher.
// It scrapes every target the launcher knows, evaluates every shipped rule file, and serves its
// web and API port with TLS to SRE persons' certificates only (docs/local-region.md#prometheus).

// DefaultPrometheusInterval is the local region's scrape and rule evaluation interval: short, so
// a test sees an alert with `for: 1m` fire about a minute after its cause (production's is 30s or
// more; docs/local-region.md#prometheus).
const DefaultPrometheusInterval = 5 * time.Second

// prometheusRetention bounds the region's time series: the region is throwaway.
const prometheusRetention = "6h"

// PrometheusWebLimits bound the callers of Prometheus' web port, which serves SREs their alerts:
// the launcher's process and make deploy's pod are started with the same (Flags).
type PrometheusWebLimits struct {
	// ReadTimeout (--web.read-timeout) bounds a connection's TLS handshake and the reading of a
	// request, and, with no request, how long a connection may idle. Prometheus' default is 5
	// minutes, so a few hundred silent TCP connections held every slot of MaxConnections and
	// locked SREs out.
	ReadTimeout time.Duration
	// MaxConnections (--web.max-connections) caps the connections open at once; above it a
	// caller waits in the kernel's accept queue. Prometheus' default, stated here so that the
	// pair is chosen in one place.
	MaxConnections int
}

// DefaultPrometheusWebLimits are the region's.
func DefaultPrometheusWebLimits() PrometheusWebLimits {
	return PrometheusWebLimits{ReadTimeout: 30 * time.Second, MaxConnections: 512}
}

// Flags are Prometheus' command-line flags for l.
func (l PrometheusWebLimits) Flags() []string {
	return []string{"--web.read-timeout=" + promDuration(l.ReadTimeout), "--web.max-connections=" + strconv.Itoa(l.MaxConnections)}
}

// The management clusters' kube-apiservers admit the scraper as this user, bound only to GET
// /metrics (prometheusMetricsRole); its certificate is issued by each cluster's own CA.
const (
	prometheusKubeUser     = "openhcp-prometheus"
	prometheusMetricsRole  = "openhcp-prometheus-metrics"
	kubeAPIServerScrapeJob = "management-kube-apiserver"
)

// PrometheusInfo is the region's Prometheus: its API and UI over HTTPS, verified with CAFile (the
// service CA; the server holds the prometheus workload's certificate), admitting only a client
// certificate of the person CA (ClientCAFile). ClientTLS names the SRE whose certificate a
// person or test uses by default (the read-only one); any SRE person's certificate gets in.
type PrometheusInfo struct {
	URL string `json:"url"`
	ClientTLS
	ClientCAFile string `json:"clientCAFile"`
	// Interval is the scrape and rule evaluation interval.
	Interval string `json:"interval"`
	// RuleFiles are the shipped rule files it evaluates.
	RuleFiles []string `json:"ruleFiles"`
	// Config is the generated prometheus.yml (scrape jobs and targets).
	Config string `json:"config"`
}

// HTTPClient returns a client for the Prometheus API that presents ClientTLS's certificate.
func (p PrometheusInfo) HTTPClient(timeout time.Duration) (*http.Client, error) {
	cfg, err := p.ClientTLS.Files().Client(hostOf(p.URL))
	if err != nil {
		return nil, fmt.Errorf("prometheus TLS: %w", err)
	}
	return &http.Client{Timeout: timeout, Transport: &http.Transport{TLSClientConfig: cfg}}, nil
}

// scrapeJob is one job of the generated configuration: targets of one component, each
// with its labels (shard for a management cluster's parts).
type scrapeJob struct {
	name    string
	scheme  string
	path    string
	tls     *scrapeTLS
	targets []scrapeTarget
}

type scrapeTarget struct {
	addr   string
	labels map[string]string
}

// scrapeTLS verifies the target with CAFile and presents CertFile/KeyFile; Prometheus reads the
// files at each handshake, so a renewed certificate is used without a restart.
type scrapeTLS struct {
	CAFile   string `json:"ca_file"`
	CertFile string `json:"cert_file"`
	KeyFile  string `json:"key_file"`
	// ServerName is the name the target's certificate must carry.
	ServerName string `json:"server_name,omitempty"`
}

// prometheusConfig renders prometheus.yml. JSON is YAML, and encoding/json keeps the output
// free of any quoting question.
func prometheusConfig(interval time.Duration, ruleFiles []string, jobs []scrapeJob) ([]byte, error) {
	timeout := min(interval, 10*time.Second)
	type staticConfig struct {
		Targets []string          `json:"targets"`
		Labels  map[string]string `json:"labels,omitempty"`
	}
	type job struct {
		JobName       string         `json:"job_name"`
		Scheme        string         `json:"scheme"`
		MetricsPath   string         `json:"metrics_path"`
		TLSConfig     *scrapeTLS     `json:"tls_config,omitempty"`
		StaticConfigs []staticConfig `json:"static_configs"`
	}
	cfg := struct {
		Global struct {
			ScrapeInterval     string `json:"scrape_interval"`
			ScrapeTimeout      string `json:"scrape_timeout"`
			EvaluationInterval string `json:"evaluation_interval"`
		} `json:"global"`
		RuleFiles     []string `json:"rule_files"`
		ScrapeConfigs []job    `json:"scrape_configs"`
	}{RuleFiles: ruleFiles}
	cfg.Global.ScrapeInterval = promDuration(interval)
	cfg.Global.ScrapeTimeout = promDuration(timeout)
	cfg.Global.EvaluationInterval = promDuration(interval)
	for _, j := range jobs {
		if len(j.targets) == 0 {
			continue
		}
		if j.scheme == "https" && j.tls == nil {
			return nil, fmt.Errorf("prometheus job %s: https without TLS files", j.name)
		}
		out := job{JobName: j.name, Scheme: j.scheme, MetricsPath: j.path, TLSConfig: j.tls}
		for _, t := range j.targets {
			out.StaticConfigs = append(out.StaticConfigs, staticConfig{Targets: []string{t.addr}, Labels: t.labels})
		}
		cfg.ScrapeConfigs = append(cfg.ScrapeConfigs, out)
	}
	return json.MarshalIndent(cfg, "", "  ")
}

// promDuration writes a duration as Prometheus' duration syntax, which has no fractions ("5s", "1m").
func promDuration(d time.Duration) string {
	if d%time.Second != 0 || d < time.Second {
		return strconv.FormatInt(d.Milliseconds(), 10) + "ms"
	}
	return strconv.FormatInt(int64(d/time.Second), 10) + "s"
}

// prometheusWebConfig renders --web.config.file: TLS with the server's certificate, and a client
// certificate of clientCA required on every connection. Prometheus re-reads the files on every
// handshake, so rotation and CA rollover need no restart.
func prometheusWebConfig(server pki.Files, clientCA string) ([]byte, error) {
	cfg := map[string]any{"tls_server_config": map[string]any{
		"cert_file":        server.Cert,
		"key_file":         server.Key,
		"client_auth_type": "RequireAndVerifyClientCert",
		"client_ca_file":   clientCA,
		"min_version":      "TLS12",
	}}
	return json.MarshalIndent(cfg, "", "  ")
}

// ShippedRuleFiles are the rule files under root that the charts ship: <chart>/alerts/*.rules.yaml
// under a deploy/ folder (the rule dev-infrastructure/alertrules' Discover applies, which its
// tests check), as absolute paths, sorted.
func ShippedRuleFiles(root string) ([]string, error) {
	var files []string
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			switch d.Name() {
			case ".git", "node_modules", "testdata", ".run", "bin":
				return filepath.SkipDir
			}
			return nil
		}
		rel, _ := filepath.Rel(root, path)
		if strings.HasSuffix(rel, ".rules.yaml") && filepath.Base(filepath.Dir(rel)) == "alerts" &&
			strings.Contains(filepath.ToSlash(rel), "/deploy/") {
			files = append(files, path)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("find the shipped rule files under %s: %w", root, err)
	}
	if len(files) == 0 {
		return nil, fmt.Errorf("find the shipped rule files under %s: none", root)
	}
	return files, nil
}

// hostPort is the host:port of a URL.
func hostPort(raw string) (string, error) {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" {
		return "", fmt.Errorf("scrape target %q: not a URL with a host", raw)
	}
	return u.Host, nil
}

// prometheusJobs are the scrape jobs of the running region. Our services and hypershift-sim serve
// /metrics in plaintext on loopback (docs/security.md, "Every listener"), so they are scraped as
// they are; each management cluster's kube-apiserver is scraped over mutual TLS, verified with
// the cluster's CA, as prometheusKubeUser, and so is each Maestro agent, verified with the
// service CA.
func (r *Region) prometheusJobs(kubeTLS map[string]*scrapeTLS) ([]scrapeJob, error) {
	plain := func(name string, urls ...string) (scrapeJob, error) {
		j := scrapeJob{name: name, scheme: "http", path: "/metrics"}
		for _, u := range urls {
			addr, err := hostPort(u)
			if err != nil {
				return j, fmt.Errorf("job %s: %w", name, err)
			}
			j.targets = append(j.targets, scrapeTarget{addr: addr})
		}
		return j, nil
	}
	maestro := []string{r.Info.Maestro.MetricsURL}
	for _, ms := range r.extraMaestro {
		maestro = append(maestro, ms.MetricsURL)
	}
	var jobs []scrapeJob
	for _, j := range []struct {
		name string
		urls []string
	}{
		{"frontend", []string{r.Info.Frontend.MetricsURL}},
		{"backend", []string{r.Info.Backend.MetricsURL}},
		{"cluster-service", []string{r.Info.ClusterService.MetricsURL}},
		{"admin", []string{r.Info.Admin.MetricsURL}},
		{"gateway", r.Info.Gateway.MetricsURLs},
		{"monitor", r.Info.Monitor.MetricsURLs()},
		{"maintenance", []string{r.Info.Maintenance.MetricsURL}},
		{"maestro-server", maestro},
	} {
		job, err := plain(j.name, j.urls...)
		if err != nil {
			return nil, err
		}
		jobs = append(jobs, job)
	}
	sim := scrapeJob{name: "hypershift-sim", scheme: "http", path: "/metrics"}
	kube := scrapeJob{name: kubeAPIServerScrapeJob, scheme: "https", path: "/metrics"}
	for _, mc := range r.Info.ManagementClusters {
		shard := map[string]string{"shard": mc.ProvisionShard}
		if mc.SimMetricsURL != "" {
			addr, err := hostPort(mc.SimMetricsURL)
			if err != nil {
				return nil, err
			}
			// make deploy's sims serve /metrics over TLS with a certificate of the service CA
			// that names the host forward's 127.0.0.1; make run's on loopback in plaintext.
			if strings.HasPrefix(mc.SimMetricsURL, "https://") {
				if len(sim.targets) > 0 && sim.tls == nil {
					return nil, fmt.Errorf("hypershift-sim metrics of %s over TLS, of another management cluster in plaintext", mc.Name)
				}
				sim.scheme, sim.tls = "https", &scrapeTLS{CAFile: r.pki.CAFile}
			}
			sim.targets = append(sim.targets, scrapeTarget{addr: addr, labels: shard})
		}
		t, ok := kubeTLS[mc.Name]
		if !ok {
			continue
		}
		// The agent serves a certificate of the service CA and authorizes the scrape with the
		// cluster (TokenReview, SubjectAccessReview): the same client certificate as for the
		// apiserver, whose user may GET /metrics.
		if mc.AgentHealthURL != "" {
			addr, err := hostPort(mc.AgentHealthURL)
			if err != nil {
				return nil, err
			}
			jobs = append(jobs, scrapeJob{name: "maestro-agent-" + mc.ProvisionShard, scheme: "https", path: "/metrics",
				tls:     &scrapeTLS{CAFile: r.pki.CAFile, CertFile: t.CertFile, KeyFile: t.KeyFile},
				targets: []scrapeTarget{{addr: addr, labels: map[string]string{"shard": mc.ProvisionShard, "job": "maestro-agent"}}}})
		}
		addr, err := hostPort(mc.Server)
		if err != nil {
			return nil, err
		}
		// Every management cluster has its own CA, so each is a scrape configuration of its own
		// (job names are unique); the job label, which the rules select on, is the same.
		jobs = append(jobs, scrapeJob{name: kube.name + "-" + mc.ProvisionShard, scheme: kube.scheme, path: kube.path, tls: t,
			targets: []scrapeTarget{{addr: addr, labels: map[string]string{"shard": mc.ProvisionShard, "job": kube.name}}}})
	}
	return append(jobs, sim), nil
}

// grantPrometheusMetrics lets prometheusKubeUser GET /metrics on mc, and nothing else, and writes
// its client certificate (of mc's CA) into dir.
func grantPrometheusMetrics(ctx context.Context, mc *mgmtcluster.ManagementCluster, dir string) (*scrapeTLS, error) {
	kube, err := kubernetes.NewForConfig(mc.RESTConfig())
	if err != nil {
		return nil, fmt.Errorf("prometheus on %s: %w", mc.Name, err)
	}
	role := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: prometheusMetricsRole},
		Rules: []rbacv1.PolicyRule{{NonResourceURLs: []string{"/metrics"}, Verbs: []string{"get"}}}}
	if _, err := kube.RbacV1().ClusterRoles().Create(ctx, role, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return nil, fmt.Errorf("create ClusterRole %s on %s: %w", prometheusMetricsRole, mc.Name, err)
	}
	binding := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: prometheusMetricsRole},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: prometheusMetricsRole},
		Subjects: []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: prometheusKubeUser}}}
	if _, err := kube.RbacV1().ClusterRoleBindings().Create(ctx, binding, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return nil, fmt.Errorf("create ClusterRoleBinding %s on %s: %w", prometheusMetricsRole, mc.Name, err)
	}
	cert, key, ca, err := mc.WriteClientCertificate(dir, mc.Name+"-apiserver-client", prometheusKubeUser, nil)
	if err != nil {
		return nil, fmt.Errorf("prometheus on %s: %w", mc.Name, err)
	}
	// The apiserver's serving certificate names 127.0.0.1, the address scraped.
	return &scrapeTLS{CAFile: ca, CertFile: cert, KeyFile: key}, nil
}

// startPrometheus starts the region's Prometheus once every target runs (after the admin API,
// whose SRE certificates are its clients) and waits until it is ready.
func (r *Region) startPrometheus(ctx context.Context) error {
	bin, err := exec.LookPath("prometheus")
	if err != nil {
		return fmt.Errorf("start Prometheus: Debian's prometheus is not installed (make deps): %w", err)
	}
	dir := filepath.Join(r.stateDir, "prometheus")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("start Prometheus: %w", err)
	}
	rules, err := ShippedRuleFiles(r.cfg.Root)
	if err != nil {
		return err
	}
	kubeTLS := map[string]*scrapeTLS{}
	for _, name := range r.managementClusterNames() {
		t, err := grantPrometheusMetrics(ctx, r.mgmt[name], filepath.Join(dir, "kube"))
		if err != nil {
			return err
		}
		kubeTLS[name] = t
	}
	jobs, err := r.prometheusJobs(kubeTLS)
	if err != nil {
		return err
	}
	cfg, err := prometheusConfig(r.cfg.PrometheusInterval, rules, jobs)
	if err != nil {
		return err
	}
	web, err := prometheusWebConfig(r.pki.MustFiles(pki.Prometheus), r.pki.PersonCAFile)
	if err != nil {
		return err
	}
	cfgFile, webFile := filepath.Join(dir, "prometheus.yml"), filepath.Join(dir, "web.yml")
	for path, data := range map[string][]byte{cfgFile: cfg, webFile: web} {
		if err := os.WriteFile(path, append(data, '\n'), 0o600); err != nil {
			return fmt.Errorf("start Prometheus: %w", err)
		}
	}
	port, err := mgmtcluster.FreePort()
	if err != nil {
		return err
	}
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	sre, err := r.Info.Admin.SRE("bob")
	if err != nil {
		return fmt.Errorf("start Prometheus: its default client: %w", err)
	}
	info := PrometheusInfo{URL: "https://" + addr, ClientTLS: sre.ClientTLS(r.pki.CAFile).For(pki.Prometheus), ClientCAFile: r.pki.PersonCAFile,
		Interval: promDuration(r.cfg.PrometheusInterval), RuleFiles: rules, Config: cfgFile}
	client, err := info.HTTPClient(5 * time.Second)
	if err != nil {
		return err
	}
	p, err := mgmtcluster.StartProcess(ctx, mgmtcluster.ProcSpec{
		Name: "prometheus", Path: bin, LogDir: r.logDir, Dir: dir,
		Args: append([]string{
			"--config.file=" + cfgFile,
			"--web.config.file=" + webFile,
			"--web.listen-address=" + addr,
			"--storage.tsdb.path=" + filepath.Join(dir, "data"),
			"--storage.tsdb.retention.time=" + prometheusRetention,
			// Neither the admin API (deleting series) nor the lifecycle API (reload, quit) is
			// served: they are off unless enabled, and stay off.
		}, DefaultPrometheusWebLimits().Flags()...),
	})
	if err != nil {
		return err
	}
	r.onStop(func() { p.Stop(10 * time.Second) })
	if err := p.WaitFor(ctx, 60*time.Second, "ready", mgmtcluster.HTTPReady(client, info.URL+"/-/ready")); err != nil {
		return err
	}
	r.supervise(p)
	r.Info.Prometheus = &info
	return nil
}

// GrantPrometheusMetrics lets a Prometheus run elsewhere (make deploy's, in a pod) GET /metrics on
// mc, and nothing else, as grantPrometheusMetrics does for the region's own: it returns the
// client certificate and key (of mc's CA) written into dir, and mc's CA.
func GrantPrometheusMetrics(ctx context.Context, mc *mgmtcluster.ManagementCluster, dir string) (cert, key, ca string, err error) {
	s, err := grantPrometheusMetrics(ctx, mc, dir)
	if err != nil {
		return "", "", "", err
	}
	return s.CertFile, s.KeyFile, s.CAFile, nil
}
