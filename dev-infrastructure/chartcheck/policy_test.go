// Package chartcheck holds the checks every Helm chart in the repository gets: charts are
// discovered by internal/helmcharts (<component>/deploy/Chart.yaml, <component>/deploy/<chart>/Chart.yaml,
// and the same one folder deeper under dev-infrastructure/), so a new chart is checked without
// registering it here.
package chartcheck

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/yaml"

	"github.com/openhcp/openhcp/internal/helmcharts"
)

// devValues is the rendered configuration the charts are checked with.
const devValues = "config/rendered/dev-local"

func repoRoot(t *testing.T) string {
	t.Helper()
	out, err := exec.Command("git", "rev-parse", "--show-toplevel").Output()
	if err != nil {
		t.Fatalf("find repository root: %v", err)
	}
	return strings.TrimSpace(string(out))
}

// charts returns every chart folder (relative to root) that internal/helmcharts finds, library
// charts (internal/deploy/mesh-policy) included: the same charts gen-values-schema writes a
// values.schema.json for.
func charts(t *testing.T, root string) []string {
	t.Helper()
	out, err := helmcharts.Find(root)
	if err != nil {
		t.Fatal(err)
	}
	if len(out) == 0 {
		t.Fatal("no charts found under */deploy/")
	}
	for i := range out {
		out[i] = filepath.FromSlash(out[i])
	}
	return out
}

// installable is charts without the library charts, which render nothing by themselves (they
// are rendered, and checked, through the charts that include them).
func installable(t *testing.T, root string) []string {
	t.Helper()
	var out []string
	for _, c := range charts(t, root) {
		if chartMeta(t, root, c).Type != "library" {
			out = append(out, c)
		}
	}
	return out
}

type chartMetadata struct{ Name, Type string }

func chartMeta(t *testing.T, root, chartDir string) chartMetadata {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(root, chartDir, "Chart.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var meta chartMetadata
	if err := yaml.Unmarshal(raw, &meta); err != nil {
		t.Fatalf("%s/Chart.yaml: %v", chartDir, err)
	}
	return meta
}

// releaseNamespace is the namespace a chart is installed in: for a chart with mesh policy, the
// namespace of its identity (meshPolicy.self of its values.yaml) in the region's config (the
// mesh-policy library refuses any other); "openhcp" otherwise.
func releaseNamespace(t *testing.T, root, chartDir, valuesPath string) string {
	t.Helper()
	type meshValues struct {
		MeshPolicy struct {
			Self       string                                `json:"self"`
			Identities map[string]struct{ Namespace string } `json:"identities"`
		} `json:"meshPolicy"`
	}
	read := func(path string) meshValues {
		var v meshValues
		raw, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if err := yaml.Unmarshal(raw, &v); err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		return v
	}
	self := read(filepath.Join(root, chartDir, "values.yaml")).MeshPolicy.Self
	if self == "" || valuesPath == "" {
		return "openhcp"
	}
	ns := read(valuesPath).MeshPolicy.Identities[self].Namespace
	if ns == "" {
		t.Fatalf("%s: meshPolicy.identities.%s.namespace is not set", valuesPath, self)
	}
	return ns
}

// valuesFile is the rendered values of the chart named name for the dev region, from the region
// folder or its first management-cluster stamp; "" when render-config writes none.
func valuesFile(t *testing.T, root, chartDir string) string {
	t.Helper()
	meta := chartMeta(t, root, chartDir)
	for _, dir := range []string{"", "mgmt-1"} {
		p := filepath.Join(root, devValues, dir, meta.Name+".yaml")
		if _, err := os.Stat(p); err == nil {
			return p
		}
	}
	return ""
}

func helm(t *testing.T, root string) string {
	t.Helper()
	out, err := exec.CommandContext(context.Background(), filepath.Join(root, "hack", "helm.sh")).Output()
	if err != nil {
		t.Fatalf("build helm with hack/helm.sh: %v", err)
	}
	return strings.TrimSpace(string(out))
}

// render is helm template of the chart with the dev region's values, release "openhcp" in the
// namespace releaseNamespace picks.
func render(t *testing.T, helmBin, root, chartDir string) []byte {
	t.Helper()
	return renderWith(t, helmBin, root, chartDir, valuesFile(t, root, chartDir))
}

// renderWith is render with the values file v ("" for the chart's defaults) and extra helm
// arguments (--set ...).
func renderWith(t *testing.T, helmBin, root, chartDir, v string, extra ...string) []byte {
	t.Helper()
	args := []string{"template", "openhcp", filepath.Join(root, chartDir), "--namespace", releaseNamespace(t, root, chartDir, v)}
	if v != "" {
		args = append(args, "--values", v)
	}
	args = append(args, extra...)
	var stdout, stderr bytes.Buffer
	cmd := exec.Command(helmBin, args...)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("helm template %s: %v: %s", chartDir, err, stderr.String())
	}
	return stdout.Bytes()
}

// objects decodes rendered manifests into client-go's typed objects; kinds outside its scheme
// (ServiceMonitor, PrometheusRule, CRDs) are left out: they hold no pods, env or config.
func objects(t *testing.T, rendered []byte) []runtime.Object {
	t.Helper()
	var out []runtime.Object
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(rendered), 4096)
	for {
		var raw runtime.RawExtension
		if err := dec.Decode(&raw); err != nil {
			if errors.Is(err, io.EOF) {
				return out
			}
			t.Fatalf("decode rendered manifests: %v", err)
		}
		if b := bytes.TrimSpace(raw.Raw); len(b) == 0 || string(b) == "null" {
			continue
		}
		if obj, _, err := scheme.Codecs.UniversalDeserializer().Decode(raw.Raw, nil, nil); err == nil {
			out = append(out, obj)
		}
	}
}

// podSpecs renders the chart and returns each workload's pod spec by "Kind/name".
func podSpecs(t *testing.T, helmBin, root, chartDir string) map[string]corev1.PodSpec {
	t.Helper()
	return workloadPodSpecs(t, render(t, helmBin, root, chartDir))
}

// workloadPodSpecs returns each workload's pod spec in rendered manifests by "Kind/name".
func workloadPodSpecs(t *testing.T, rendered []byte) map[string]corev1.PodSpec {
	t.Helper()
	specs := map[string]corev1.PodSpec{}
	for workload, pod := range workloadPods(t, rendered) {
		specs[workload] = pod.Spec
	}
	return specs
}

// workloadPods returns each workload's pod template (a Pod's own metadata and spec) in rendered
// manifests by "Kind/name".
func workloadPods(t *testing.T, rendered []byte) map[string]corev1.PodTemplateSpec {
	t.Helper()
	pods := map[string]corev1.PodTemplateSpec{}
	for _, obj := range objects(t, rendered) {
		switch o := obj.(type) {
		case *appsv1.Deployment:
			pods["Deployment/"+o.Name] = o.Spec.Template
		case *appsv1.StatefulSet:
			pods["StatefulSet/"+o.Name] = o.Spec.Template
		case *appsv1.DaemonSet:
			pods["DaemonSet/"+o.Name] = o.Spec.Template
		case *batchv1.Job:
			pods["Job/"+o.Name] = o.Spec.Template
		case *batchv1.CronJob:
			pods["CronJob/"+o.Name] = o.Spec.JobTemplate.Spec.Template
		case *corev1.Pod:
			pods["Pod/"+o.Name] = corev1.PodTemplateSpec{ObjectMeta: o.ObjectMeta, Spec: o.Spec}
		}
	}
	return pods
}

// containerProblems lists what a pod spec's containers miss: CPU and memory requests and
// limits, and running as non-root (runAsNonRoot true and no runAsUser 0, set on the container or
// inherited from the pod); and what its volumes miss: a sizeLimit on every emptyDir (without
// one, what a container writes there is bounded only by the node's disk, shared with every
// other pod).
func containerProblems(spec corev1.PodSpec) []string {
	var out []string
	for _, v := range spec.Volumes {
		if v.EmptyDir != nil && v.EmptyDir.SizeLimit == nil {
			out = append(out, "volume "+v.Name+": emptyDir without a sizeLimit")
		}
	}
	podNonRoot := spec.SecurityContext != nil && spec.SecurityContext.RunAsNonRoot != nil && *spec.SecurityContext.RunAsNonRoot
	var podUID *int64
	if spec.SecurityContext != nil {
		podUID = spec.SecurityContext.RunAsUser
	}
	all := append(append([]corev1.Container{}, spec.InitContainers...), spec.Containers...)
	for _, c := range all {
		for _, r := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
			if _, ok := c.Resources.Requests[r]; !ok {
				out = append(out, c.Name+": no "+string(r)+" request")
			}
			if _, ok := c.Resources.Limits[r]; !ok {
				out = append(out, c.Name+": no "+string(r)+" limit")
			}
		}
		nonRoot, uid := podNonRoot, podUID
		if sc := c.SecurityContext; sc != nil && sc.RunAsNonRoot != nil {
			nonRoot = *sc.RunAsNonRoot
		}
		if sc := c.SecurityContext; sc != nil && sc.RunAsUser != nil {
			uid = sc.RunAsUser
		}
		if !nonRoot {
			out = append(out, c.Name+": runAsNonRoot is not true")
		}
		if uid != nil && *uid == 0 {
			out = append(out, c.Name+": runAsUser is 0 (root)")
		}
	}
	return out
}

func TestContainerProblems(t *testing.T) {
	yes, no, zero := true, false, int64(0)
	good := corev1.Container{Name: "c", Resources: corev1.ResourceRequirements{
		Requests: corev1.ResourceList{corev1.ResourceCPU: {}, corev1.ResourceMemory: {}},
		Limits:   corev1.ResourceList{corev1.ResourceCPU: {}, corev1.ResourceMemory: {}},
	}}
	for _, tc := range []struct {
		name string
		spec corev1.PodSpec
		want int
	}{
		{"pod non-root", corev1.PodSpec{SecurityContext: &corev1.PodSecurityContext{RunAsNonRoot: &yes}, Containers: []corev1.Container{good}}, 0},
		{"root by default", corev1.PodSpec{Containers: []corev1.Container{good}}, 1},
		{"init container without resources", corev1.PodSpec{SecurityContext: &corev1.PodSecurityContext{RunAsNonRoot: &yes},
			InitContainers: []corev1.Container{{Name: "i"}}, Containers: []corev1.Container{good}}, 4},
		{"container overrides the pod to root", corev1.PodSpec{SecurityContext: &corev1.PodSecurityContext{RunAsNonRoot: &yes},
			Containers: []corev1.Container{func() corev1.Container {
				c := good
				c.SecurityContext = &corev1.SecurityContext{RunAsNonRoot: &no, RunAsUser: &zero}
				return c
			}()}}, 2},
		{"emptyDir without a sizeLimit", corev1.PodSpec{SecurityContext: &corev1.PodSecurityContext{RunAsNonRoot: &yes}, Containers: []corev1.Container{good},
			Volumes: []corev1.Volume{{Name: "tmp", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}}}, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := containerProblems(tc.spec); len(got) != tc.want {
				t.Fatalf("problems %q, want %d", got, tc.want)
			}
		})
	}
}

// TestPolicyCatchesARenderedChart is the policy's negative case end to end: a chart
// (testdata/bad-chart) whose Deployment has a container without limits and one running as root
// is rendered by helm like every real chart, and the check must name each fault.
func TestPolicyCatchesARenderedChart(t *testing.T) {
	root := repoRoot(t)
	helmBin := helm(t, root)
	specs := podSpecs(t, helmBin, root, filepath.Join("dev-infrastructure", "chartcheck", "testdata", "bad-chart"))
	spec, ok := specs["Deployment/bad"]
	if !ok {
		t.Fatalf("testdata/bad-chart rendered %v, want Deployment/bad", specs)
	}
	got := strings.Join(containerProblems(spec), "\n")
	for _, want := range []string{
		"no-limits: no cpu limit", "no-limits: no memory limit",
		"root: runAsNonRoot is not true", "root: runAsUser is 0 (root)",
		"volume unbounded: emptyDir without a sizeLimit",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("problems of testdata/bad-chart:\n%s\nwant %q among them", got, want)
		}
	}
	if strings.Contains(got, "volume bounded") {
		t.Errorf("the emptyDir with a sizeLimit was reported: %s", got)
	}
	if strings.Contains(got, "no-limits: runAsNonRoot") {
		t.Errorf("the non-root container inheriting the pod's runAsNonRoot was reported: %s", got)
	}
}

// TestEveryChartContainerHasResourcesAndRunsNonRoot renders every chart with the dev region's
// values and checks each workload container.
func TestEveryChartContainerHasResourcesAndRunsNonRoot(t *testing.T) {
	root := repoRoot(t)
	helmBin := helm(t, root)
	workloads := 0
	for _, chart := range installable(t, root) {
		t.Run(chart, func(t *testing.T) {
			specs := podSpecs(t, helmBin, root, chart)
			workloads += len(specs)
			for name, spec := range specs {
				for _, p := range containerProblems(spec) {
					t.Errorf("%s %s", name, p)
				}
			}
		})
	}
	if workloads == 0 {
		t.Fatal("no chart rendered a workload: the check looked at nothing")
	}
}

// TestEveryChartRendersForEveryRegion renders every chart with every values file render-config
// writes for it, in every shipped region and stamp (prod-westus3's too, which no other check
// renders), and applies the container policy to each result.
func TestEveryChartRendersForEveryRegion(t *testing.T) {
	root := repoRoot(t)
	helmBin := helm(t, root)
	rendered := 0
	for _, chart := range installable(t, root) {
		name := chartMeta(t, root, chart).Name
		files, err := filepath.Glob(filepath.Join(root, "config", "rendered", "*", name+".yaml"))
		if err != nil {
			t.Fatal(err)
		}
		stamps, err := filepath.Glob(filepath.Join(root, "config", "rendered", "*", "*", name+".yaml"))
		if err != nil {
			t.Fatal(err)
		}
		for _, v := range append(files, stamps...) {
			rel, _ := filepath.Rel(root, v)
			t.Run(chart+"/"+rel, func(t *testing.T) {
				rendered++
				for workload, spec := range workloadPodSpecs(t, renderWith(t, helmBin, root, chart, v)) {
					for _, p := range containerProblems(spec) {
						t.Errorf("%s %s", workload, p)
					}
				}
			})
		}
	}
	if rendered == 0 {
		t.Fatal("no chart has rendered values: the check looked at nothing")
	}
}

// TestEveryChartLints runs helm lint --strict on every chart with the dev region's values.
func TestEveryChartLints(t *testing.T) {
	root := repoRoot(t)
	helmBin := helm(t, root)
	for _, chart := range charts(t, root) {
		t.Run(chart, func(t *testing.T) {
			args := []string{"lint", "--strict", filepath.Join(root, chart)}
			if v := valuesFile(t, root, chart); v != "" {
				args = append(args, "--values", v)
			}
			if out, err := exec.Command(helmBin, args...).CombinedOutput(); err != nil {
				t.Fatalf("helm lint %s: %v\n%s", chart, err, out)
			}
		})
	}
}

// TestRenderedChartsMatchGolden compares every chart's rendering for the dev region with its
// fixture under testdata/golden/; UPDATE=1 rewrites the fixtures.
func TestRenderedChartsMatchGolden(t *testing.T) {
	root := repoRoot(t)
	helmBin := helm(t, root)
	for _, chart := range installable(t, root) {
		t.Run(chart, func(t *testing.T) {
			got := render(t, helmBin, root, chart)
			golden := filepath.Join("testdata", "golden", strings.ReplaceAll(chart, "/", "_")+".yaml")
			if os.Getenv("UPDATE") == "1" {
				if err := os.MkdirAll(filepath.Dir(golden), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(golden, got, 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("read %s (UPDATE=1 writes it): %v", golden, err)
			}
			if !bytes.Equal(got, want) {
				t.Fatalf("%s renders differently from %s; review the change and refresh with UPDATE=1", chart, golden)
			}
		})
	}
}
