package chartcheck

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

// schemaRefusal is how helm reports values its chart's values.schema.json refuses.
const schemaRefusal = "values don't meet the specifications of the schema"

// helmTemplate is helm template of the chart with the values file v ("" for the chart's
// defaults) and extra arguments, in the namespace releaseNamespace picks; it returns what helm
// wrote and how it ended.
func helmTemplate(t *testing.T, helmBin, root, chartDir, v string, extra ...string) (stdout []byte, stderr string, err error) {
	t.Helper()
	args := []string{"template", "openhcp", filepath.Join(root, chartDir), "--namespace", releaseNamespace(t, root, chartDir, v)}
	if v != "" {
		args = append(args, "--values", v)
	}
	args = append(args, extra...)
	var out, errb bytes.Buffer
	cmd := exec.Command(helmBin, args...)
	cmd.Stdout, cmd.Stderr = &out, &errb
	err = cmd.Run()
	return out.Bytes(), errb.String(), err
}

// wrongType returns a --set-json argument giving the chart's first top-level value (by name) a
// value of another type, and the message the schema must answer it with; ok is false for a
// chart without values.
func wrongType(t *testing.T, root, chartDir string) (arg, want string, ok bool) {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(root, chartDir, "values.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var values map[string]any
	if err := yaml.Unmarshal(raw, &values); err != nil {
		t.Fatalf("%s/values.yaml: %v", chartDir, err)
	}
	keys := make([]string, 0, len(values))
	for k := range values {
		keys = append(keys, k)
	}
	if len(keys) == 0 {
		return "", "", false
	}
	sort.Strings(keys)
	k := keys[0]
	if _, isString := values[k].(string); isString {
		return k + "=12", fmt.Sprintf("at '/%s': got number, want string", k), true
	}
	b, _ := json.Marshal("a string")
	return k + "=" + string(b), fmt.Sprintf("at '/%s': got string, want ", k), true
}

// TestEveryChartRefusesBadValuesBySchema: every chart has a values.schema.json (generated,
// docs/deploy.md#values-schemas), so helm template (and install, which validates the same way)
// accepts the dev region's rendered values and fails on the schema, naming the value, for an
// unknown value, a value of the wrong type, and resources that break the region config's rule.
func TestEveryChartRefusesBadValuesBySchema(t *testing.T) {
	root := repoRoot(t)
	helmBin := helm(t, root)
	for _, chart := range charts(t, root) {
		if _, err := os.Stat(filepath.Join(root, chart, "values.schema.json")); err != nil {
			t.Errorf("%s has no values.schema.json (make generate writes it): %v", chart, err)
		}
	}
	for _, chart := range installable(t, root) {
		t.Run(chart, func(t *testing.T) {
			v := valuesFile(t, root, chart)
			if _, stderr, err := helmTemplate(t, helmBin, root, chart, v); err != nil {
				t.Fatalf("helm template %s with %s: %v\n%s", chart, v, err, stderr)
			}
			cases := []struct{ name, flag, arg, want string }{
				{"unknown value", "--set", "notAValueOfThisChart=1", "additional properties 'notAValueOfThisChart' not allowed"},
			}
			if arg, want, ok := wrongType(t, root, chart); ok {
				cases = append(cases, struct{ name, flag, arg, want string }{"wrong type", "--set-json", arg, want})
			}
			if raw, err := os.ReadFile(filepath.Join(root, chart, "values.yaml")); err == nil && bytes.Contains(raw, []byte("\nresources:")) {
				cases = append(cases, struct{ name, flag, arg, want string }{"resources break the config's rule", "--set",
					"resources.limits.cpu=lots", "at '/resources/limits/cpu': 'lots' does not match pattern"})
			}
			for _, tc := range cases {
				t.Run(tc.name, func(t *testing.T) {
					_, stderr, err := helmTemplate(t, helmBin, root, chart, v, tc.flag, tc.arg)
					if err == nil {
						t.Fatalf("helm template %s %s %s succeeded; want the schema to refuse it", chart, tc.flag, tc.arg)
					}
					if !strings.Contains(stderr, schemaRefusal) || !strings.Contains(stderr, tc.want) {
						t.Fatalf("helm template %s %s %s failed with\n%s\nwant %q from the schema", chart, tc.flag, tc.arg, stderr, tc.want)
					}
				})
			}
		})
	}
}
