package deploy

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/openhcp/openhcp/dev-infrastructure/localregion"
	"sigs.k8s.io/yaml"
)

// TestPrometheusConfigScrapesEveryWorkloadOverVerifiedTLS checks the generated prometheus.yml:
// one job per scraped Service, named as the alert rules select it (up{job="<name>"}), each
// reading its pods from its own file_sd file (Debian's Prometheus has no Kubernetes service
// discovery), over HTTPS verified by the CA and the name the server's certificate holds. Our services get the
// Prometheus identity's client certificate; the agent and the kube-apiserver, which authorize
// the scraper by its ServiceAccount token, get the token instead (a client certificate of the
// region CA would fail their handshake). Shard-scoped jobs carry the shard label.
func TestPrometheusConfigScrapesEveryWorkloadOverVerifiedTLS(t *testing.T) {
	raw, err := prometheusConfig(5*time.Second, []shardScrape{nodeShard})
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
		{"maintenance", "openhcp-backend", "maintenance.openhcp-backend.svc", "", false},
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
			if len(j.SD) != 1 || !slices.Equal(j.SD[0].Files, []string{prometheusTargetsDir + "/" + j.JobName + ".json"}) {
				t.Errorf("service discovery %+v, want the job's own file", j.SD)
			}
			if w.token != (j.Authorization != nil) || w.token == (j.TLS.CertFile != "") {
				t.Errorf("token %v, client certificate %q: want the token %v and a client certificate %v", j.Authorization != nil, j.TLS.CertFile, w.token, !w.token)
			}
			labels := map[string]string{}
			for _, r := range j.Relabel {
				if r.TargetLabel != "" && r.Replacement != "" && len(r.SourceLabels) == 0 {
					labels[r.TargetLabel] = r.Replacement
				}
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
		Files []string `json:"files"`
	} `json:"file_sd_configs"`
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

// TestPrometheusTargetFilesListEachServicesReadyPods turns an Endpoints list into the file_sd
// files: each job's file holds the ready addresses of its own Service's named port, one group
// per pod labelled with the pod and namespace; another Service's or another port's addresses, and
// not-ready ones (which Endpoints keep apart), are not in it; a Service without ready pods gives
// an empty list, not a missing file.
func TestPrometheusTargetFilesListEachServicesReadyPods(t *testing.T) {
	raw := `[
	 {"metadata": {"name": "monitor", "namespace": "openhcp-backend"}, "subsets": [{
	   "addresses": [{"ip": "10.244.0.9", "targetRef": {"name": "monitor-b"}}, {"ip": "10.244.0.8", "targetRef": {"name": "monitor-a"}}],
	   "notReadyAddresses": [{"ip": "10.244.0.7", "targetRef": {"name": "monitor-c"}}],
	   "ports": [{"name": "metrics", "port": 8083}]}]},
	 {"metadata": {"name": "backend", "namespace": "openhcp-backend"}, "subsets": [{
	   "addresses": [{"ip": "10.244.0.5", "targetRef": {"name": "backend-a"}}],
	   "ports": [{"name": "metrics", "port": 8081}]}]},
	 {"metadata": {"name": "kubernetes", "namespace": "default"}, "subsets": [{
	   "addresses": [{"ip": "10.250.0.2"}], "ports": [{"name": "https", "port": 6443}]}]},
	 {"metadata": {"name": "maestro-server", "namespace": "openhcp-maestro"}, "subsets": [{
	   "addresses": [{"ip": "10.244.0.3", "targetRef": {"name": "ms-a"}}],
	   "ports": [{"name": "grpc", "port": 8090}, {"name": "metrics", "port": 8080}]}]}
	]`
	var eps []endpoints
	if err := json.Unmarshal([]byte(raw), &eps); err != nil {
		t.Fatal(err)
	}
	files, err := prometheusTargetFiles([]shardScrape{nodeShard, ownShard}, eps)
	if err != nil {
		t.Fatal(err)
	}
	for file, want := range map[string]string{
		"monitor.json":                          `[{"targets":["10.244.0.8:8083"],"labels":{"namespace":"openhcp-backend","pod":"monitor-a"}},{"targets":["10.244.0.9:8083"],"labels":{"namespace":"openhcp-backend","pod":"monitor-b"}}]`,
		"backend.json":                          `[{"targets":["10.244.0.5:8081"],"labels":{"namespace":"openhcp-backend","pod":"backend-a"}}]`,
		"maestro-server.json":                   `[{"targets":["10.244.0.3:8080"],"labels":{"namespace":"openhcp-maestro","pod":"ms-a"}}]`,
		"management-kube-apiserver-mgmt-1.json": `[{"targets":["10.250.0.2:6443"],"labels":{"namespace":"default"}}]`,
		"frontend.json":                         `[]`,
		"maintenance.json":                      `[]`,
		"maestro-agent-mgmt-1.json":             `[]`,
		// The second stamp's apiserver is an outside Service (no Endpoints): its address.
		"management-kube-apiserver-mgmt-2.json": `[{"targets":["mgmt-2-apiserver.openhcp-outside.svc:6443"],"labels":{"namespace":"openhcp-outside"}}]`,
		"hypershift-sim-mgmt-2.json":            `[]`,
	} {
		if got := string(files[file]); got != want {
			t.Errorf("%s:\n got %s\nwant %s", file, got, want)
		}
	}
	if len(files) != 14 {
		t.Errorf("%d files, want one per job (14)", len(files))
	}
}

// TestPrometheusConfigLoadsInDebiansPrometheus runs the generated configuration through the
// promtool of the Prometheus the image carries (Debian's, make deps), with the pod's paths moved
// into a temporary directory: a field that build does not know (it has no Kubernetes service
// discovery) fails here instead of in a crash-looping pod.
func TestPrometheusConfigLoadsInDebiansPrometheus(t *testing.T) {
	promtool, err := exec.LookPath("promtool")
	if err != nil {
		t.Skip("promtool is not installed; run make deps")
	}
	raw, err := prometheusConfig(5*time.Second, []shardScrape{nodeShard, ownShard})
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	cfg := strings.NewReplacer("/etc/prometheus", dir, serviceAccountDir, filepath.Join(dir, "sa")).Replace(string(raw))
	for _, f := range []string{"tls/ca.crt", "tls/tls.crt", "tls/tls.key", "sa/ca.crt", "sa/token",
		"tls/mgmt-2-kube-ca.crt", "tls/mgmt-2-kube-client.crt", "tls/mgmt-2-kube-client.key"} {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, f)), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, f), nil, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	file := filepath.Join(dir, "prometheus.yml")
	if err := os.WriteFile(file, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(promtool, "check", "config", file).CombinedOutput(); err != nil {
		t.Fatalf("promtool check config: %v\n%s", err, out)
	}
}

// The node's management cluster and one with a control plane of its own (make deploy's two).
var (
	nodeShard = (&NodeCluster{Stamp: "mgmt-1"}).scrape()
	ownShard  = (&NodeCluster{Stamp: "mgmt-2", OwnControlPlane: true}).scrape()
)

// TestPrometheusScrapesAStampWithItsOwnControlPlaneByItsCertificate: the second stamp's agent and
// apiserver do not know the node's ServiceAccount tokens, so Prometheus presents the client
// certificate of that cluster's CA (granted GET /metrics there) and verifies its apiserver by
// that CA and the name of its outside Service; its agent and sim are scraped in their own
// namespaces on the node.
func TestPrometheusScrapesAStampWithItsOwnControlPlaneByItsCertificate(t *testing.T) {
	raw, err := prometheusConfig(5*time.Second, []shardScrape{nodeShard, ownShard})
	if err != nil {
		t.Fatal(err)
	}
	var cfg struct {
		Scrape []scrapeJobJSON `json:"scrape_configs"`
	}
	if err := json.Unmarshal(raw, &cfg); err != nil {
		t.Fatal(err)
	}
	jobs := map[string]scrapeJobJSON{}
	for _, j := range cfg.Scrape {
		jobs[j.JobName] = j
	}
	tls := prometheusTLSDir + "/"
	for name, want := range map[string][4]string{ // CA, cert, key, server name
		"maestro-agent-mgmt-2":             {tls + "ca.crt", tls + "mgmt-2-kube-client.crt", tls + "mgmt-2-kube-client.key", "maestro-agent.mgmt-2-maestro.svc"},
		"hypershift-sim-mgmt-2":            {tls + "ca.crt", tls + "tls.crt", tls + "tls.key", "hypershift-sim.mgmt-2-hypershift.svc"},
		"management-kube-apiserver-mgmt-2": {tls + "mgmt-2-kube-ca.crt", tls + "mgmt-2-kube-client.crt", tls + "mgmt-2-kube-client.key", "mgmt-2-apiserver.openhcp-outside.svc"},
		"maestro-agent-mgmt-1":             {tls + "ca.crt", "", "", "maestro-agent.maestro.svc"},
	} {
		j, ok := jobs[name]
		if !ok {
			t.Errorf("no job %s", name)
			continue
		}
		got := [4]string{j.TLS.CAFile, j.TLS.CertFile, j.TLS.KeyFile, j.TLS.ServerName}
		if got != want {
			t.Errorf("job %s TLS %q, want %q", name, got, want)
		}
		if byToken := j.Authorization != nil; byToken != (name == "maestro-agent-mgmt-1") {
			t.Errorf("job %s authorizes by the ServiceAccount token: %v", name, byToken)
		}
	}
}

// TestPrometheusManifestCarriesTheWebLimits: make deploy's Prometheus runs with the launcher's
// web limits (localregion.PrometheusWebLimits), each flag an argument of its own.
func TestPrometheusManifestCarriesTheWebLimits(t *testing.T) {
	m := string(prometheusManifest("prometheus:test"))
	for _, flag := range localregion.DefaultPrometheusWebLimits().Flags() {
		if !strings.Contains(m, "\n            - "+flag+"\n") {
			t.Errorf("the Prometheus deployment lacks the argument %s:\n%s", flag, m)
		}
	}
	if strings.Contains(m, "WEBLIMITS") {
		t.Errorf("the Prometheus deployment kept its WEBLIMITS placeholder:\n%s", m)
	}
}

// Prometheus's namespace is not a chart's, so no chart renders its policy: the manifest carries
// the default-deny every chart's namespace has, selecting every pod and admitting nothing. The
// pod's callers are the kubelet's TCP probe and the host forward, both the node's root user, whom
// the node's agent does not judge (a pod of another namespace, or a non-root process of the
// node's namespace, connected to 9090 before).
func TestPrometheusNamespaceDeniesIngressByDefault(t *testing.T) {
	type policy struct {
		APIVersion string `json:"apiVersion"`
		Kind       string `json:"kind"`
		Metadata   struct{ Name, Namespace string }
		Spec       struct {
			PodSelector map[string]any   `json:"podSelector"`
			PolicyTypes []string         `json:"policyTypes"`
			Ingress     []map[string]any `json:"ingress"`
			Egress      []map[string]any `json:"egress"`
		}
	}
	var found []policy
	for _, doc := range strings.Split(string(prometheusManifest("prometheus:test")), "\n---\n") {
		var p policy
		if err := yaml.Unmarshal([]byte(doc), &p); err != nil {
			t.Fatalf("manifest document does not parse: %v\n%s", err, doc)
		}
		if p.Kind == "NetworkPolicy" {
			found = append(found, p)
		}
	}
	if len(found) != 1 {
		t.Fatalf("the Prometheus manifest has %d NetworkPolicies, want one default-deny", len(found))
	}
	p := found[0]
	if p.APIVersion != "networking.k8s.io/v1" || p.Metadata.Name != "default-deny" || p.Metadata.Namespace != prometheusNamespace {
		t.Errorf("policy %s %s/%s, want networking.k8s.io/v1 %s/default-deny", p.APIVersion, p.Metadata.Namespace, p.Metadata.Name, prometheusNamespace)
	}
	if p.Spec.PodSelector == nil || len(p.Spec.PodSelector) != 0 {
		t.Errorf("podSelector %v, want {} (every pod of the namespace)", p.Spec.PodSelector)
	}
	if !slices.Equal(p.Spec.PolicyTypes, []string{"Ingress"}) || len(p.Spec.Ingress) != 0 || len(p.Spec.Egress) != 0 {
		t.Errorf("policyTypes %v, %d ingress and %d egress rules; want [Ingress] and no rule", p.Spec.PolicyTypes, len(p.Spec.Ingress), len(p.Spec.Egress))
	}
}
