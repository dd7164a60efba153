package chartcheck

import (
	"fmt"
	"slices"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/openhcp/openhcp/dev-infrastructure/chartcheck/meshpolicy"
)

// managementNetworkGrants are what the management-cluster charts' NetworkPolicies admit:
// "<workload> <- <namespace> : <container port>". The service-cluster charts' are the mesh
// matrix's (meshpolicy.TestChartsRenderTheMeshMatrixAsNetworkPolicies).
var managementNetworkGrants = map[string][]string{
	"maestro-agent": {"maestro-agent <- monitoring : https"}, // Prometheus scrapes /metrics
	"hypershift-sim": {
		"hosted-etcd <- openhcp : client",        // the sim (its own namespace) stores its hosted apiservers' objects
		"hypershift-sim <- monitoring : metrics", // Prometheus scrapes /metrics
	},
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
			podLabels := workloadPodLabels(t, rendered)
			for workload, set := range podLabels {
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
			specs := workloadPodSpecs(t, rendered)
			var got []string
			for _, g := range grants {
				sel, err := labels.ConvertSelectorToLabelsMap(g.Selector)
				if err != nil {
					t.Fatal(err)
				}
				var names []string
				for workload, set := range podLabels {
					if !labels.SelectorFromSet(sel).Matches(set) {
						continue
					}
					for _, c := range specs[workload].Containers {
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

// workloadPodLabels returns each workload's pod template labels in rendered manifests by "Kind/name".
func workloadPodLabels(t *testing.T, rendered []byte) map[string]labels.Set {
	t.Helper()
	out := map[string]labels.Set{}
	for _, obj := range objects(t, rendered) {
		switch o := obj.(type) {
		case *appsv1.Deployment:
			out["Deployment/"+o.Name] = o.Spec.Template.Labels
		case *appsv1.StatefulSet:
			out["StatefulSet/"+o.Name] = o.Spec.Template.Labels
		case *appsv1.DaemonSet:
			out["DaemonSet/"+o.Name] = o.Spec.Template.Labels
		case *batchv1.Job:
			out["Job/"+o.Name] = o.Spec.Template.Labels
		case *batchv1.CronJob:
			out["CronJob/"+o.Name] = o.Spec.JobTemplate.Spec.Template.Labels
		case *corev1.Pod:
			out["Pod/"+o.Name] = o.Labels
		}
	}
	return out
}

func labelOf(sel labels.Set) string { return sel["app.kubernetes.io/name"] }
