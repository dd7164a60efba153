package meshpolicy

import (
	"bytes"
	"encoding/json"
	"fmt"
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
//     namespace by its name label (no pod selector, no ipBlock, no empty peer, which would admit
//     everything) on named TCP ports (no rule without ports, which would admit every port);
//   - no two rules admit the same namespace on the same port of the same workload.
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
			if len(rule.From) != 1 {
				fail("%s: %d peers, want exactly one namespace (none admits every source)", rid, len(rule.From))
				continue
			}
			peer := rule.From[0]
			ns := peer.NamespaceSelector
			if peer.IPBlock != nil || peer.PodSelector != nil || ns == nil ||
				len(ns.MatchExpressions) > 0 || len(ns.MatchLabels) != 1 || ns.MatchLabels[NamespaceNameLabel] == "" {
				fail("%s: the peer must be one namespace by %s and nothing else", rid, NamespaceNameLabel)
				continue
			}
			if len(rule.Ports) == 0 {
				fail("%s: no ports (admits every port)", rid)
				continue
			}
			for _, p := range rule.Ports {
				if p.Protocol == nil || *p.Protocol != "TCP" || p.Port == nil || p.Port.StrVal == "" || p.EndPort != nil {
					fail("%s: port %v: want a TCP container port by name", rid, p.Port)
					continue
				}
				g := NetworkGrant{Namespace: np.Namespace, Selector: selector, From: ns.MatchLabels[NamespaceNameLabel], Port: p.Port.StrVal}
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
