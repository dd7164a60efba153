package meshpolicy

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/netip"
	"sort"
	"strings"

	networkingv1 "k8s.io/api/networking/v1"
	"sigs.k8s.io/yaml"
)

// NamespaceNameLabel is the label the apiserver sets on every namespace to its name; the
// charts' NetworkPolicies name a caller's namespace by it.
const NamespaceNameLabel = "kubernetes.io/metadata.name"

// DecodeNetworkPolicies reads multi-document YAML and returns its networking.k8s.io/v1
// NetworkPolicies, decoded with unknown fields refused; other objects are skipped.
func DecodeNetworkPolicies(manifests []byte) ([]*networkingv1.NetworkPolicy, error) {
	var out []*networkingv1.NetworkPolicy
	for i, doc := range splitDocuments(manifests) {
		var head struct{ APIVersion, Kind string }
		if err := yaml.Unmarshal(doc, &head); err != nil {
			return nil, fmt.Errorf("document %d: %w", i, err)
		}
		if head.Kind != "NetworkPolicy" {
			continue
		}
		if head.APIVersion != "networking.k8s.io/v1" {
			return nil, fmt.Errorf("document %d: NetworkPolicy of apiVersion %s, want networking.k8s.io/v1", i, head.APIVersion)
		}
		j, err := yaml.YAMLToJSON(doc)
		if err != nil {
			return nil, fmt.Errorf("document %d: %w", i, err)
		}
		np := &networkingv1.NetworkPolicy{}
		d := json.NewDecoder(bytes.NewReader(j))
		d.DisallowUnknownFields()
		if err := d.Decode(np); err != nil {
			return nil, fmt.Errorf("document %d: NetworkPolicy: %w", i, err)
		}
		out = append(out, np)
	}
	return out, nil
}

// NetworkGrant is one thing a NetworkPolicy admits: pods of namespace From may connect to Port
// (a container port name) of the pods selected by Selector ("k=v,..." sorted) in Namespace.
type NetworkGrant struct {
	Namespace, Selector, From, Port string
}

// CheckNetworkPolicies verifies the shape docs/deploy.md#network-policy promises and returns
// what the policies admit. Every violation is reported, each naming its policy:
//   - every policy is of type Ingress only, and Ingress is listed;
//   - a policy named default-deny selects every pod and admits nothing (one per namespace at
//     most);
//   - every other policy selects its workload by labels, and each of its rules admits exactly one
//     namespace by its name label (no pod selector, no empty peer, which would admit
//     everything), or else every address outside the cluster (ipBlocks of 0.0.0.0/0 and ::/0
//     only, with optional exceptions: a port a customer reaches from anywhere), on TCP ports
//     (no rule without ports, which would admit every port);
//   - a port is a container port by name, or a range (a number and endPort) for ports a
//     workload chooses at run time (the hosted kube-apiservers'); a rule from outside the
//     cluster admits ranges only, so no named port (metrics, an API) is opened to the world by it;
//   - no two rules admit the same namespace on the same port of the same workload.
//
// A grant's From is the namespace, or "outside" with the exceptions ("outside except
// 10.244.0.0/24"); its Port the name, or "from-to" for a range.
func CheckNetworkPolicies(nps []*networkingv1.NetworkPolicy) ([]NetworkGrant, []error) {
	var errs []error
	fail := func(format string, a ...any) { errs = append(errs, fmt.Errorf(format, a...)) }
	defaultDeny := map[string]int{}
	seen := map[NetworkGrant]string{}
	var grants []NetworkGrant
	for _, np := range nps {
		id := "NetworkPolicy " + np.Namespace + "/" + np.Name
		if len(np.Spec.PolicyTypes) != 1 || np.Spec.PolicyTypes[0] != networkingv1.PolicyTypeIngress {
			fail("%s: policyTypes %v, want [Ingress]", id, np.Spec.PolicyTypes)
			continue
		}
		if len(np.Spec.Egress) > 0 {
			fail("%s: has egress rules", id)
		}
		sel := np.Spec.PodSelector
		if np.Name == "default-deny" {
			defaultDeny[np.Namespace]++
			if len(sel.MatchLabels) > 0 || len(sel.MatchExpressions) > 0 || len(np.Spec.Ingress) > 0 {
				fail("%s: default-deny must select every pod and admit nothing", id)
			}
			continue
		}
		if len(sel.MatchLabels) == 0 || len(sel.MatchExpressions) > 0 {
			fail("%s: must select its workload by match labels", id)
			continue
		}
		selector := selectorString(sel.MatchLabels)
		if len(np.Spec.Ingress) == 0 {
			fail("%s: admits nothing; a workload's policy lists its callers", id)
		}
		for i, rule := range np.Spec.Ingress {
			rid := fmt.Sprintf("%s ingress[%d]", id, i)
			from, outside, err := ruleSource(rule.From)
			if err != nil {
				fail("%s: %v", rid, err)
				continue
			}
			if len(rule.Ports) == 0 {
				fail("%s: no ports (admits every port)", rid)
				continue
			}
			for _, p := range rule.Ports {
				port, isRange, err := rulePort(p)
				if err != nil {
					fail("%s: port %v: %v", rid, p.Port, err)
					continue
				}
				if outside && !isRange {
					fail("%s: port %s: a rule from outside the cluster admits only a port range chosen at run time, never a named port", rid, port)
					continue
				}
				g := NetworkGrant{Namespace: np.Namespace, Selector: selector, From: from, Port: port}
				if prev, dup := seen[g]; dup {
					fail("%s: admits %s on port %s again (already by %s)", rid, g.From, g.Port, prev)
					continue
				}
				seen[g] = rid
				grants = append(grants, g)
			}
		}
	}
	for ns, n := range defaultDeny {
		if n > 1 {
			fail("namespace %s: %d default-deny NetworkPolicies, want at most one", ns, n)
		}
	}
	sort.Slice(grants, func(i, j int) bool {
		a, b := grants[i], grants[j]
		return strings.Join([]string{a.Namespace, a.Selector, a.From, a.Port}, "\x00") <
			strings.Join([]string{b.Namespace, b.Selector, b.From, b.Port}, "\x00")
	})
	sort.Slice(errs, func(i, j int) bool { return errs[i].Error() < errs[j].Error() })
	return grants, errs
}

// ruleSource reads a rule's peers: exactly one namespace by its name label, or ipBlocks of the
// whole of IPv4 and IPv6 ("outside"), each with optional exceptions.
func ruleSource(peers []networkingv1.NetworkPolicyPeer) (from string, outside bool, err error) {
	if len(peers) == 0 {
		return "", false, fmt.Errorf("0 peers, want exactly one namespace (none admits every source)")
	}
	if peers[0].IPBlock != nil {
		var except []string
		for _, peer := range peers {
			b := peer.IPBlock
			if b == nil || peer.PodSelector != nil || peer.NamespaceSelector != nil || (b.CIDR != "0.0.0.0/0" && b.CIDR != "::/0") {
				return "", false, fmt.Errorf("the peer must be one namespace by %s and nothing else, or only ipBlocks of 0.0.0.0/0 and ::/0 (outside the cluster)", NamespaceNameLabel)
			}
			for _, e := range b.Except {
				if _, err := netip.ParsePrefix(e); err != nil {
					return "", false, fmt.Errorf("ipBlock %s except %q: %w", b.CIDR, e, err)
				}
				except = append(except, e)
			}
		}
		from = "outside"
		if len(except) > 0 {
			sort.Strings(except)
			from += " except " + strings.Join(except, ",")
		}
		return from, true, nil
	}
	if len(peers) != 1 {
		return "", false, fmt.Errorf("%d peers, want exactly one namespace", len(peers))
	}
	peer := peers[0]
	ns := peer.NamespaceSelector
	if peer.PodSelector != nil || ns == nil ||
		len(ns.MatchExpressions) > 0 || len(ns.MatchLabels) != 1 || ns.MatchLabels[NamespaceNameLabel] == "" {
		return "", false, fmt.Errorf("the peer must be one namespace by %s and nothing else", NamespaceNameLabel)
	}
	return ns.MatchLabels[NamespaceNameLabel], false, nil
}

// rulePort reads a TCP port: a container port by name, or a range (a number and endPort above
// it) for ports chosen at run time, as "from-to".
func rulePort(p networkingv1.NetworkPolicyPort) (port string, isRange bool, err error) {
	switch {
	case p.Protocol == nil || *p.Protocol != "TCP" || p.Port == nil:
		return "", false, fmt.Errorf("want a TCP container port by name, or a TCP port range")
	case p.Port.StrVal != "" && p.EndPort == nil:
		return p.Port.StrVal, false, nil
	case p.Port.StrVal == "" && p.EndPort != nil && *p.EndPort > p.Port.IntVal && p.Port.IntVal > 0:
		return fmt.Sprintf("%d-%d", p.Port.IntVal, *p.EndPort), true, nil
	}
	return "", false, fmt.Errorf("want a TCP container port by name, or a range of a number and a greater endPort")
}
