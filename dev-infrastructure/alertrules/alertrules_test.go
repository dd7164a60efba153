package alertrules

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// source is where a component's metrics are defined: folders of this repository, and folders of
// modules it builds from, found through `go list -m` in the module that pins them.
type source struct {
	repo    []string
	modules []moduleSource
}

type moduleSource struct {
	// in is the repository folder whose go.mod pins the module; workspace says whether go
	// resolves it through go.work (otherwise GOWORK=off, as hack/tool.sh builds it).
	in        string
	workspace bool
	module    string
	dirs      []string
}

var (
	// The Maestro binaries are built from dev-infrastructure/maestro/go.mod (GOWORK=off); these are the module
	// versions the deployed server and agent contain.
	maestroModule = func(dirs ...string) moduleSource {
		return moduleSource{in: "dev-infrastructure/maestro", module: "github.com/openshift-online/maestro", dirs: dirs}
	}
	cloudEventsMetrics = moduleSource{in: "dev-infrastructure/maestro", module: "open-cluster-management.io/sdk-go",
		dirs: []string{"pkg/cloudevents/generic/metrics", "pkg/cloudevents/server/grpc/metrics"}}
)

// components maps the folder of each rule file to where that component's metrics come from.
// A rule file in a folder missing here fails TestAlertRules.
var components = map[string]source{
	"frontend/deploy/alerts":            {repo: []string{"frontend", "internal"}},
	"backend/deploy/alerts":             {repo: []string{"backend", "internal"}},
	"backend/deploy/monitor/alerts":     {repo: []string{"backend/pkg/monitor"}},
	"backend/deploy/maintenance/alerts": {repo: []string{"backend", "internal"}},
	"cluster-service/deploy/alerts":     {repo: []string{"cluster-service"}},
	"admin/deploy/alerts":               {repo: []string{"admin", "internal"}},
	"admin/deploy/gateway/alerts":       {repo: []string{"admin/pkg/gateway"}},
	"maestro/deploy/server/alerts": {modules: []moduleSource{
		maestroModule("cmd/maestro/server", "pkg"), cloudEventsMetrics}},
	"maestro/deploy/agent/alerts": {modules: []moduleSource{cloudEventsMetrics}},
	"dev-infrastructure/mgmtcluster/deploy/hypershift-sim/alerts": {repo: []string{"dev-infrastructure/mgmtcluster/hypershiftsim"}, modules: []moduleSource{
		{in: "tooling", workspace: true, module: "sigs.k8s.io/controller-runtime", dirs: []string{"pkg/metrics", "pkg/internal/metrics", "pkg/internal/controller/metrics"}}}},
}

// builtin series every scrape target has, whatever the component defines.
var builtin = map[string]string{"up": "Prometheus: 1 when the last scrape of the target succeeded"}

// severities are the values an alert's severity label may take (ARO HCP's legacy names).
var severities = map[string]bool{"critical": true, "warning": true, "info": true}

func repoRoot(t *testing.T) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.work")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("go.work not found above the working directory")
		}
		dir = parent
	}
}

// moduleDir downloads (if needed) the version of a module that the build list of folder m.in
// selects and returns its directory in the module cache.
func moduleDir(t *testing.T, root string, m moduleSource) string {
	t.Helper()
	cmd := exec.Command("go", "mod", "download", "-json", m.module)
	cmd.Dir = filepath.Join(root, m.in)
	if m.workspace {
		cmd.Env = append(os.Environ(), "GOWORK="+filepath.Join(root, "go.work"), "GOFLAGS=")
	} else {
		cmd.Env = append(os.Environ(), "GOWORK=off", "GOFLAGS=-mod=mod")
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go mod download %s in %s: %v\n%s%s", m.module, m.in, err, out, stderr.String())
	}
	var info struct{ Dir, Version string }
	if err := json.Unmarshal(out, &info); err != nil || info.Dir == "" {
		t.Fatalf("go mod download %s in %s: no module directory in %s (%v)", m.module, m.in, out, err)
	}
	return info.Dir
}

// inventory returns the series names the component of a rule folder defines.
func inventory(t *testing.T, root, folder string) map[string]string {
	t.Helper()
	src, ok := components[folder]
	if !ok {
		t.Fatalf("%s: no metric source known for this folder; add it to components in %s", folder, "alertrules_test.go")
	}
	var dirs []string
	for _, d := range src.repo {
		dirs = append(dirs, filepath.Join(root, d))
	}
	for _, m := range src.modules {
		base := moduleDir(t, root, m)
		for _, d := range m.dirs {
			dirs = append(dirs, filepath.Join(base, d))
		}
	}
	names, err := MetricNames(dirs...)
	if err != nil {
		t.Fatal(err)
	}
	for n, why := range builtin {
		names[n] = why
	}
	return names
}

// TestAlertRules checks every rule file: it parses as Prometheus loads it, every expression
// selects only metrics its component defines, every alert carries a known severity and the
// annotations an on-call engineer needs, and its promtool test makes every alert fire and stay
// quiet at least once each.
func TestAlertRules(t *testing.T) {
	root := repoRoot(t)
	files, err := Discover(root)
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 {
		t.Fatal("no rule files found under */deploy/**/alerts/")
	}
	for _, rel := range files {
		t.Run(rel, func(t *testing.T) {
			groups, err := Load(filepath.Join(root, rel))
			if err != nil {
				t.Fatal(err)
			}
			names := inventory(t, root, filepath.Dir(rel))
			alerts := map[string]bool{}
			for _, g := range groups.Groups {
				for _, r := range g.Rules {
					if r.Record != "" {
						names[r.Record] = "recorded in " + rel
					}
				}
			}
			for _, g := range groups.Groups {
				for _, r := range g.Rules {
					what := r.Alert
					if what == "" {
						what = r.Record
					}
					used, err := MetricNamesIn(r.Expr)
					if err != nil {
						t.Errorf("%s: %v", what, err)
					}
					for _, n := range used {
						if _, ok := names[n]; !ok {
							t.Errorf("%s: metric %s is not defined by this component (it defines %d series: %s)",
								what, n, len(names), strings.Join(Sorted(names), " "))
						}
					}
					if r.Alert == "" {
						continue
					}
					if alerts[r.Alert] {
						t.Errorf("alert %s is defined twice", r.Alert)
					}
					alerts[r.Alert] = true
					if !severities[r.Labels["severity"]] {
						t.Errorf("%s: severity %q, want critical, warning or info", r.Alert, r.Labels["severity"])
					}
					for _, a := range []string{"summary", "description", "runbook_url"} {
						if r.Annotations[a] == "" {
							t.Errorf("%s: annotation %s is empty", r.Alert, a)
						}
					}
				}
			}
			testFile := strings.TrimSuffix(rel, RuleFileSuffix) + TestFileSuffix
			tests, err := LoadUnitTests(filepath.Join(root, testFile))
			if err != nil {
				t.Fatalf("every rule file needs a promtool unit test beside it: %v", err)
			}
			if want := filepath.Base(rel); len(tests.RuleFiles) != 1 || tests.RuleFiles[0] != want {
				t.Errorf("%s: rule_files %v, want [%s]", testFile, tests.RuleFiles, want)
			}
			fires, quiet := tests.Coverage()
			for a := range alerts {
				if !fires[a] {
					t.Errorf("%s: no test case expects %s to fire", testFile, a)
				}
				if !quiet[a] {
					t.Errorf("%s: no test case expects %s to stay quiet", testFile, a)
				}
			}
			for a := range fires {
				if !alerts[a] {
					t.Errorf("%s: tests alert %s, which %s does not define", testFile, a, rel)
				}
			}
		})
	}
}

// TestPromtool runs the pinned promtool over every rule file (check rules: syntax and lint) and
// every unit test (test rules), the same checks Prometheus' own tooling makes.
func TestPromtool(t *testing.T) {
	root := repoRoot(t)
	files, err := Discover(root)
	if err != nil {
		t.Fatal(err)
	}
	promtool := buildPromtool(t, root)
	var tests []string
	for _, f := range files {
		tests = append(tests, strings.TrimSuffix(f, RuleFileSuffix)+TestFileSuffix)
	}
	for _, run := range [][]string{
		append([]string{"check", "rules", "--lint=all", "--lint-fatal"}, files...),
		append([]string{"test", "rules"}, tests...),
	} {
		cmd := exec.Command(promtool, run...)
		cmd.Dir = root
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Errorf("promtool %s: %v\n%s", strings.Join(run[:2], " "), err, out)
		} else {
			t.Logf("promtool %s: ok\n%s", strings.Join(run[:2], " "), lastLines(out, 5))
		}
	}
}

// buildPromtool returns the pinned promtool from the tool cache, building it with
// hack/promtool.sh on the first run (minutes; docs/deploy.md has the measured time).
func buildPromtool(t *testing.T, root string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, filepath.Join(root, "hack", "promtool.sh"))
	cmd.Dir = root
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("build promtool with hack/promtool.sh: %v\n%s", err, stderr.String())
	}
	if stderr.Len() > 0 {
		t.Log(stderr.String())
	}
	return strings.TrimSpace(stdout.String())
}

func lastLines(b []byte, n int) string {
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

func TestMetricNamesIn(t *testing.T) {
	for _, tc := range []struct {
		name, expr string
		want       []string
		wantErr    bool
	}{
		{"ratio", `sum(rate(a_total{code=~"5.."}[5m])) / sum(rate(a_total[5m])) > 0.05`, []string{"a_total"}, false},
		{"histogram and gauge", `histogram_quantile(0.99, sum by (le) (rate(d_seconds_bucket[5m]))) > 1 and on() g == 1`, []string{"d_seconds_bucket", "g"}, false},
		{"name matcher", `{__name__="x"} > 0`, []string{"x"}, false},
		{"no name", `{job="x"} > 0`, nil, true},
		{"regexp name", `{__name__=~"x.*"} > 0`, nil, true},
		{"syntax error", `sum(rate(x[5m])`, nil, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := MetricNamesIn(tc.expr)
			if (err != nil) != tc.wantErr {
				t.Fatalf("err = %v, want error %v", err, tc.wantErr)
			}
			if fmt.Sprint(got) != fmt.Sprint(tc.want) {
				t.Errorf("got %v, want %v", got, tc.want)
			}
		})
	}
}

func TestMetricNames(t *testing.T) {
	dir := t.TempDir()
	src := `package m

import "github.com/prometheus/client_golang/prometheus"

const (
	subsystem = "queue"
	depth     = "depth"
	prefix    = "svc_"
)

var (
	a = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "svc_requests_total"}, nil)
	b = prometheus.NewGaugeVec(prometheus.GaugeOpts{Namespace: "svc", Subsystem: subsystem, Name: depth}, nil)
	c = prometheus.NewHistogram(prometheus.HistogramOpts{Name: prefix + "latency_seconds"})
	d = prometheus.NewDesc("svc_shards", "h", nil, nil)
	e = &metrics.SummaryOpts{Subsystem: "x", Name: "y"}
	f = prometheus.NewGauge(prometheus.GaugeOpts{Name: otherpkg.Name})
	g = prometheus.GaugeOpts{Subsystem: "only_subsystem"}
)
`
	if err := os.WriteFile(filepath.Join(dir, "m.go"), []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	// A test file's metrics are not the component's.
	if err := os.WriteFile(filepath.Join(dir, "m_test.go"), []byte(`package m
var t = prometheus.CounterOpts{Name: "only_in_test_total"}
`), 0o644); err != nil {
		t.Fatal(err)
	}
	got, err := MetricNames(dir)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"svc_latency_seconds_bucket", "svc_latency_seconds_count", "svc_latency_seconds_sum",
		"svc_queue_depth", "svc_requests_total", "svc_shards", "x_y", "x_y_count", "x_y_sum"}
	if fmt.Sprint(Sorted(got)) != fmt.Sprint(want) {
		t.Errorf("got %v\nwant %v", Sorted(got), want)
	}
}

// TestInventoryFindsKnownMetrics guards the extractor against the real sources: a metric each
// component is known to define must be found, so an extractor that finds nothing cannot pass
// TestAlertRules by accident.
func TestInventoryFindsKnownMetrics(t *testing.T) {
	root := repoRoot(t)
	for folder, want := range map[string]string{
		"frontend/deploy/alerts":                                      "frontend_http_requests_total",
		"backend/deploy/alerts":                                       "backend_operation_duration_seconds_bucket",
		"cluster-service/deploy/alerts":                               "cluster_service_shard_capacity_left",
		"admin/deploy/alerts":                                         "admin_audit_write_failures_total",
		"admin/deploy/gateway/alerts":                                 "gateway_proxied_requests_total",
		"maestro/deploy/server/alerts":                                "spec_controller_event_oldest_unreconciled_age_seconds",
		"maestro/deploy/agent/alerts":                                 "resources_status_resync_duration_seconds_bucket",
		"dev-infrastructure/mgmtcluster/deploy/hypershift-sim/alerts": "controller_runtime_reconcile_errors_total",
	} {
		names := inventory(t, root, folder)
		if _, ok := names[want]; !ok {
			t.Errorf("%s: %s not found among %v", folder, want, Sorted(names))
		}
	}
}
