package node

import (
	"context"
	"fmt"
	"strings"
	"time"
)

// The NetworkPolicy agent of the node: SIG Network's kube-network-policies, built from
// dev-infrastructure/kube-network-policies (v0.8.0 with a patch that queues through the
// xtables NFQUEUE target, because this machine's kernel has no nftables queue expression;
// docs/deploy.md#network-policy).
const (
	networkPolicyModule = "dev-infrastructure/kube-network-policies"
	networkPolicyPkg    = "sigs.k8s.io/kube-network-policies/cmd"
	// NetworkPolicyTable is the nftables table the agent keeps in the node's namespace.
	NetworkPolicyTable = "kube-network-policies"
)

// NetworkPolicyAgentBinary returns the pinned agent, building it with hack/tool.sh the first
// time (about 20 s on a warm Go build cache; progress on stderr).
func NetworkPolicyAgentBinary(ctx context.Context) (string, error) {
	return toolBinary(ctx, "kube-network-policies", networkPolicyModule, networkPolicyPkg, "")
}

// EnforceNetworkPolicies starts the agent bin as a process of the node's namespace, with the
// node's admin kubeconfig and no metrics listener, and returns once its table is in the
// namespace's ruleset. Its rules live only in the namespace (they die with it), and Stop ends it
// with the other processes. Pods selected by a NetworkPolicy then have each new connection
// judged by it; the agent does not fail open, so while it is down their new connections drop.
// From then on the node restarts it when it exits (the node's RestartPolicy, each crash logged
// with the tail of its log), as it restarts its other components: its table and queue stay in
// place while it is down, and the new agent takes the queue over and rewrites the table.
func (n *Node) EnforceNetworkPolicies(ctx context.Context, bin string) error {
	p, err := n.start(ctx, "kube-network-policies", bin,
		"--kubeconfig="+n.Kubeconfig,
		"--hostname-override="+NodeName,
		"--disable-nri",           // containerd 1.6 has no NRI
		"--metrics-bind-address=", // no plaintext listener in the namespace
		"--v=2",
	)
	if err != nil {
		return err
	}
	if err := n.waitFor(ctx, "NetworkPolicy agent's table", 90*time.Second, func() error {
		out, err := n.Netns.Command(ctx, "nft", "list", "table", "inet", NetworkPolicyTable).CombinedOutput()
		if err != nil {
			return fmt.Errorf("nft list table inet %s: %w: %s", NetworkPolicyTable, err, strings.TrimSpace(string(out)))
		}
		return nil
	}); err != nil {
		return err
	}
	p.supervise(n.restart, n.onCrash)
	return nil
}
