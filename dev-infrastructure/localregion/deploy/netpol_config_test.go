package deploy

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/openhcp/openhcp/dev-infrastructure/mgmtcluster"
	"github.com/openhcp/openhcp/dev-infrastructure/node"
)

// TestSimPolicyExcludesTheNodesPodNetwork: every dev-local stamp's sim values exclude exactly the
// node's pod network from the hosted kube-apiservers' "outside the cluster" rule. The deploy test
// dials api.url as the node's root user, whom the agent does not judge, so a drift between
// config/ and node.PodCIDR would let every pod of the node pass as an outside caller unseen.
func TestSimPolicyExcludesTheNodesPodNetwork(t *testing.T) {
	root, err := mgmtcluster.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	files, err := filepath.Glob(filepath.Join(root, "config", "rendered", "dev-local", "*", "hypershift-sim.yaml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no dev-local stamp's hypershift-sim values (%v)", err)
	}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var v struct {
			HostedAPIServers int `json:"hostedAPIServers"`
			NetworkPolicy    struct {
				HostedAPIServers struct {
					ExceptCIDRs []string `json:"exceptCIDRs"`
				} `json:"hostedAPIServers"`
			} `json:"networkPolicy"`
		}
		if err := yaml.Unmarshal(b, &v); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		if got := v.NetworkPolicy.HostedAPIServers.ExceptCIDRs; v.HostedAPIServers > 0 && !slices.Equal(got, []string{node.PodCIDR}) {
			t.Errorf("%s: networkPolicy.hostedAPIServers.exceptCIDRs = %q, want the node's pod network [%s] (config/config.yaml, dev's podCIDRs)", f, got, node.PodCIDR)
		}
	}
}
