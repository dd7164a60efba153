package deploy

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/openhcp/openhcp/dev-infrastructure/images"
	"github.com/openhcp/openhcp/dev-infrastructure/localregion"
	"github.com/openhcp/openhcp/internal/pki"
)

// The region's Prometheus under make deploy: a pod in the monitoring namespace (the namespace
// every chart's NetworkPolicy admits to metrics ports), running the prometheus image (Debian's
// binary, the one make run starts as a process). Debian builds it without Kubernetes service
// discovery, so the deployer keeps a file per job of each Service's ready pod addresses in a
// ConfigMap (file_sd), as the charts' ServiceMonitors would make the Prometheus operator find
// them; Prometheus scrapes them over TLS verified by the CA and the name each certificate
// holds, evaluates every shipped rule file, and serves its API with TLS to SRE persons'
// certificates only (docs/deploy.md#prometheus-under-make-deploy).
const (
	prometheusNamespace = "monitoring"
	prometheusName      = "prometheus"
	prometheusPort      = 9090
	// Where the pod mounts what it reads.
	prometheusConfigDir  = "/etc/prometheus/config"
	prometheusRulesDir   = "/etc/prometheus/rules"
	prometheusTargetsDir = "/etc/prometheus/targets"
	// prometheusTargetsEvery is how often the deployer re-reads the Services' endpoints.
	prometheusTargetsEvery = 5 * time.Second
	prometheusTLSDir       = "/etc/prometheus/tls"
	// The ServiceAccount token: the agent and the kube-apiserver authorize the scrape by it.
	serviceAccountDir = "/var/run/secrets/kubernetes.io/serviceaccount"
)

// scrapeTarget is one Service whose pods are scraped: its name, namespace and port name; job is
// the job label when it differs from the Service's name; shard labels a management cluster's.
type scrapeTarget struct {
	service, namespace, port string
	job, shard               string
	// token authorizes with the ServiceAccount token instead of a client certificate, verified
	// by the cluster's CA (the kube-apiserver) when clusterCA.
	token, clusterCA bool
	// kubeCreds, for a management cluster with a control plane of its own, is the prefix of the
	// prometheus-tls keys of the client certificate its apiserver admits (<prefix>-client.crt,
	// .key) and, with clusterCA, of that apiserver's CA (<prefix>-ca.crt).
	kubeCreds string
	// static is the target's address when it is no Service with Endpoints (an outside Service).
	static string
}

// shardScrape is what Prometheus scrapes of one management cluster: its name, the namespaces of
// its agent and sim on the node and, for one with a control plane of its own, the apiserver's
// Service address (host:port) and its credentials' key prefix.
type shardScrape struct {
	name, agentNamespace, simNamespace string
	apiserverService, apiserverAddr    string
	kubeCreds                          string
}

// scrape is the cluster's shardScrape.
func (c *NodeCluster) scrape() shardScrape {
	s := shardScrape{name: c.Stamp, agentNamespace: c.AgentNamespace(), simNamespace: c.SimNamespace()}
	if c.OwnControlPlane {
		s.apiserverService = c.ownAPIServerService()
		s.apiserverAddr = fmt.Sprintf("%s:%d", svcName(c.ownAPIServerService(), OutsideNamespace), ownAPIServerPort)
		s.kubeCreds = c.Stamp + "-kube"
	}
	return s
}

// prometheusTargets are the Services the region's Prometheus scrapes: every service-cluster
// workload's metrics port and, per management cluster, its agent, sim and kube-apiserver. The
// node's cluster authorizes the agent's and apiserver's scrapes by the ServiceAccount token; one
// with a control plane of its own by a client certificate of its CA (the node's tokens mean
// nothing there), its apiserver scraped through its outside Service.
func prometheusTargets(shards []shardScrape) []scrapeTarget {
	var out []scrapeTarget
	for _, name := range []string{"frontend", "backend", "monitor", "maintenance", "cluster-service", "admin", "gateway", "maestro-server"} {
		out = append(out, scrapeTarget{service: name, namespace: workloads[name].namespace, port: "metrics"})
	}
	for _, sh := range shards {
		sim := scrapeTarget{service: "hypershift-sim", namespace: sh.simNamespace, port: "metrics", shard: sh.name}
		if sh.apiserverAddr == "" {
			out = append(out,
				scrapeTarget{service: "maestro-agent", namespace: sh.agentNamespace, port: "https", shard: sh.name, token: true}, sim,
				scrapeTarget{service: "kubernetes", namespace: "default", port: "https", job: "management-kube-apiserver", shard: sh.name, token: true, clusterCA: true})
			continue
		}
		out = append(out,
			scrapeTarget{service: "maestro-agent", namespace: sh.agentNamespace, port: "https", shard: sh.name, kubeCreds: sh.kubeCreds}, sim,
			scrapeTarget{service: sh.apiserverService, namespace: OutsideNamespace, job: "management-kube-apiserver", shard: sh.name,
				clusterCA: true, kubeCreds: sh.kubeCreds, static: sh.apiserverAddr})
	}
	return out
}

// prometheusConfig renders prometheus.yml (JSON is YAML) for the management clusters shards.
func prometheusConfig(interval time.Duration, shards []shardScrape) ([]byte, error) {
	type relabel struct {
		SourceLabels []string `json:"source_labels,omitempty"`
		Regex        string   `json:"regex,omitempty"`
		Action       string   `json:"action,omitempty"`
		TargetLabel  string   `json:"target_label,omitempty"`
		Replacement  string   `json:"replacement,omitempty"`
	}
	type fileSD struct {
		Files           []string `json:"files"`
		RefreshInterval string   `json:"refresh_interval"`
	}
	type tlsConfig struct {
		CAFile     string `json:"ca_file"`
		CertFile   string `json:"cert_file,omitempty"`
		KeyFile    string `json:"key_file,omitempty"`
		ServerName string `json:"server_name"`
	}
	type authorization struct {
		CredentialsFile string `json:"credentials_file"`
	}
	type job struct {
		JobName       string         `json:"job_name"`
		Scheme        string         `json:"scheme"`
		MetricsPath   string         `json:"metrics_path"`
		SD            []fileSD       `json:"file_sd_configs"`
		TLS           tlsConfig      `json:"tls_config"`
		Authorization *authorization `json:"authorization,omitempty"`
		Relabel       []relabel      `json:"relabel_configs"`
	}
	every := promDuration(interval)
	cfg := map[string]any{
		"global": map[string]string{"scrape_interval": every, "scrape_timeout": promDuration(min(interval, 10*time.Second)),
			"evaluation_interval": every},
		"rule_files": []string{prometheusRulesDir + "/*.rules.yaml"},
	}
	var jobs []job
	for _, t := range prometheusTargets(shards) {
		j := job{JobName: t.jobName(), Scheme: "https", MetricsPath: "/metrics",
			SD: []fileSD{{Files: []string{prometheusTargetsDir + "/" + t.jobName() + ".json"}, RefreshInterval: promDuration(prometheusTargetsEvery)}},
			TLS: tlsConfig{CAFile: prometheusTLSDir + "/ca.crt", CertFile: prometheusTLSDir + "/tls.crt", KeyFile: prometheusTLSDir + "/tls.key",
				ServerName: t.service + "." + t.namespace + ".svc"}}
		if t.token {
			// A client certificate of the region CA would fail a handshake that verifies a
			// given certificate against the cluster's client CA.
			j.TLS.CertFile, j.TLS.KeyFile = "", ""
			j.Authorization = &authorization{CredentialsFile: serviceAccountDir + "/token"}
		}
		if t.clusterCA {
			j.TLS.CAFile = serviceAccountDir + "/ca.crt"
		}
		if t.kubeCreds != "" {
			j.TLS.CertFile, j.TLS.KeyFile = prometheusTLSDir+"/"+t.kubeCreds+"-client.crt", prometheusTLSDir+"/"+t.kubeCreds+"-client.key"
			if t.clusterCA {
				j.TLS.CAFile = prometheusTLSDir + "/" + t.kubeCreds + "-ca.crt"
			}
		}
		if t.job != "" || t.shard != "" {
			j.Relabel = append(j.Relabel, relabel{TargetLabel: "job", Replacement: cmpOr(t.job, t.service)})
		}
		if t.shard != "" {
			j.Relabel = append(j.Relabel, relabel{TargetLabel: "shard", Replacement: t.shard})
		}
		jobs = append(jobs, j)
	}
	cfg["scrape_configs"] = jobs
	return json.MarshalIndent(cfg, "", "  ")
}

// jobName is the target's scrape configuration's name: each management cluster's is a job of
// its own; the job label the rules select on is the same for all.
func (t scrapeTarget) jobName() string {
	name := cmpOr(t.job, t.service)
	if t.shard != "" {
		name += "-" + t.shard
	}
	return name
}

// endpoints is what the deployer reads of a Service's Endpoints.
type endpoints struct {
	Metadata struct {
		Name      string `json:"name"`
		Namespace string `json:"namespace"`
	} `json:"metadata"`
	Subsets []struct {
		Addresses []struct {
			IP        string `json:"ip"`
			TargetRef *struct {
				Name string `json:"name"`
			} `json:"targetRef"`
		} `json:"addresses"`
		Ports []struct {
			Name string `json:"name"`
			Port int    `json:"port"`
		} `json:"ports"`
	} `json:"subsets"`
}

// targetGroup is one entry of a file_sd file.
type targetGroup struct {
	Targets []string          `json:"targets"`
	Labels  map[string]string `json:"labels"`
}

// prometheusTargetFiles are the file_sd files, by job, of the Services' ready addresses in eps
// (an Endpoints list): one group per pod, labelled with the pod and namespace as Kubernetes
// service discovery would. A job whose Service has no ready address gets an empty file.
func prometheusTargetFiles(shards []shardScrape, eps []endpoints) (map[string][]byte, error) {
	out := map[string][]byte{}
	for _, t := range prometheusTargets(shards) {
		groups := []targetGroup{}
		if t.static != "" {
			groups = append(groups, targetGroup{Targets: []string{t.static}, Labels: map[string]string{"namespace": t.namespace}})
		}
		for _, ep := range eps {
			if ep.Metadata.Name != t.service || ep.Metadata.Namespace != t.namespace {
				continue
			}
			for _, ss := range ep.Subsets {
				for _, p := range ss.Ports {
					if p.Name != t.port {
						continue
					}
					for _, a := range ss.Addresses {
						l := map[string]string{"namespace": t.namespace}
						if a.TargetRef != nil {
							l["pod"] = a.TargetRef.Name
						}
						groups = append(groups, targetGroup{Targets: []string{net.JoinHostPort(a.IP, fmt.Sprint(p.Port))}, Labels: l})
					}
				}
			}
		}
		sort.Slice(groups, func(i, j int) bool { return groups[i].Targets[0] < groups[j].Targets[0] })
		b, err := json.Marshal(groups)
		if err != nil {
			return nil, err
		}
		out[t.jobName()+".json"] = b
	}
	return out, nil
}

// syncPrometheusTargets writes the target files into the ConfigMap prometheus-targets, and
// again whenever a Service's ready addresses change (a rollout), until ctx ends. The kubelet
// refreshes the pod's copy within about a minute, and Prometheus re-reads it.
func (s *ServiceCluster) syncPrometheusTargets(ctx context.Context, shards []shardScrape) error {
	last := ""
	sync := func() error {
		raw, err := s.Node.Kubectl(ctx, "get", "endpoints", "-A", "-o", "json")
		if err != nil {
			return err
		}
		var list struct {
			Items []endpoints `json:"items"`
		}
		if err := json.Unmarshal(raw, &list); err != nil {
			return fmt.Errorf("endpoints: %w", err)
		}
		files, err := prometheusTargetFiles(shards, list.Items)
		if err != nil {
			return err
		}
		data := map[string]string{}
		for k, v := range files {
			data[k] = string(v)
		}
		cm, err := json.Marshal(map[string]any{"apiVersion": "v1", "kind": "ConfigMap",
			"metadata": map[string]string{"name": "prometheus-targets", "namespace": prometheusNamespace}, "data": data})
		if err != nil {
			return err
		}
		if string(cm) == last {
			return nil
		}
		if err := s.Node.Apply(ctx, "prometheus-targets", cm); err != nil {
			return err
		}
		last = string(cm)
		return nil
	}
	if err := sync(); err != nil {
		return fmt.Errorf("prometheus targets: %w", err)
	}
	go func() {
		for {
			select {
			case <-ctx.Done():
				return
			case <-time.After(prometheusTargetsEvery):
			}
			// A failed read is retried at the next tick; the files keep the last addresses.
			_ = sync()
		}
	}()
	return nil
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// promDuration writes a duration in Prometheus' syntax, which has no fractions.
func promDuration(d time.Duration) string {
	if d%time.Second != 0 || d < time.Second {
		return fmt.Sprintf("%dms", d.Milliseconds())
	}
	return fmt.Sprintf("%ds", int64(d/time.Second))
}

// prometheusWebConfig is --web.config.file: TLS with the prometheus identity's certificate, and
// a client certificate of the person CA required on every connection.
func prometheusWebConfig() ([]byte, error) {
	return json.MarshalIndent(map[string]any{"tls_server_config": map[string]any{
		"cert_file":        prometheusTLSDir + "/tls.crt",
		"key_file":         prometheusTLSDir + "/tls.key",
		"client_auth_type": "RequireAndVerifyClientCert",
		"client_ca_file":   prometheusTLSDir + "/client-ca.crt",
		"min_version":      "TLS12",
	}}, "", "  ")
}

// installPrometheus runs the region's Prometheus on the node and forwards its port to the host.
func (s *ServiceCluster) installPrometheus(ctx context.Context, env localregion.ServiceEnv) (map[string]string, error) {
	p := env.PKI
	// Its server certificate names the Service and the host forward's address.
	if err := p.Add(pki.Prometheus, pki.Spec{CommonName: pki.Prometheus, Usage: pki.Server | pki.Client,
		DNSNames: []string{"localhost", svcName(prometheusName, prometheusNamespace)},
		IPs:      []net.IP{net.IPv4(127, 0, 0, 1), net.IPv6loopback}}, pki.ServiceCA); err != nil {
		return nil, fmt.Errorf("prometheus certificate: %w", err)
	}
	files, err := p.Files(pki.Prometheus)
	if err != nil {
		return nil, err
	}
	var shards []shardScrape
	for _, c := range s.Clusters {
		shards = append(shards, c.scrape())
	}
	cfg, err := prometheusConfig(localregion.DefaultPrometheusInterval, shards)
	if err != nil {
		return nil, err
	}
	web, err := prometheusWebConfig()
	if err != nil {
		return nil, err
	}
	rules, err := localregion.ShippedRuleFiles(s.Root)
	if err != nil {
		return nil, err
	}
	m, err := images.ReadManifest(s.ImagesDir)
	if err != nil {
		return nil, err
	}
	img, ok := m.Images[prometheusName]
	if !ok {
		return nil, fmt.Errorf("no %s image in %s", prometheusName, s.ImagesDir)
	}
	if _, err := s.Node.Kubectl(ctx, "create", "namespace", prometheusNamespace); err != nil {
		return nil, err
	}
	secret := []string{"create", "secret", "generic", "prometheus-tls", "-n", prometheusNamespace,
		"--from-file=tls.crt=" + files.Cert, "--from-file=tls.key=" + files.Key,
		"--from-file=ca.crt=" + p.CAFile, "--from-file=client-ca.crt=" + p.PersonCAFile}
	for _, c := range s.Clusters {
		if sh := c.scrape(); sh.kubeCreds != "" {
			secret = append(secret, "--from-file="+sh.kubeCreds+"-client.crt="+c.prometheus.cert,
				"--from-file="+sh.kubeCreds+"-client.key="+c.prometheus.key, "--from-file="+sh.kubeCreds+"-ca.crt="+c.prometheus.ca)
		}
	}
	if _, err := s.Node.Kubectl(ctx, secret...); err != nil {
		return nil, fmt.Errorf("secret %s/prometheus-tls: %w", prometheusNamespace, err)
	}
	dir := filepath.Join(s.Dir, "prometheus")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	for name, data := range map[string][]byte{"prometheus.yml": cfg, "web.yml": web} {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o600); err != nil {
			return nil, err
		}
	}
	args := []string{"create", "configmap", "prometheus-config", "-n", prometheusNamespace,
		"--from-file=prometheus.yml=" + filepath.Join(dir, "prometheus.yml"), "--from-file=web.yml=" + filepath.Join(dir, "web.yml")}
	if _, err := s.Node.Kubectl(ctx, args...); err != nil {
		return nil, fmt.Errorf("configmap %s/prometheus-config: %w", prometheusNamespace, err)
	}
	args = []string{"create", "configmap", "prometheus-rules", "-n", prometheusNamespace}
	seen := map[string]string{}
	for _, f := range rules {
		base := filepath.Base(f)
		if other, dup := seen[base]; dup {
			return nil, fmt.Errorf("rule files %s and %s share a name", other, f)
		}
		seen[base] = f
		args = append(args, "--from-file="+base+"="+f)
	}
	if _, err := s.Node.Kubectl(ctx, args...); err != nil {
		return nil, fmt.Errorf("configmap %s/prometheus-rules: %w", prometheusNamespace, err)
	}
	if err := s.syncPrometheusTargets(s.forwards, shards); err != nil {
		return nil, err
	}
	if err := s.Node.Apply(ctx, "prometheus", prometheusManifest(img.DigestRef())); err != nil {
		return nil, err
	}
	if _, err := s.Node.Kubectl(ctx, "rollout", "status", "deployment/"+prometheusName, "-n", prometheusNamespace, "--timeout=180s"); err != nil {
		pods, _ := s.Node.Kubectl(ctx, "get", "pods", "-n", prometheusNamespace, "-o", "wide")
		logs, _ := s.Node.Kubectl(ctx, "logs", "-n", prometheusNamespace, "deployment/"+prometheusName, "--tail=40")
		return nil, fmt.Errorf("prometheus rollout: %w\n%s\n%s", err, pods, logs)
	}
	addr, err := forwardServicePort(s.forwards, s.Node, prometheusNamespace, prometheusName, "https")
	if err != nil {
		return nil, err
	}
	sort.Strings(rules)
	s.prometheusRules = rules
	return map[string]string{"https": addr}, nil
}

// prometheusManifest is the Prometheus' objects: its ServiceAccount with a ClusterRole to GET
// /metrics and nothing else (the kube-apiserver's, and the agent's, which asks the cluster
// whether the token may), the Deployment and its Service.
func prometheusManifest(image string) []byte {
	// The web limits are the launcher's Prometheus's (one owner: localregion).
	webFlags := strings.Join(localregion.DefaultPrometheusWebLimits().Flags(), "\n            - ")
	r := strings.NewReplacer("WEBLIMITS", webFlags, "NAMESPACE", prometheusNamespace, "NAME", prometheusName, "IMAGE", image,
		"PORT", fmt.Sprint(prometheusPort), "CONFIGDIR", prometheusConfigDir, "RULESDIR", prometheusRulesDir, "TARGETSDIR", prometheusTargetsDir, "TLSDIR", prometheusTLSDir)
	return []byte(r.Replace(`apiVersion: v1
kind: ServiceAccount
metadata: {name: NAME, namespace: NAMESPACE}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: openhcp-NAME}
rules:
  - nonResourceURLs: [/metrics]
    verbs: [get]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: openhcp-NAME}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: openhcp-NAME}
subjects:
  - {kind: ServiceAccount, name: NAME, namespace: NAMESPACE}
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: NAME
  namespace: NAMESPACE
  labels: {app.kubernetes.io/name: NAME, app.kubernetes.io/part-of: openhcp}
spec:
  replicas: 1
  strategy: {type: Recreate}
  selector:
    matchLabels: {app.kubernetes.io/name: NAME}
  template:
    metadata:
      labels: {app.kubernetes.io/name: NAME}
    spec:
      serviceAccountName: NAME
      securityContext:
        runAsNonRoot: true
        fsGroup: 65532
        seccompProfile: {type: RuntimeDefault}
      containers:
        - name: NAME
          image: IMAGE
          imagePullPolicy: Never
          args:
            - --config.file=CONFIGDIR/prometheus.yml
            - --web.config.file=CONFIGDIR/web.yml
            - --web.listen-address=0.0.0.0:PORT
            - --storage.tsdb.path=/prometheus
            - --storage.tsdb.retention.time=6h
            - WEBLIMITS
          ports:
            - {name: https, containerPort: PORT}
          # The web port requires a client certificate, which the kubelet has none of.
          readinessProbe:
            tcpSocket: {port: https}
            periodSeconds: 5
          resources:
            requests: {cpu: 100m, memory: 256Mi}
            limits: {cpu: "1", memory: 1Gi}
          securityContext:
            allowPrivilegeEscalation: false
            readOnlyRootFilesystem: true
            capabilities: {drop: [ALL]}
          volumeMounts:
            - {name: config, mountPath: CONFIGDIR, readOnly: true}
            - {name: rules, mountPath: RULESDIR, readOnly: true}
            - {name: targets, mountPath: TARGETSDIR, readOnly: true}
            - {name: tls, mountPath: TLSDIR, readOnly: true}
            - {name: data, mountPath: /prometheus}
      volumes:
        - name: config
          configMap: {name: prometheus-config}
        - name: rules
          configMap: {name: prometheus-rules}
        - name: targets
          configMap: {name: prometheus-targets}
        - name: tls
          secret: {secretName: prometheus-tls, defaultMode: 0440}
        - name: data
          emptyDir: {}
---
apiVersion: v1
kind: Service
metadata: {name: NAME, namespace: NAMESPACE}
spec:
  selector: {app.kubernetes.io/name: NAME}
  ports:
    - {name: https, port: PORT, targetPort: https}
---
# Every chart's namespace has one (docs/deploy.md, "Network policy"); this namespace is not a
# chart's. Prometheus's only callers are the kubelet's TCP probe and the host forward (the
# node's root user, which the node's agent admits).
apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata: {name: default-deny, namespace: NAMESPACE}
spec:
  podSelector: {}
  policyTypes: [Ingress]
`))
}
