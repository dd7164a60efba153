package chartcheck

import (
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/openhcp/openhcp/dev-infrastructure/mgmtcluster/hypershiftsim"
)

const simChart = "dev-infrastructure/mgmtcluster/deploy/hypershift-sim"

// hostedStorageMargin is what a served cluster writes beside its etcd's database and outside
// its quota: etcd's WAL (5 segments of 64 MB kept and one being prepared), the apiserver's audit
// log (20 MB and one backup) and the process logs.
const hostedStorageMargin = 512 << 20

// wantHostedSizeLimit is the hosted emptyDir's bound for the sim the container's arguments
// start: --hosted-apiservers × (2 × --hosted-etcd-quota + hostedStorageMargin), the quota
// counted twice for a defragmentation's copy.
func wantHostedSizeLimit(t *testing.T, args []string) int64 {
	t.Helper()
	n := simServed(t, args)
	if n < 0 {
		t.Fatal("no --hosted-apiservers argument")
	}
	return int64(n) * (2*simQuantity(t, args, "--hosted-etcd-quota", hypershiftsim.DefaultHostedEtcdQuota) + hostedStorageMargin)
}

// simServed is the sim's --hosted-apiservers in the container's arguments, -1 when absent.
func simServed(t *testing.T, args []string) int {
	t.Helper()
	n := -1
	for _, a := range args {
		if v, ok := strings.CutPrefix(a, "--hosted-apiservers="); ok {
			var err error
			if n, err = strconv.Atoi(v); err != nil {
				t.Fatalf("%s: %v", a, err)
			}
		}
	}
	return n
}

// simQuantity is the quantity flag of the sim in the container's arguments, in bytes, or def
// when the chart leaves it to the sim's default.
func simQuantity(t *testing.T, args []string, flag string, def int64) int64 {
	t.Helper()
	for _, a := range args {
		if v, ok := strings.CutPrefix(a, flag+"="); ok {
			q, err := resource.ParseQuantity(v)
			if err != nil {
				t.Fatalf("%s: %v", a, err)
			}
			def = q.Value()
		}
	}
	return def
}

// TestHostedEmptyDirIsBoundedByTheHostedEtcdQuota renders the sim's chart with every region's
// values and with other caps and quotas: the emptyDir that holds the hosted etcds' data (their
// WAL and snapshots are outside their quota) must have a sizeLimit of the arithmetic above, for
// the cap and quota the sim is actually started with.
func TestHostedEmptyDirIsBoundedByTheHostedEtcdQuota(t *testing.T) {
	root := repoRoot(t)
	helmBin := helm(t, root)
	regions, err := filepath.Glob(filepath.Join(root, "config", "rendered", "*", "*", "hypershift-sim.yaml"))
	if err != nil || len(regions) == 0 {
		t.Fatalf("no rendered hypershift-sim values (%v)", err)
	}
	type tc struct {
		name, values string
		set          []string
		want         string // the sizeLimit, "" for no hosted volume
	}
	dev := valuesFile(t, root, simChart)
	cases := []tc{
		{name: "dev_region", values: dev, want: "2048Mi"}, // 2 × (2 × 256Mi + 512Mi)
		{name: "three_clusters_of_1Gi", values: dev, set: []string{"--set", "hostedAPIServers=3", "--set", "hostedEtcdQuota=1Gi"}, want: "7680Mi"},
		{name: "one_cluster_of_300Mi", values: dev, set: []string{"--set", "hostedAPIServers=1", "--set", "hostedEtcdQuota=300Mi"}, want: "1112Mi"},
		{name: "no_hosted_apiservers", values: dev, set: []string{"--set", "hostedAPIServers=0"}},
	}
	for _, v := range regions {
		rel, _ := filepath.Rel(root, v)
		cases = append(cases, tc{name: rel, values: v})
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			spec := workloadPodSpecs(t, renderWith(t, helmBin, root, simChart, c.values, c.set...))["Deployment/hypershift-sim"]
			if len(spec.Containers) == 0 {
				t.Fatal("no hypershift-sim Deployment")
			}
			var hosted *corev1.Volume
			for i := range spec.Volumes {
				if spec.Volumes[i].Name == "hosted" {
					hosted = &spec.Volumes[i]
				}
			}
			want := wantHostedSizeLimit(t, spec.Containers[0].Args)
			switch {
			case want == 0 && hosted == nil:
				return
			case hosted == nil || hosted.EmptyDir == nil:
				t.Fatalf("no hosted emptyDir (%+v), want one of %d bytes", hosted, want)
			case hosted.EmptyDir.SizeLimit == nil:
				t.Fatalf("the hosted emptyDir has no sizeLimit; want %d bytes", want)
			}
			if got := hosted.EmptyDir.SizeLimit.Value(); got != want {
				t.Errorf("hosted emptyDir sizeLimit %s (%d bytes), want %d", hosted.EmptyDir.SizeLimit, got, want)
			}
			if c.want != "" && hosted.EmptyDir.SizeLimit.Cmp(resource.MustParse(c.want)) != 0 {
				t.Errorf("hosted emptyDir sizeLimit %s, want %s", hosted.EmptyDir.SizeLimit, c.want)
			}
		})
	}
	t.Run("a_quota_the_chart_cannot_derive_from_is_refused", func(t *testing.T) {
		_, stderr, err := helmTemplate(t, helmBin, root, simChart, dev, "--set", "hostedEtcdQuota=512M")
		if err == nil || !strings.Contains(stderr, "hostedEtcdQuota") {
			t.Fatalf("helm template with hostedEtcdQuota=512M: %v %s, want a failure naming hostedEtcdQuota", err, stderr)
		}
	})
}

// simMemoryRoom is what the sim itself needs of its container's memory beside the hosted
// control planes (it runs under 100 MiB), and burstMemoryRoom what a plane may grow by between
// two of the sim's memory checks (every 250 ms) before it is killed: the check counts anonymous
// memory only and acts at its next pass, so planes just under their limit and one burst must
// still fit.
const (
	simMemoryRoom   = 128 << 20
	burstMemoryRoom = 256 << 20
)

// TestSimContainerHoldsEveryPlanesMemoryLimit: the sim kills a hosted control plane's larger
// process when the plane is over --hosted-memory-limit, so that one customer never takes the
// container's memory limit, which would end every plane in it. That holds only if the
// container's limit is above every plane's limit, the sim's own room and a burst's, for the cap and
// limit the sim is started with in every region.
func TestSimContainerHoldsEveryPlanesMemoryLimit(t *testing.T) {
	root := repoRoot(t)
	helmBin := helm(t, root)
	regions, err := filepath.Glob(filepath.Join(root, "config", "rendered", "*", "*", "hypershift-sim.yaml"))
	if err != nil || len(regions) == 0 {
		t.Fatalf("no rendered hypershift-sim values (%v)", err)
	}
	type tc struct {
		name, values string
		set          []string
		wantFits     bool
	}
	dev := valuesFile(t, root, simChart)
	cases := []tc{
		{name: "chart_defaults", values: dev, wantFits: true},
		{name: "three_planes_in_the_default_limit", values: dev, set: []string{"--set", "hostedAPIServers=3"}, wantFits: false},
		{name: "a_plane_limit_the_container_cannot_hold", values: dev, set: []string{"--set", "hostedMemoryLimit=2Gi"}, wantFits: false},
	}
	for _, v := range regions {
		rel, _ := filepath.Rel(root, v)
		cases = append(cases, tc{name: rel, values: v, wantFits: true})
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			spec := workloadPodSpecs(t, renderWith(t, helmBin, root, simChart, c.values, c.set...))["Deployment/hypershift-sim"]
			if len(spec.Containers) == 0 {
				t.Fatal("no hypershift-sim Deployment")
			}
			args := spec.Containers[0].Args
			n := max(simServed(t, args), 0)
			plane := simQuantity(t, args, "--hosted-memory-limit", hypershiftsim.DefaultHostedMemoryLimit)
			limit := spec.Containers[0].Resources.Limits.Memory()
			if limit == nil || limit.IsZero() {
				t.Fatal("the sim's container has no memory limit")
			}
			need := int64(n)*plane + simMemoryRoom + burstMemoryRoom
			if fits := limit.Value() >= need; fits != c.wantFits {
				t.Errorf("container memory limit %s against %d planes of %d MiB, %d MiB for the sim and %d MiB for a burst (%d MiB): fits %v, want %v",
					limit, n, plane>>20, simMemoryRoom>>20, burstMemoryRoom>>20, need>>20, fits, c.wantFits)
			}
		})
	}
}
