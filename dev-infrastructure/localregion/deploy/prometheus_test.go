package deploy

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestPrometheusConfigScrapesEveryWorkloadOverVerifiedTLS checks the generated prometheus.yml:
// one job per scraped Service, named as the alert rules select it (up{job="<name>"}), each
// finding its pods through Kubernetes service discovery in the workload's namespace, over
// HTTPS verified by the CA and the name the server's certificate holds. Our services get the
// Prometheus identity's client certificate; the agent and the kube-apiserver, which authorize
// the scraper by its ServiceAccount token, get the token instead (a client certificate of the
// region CA would fail their handshake). Shard-scoped jobs carry the shard label.
func TestPrometheusConfigScrapesEveryWorkloadOverVerifiedTLS(t *testing.T) {
	raw, err := prometheusConfig(5*time.Second, []string{"mgmt-1"})
	if err != nil {
		t.Fatal(err)
	}
	var cfg struct {
		Global    map[string]string `json:"global"`
		RuleFiles []string          `json:"rule_files"`
		Scrape    []scrapeJobJSON   `json:"scrape_configs"`
	}
	if err := json.Unmarshal(raw, &cfg); err != nil {
		t.Fatalf("%v\n%s", err, raw)
	}
	if cfg.Global["scrape_interval"] != "5s" || len(cfg.RuleFiles) != 1 || !strings.HasPrefix(cfg.RuleFiles[0], prometheusRulesDir+"/") {
		t.Errorf("global %v, rule files %v", cfg.Global, cfg.RuleFiles)
	}
	type want struct {
		job, namespace, serverName, shard string
		token                             bool
	}
	wants := []want{
		{"frontend", "openhcp-frontend", "frontend.openhcp-frontend.svc", "", false},
		{"backend", "openhcp-backend", "backend.openhcp-backend.svc", "", false},
		{"monitor", "openhcp-backend", "monitor.openhcp-backend.svc", "", false},
		{"cluster-service", "openhcp-cluster-service", "cluster-service.openhcp-cluster-service.svc", "", false},
		{"admin", "openhcp-admin", "admin.openhcp-admin.svc", "", false},
		{"gateway", "openhcp-admin", "gateway.openhcp-admin.svc", "", false},
		{"maestro-server", "openhcp-maestro", "maestro-server.openhcp-maestro.svc", "", false},
		{"maestro-agent", "maestro", "maestro-agent.maestro.svc", "mgmt-1", true},
		{"hypershift-sim", "hypershift", "hypershift-sim.hypershift.svc", "mgmt-1", false},
		{"management-kube-apiserver", "default", "kubernetes.default.svc", "mgmt-1", true},
	}
	if len(cfg.Scrape) != len(wants) {
		t.Errorf("%d scrape jobs, want %d", len(cfg.Scrape), len(wants))
	}
	for _, w := range wants {
		t.Run(w.job, func(t *testing.T) {
			i := slices.IndexFunc(cfg.Scrape, func(j scrapeJobJSON) bool {
				return j.JobName == w.job || strings.HasPrefix(j.JobName, w.job+"-")
			})
			if i < 0 {
				t.Fatal("no scrape job")
			}
			j := cfg.Scrape[i]
			if j.Scheme != "https" || j.TLS.CAFile == "" || j.TLS.ServerName != w.serverName {
				t.Errorf("scheme %s, tls %+v: want https verified as %s", j.Scheme, j.TLS, w.serverName)
			}
			if len(j.SD) != 1 || j.SD[0].Role != "endpoints" || !slices.Equal(j.SD[0].Namespaces.Names, []string{w.namespace}) {
				t.Errorf("service discovery %+v, want the endpoints of namespace %s", j.SD, w.namespace)
			}
			if w.token != (j.Authorization != nil) || w.token == (j.TLS.CertFile != "") {
				t.Errorf("token %v, client certificate %q: want the token %v and a client certificate %v", j.Authorization != nil, j.TLS.CertFile, w.token, !w.token)
			}
			labels := map[string]string{}
			keep := false
			for _, r := range j.Relabel {
				if r.Action == "keep" && len(r.SourceLabels) == 2 && r.SourceLabels[0] == "__meta_kubernetes_service_name" {
					keep = strings.HasPrefix(r.Regex, strings.Split(w.serverName, ".")[0]+";")
				}
				if r.TargetLabel != "" && r.Replacement != "" && len(r.SourceLabels) == 0 {
					labels[r.TargetLabel] = r.Replacement
				}
			}
			if !keep {
				t.Errorf("relabelling %+v keeps no single Service's port", j.Relabel)
			}
			if got := labels["shard"]; got != w.shard {
				t.Errorf("shard label %q, want %q", got, w.shard)
			}
			if j.JobName != w.job && labels["job"] != w.job {
				t.Errorf("job %s is not labelled job=%s", j.JobName, w.job)
			}
		})
	}
}

// scrapeJobJSON is what the test reads of one scrape configuration.
type scrapeJobJSON struct {
	JobName string `json:"job_name"`
	Scheme  string `json:"scheme"`
	SD      []struct {
		Role       string `json:"role"`
		Namespaces struct {
			Names []string `json:"names"`
		} `json:"namespaces"`
	} `json:"kubernetes_sd_configs"`
	TLS struct {
		CAFile     string `json:"ca_file"`
		CertFile   string `json:"cert_file"`
		KeyFile    string `json:"key_file"`
		ServerName string `json:"server_name"`
	} `json:"tls_config"`
	Authorization *struct {
		CredentialsFile string `json:"credentials_file"`
	} `json:"authorization"`
	Relabel []struct {
		SourceLabels []string `json:"source_labels"`
		Regex        string   `json:"regex"`
		Action       string   `json:"action"`
		TargetLabel  string   `json:"target_label"`
		Replacement  string   `json:"replacement"`
	} `json:"relabel_configs"`
}
