package chartcheck

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/labels"

	"github.com/openhcp/openhcp/dev-infrastructure/chartcheck/meshpolicy"
	"github.com/openhcp/openhcp/dev-infrastructure/mgmtcluster/hypershiftsim"
)

// managementNetworkGrants are what the management-cluster charts' NetworkPolicies admit:
// "<workload> <- <namespace> : <container port>". The service-cluster charts' are the mesh
// matrix's (meshpolicy.TestChartsRenderTheMeshMatrixAsNetworkPolicies).
var managementNetworkGrants = map[string][]string{
	"maestro-agent": {"maestro-agent <- monitoring : https"}, // Prometheus scrapes /metrics
	"hypershift-sim": {
		"hypershift-sim <- monitoring : metrics", // Prometheus scrapes /metrics
		// The hosted kube-apiservers (api.url): the break-glass gateway, the Monitor's /readyz
		// probe, and customers from outside the cluster.
		"hypershift-sim <- openhcp-admin : 10000-32767",
		"hypershift-sim <- openhcp-backend : 10000-32767",
		"hypershift-sim <- outside except 10.244.0.0/24 : 10000-32767", // less make deploy's pod network (config/)
	},
}

// runTimePortRange is the port range a chart's workload listens in at run time (no container
// port names them), which its NetworkPolicy admits as a range: the sim pins each hosted
// kube-apiserver's port in hypershiftsim.PinnablePortRange of the pod's ephemeral range, Linux's
// default 32768-60999 (the node's and AKS's).
func runTimePortRange(t *testing.T, chart string) string {
	t.Helper()
	if chart != "hypershift-sim" {
		return ""
	}
	lo, hi, err := hypershiftsim.PinnablePortRange(32768, 60999)
	if err != nil {
		t.Fatal(err)
	}
	return fmt.Sprintf("%d-%d", lo, hi)
}

// TestEveryChartWorkloadIsCoveredByANetworkPolicy renders every chart with the dev region's
// values: every pod a chart runs must be selected by one of the chart's own NetworkPolicies,
// every policy must have the shape meshpolicy.CheckNetworkPolicies checks, and every port it
// admits must be a container port of the pods it selects. A chart that runs no pods (CRDs only)
// needs none. For the management-cluster charts the admitted pairs are checked here too.
func TestEveryChartWorkloadIsCoveredByANetworkPolicy(t *testing.T) {
	root := repoRoot(t)
	helmBin := helm(t, root)
	covered := 0
	for _, chart := range installable(t, root) {
		t.Run(chart, func(t *testing.T) {
			rendered := render(t, helmBin, root, chart)
			nps, err := meshpolicy.DecodeNetworkPolicies(rendered)
			if err != nil {
				t.Fatal(err)
			}
			grants, errs := meshpolicy.CheckNetworkPolicies(nps)
			for _, err := range errs {
				t.Error(err)
			}
			pods := workloadPods(t, rendered)
			for workload, pod := range pods {
				set := labels.Set(pod.Labels)
				selected := false
				for _, np := range nps {
					if np.Name == "default-deny" || len(np.Spec.PodSelector.MatchLabels) == 0 {
						continue
					}
					if labels.SelectorFromSet(np.Spec.PodSelector.MatchLabels).Matches(set) {
						selected = true
					}
				}
				if !selected {
					t.Errorf("%s: no NetworkPolicy of the chart selects its pods", workload)
				}
				covered++
			}
			var got []string
			for _, g := range grants {
				sel, err := labels.ConvertSelectorToLabelsMap(g.Selector)
				if err != nil {
					t.Fatal(err)
				}
				if strings.Contains(g.Port, "-") {
					// A range of ports the workload chooses at run time: no container port.
					if want := runTimePortRange(t, chartMeta(t, root, chart).Name); g.Port != want {
						t.Errorf("grant %+v: port range %s, want the workload's run-time range %q", g, g.Port, want)
					}
					got = append(got, fmt.Sprintf("%s <- %s : %s", labelOf(sel), g.From, g.Port))
					continue
				}
				var names []string
				for workload, pod := range pods {
					if !labels.SelectorFromSet(sel).Matches(labels.Set(pod.Labels)) {
						continue
					}
					for _, c := range pod.Spec.Containers {
						for _, p := range c.Ports {
							if p.Name == g.Port {
								names = append(names, workload)
							}
						}
					}
				}
				if len(names) == 0 {
					t.Errorf("grant %+v: no selected pod has a container port %q", g, g.Port)
				}
				got = append(got, fmt.Sprintf("%s <- %s : %s", labelOf(sel), g.From, g.Port))
			}
			if want, ok := managementNetworkGrants[chartMeta(t, root, chart).Name]; ok {
				slices.Sort(got)
				if !slices.Equal(got, want) {
					t.Errorf("NetworkPolicy grants %q, want %q", got, want)
				}
			}
		})
	}
	if covered == 0 {
		t.Fatal("no chart rendered a workload: the check looked at nothing")
	}
}

func labelOf(sel labels.Set) string { return sel["app.kubernetes.io/name"] }
