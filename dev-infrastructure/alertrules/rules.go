// Package alertrules checks the Prometheus alert rules shipped in the charts: every rule file
// parses, refers only to metrics the component really defines (found in its Go source, ours or
// the pinned upstream module's), and has a promtool unit test that makes each alert fire and
// stay quiet. It lives in this tool module, outside the workspace, because the PromQL parser
// comes with github.com/prometheus/prometheus, whose Kubernetes pins differ from the workspace's.
package alertrules

import (
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/rulefmt"
	"github.com/prometheus/prometheus/promql/parser"
	"go.yaml.in/yaml/v3"
)

// RuleFileSuffix names a plain rule file; its unit test is the same name with TestFileSuffix.
const (
	RuleFileSuffix = ".rules.yaml"
	TestFileSuffix = ".rules_test.yaml"
)

// Discover returns every rule file in the repository: <chart>/alerts/*.rules.yaml under a
// deploy/ folder, relative to root and sorted.
func Discover(root string) ([]string, error) {
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
		if strings.HasSuffix(rel, RuleFileSuffix) && filepath.Base(filepath.Dir(rel)) == "alerts" &&
			strings.Contains(filepath.ToSlash(rel), "/deploy/") {
			files = append(files, rel)
		}
		return nil
	})
	sort.Strings(files)
	return files, err
}

var promqlParser = parser.NewParser(parser.Options{})

// Load parses a rule file strictly (unknown fields are errors) and validates every rule,
// including its PromQL and templates, as Prometheus does when it loads the file.
func Load(path string) (*rulefmt.RuleGroups, error) {
	groups, errs := rulefmt.ParseFile(path, false, model.UTF8Validation, promqlParser, slog.New(slog.DiscardHandler))
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return groups, nil
}

// MetricNamesIn returns the metric names an expression selects, sorted. A selector without a
// metric name (only label matchers, or a regular expression on __name__) is an error: the
// check could not say what it reads.
func MetricNamesIn(expr string) ([]string, error) {
	e, err := promqlParser.ParseExpr(expr)
	if err != nil {
		return nil, fmt.Errorf("parse %q: %w", expr, err)
	}
	set := map[string]bool{}
	var bad []string
	parser.Inspect(e, func(n parser.Node, _ []parser.Node) error {
		vs, ok := n.(*parser.VectorSelector)
		if !ok {
			return nil
		}
		name := vs.Name
		if name == "" {
			for _, m := range vs.LabelMatchers {
				if m.Name == model.MetricNameLabel && m.Type == 0 { // labels.MatchEqual
					name = m.Value
				}
			}
		}
		if name == "" {
			bad = append(bad, vs.String())
			return nil
		}
		set[name] = true
		return nil
	})
	if len(bad) > 0 {
		return nil, fmt.Errorf("selectors without a metric name in %q: %s", expr, strings.Join(bad, ", "))
	}
	out := make([]string, 0, len(set))
	for n := range set {
		out = append(out, n)
	}
	sort.Strings(out)
	return out, nil
}

// UnitTests is the part of a promtool rule test file the checks read.
type UnitTests struct {
	RuleFiles []string `yaml:"rule_files"`
	Tests     []struct {
		Name          string `yaml:"name"`
		AlertRuleTest []struct {
			EvalTime  string           `yaml:"eval_time"`
			Alertname string           `yaml:"alertname"`
			ExpAlerts []map[string]any `yaml:"exp_alerts"`
		} `yaml:"alert_rule_test"`
	} `yaml:"tests"`
}

// LoadUnitTests reads a promtool test file.
func LoadUnitTests(path string) (*UnitTests, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var t UnitTests
	if err := yaml.Unmarshal(b, &t); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return &t, nil
}

// Coverage reports, per alert name, whether the tests expect it to fire at some evaluation and
// to stay quiet at another.
func (t *UnitTests) Coverage() (fires, quiet map[string]bool) {
	fires, quiet = map[string]bool{}, map[string]bool{}
	for _, tc := range t.Tests {
		for _, a := range tc.AlertRuleTest {
			if len(a.ExpAlerts) > 0 {
				fires[a.Alertname] = true
			} else {
				quiet[a.Alertname] = true
			}
		}
	}
	return fires, quiet
}
