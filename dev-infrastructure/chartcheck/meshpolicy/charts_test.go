package meshpolicy

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/openhcp/openhcp/dev-infrastructure/mgmtcluster"
	"github.com/openhcp/openhcp/internal/helmcharts"
	securityv1 "istio.io/client-go/pkg/apis/security/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/yaml"
)

// edge is one caller of a service-cluster workload, on the callee's named container ports, and
// the caller's flag or role that makes the call. This table is the mesh policy's specification,
// written from the callers' code, not from the charts (docs/deploy.md#mesh-policy).
type edge struct {
	callee, caller string
	ports          []string
	why            string
}

var matrix = []edge{
	{"frontend", "armIngress", []string{"https"}, "ARM's requests: the ingress gateway passes TLS through to --listen"},
	{"frontend", "prometheus", []string{"metrics"}, "--metrics-listen"},
	{"backend", "prometheus", []string{"metrics"}, "--metrics-listen"},
	{"monitor", "prometheus", []string{"metrics"}, "monitor --metrics-listen"},
	{"maintenance", "prometheus", []string{"metrics"}, "maintenance --metrics-listen"},
	{"clusterService", "frontend", []string{"grpc"}, "frontend --cluster-service"},
	{"clusterService", "backend", []string{"grpc"}, "backend --cluster-service"},
	{"clusterService", "admin", []string{"grpc"}, "admin --cluster-service"},
	{"clusterService", "monitor", []string{"grpc"}, "monitor --cluster-service"},
	{"clusterService", "maintenance", []string{"grpc"}, "maintenance --cluster-service"},
	{"clusterService", "prometheus", []string{"metrics"}, "--metrics-listen"},
	{"admin", "sreIngress", []string{"https"}, "SREs (hcpctl, portal): the ops gateway passes TLS through to --listen"},
	{"admin", "prometheus", []string{"metrics"}, "--metrics-listen"},
	{"gateway", "sreIngress", []string{"https"}, "SREs' kubectl (hcpctl's break-glass kubeconfig): the ops gateway passes TLS through to --listen"},
	{"gateway", "prometheus", []string{"metrics"}, "--metrics-listen"},
	{"maestro", "clusterService", []string{"grpc", "https"}, "cluster-service --maestro-grpc and --maestro-rest"},
	{"maestro", "admin", []string{"https"}, "admin --maestro-rest"},
	{"maestro", "prometheus", []string{"metrics"}, "--metrics-server-bindport"},
}

// serviceCharts names the chart (Chart.yaml name) of each service-cluster workload identity.
var serviceCharts = map[string]string{
	"frontend":       "frontend",
	"backend":        "backend",
	"monitor":        "monitor",
	"maintenance":    "maintenance",
	"clusterService": "cluster-service",
	"admin":          "admin",
	"gateway":        "gateway",
	"maestro":        "maestro-server",
}

var regions = []string{"dev-local", "prod-westus3"}

type identity struct {
	Namespace      string `json:"namespace"`
	ServiceAccount string `json:"serviceAccount"`
}

type regionConfig struct {
	Mesh struct {
		Enabled     bool   `json:"enabled"`
		TrustDomain string `json:"trustDomain"`
	} `json:"mesh"`
	Identities map[string]identity `json:"identities"`
}

func repoRoot(t *testing.T) string {
	t.Helper()
	root, err := mgmtcluster.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	return root
}

func helmBinary(t *testing.T, root string) string {
	t.Helper()
	out, err := exec.Command(filepath.Join(root, "hack", "helm.sh")).Output()
	if err != nil {
		t.Fatalf("build helm with hack/helm.sh: %v", err)
	}
	return strings.TrimSpace(string(out))
}

func readRegion(t *testing.T, root, region string) regionConfig {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(root, "config", "rendered", region+".json"))
	if err != nil {
		t.Fatal(err)
	}
	var c regionConfig
	if err := json.Unmarshal(raw, &c); err != nil {
		t.Fatalf("config %s: %v", region, err)
	}
	return c
}

// meshChart is a service-cluster chart that renders mesh policy.
type meshChart struct {
	dir, name, self string
}

// meshCharts finds every chart (internal/helmcharts) and returns the service-cluster
// ones. A chart of a service-cluster workload that does not include the mesh policy fails the test.
func meshCharts(t *testing.T, root string) []meshChart {
	t.Helper()
	found, err := helmcharts.Find(root)
	if err != nil {
		t.Fatal(err)
	}
	var out []meshChart
	for _, rel := range found {
		dir := filepath.Join(root, filepath.FromSlash(rel))
		f := filepath.Join(dir, "Chart.yaml")
		var meta struct{ Name, Type string }
		readYAML(t, f, &meta)
		if meta.Type == "library" {
			continue
		}
		var vals struct {
			MeshPolicy struct{ Self string } `json:"meshPolicy"`
		}
		readYAML(t, filepath.Join(dir, "values.yaml"), &vals)
		want := ""
		for id, chart := range serviceCharts {
			if chart == meta.Name {
				want = id
			}
		}
		switch {
		case want != "" && vals.MeshPolicy.Self != want:
			t.Errorf("chart %s (%s) is the %s workload's but its values.yaml has meshPolicy.self %q: it must include mesh-policy.render", meta.Name, dir, want, vals.MeshPolicy.Self)
		case want == "" && vals.MeshPolicy.Self != "":
			t.Errorf("chart %s (%s) renders mesh policy as %q but is not a service-cluster workload of the matrix", meta.Name, dir, vals.MeshPolicy.Self)
		case want != "":
			out = append(out, meshChart{dir: dir, name: meta.Name, self: want})
		}
	}
	return out
}

func readYAML(t *testing.T, path string, v any) {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(raw, v); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
}

// renderRegion renders every mesh chart with the region's values in its identity's namespace
// and returns the manifests per chart.
func renderRegion(t *testing.T, helm, root, region string, charts []meshChart, cfg regionConfig) map[meshChart][]byte {
	t.Helper()
	out := map[meshChart][]byte{}
	for _, c := range charts {
		values := filepath.Join(root, "config", "rendered", region, c.name+".yaml")
		var stdout, stderr bytes.Buffer
		cmd := exec.Command(helm, "template", "openhcp", c.dir, "--namespace", cfg.Identities[c.self].Namespace, "--values", values)
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		if err := cmd.Run(); err != nil {
			t.Fatalf("helm template %s (%s): %v: %s", c.dir, region, err, stderr.String())
		}
		out[c] = stdout.Bytes()
	}
	return out
}

// deployments decodes the rendered Deployments (with unknown fields refused).
func deployments(t *testing.T, manifests []byte) []*appsv1.Deployment {
	t.Helper()
	var out []*appsv1.Deployment
	for _, doc := range splitDocuments(manifests) {
		var head struct{ APIVersion, Kind string }
		if err := yaml.Unmarshal(doc, &head); err != nil {
			t.Fatal(err)
		}
		if head.APIVersion == "apps/v1" && head.Kind == "Deployment" {
			d := &appsv1.Deployment{}
			if err := yaml.UnmarshalStrict(doc, d); err != nil {
				t.Fatalf("Deployment: %v", err)
			}
			out = append(out, d)
		}
	}
	return out
}

// TestChartsRenderTheMeshPolicyMatrix renders every service-cluster chart for each shipped
// region, decodes the mesh objects strictly into istio.io/client-go types, checks their shape
// (Check) and that the ALLOW policies grant exactly the matrix above: each caller identity's
// principal, on the named container ports of the workload its policy selects, and nothing else.
func TestChartsRenderTheMeshPolicyMatrix(t *testing.T) {
	root := repoRoot(t)
	helm := helmBinary(t, root)
	charts := meshCharts(t, root)
	if !slices.ContainsFunc(charts, func(c meshChart) bool { return c.self == "maestro" }) {
		t.Fatal("maestro/deploy/server does not render mesh policy: the check would look at nothing")
	}
	for _, region := range regions {
		t.Run(region, func(t *testing.T) {
			cfg := readRegion(t, root, region)
			if !cfg.Mesh.Enabled {
				t.Fatalf("%s: mesh.enabled is false; this test expects the policy rendered", region)
			}
			rendered := renderRegion(t, helm, root, region, charts, cfg)
			var all Objects
			// namespace + selector -> the chart's workload identity and its container ports by number.
			type workload struct {
				self  string
				ports map[string]string // number -> name
			}
			workloads := map[string]workload{}
			for c, manifests := range rendered {
				objs, err := Decode(manifests)
				if err != nil {
					t.Fatalf("%s: %v", c.name, err)
				}
				all.PeerAuthentications = append(all.PeerAuthentications, objs.PeerAuthentications...)
				all.AuthorizationPolicies = append(all.AuthorizationPolicies, objs.AuthorizationPolicies...)
				ns := cfg.Identities[c.self].Namespace
				for _, ap := range objs.AuthorizationPolicies {
					if ap.Namespace != ns {
						t.Errorf("%s: %s is in namespace %s, not the chart's %s", c.name, ap.Name, ap.Namespace, ns)
					}
					sel := ap.Spec.GetSelector().GetMatchLabels()
					if len(sel) == 0 {
						continue
					}
					var matched []*appsv1.Deployment
					for _, d := range deployments(t, manifests) {
						if labels.SelectorFromSet(sel).Matches(labels.Set(d.Spec.Template.Labels)) {
							matched = append(matched, d)
						}
					}
					if len(matched) != 1 {
						t.Errorf("%s: %s selects %d of the chart's Deployments, want 1", c.name, ap.Name, len(matched))
						continue
					}
					d := matched[0]
					if sa := cfg.Identities[c.self].ServiceAccount; d.Spec.Template.Spec.ServiceAccountName != sa {
						t.Errorf("%s: Deployment %s runs as ServiceAccount %q, but config identities.%s names %q: callers' policies would not match it",
							c.name, d.Name, d.Spec.Template.Spec.ServiceAccountName, c.self, sa)
					}
					w := workload{self: c.self, ports: map[string]string{}}
					for _, ctr := range d.Spec.Template.Spec.Containers {
						for _, p := range ctr.Ports {
							w.ports[strconv.Itoa(int(p.ContainerPort))] = p.Name
						}
					}
					workloads[ns+"|"+selectorString(sel)] = w
				}
			}
			grants, errs := Check(all)
			for _, err := range errs {
				t.Error(err)
			}
			// Every namespace of a rendered chart has the defaults, not only those with an ALLOW.
			for c := range rendered {
				ns := cfg.Identities[c.self].Namespace
				if !slices.ContainsFunc(all.PeerAuthentications, func(p *securityv1.PeerAuthentication) bool { return p.Namespace == ns }) {
					t.Errorf("namespace %s (%s): no PeerAuthentication", ns, c.name)
				}
			}
			principals := map[string]string{}
			for name, id := range cfg.Identities {
				principals[Principal(cfg.Mesh.TrustDomain, id.Namespace, id.ServiceAccount)] = name
			}
			got := map[string]bool{}
			for _, g := range grants {
				w, ok := workloads[g.Namespace+"|"+g.Selector]
				caller, known := principals[g.Principal]
				switch {
				case !ok:
					t.Errorf("grant %+v selects no known workload", g)
				case !known:
					t.Errorf("grant %+v names a principal that is no identity in config/", g)
				case w.ports[g.Port] == "":
					t.Errorf("grant %+v: port %s is no container port of %s", g, g.Port, w.self)
				default:
					got[fmt.Sprintf("%s <- %s : %s", w.self, caller, w.ports[g.Port])] = true
				}
			}
			want := map[string]bool{}
			present := map[string]bool{}
			for c := range rendered {
				present[c.self] = true
			}
			for _, e := range matrix {
				if !present[e.callee] {
					continue
				}
				for _, p := range e.ports {
					want[fmt.Sprintf("%s <- %s : %s", e.callee, e.caller, p)] = true
				}
			}
			for k := range want {
				if !got[k] {
					t.Errorf("missing grant %s", k)
				}
			}
			for k := range got {
				if !want[k] {
					t.Errorf("grant %s is not in the matrix", k)
				}
			}
			for id, chart := range serviceCharts {
				if !present[id] {
					t.Logf("no chart %q yet: its row of the matrix is not checked", chart)
				}
			}
			// What the charts actually dial must be granted: every in-cluster address in a
			// chart's container args, env and ConfigMaps resolves, through the Service, to a
			// callee's named container port.
			dialed := dialedEdges(t, rendered, cfg)
			for _, d := range dialed {
				if !got[d] {
					t.Errorf("a chart dials %s, but no ALLOW grants it", d)
				}
			}
			t.Logf("%d dialed edges checked against the grants", len(dialed))
		})
	}
}

// serviceAddress is an in-cluster Service address: <service>.<namespace>.svc[.cluster.local]:<port>.
var serviceAddress = regexp.MustCompile(`([a-z0-9]([-a-z0-9]*[a-z0-9])?)\.([a-z0-9]([-a-z0-9]*[a-z0-9])?)\.svc(\.cluster\.local)?:([0-9]+)`)

// dialedEdges returns "<callee> <- <caller> : <container port name>" for every Service address a
// chart's workload is configured with (container args and env, and the chart's ConfigMaps), the
// caller being the chart's identity.
func dialedEdges(t *testing.T, rendered map[meshChart][]byte, cfg regionConfig) []string {
	t.Helper()
	type svcKey struct{ ns, name string }
	services := map[svcKey]*corev1.Service{}
	type target struct {
		self string
		d    *appsv1.Deployment
	}
	var workloads []target
	byNamespace := map[string]string{}
	for name, id := range cfg.Identities {
		byNamespace[id.Namespace] = name
	}
	for c, manifests := range rendered {
		ns := cfg.Identities[c.self].Namespace
		for _, doc := range splitDocuments(manifests) {
			var head struct{ APIVersion, Kind string }
			if err := yaml.Unmarshal(doc, &head); err != nil {
				t.Fatal(err)
			}
			if head.APIVersion == "v1" && head.Kind == "Service" {
				svc := &corev1.Service{}
				if err := yaml.UnmarshalStrict(doc, svc); err != nil {
					t.Fatalf("%s: Service: %v", c.name, err)
				}
				services[svcKey{ns, svc.Name}] = svc
			}
		}
		for _, d := range deployments(t, manifests) {
			workloads = append(workloads, target{c.self, d})
		}
	}
	var out []string
	for c, manifests := range rendered {
		var texts []string
		for _, doc := range splitDocuments(manifests) {
			var head struct{ APIVersion, Kind string }
			if err := yaml.Unmarshal(doc, &head); err != nil {
				t.Fatal(err)
			}
			if head.APIVersion == "v1" && head.Kind == "ConfigMap" {
				cm := &corev1.ConfigMap{}
				if err := yaml.UnmarshalStrict(doc, cm); err != nil {
					t.Fatalf("%s: ConfigMap: %v", c.name, err)
				}
				for _, v := range cm.Data {
					texts = append(texts, v)
				}
			}
		}
		for _, d := range deployments(t, manifests) {
			for _, ctr := range append(append([]corev1.Container{}, d.Spec.Template.Spec.InitContainers...), d.Spec.Template.Spec.Containers...) {
				texts = append(texts, ctr.Args...)
				texts = append(texts, ctr.Command...)
				for _, e := range ctr.Env {
					texts = append(texts, e.Value)
				}
			}
		}
		for _, text := range texts {
			for _, m := range serviceAddress.FindAllStringSubmatch(text, -1) {
				name, ns, port := m[1], m[3], m[6]
				svc := services[svcKey{ns, name}]
				if svc == nil {
					if byNamespace[ns] != "" {
						t.Errorf("%s dials %s, but no chart renders Service %s in %s", c.name, m[0], name, ns)
					}
					continue // outside the service-cluster charts (kubernetes.default.svc, ...)
				}
				var sp *corev1.ServicePort
				for i := range svc.Spec.Ports {
					if strconv.Itoa(int(svc.Spec.Ports[i].Port)) == port {
						sp = &svc.Spec.Ports[i]
					}
				}
				if sp == nil {
					t.Errorf("%s dials %s, but Service %s/%s has no port %s", c.name, m[0], ns, name, port)
					continue
				}
				found := false
				for _, w := range workloads {
					if cfg.Identities[w.self].Namespace != ns ||
						!labels.SelectorFromSet(svc.Spec.Selector).Matches(labels.Set(w.d.Spec.Template.Labels)) {
						continue
					}
					for _, ctr := range w.d.Spec.Template.Spec.Containers {
						for _, p := range ctr.Ports {
							if (sp.TargetPort.StrVal != "" && p.Name == sp.TargetPort.StrVal) ||
								(sp.TargetPort.StrVal == "" && p.ContainerPort == sp.TargetPort.IntVal) ||
								(sp.TargetPort.StrVal == "" && sp.TargetPort.IntVal == 0 && p.ContainerPort == sp.Port) {
								out = append(out, fmt.Sprintf("%s <- %s : %s", w.self, c.self, p.Name))
								found = true
							}
						}
					}
				}
				if !found {
					t.Errorf("%s dials %s, which reaches no named container port", c.name, m[0])
				}
			}
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

func TestDialedEdges(t *testing.T) {
	cfg := regionConfig{Identities: map[string]identity{
		"maestro":        {Namespace: "m", ServiceAccount: "maestro-server"},
		"clusterService": {Namespace: "cs", ServiceAccount: "cluster-service"},
	}}
	callee := []byte(`apiVersion: v1
kind: Service
metadata: {name: maestro-server}
spec:
  selector: {app: maestro}
  ports:
    - {name: grpc, port: 8090, targetPort: grpc}
    - {name: https, port: 443, targetPort: 8000}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: maestro-server}
spec:
  selector: {matchLabels: {app: maestro}}
  template:
    metadata: {labels: {app: maestro}}
    spec:
      containers:
        - name: server
          ports: [{name: grpc, containerPort: 8090}, {name: https, containerPort: 8000}, {name: metrics, containerPort: 8080}]
`)
	caller := []byte(`apiVersion: v1
kind: ConfigMap
metadata: {name: cs}
data:
  MAESTRO_GRPC: maestro-server.m.svc:8090
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: cluster-service}
spec:
  selector: {matchLabels: {app: cs}}
  template:
    metadata: {labels: {app: cs}}
    spec:
      containers:
        - name: cs
          args: ["--maestro-rest=https://maestro-server.m.svc.cluster.local:443", "--apiserver=https://kubernetes.default.svc"]
`)
	got := dialedEdges(t, map[meshChart][]byte{
		{name: "maestro-server", self: "maestro"}:         callee,
		{name: "cluster-service", self: "clusterService"}: caller,
	}, cfg)
	want := []string{"maestro <- clusterService : grpc", "maestro <- clusterService : https"}
	if !slices.Equal(got, want) {
		t.Fatalf("dialed %q, want %q", got, want)
	}
}

// TestChartsRenderTheMeshMatrixAsNetworkPolicies renders every service-cluster chart for each
// shipped region, decodes its NetworkPolicies strictly, checks their shape
// (CheckNetworkPolicies) and that they admit exactly the matrix above at the network's
// granularity: each caller identity's namespace, on the named container ports of the workload
// the policy selects, and nothing else; and that every chart's namespace has one default deny.
func TestChartsRenderTheMeshMatrixAsNetworkPolicies(t *testing.T) {
	root := repoRoot(t)
	helm := helmBinary(t, root)
	charts := meshCharts(t, root)
	for _, region := range regions {
		t.Run(region, func(t *testing.T) {
			cfg := readRegion(t, root, region)
			rendered := renderRegion(t, helm, root, region, charts, cfg)
			var all []*networkingv1.NetworkPolicy
			got := map[string]bool{}
			for c, manifests := range rendered {
				nps, err := DecodeNetworkPolicies(manifests)
				if err != nil {
					t.Fatalf("%s: %v", c.name, err)
				}
				if len(nps) == 0 {
					t.Errorf("%s renders no NetworkPolicy", c.name)
				}
				all = append(all, nps...)
				grants, errs := CheckNetworkPolicies(nps)
				for _, err := range errs {
					t.Errorf("%s: %v", c.name, err)
				}
				ns := cfg.Identities[c.self].Namespace
				for _, g := range grants {
					if g.Namespace != ns {
						t.Errorf("%s: grant %+v is in namespace %s, not the chart's %s", c.name, g, g.Namespace, ns)
					}
					sel, err := labels.ConvertSelectorToLabelsMap(g.Selector)
					if err != nil {
						t.Fatal(err)
					}
					var matched []*appsv1.Deployment
					for _, d := range deployments(t, manifests) {
						if labels.SelectorFromSet(sel).Matches(labels.Set(d.Spec.Template.Labels)) {
							matched = append(matched, d)
						}
					}
					if len(matched) != 1 {
						t.Errorf("%s: grant %+v selects %d of the chart's Deployments, want 1", c.name, g, len(matched))
						continue
					}
					if !slices.ContainsFunc(matched[0].Spec.Template.Spec.Containers, func(ctr corev1.Container) bool {
						return slices.ContainsFunc(ctr.Ports, func(p corev1.ContainerPort) bool { return p.Name == g.Port })
					}) {
						t.Errorf("%s: grant %+v: port %s is no container port of Deployment %s", c.name, g, g.Port, matched[0].Name)
						continue
					}
					got[fmt.Sprintf("%s <- %s : %s", c.self, g.From, g.Port)] = true
				}
			}
			want := map[string]bool{}
			present := map[string]bool{}
			for c := range rendered {
				present[c.self] = true
			}
			for _, e := range matrix {
				if !present[e.callee] {
					continue
				}
				for _, p := range e.ports {
					want[fmt.Sprintf("%s <- %s : %s", e.callee, cfg.Identities[e.caller].Namespace, p)] = true
				}
			}
			for k := range want {
				if !got[k] {
					t.Errorf("missing NetworkPolicy rule %s", k)
				}
			}
			for k := range got {
				if !want[k] {
					t.Errorf("NetworkPolicy rule %s is not in the matrix", k)
				}
			}
			// Every namespace of a rendered chart denies by default (the policy of a workload
			// covers only its own pods).
			for c := range rendered {
				ns := cfg.Identities[c.self].Namespace
				if n := len(slices.DeleteFunc(slices.Clone(all), func(np *networkingv1.NetworkPolicy) bool {
					return np.Namespace != ns || np.Name != "default-deny"
				})); n != 1 {
					t.Errorf("namespace %s (%s): %d default-deny NetworkPolicies, want 1", ns, c.name, n)
				}
			}
		})
	}
}
