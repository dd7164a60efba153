package chartcheck

import (
	"bytes"
	"testing"

	"sigs.k8s.io/yaml"
)

// serviceMonitorEndpoint is the part of a ServiceMonitor endpoint these checks read.
type serviceMonitorEndpoint struct {
	Port      string `json:"port"`
	Scheme    string `json:"scheme"`
	TLSConfig *struct {
		InsecureSkipVerify bool           `json:"insecureSkipVerify"`
		CA                 map[string]any `json:"ca"`
		ServerName         string         `json:"serverName"`
	} `json:"tlsConfig"`
}

// serviceMonitorProblems lists what makes a rendered ServiceMonitor scrape without verifying
// the server: Prometheus then sends its scrape (and, for the agent, its token) to whoever
// answers at the pod's address.
func serviceMonitorProblems(rendered []byte) []string {
	var problems []string
	for _, doc := range bytes.Split(rendered, []byte("\n---")) {
		var obj struct {
			Kind     string `json:"kind"`
			Metadata struct {
				Name string `json:"name"`
			} `json:"metadata"`
			Spec struct {
				Endpoints []serviceMonitorEndpoint `json:"endpoints"`
			} `json:"spec"`
		}
		if yaml.Unmarshal(doc, &obj) != nil || obj.Kind != "ServiceMonitor" {
			continue
		}
		for _, ep := range obj.Spec.Endpoints {
			name := obj.Metadata.Name + " port " + ep.Port
			switch {
			case ep.Scheme != "https":
				problems = append(problems, name+": scrapes without TLS")
			case ep.TLSConfig == nil:
				problems = append(problems, name+": no tlsConfig")
			case ep.TLSConfig.InsecureSkipVerify:
				problems = append(problems, name+": insecureSkipVerify")
			case len(ep.TLSConfig.CA) == 0 || ep.TLSConfig.ServerName == "":
				problems = append(problems, name+": tlsConfig needs a ca and a serverName to verify the server")
			}
		}
	}
	return problems
}

// TestServiceMonitorsVerifyTLS renders every service chart's ServiceMonitor with the dev
// region's values and requires each scrape to verify the server's certificate by a CA and
// the name the certificate holds.
func TestServiceMonitorsVerifyTLS(t *testing.T) {
	root := repoRoot(t)
	helmBin := helm(t, root)
	for _, chart := range []string{"frontend/deploy", "backend/deploy", "backend/deploy/monitor", "backend/deploy/maintenance", "cluster-service/deploy", "admin/deploy", "admin/deploy/gateway", "maestro/deploy/agent",
		"maestro/deploy/server", "dev-infrastructure/mgmtcluster/deploy/hypershift-sim"} {
		t.Run(chart, func(t *testing.T) {
			rendered := render(t, helmBin, root, chart)
			if !bytes.Contains(rendered, []byte("kind: ServiceMonitor")) {
				t.Fatal("renders no ServiceMonitor")
			}
			if p := serviceMonitorProblems(rendered); len(p) > 0 {
				t.Fatalf("%v", p)
			}
		})
	}
}
