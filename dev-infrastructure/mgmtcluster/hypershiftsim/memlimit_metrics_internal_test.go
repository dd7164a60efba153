package hypershiftsim

import (
	"testing"

	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
)

// TestMemoryKillsAreExportedBeforeTheFirstKill: both components' kill counters are exported at
// zero from the sim's start. HostedControlPlaneOverMemory is increase() over them, and
// increase() of a series whose first sample is already 1 (created by the first kill) is 0: the
// first kill of each component after a sim start would never fire the alert.
func TestMemoryKillsAreExportedBeforeTheFirstKill(t *testing.T) {
	families, err := ctrlmetrics.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, f := range families {
		if f.GetName() != "hypershift_sim_hosted_memory_kills_total" {
			continue
		}
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "component" {
					seen[l.GetValue()] = true
				}
			}
		}
	}
	for _, c := range []string{"kube-apiserver", "etcd"} {
		if !seen[c] {
			t.Errorf("hypershift_sim_hosted_memory_kills_total{component=%q} is not exported (series: %v)", c, seen)
		}
	}
}
