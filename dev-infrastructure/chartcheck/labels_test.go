package chartcheck

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"
)

// renderedObject is one object of a rendered chart, by what the label check needs.
type renderedObject struct {
	Kind     string `json:"kind"`
	Metadata struct {
		Name   string            `json:"name"`
		Labels map[string]string `json:"labels"`
	} `json:"metadata"`
}

// renderedObjects decodes every object of rendered manifests, whatever its kind (CRDs,
// ServiceMonitors and Istio policies included).
func renderedObjects(t *testing.T, rendered []byte) []renderedObject {
	t.Helper()
	var out []renderedObject
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(rendered), 4096)
	for {
		var raw map[string]any
		if err := dec.Decode(&raw); err != nil {
			if errors.Is(err, io.EOF) {
				return out
			}
			t.Fatalf("decode rendered manifests: %v", err)
		}
		if raw == nil {
			continue
		}
		b, err := yaml.Marshal(raw)
		if err != nil {
			t.Fatal(err)
		}
		var o renderedObject
		if err := yaml.Unmarshal(b, &o); err != nil {
			t.Fatal(err)
		}
		out = append(out, o)
	}
}

// TestEveryRenderedObjectCarriesVersionAndComponentLabels renders every chart with the dev
// region's values and checks each object's app.kubernetes.io/version (the chart's appVersion)
// and app.kubernetes.io/component (set by the service-base library's labels helper,
// docs/deploy.md#labels).
func TestEveryRenderedObjectCarriesVersionAndComponentLabels(t *testing.T) {
	root := repoRoot(t)
	helmBin := helm(t, root)
	checked := 0
	for _, chart := range installable(t, root) {
		t.Run(chart, func(t *testing.T) {
			appVersion := chartAppVersion(t, root, chart)
			for _, o := range renderedObjects(t, render(t, helmBin, root, chart)) {
				checked++
				id := o.Kind + "/" + o.Metadata.Name
				if got, ok := o.Metadata.Labels["app.kubernetes.io/version"]; !ok || got != appVersion {
					t.Errorf("%s: app.kubernetes.io/version %q (set: %v), want the chart's appVersion %q", id, got, ok, appVersion)
				}
				if strings.TrimSpace(o.Metadata.Labels["app.kubernetes.io/component"]) == "" {
					t.Errorf("%s: no app.kubernetes.io/component label", id)
				}
			}
		})
	}
	if checked == 0 {
		t.Fatal("no chart rendered an object: the check looked at nothing")
	}
}

func chartAppVersion(t *testing.T, root, chartDir string) string {
	t.Helper()
	var meta struct {
		AppVersion string `json:"appVersion"`
	}
	readChartYAML(t, root, chartDir, &meta)
	if meta.AppVersion == "" {
		t.Fatalf("%s/Chart.yaml has no appVersion", chartDir)
	}
	return meta.AppVersion
}

func readChartYAML(t *testing.T, root, chartDir string, into any) {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(root, chartDir, "Chart.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(raw, into); err != nil {
		t.Fatalf("%s/Chart.yaml: %v", chartDir, err)
	}
}
