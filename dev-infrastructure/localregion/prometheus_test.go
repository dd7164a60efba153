package localregion

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/openhcp/openhcp/dev-infrastructure/mgmtcluster"
	"github.com/openhcp/openhcp/internal/pki"
	"github.com/openhcp/openhcp/internal/tlsconfig"
)

// promtool is Debian's promtool, of the same release as the prometheus make run starts.
func promtool(t *testing.T) string {
	t.Helper()
	bin, err := exec.LookPath("promtool")
	if err != nil {
		t.Fatalf("Debian's prometheus package (promtool, prometheus) is not installed; make deps installs it: %v", err)
	}
	return bin
}

// testRegion is a Region with a real PKI and the endpoints of two management clusters, enough
// to render the Prometheus configuration.
func testRegion(t *testing.T) *Region {
	t.Helper()
	p, err := pki.Create(filepath.Join(t.TempDir(), "pki"), pki.Options{MaestroConsumers: []string{"mgmt-1", "mgmt-2"}})
	if err != nil {
		t.Fatal(err)
	}
	if err := p.AddPerson("sre-readonly-bob", "bob", "sre-readonly"); err != nil {
		t.Fatal(err)
	}
	r := &Region{pki: p}
	r.Info.Frontend.MetricsURL = "http://127.0.0.1:1001/metrics"
	r.Info.Backend.MetricsURL = "http://127.0.0.1:1002/metrics"
	r.Info.ClusterService.MetricsURL = "http://127.0.0.1:1003/metrics"
	r.Info.Admin.MetricsURL = "http://127.0.0.1:1004/metrics"
	r.Info.Maestro.MetricsURL = "http://127.0.0.1:1005/metrics"
	r.Info.Monitor.Replicas = []ServiceInfo{{MetricsURL: "http://127.0.0.1:1006/metrics"}, {MetricsURL: "http://127.0.0.1:1007/metrics"}}
	r.Info.Maintenance.MetricsURL = "http://127.0.0.1:1008/metrics"
	for i, name := range []string{"mgmt-1", "mgmt-2"} {
		r.Info.ManagementClusters = append(r.Info.ManagementClusters, ManagementClusterInfo{
			Name: name, ProvisionShard: name, Server: "https://127.0.0.1:" + strconv.Itoa(6443+i),
			SimMetricsURL:  "http://127.0.0.1:" + strconv.Itoa(2001+i) + "/metrics",
			AgentHealthURL: "https://127.0.0.1:" + strconv.Itoa(3001+i) + "/healthz"})
	}
	return r
}

// kubeScrapeTLS stands in for grantPrometheusMetrics' files (real files: promtool checks that
// they exist).
func kubeScrapeTLS(t *testing.T, r *Region) map[string]*scrapeTLS {
	f := r.pki.MustFiles(pki.Prometheus)
	out := map[string]*scrapeTLS{}
	for _, mc := range r.Info.ManagementClusters {
		out[mc.Name] = &scrapeTLS{CAFile: r.pki.CAFile, CertFile: f.Cert, KeyFile: f.Key}
	}
	return out
}

func TestPrometheusConfigLoadsInDebiansPrometheus(t *testing.T) {
	bin := promtool(t)
	root, err := mgmtcluster.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	rules, err := ShippedRuleFiles(root)
	if err != nil {
		t.Fatal(err)
	}
	r := testRegion(t)
	jobs, err := r.prometheusJobs(kubeScrapeTLS(t, r))
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := prometheusConfig(5*time.Second, rules, jobs)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	path := filepath.Join(dir, "prometheus.yml")
	if err := os.WriteFile(path, cfg, 0o600); err != nil {
		t.Fatal(err)
	}
	// check config also loads every rule file it names, as Prometheus does at start.
	out, err := exec.Command(bin, "check", "config", path).CombinedOutput()
	if err != nil {
		t.Fatalf("promtool check config: %v\n%s\n%s", err, out, cfg)
	}

	var parsed struct {
		Global        map[string]string `json:"global"`
		RuleFiles     []string          `json:"rule_files"`
		ScrapeConfigs []struct {
			JobName       string    `json:"job_name"`
			Scheme        string    `json:"scheme"`
			TLSConfig     scrapeTLS `json:"tls_config"`
			StaticConfigs []struct {
				Targets []string          `json:"targets"`
				Labels  map[string]string `json:"labels"`
			} `json:"static_configs"`
		} `json:"scrape_configs"`
	}
	if err := json.Unmarshal(cfg, &parsed); err != nil {
		t.Fatal(err)
	}
	t.Run("every_shipped_rule_file_is_loaded", func(t *testing.T) {
		for _, want := range []string{"frontend/deploy/alerts/frontend.rules.yaml", "cluster-service/deploy/alerts/cluster-service.rules.yaml",
			"maestro/deploy/agent/alerts/maestro-agent.rules.yaml", "dev-infrastructure/mgmtcluster/deploy/hypershift-sim/alerts/hypershift-sim.rules.yaml",
			"backend/deploy/monitor/alerts/monitor.rules.yaml"} {
			found := false
			for _, f := range parsed.RuleFiles {
				found = found || f == filepath.Join(root, want)
			}
			if !found {
				t.Errorf("rule_files %v lacks %s", parsed.RuleFiles, want)
			}
		}
		for _, f := range parsed.RuleFiles {
			if strings.HasSuffix(f, "_test.yaml") {
				t.Errorf("rule_files names a promtool test, %s", f)
			}
		}
	})
	t.Run("both_monitor_replicas_are_targets_of_the_monitor_job", func(t *testing.T) {
		var targets []string
		for _, sc := range parsed.ScrapeConfigs {
			if sc.JobName == "monitor" {
				for _, st := range sc.StaticConfigs {
					targets = append(targets, st.Targets...)
				}
			}
		}
		if strings.Join(targets, " ") != "127.0.0.1:1006 127.0.0.1:1007" {
			t.Errorf("job monitor scrapes %v, want both replicas", targets)
		}
	})
	t.Run("the_maintenance_service_is_the_target_of_the_maintenance_job", func(t *testing.T) {
		var targets []string
		for _, sc := range parsed.ScrapeConfigs {
			if sc.JobName == "maintenance" {
				for _, st := range sc.StaticConfigs {
					targets = append(targets, st.Targets...)
				}
			}
		}
		if strings.Join(targets, " ") != "127.0.0.1:1008" {
			t.Errorf("job maintenance scrapes %v, want the maintenance service", targets)
		}
	})
	t.Run("each_management_apiserver_is_its_shards_target_under_one_job_label", func(t *testing.T) {
		shards := map[string]string{}
		for _, sc := range parsed.ScrapeConfigs {
			for _, st := range sc.StaticConfigs {
				if st.Labels["job"] != kubeAPIServerScrapeJob {
					continue
				}
				if sc.Scheme != "https" {
					t.Errorf("%s: scheme %s, want https", sc.JobName, sc.Scheme)
				}
				shards[st.Labels["shard"]] = st.Targets[0]
			}
		}
		if shards["mgmt-1"] != "127.0.0.1:6443" || shards["mgmt-2"] != "127.0.0.1:6444" || len(shards) != 2 {
			t.Errorf("kube-apiserver targets by shard = %v, want mgmt-1 127.0.0.1:6443 and mgmt-2 127.0.0.1:6444", shards)
		}
	})
	t.Run("each_maestro_agent_is_scraped_over_TLS_verified_with_the_service_CA", func(t *testing.T) {
		agents := map[string]string{}
		for _, sc := range parsed.ScrapeConfigs {
			for _, st := range sc.StaticConfigs {
				if st.Labels["job"] != "maestro-agent" {
					continue
				}
				if sc.Scheme != "https" || sc.TLSConfig.CAFile != r.pki.CAFile || sc.TLSConfig.CertFile == "" {
					t.Errorf("%s: scheme %s, TLS %+v; want https verified with the service CA, with a client certificate", sc.JobName, sc.Scheme, sc.TLSConfig)
				}
				agents[st.Labels["shard"]] = st.Targets[0]
			}
		}
		if agents["mgmt-1"] != "127.0.0.1:3001" || agents["mgmt-2"] != "127.0.0.1:3002" || len(agents) != 2 {
			t.Errorf("maestro-agent targets by shard = %v", agents)
		}
	})
	t.Run("the_interval_is_the_scrape_and_evaluation_interval", func(t *testing.T) {
		if parsed.Global["scrape_interval"] != "5s" || parsed.Global["evaluation_interval"] != "5s" || parsed.Global["scrape_timeout"] != "5s" {
			t.Errorf("global = %v, want 5s scrape and evaluation interval and timeout", parsed.Global)
		}
	})
}

func TestPrometheusConfigRefusesHTTPSWithoutTLSFiles(t *testing.T) {
	_, err := prometheusConfig(5*time.Second, nil, []scrapeJob{{name: "x", scheme: "https", path: "/metrics",
		targets: []scrapeTarget{{addr: "127.0.0.1:1"}}}})
	if err == nil || !strings.Contains(err.Error(), "https without TLS files") {
		t.Fatalf("err = %v, want an https job without TLS files refused", err)
	}
}

// TestPrometheusAPIAdmitsOnlySREPersons starts Debian's prometheus with the region's web
// configuration and knocks: no certificate, a workload's certificate (service CA) and an SRE
// person's certificate (person CA). Only the person gets an answer.
func TestPrometheusAPIAdmitsOnlySREPersons(t *testing.T) {
	bin, err := exec.LookPath("prometheus")
	if err != nil {
		t.Fatalf("Debian's prometheus is not installed; make deps installs it: %v", err)
	}
	r := testRegion(t)
	dir := t.TempDir()
	web, err := prometheusWebConfig(r.pki.MustFiles(pki.Prometheus), r.pki.PersonCAFile)
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := prometheusConfig(5*time.Second, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	webFile, cfgFile := filepath.Join(dir, "web.yml"), filepath.Join(dir, "prometheus.yml")
	for path, data := range map[string][]byte{webFile: web, cfgFile: cfg} {
		if err := os.WriteFile(path, data, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if out, err := exec.Command(promtool(t), "check", "web-config", webFile).CombinedOutput(); err != nil {
		t.Fatalf("promtool check web-config: %v\n%s", err, out)
	}
	port, err := mgmtcluster.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	// The region's web limits, scaled down so that the lock-out check below is quick.
	limits := DefaultPrometheusWebLimits()
	if limits.ReadTimeout <= 0 || limits.ReadTimeout >= 5*time.Minute || limits.MaxConnections <= 0 {
		t.Fatalf("web limits %+v: want a read timeout under Prometheus' 5-minute default and a connection cap", limits)
	}
	limits.ReadTimeout, limits.MaxConnections = 3*time.Second, 16
	p, err := mgmtcluster.StartProcess(context.Background(), mgmtcluster.ProcSpec{Name: "prometheus", Path: bin, LogDir: dir, Dir: dir,
		Args: append([]string{"--config.file=" + cfgFile, "--web.config.file=" + webFile, "--web.listen-address=" + addr,
			"--storage.tsdb.path=" + filepath.Join(dir, "data")}, limits.Flags()...)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Stop(10 * time.Second) })

	bob := r.pki.MustFiles("sre-readonly-bob")
	person, err := tlsconfig.Files{CA: r.pki.CAFile, Cert: bob.Cert, Key: bob.Key, ServerName: pki.ServerName(pki.Prometheus)}.Client(addr)
	if err != nil {
		t.Fatal(err)
	}
	url := "https://" + addr + "/api/v1/status/buildinfo"
	if err := p.WaitFor(context.Background(), 60*time.Second, "ready", mgmtcluster.HTTPReady(
		&http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{TLSClientConfig: person}}, url)); err != nil {
		t.Fatal(err)
	}
	workload := r.pki.MustFiles(pki.Frontend)
	service, err := tlsconfig.Files{CA: r.pki.CAFile, Cert: workload.Cert, Key: workload.Key, ServerName: pki.ServerName(pki.Prometheus)}.Client(addr)
	if err != nil {
		t.Fatal(err)
	}
	anonymous, err := tlsconfig.Files{CA: r.pki.CAFile, ServerName: pki.ServerName(pki.Prometheus)}.Client(addr)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name   string
		tls    *tls.Config
		scheme string
		admit  bool
	}{
		{"an_SRE_person_certificate_is_admitted", person, "https", true},
		{"a_workload_certificate_is_refused", service, "https", false},
		{"no_certificate_is_refused", anonymous, "https", false},
		{"plaintext_is_refused", nil, "http", false},
	} {
		t.Run(c.name, func(t *testing.T) {
			client := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{TLSClientConfig: c.tls}}
			resp, err := client.Get(c.scheme + "://" + addr + "/api/v1/status/buildinfo")
			admitted := err == nil && resp.StatusCode/100 == 2
			if resp != nil {
				resp.Body.Close()
			}
			if admitted != c.admit {
				t.Errorf("admitted = %v (err %v), want %v", admitted, err, c.admit)
			}
		})
	}

	// Silent TCP connections, more than the cap, as a hostile caller's: each is cut by the
	// read timeout (it bounds the TLS handshake), so an SRE is answered within a few of them.
	t.Run("silent_connections_beyond_the_cap_do_not_lock_out_an_SRE", func(t *testing.T) {
		for range limits.MaxConnections + 8 {
			c, err := net.Dial("tcp", addr)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
		}
		client := &http.Client{Timeout: 60 * time.Second, Transport: &http.Transport{TLSClientConfig: person}}
		start := time.Now()
		resp, err := client.Get(url)
		if err != nil {
			t.Fatalf("an SRE behind %d silent connections: %v after %v", limits.MaxConnections+8, err, time.Since(start))
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("an SRE behind silent connections: %d", resp.StatusCode)
		}
	})

	t.Run("a_renewed_server_certificate_is_served_without_a_restart", func(t *testing.T) {
		renewed, err := r.pki.Renew(pki.Prometheus)
		if err != nil {
			t.Fatal(err)
		}
		var serving string
		deadline := time.Now().Add(30 * time.Second)
		for time.Now().Before(deadline) {
			// A new client configuration each time, as the launcher's own check does: a reused
			// one resumes its TLS session, and a resumed session shows the certificate of its
			// full handshake (Prometheus does not tie its session tickets to its files, as our
			// servers do; docs/security.md, "Session resumption and connection reuse").
			fresh, err := tlsconfig.Files{CA: r.pki.CAFile, Cert: bob.Cert, Key: bob.Key, ServerName: pki.ServerName(pki.Prometheus)}.Client(addr)
			if err != nil {
				t.Fatal(err)
			}
			client := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{TLSClientConfig: fresh, DisableKeepAlives: true}}
			resp, err := client.Get(url)
			if err == nil {
				resp.Body.Close()
				serving = resp.TLS.PeerCertificates[0].SerialNumber.String()
				if serving == renewed.SerialNumber.String() {
					return
				}
			}
			time.Sleep(200 * time.Millisecond)
		}
		t.Fatalf("Prometheus still serves certificate %s, not the renewed %s", serving, renewed.SerialNumber)
	})
}
