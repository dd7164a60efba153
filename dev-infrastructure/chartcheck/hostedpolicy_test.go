package chartcheck

import (
	"strings"
	"testing"
)

// TestHostedAPIServersPolicyNeedsThePodNetwork: the sim's chart refuses to render the policy of
// the hosted kube-apiservers' ports without the cluster's pod network to except from "outside
// the cluster" (every pod would pass as an outside caller), and renders without it when no
// hosted kube-apiserver runs.
func TestHostedAPIServersPolicyNeedsThePodNetwork(t *testing.T) {
	root := repoRoot(t)
	helmBin := helm(t, root)
	dev := valuesFile(t, root, simChart)
	cases := []struct {
		name    string
		set     []string
		refused bool
	}{
		{name: "dev_values", set: nil},
		{name: "no_pod_network", set: []string{"--set-json", "networkPolicy.hostedAPIServers.exceptCIDRs=[]"}, refused: true},
		{name: "no_pod_network_and_no_hosted_apiservers", set: []string{"--set-json", "networkPolicy.hostedAPIServers.exceptCIDRs=[]", "--set", "hostedAPIServers=0"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, stderr, err := helmTemplate(t, helmBin, root, simChart, dev, c.set...)
			switch {
			case c.refused && (err == nil || !strings.Contains(stderr, "exceptCIDRs")):
				t.Fatalf("helm template %v: %v %s; want a failure naming exceptCIDRs", c.set, err, stderr)
			case !c.refused && err != nil:
				t.Fatalf("helm template %v: %v %s", c.set, err, stderr)
			}
		})
	}
}
