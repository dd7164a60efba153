//go:build !fuzzlean

// Left out of the fuzzing build, as rules_agreement_test.go: it links Cluster Service's server.

package frontend

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"testing"

	"google.golang.org/protobuf/proto"

	csv1 "github.com/openhcp/openhcp/cluster-service/api/v1"
)

// TestClusterNetworkRulesAgree: for hostPrefix around each bound (Cluster Service's 23–26, the
// pod network's prefix) and the three CIDR blocks around each overlap, the frontend's answer to
// a cluster PUT (a real Cluster Service behind it), Cluster Service's own rule
// (model.DefaultCluster, then model.ValidateClusterSpec) and the documented rule agree.
func TestClusterNetworkRulesAgree(t *testing.T) {
	e := newCSEnv(t, realClusters(true))
	// minimalBody's 4.19.7 is not in Cluster Service's catalogue.
	validBody := func() map[string]any { return set(minimalBody(), "properties.version.id", "4.19.17") }
	_, held := e.heldCluster(t, clusterPath("rg", "base"), "", validBody())

	type network struct{ pod, service, machine *string }
	str := func(s string) *string { return &s }
	type netCase struct {
		hostPrefix *int32
		net        network
		want       outcome
	}
	var nets []netCase
	// hostPrefix: 23 to 26 (docs/architecture.md), and not shorter than the pod network's
	// prefix (the default pod network is a /14).
	const hostPrefix = "properties.network.hostPrefix"
	for _, pod := range []struct {
		cidr   *string
		prefix int32
	}{{nil, 14}, {str("10.128.0.0/22"), 22}, {str("10.128.0.0/24"), 24}, {str("10.128.0.0/26"), 26}} {
		for _, hp := range []int32{-1, 0, 1, 14, 15, 21, 22, 23, 24, 25, 26, 27, 32, 33} {
			nets = append(nets, netCase{&hp, network{pod: pod.cidr}, refusedUnless(hp >= 23 && hp <= 26 && hp >= pod.prefix, hostPrefix)})
		}
	}
	// The three blocks: each an IPv4 CIDR block without host bits, none overlapping another
	// (defaults: pod 10.128.0.0/14, service 172.30.0.0/16, machine 10.0.0.0/16). Of two blocks
	// that overlap, the refusal names the later in the order pod, service, machine.
	const pod, service, machine = "properties.network.podCidr", "properties.network.serviceCidr", "properties.network.machineCidr"
	nets = append(nets, []netCase{
		{net: network{service: str("10.128.0.0/16")}, want: refused(service)}, // inside the default pod network
		{net: network{service: str("10.132.0.0/16")}, want: accepted()},       // just after it
		{net: network{service: str("10.127.0.0/16")}, want: accepted()},       // just before it
		{net: network{machine: str("172.30.0.0/24")}, want: refused(machine)}, // inside the default service network
		{net: network{machine: str("172.31.0.0/24")}, want: accepted()},       // just after it
		{net: network{machine: str("10.128.0.0/14")}, want: refused(machine)}, // the pod network itself
		{net: network{pod: str("10.0.0.0/8")}, want: refused(machine)},        // holds the default machine network
		{net: network{pod: str("10.1.0.0/16")}, want: accepted()},             // just after the machine network
		{net: network{pod: str("10.128.0.0/14"), service: str("10.128.0.0/14"), machine: str("10.128.0.0/14")}, // all three
			want: refused(service, machine)},
		{net: network{pod: str("10.128.0.1/14")}, want: refused(pod)},      // host bits set
		{net: network{service: str("not-a-cidr")}, want: refused(service)}, // not a CIDR block
		{net: network{machine: str("fd00::/48")}, want: refused(machine)},  // IPv6
		{net: network{pod: str("192.168.0.0/16"), service: str("192.168.0.0/24")}, want: refused(service)},
	}...)

	var cases []ruleCase[*csv1.ClusterSpec]
	for _, c := range nets {
		name := "hostPrefix=-"
		if c.hostPrefix != nil {
			name = fmt.Sprintf("hostPrefix=%d", *c.hostPrefix)
		}
		for _, f := range []struct {
			n string
			p *string
		}{{"pod", c.net.pod}, {"service", c.net.service}, {"machine", c.net.machine}} {
			if f.p != nil {
				name += fmt.Sprintf("_%s=%s", f.n, *f.p)
			}
		}
		cases = append(cases, ruleCase[*csv1.ClusterSpec]{name: name, want: c.want,
			body: func(body map[string]any) {
				netw := map[string]any{}
				if c.hostPrefix != nil {
					netw["hostPrefix"] = *c.hostPrefix
				}
				for k, p := range map[string]*string{"podCidr": c.net.pod, "serviceCidr": c.net.service, "machineCidr": c.net.machine} {
					if p != nil {
						netw[k] = *p
					}
				}
				set(body, "properties.network", netw)
			},
			// The network as the body gives it, the rest left to Cluster Service's defaults.
			spec: func(s *csv1.ClusterSpec) {
				s.Network = &csv1.NetworkSpec{}
				if c.hostPrefix != nil {
					s.Network.HostPrefix = *c.hostPrefix
				}
				for _, f := range []struct {
					p   *string
					dst *string
				}{{c.net.pod, &s.Network.PodCidr}, {c.net.service, &s.Network.ServiceCidr}, {c.net.machine, &s.Network.MachineCidr}} {
					if f.p != nil {
						*f.dst = *f.p
					}
				}
			},
			// A hostPrefix the body gives is checked as given: Cluster Service cannot tell an
			// explicit 0 from an absent one (it defaults both), the frontend can and refuses it,
			// as it refuses every explicit empty value (docs/api.md).
			asGiven: func(s *csv1.ClusterSpec) {
				if c.hostPrefix != nil {
					s.Network.HostPrefix = *c.hostPrefix
				}
			}})
	}
	runRuleCases(t, e, clusterCreates(held.GetSpec(), "", validBody), cases)
}

// TestClusterChannelGroupFromClusterService: a cluster created through ARM without a channel
// group (or a network) gets Cluster Service's defaults, decided there alone, and the 201, the
// stored document and every GET show what Cluster Service holds.
func TestClusterChannelGroupFromClusterService(t *testing.T) {
	e := newCSEnv(t, realClusters(true))
	resp, held := e.heldCluster(t, clusterPath("rg", "c1"), "", set(minimalBody(), "properties.version.id", "4.19.17"))
	rd, _ := e.resource(clusterPath("rg", "c1"))
	hs := held.GetSpec()
	if hs.GetChannelGroup() == "" || hs.GetNetwork().GetPodCidr() == "" {
		t.Fatalf("Cluster Service holds no defaults: %v", hs)
	}
	shows := func(what string, props map[string]any) {
		t.Helper()
		ver, _ := props["version"].(map[string]any)
		netw, _ := props["network"].(map[string]any)
		if ver["channelGroup"] != hs.GetChannelGroup() || netw["podCidr"] != hs.GetNetwork().GetPodCidr() ||
			netw["hostPrefix"] != float64(hs.GetNetwork().GetHostPrefix()) {
			t.Fatalf("%s shows version %v, network %v; Cluster Service holds %v", what, ver, netw, hs)
		}
	}
	shows("the 201", resp.json(t)["properties"].(map[string]any))
	var stored map[string]any
	if err := json.Unmarshal(rd.Properties, &stored); err != nil {
		t.Fatal(err)
	}
	shows("the stored document", stored["properties"].(map[string]any))
	for _, v := range []string{testVersion, "2025-12-23-preview", "2026-06-30-preview"} {
		got := e.do("GET", withVersion(clusterPath("rg", "c1"), v), nil, nil)
		if got.code != 200 {
			t.Fatalf("GET through %s = %d %s", v, got.code, got.body)
		}
		shows("GET through "+v, got.json(t)["properties"].(map[string]any))
	}
}

// TestDefaultedFieldsAreClusterServices: the fields the frontend fills from Cluster Service's
// defaults (clusterDefaulted, nodePoolDefaulted, read off model.DefaultCluster and
// model.DefaultNodePool on placeholders) are exactly those a real Cluster Service fills: a
// cluster and a node pool created through the in-process server with only what a caller must
// give, read back, have set every field the lists name and no other that was empty (but the
// cluster's DNS domain and OIDC issuer, which Cluster Service chooses rather than defaults); and
// filling what was sent from what it holds at the listed fields gives what it holds.
func TestDefaultedFieldsAreClusterServices(t *testing.T) {
	e := newCSEnv(t)
	ctx := context.Background()
	rg := "/subscriptions/" + testSub + "/resourceGroups/rg"
	armID := rg + "/providers/Microsoft.RedHatOpenShift/hcpOpenShiftClusters/defaults"
	clusterSent := &csv1.ClusterSpec{VersionId: "4.19.17", Azure: &csv1.AzureSpec{
		Location:               testLocation,
		SubnetId:               rg + "/providers/Microsoft.Network/virtualNetworks/vnet/subnets/workers",
		NetworkSecurityGroupId: rg + "/providers/Microsoft.Network/networkSecurityGroups/nsg",
	}}
	cl, err := e.clusters.CreateCluster(ctx, &csv1.CreateClusterRequest{Cluster: &csv1.Cluster{
		Id: "d0000000000000000000000000000001", ArmResourceId: armID, Spec: clusterSent,
	}})
	if err != nil {
		t.Fatalf("create a cluster in Cluster Service: %v", err)
	}
	poolSent := &csv1.NodePoolSpec{Replicas: 2, Platform: &csv1.NodePoolPlatform{VmSize: "Standard_D8s_v3"}}
	np, err := e.pools.CreateNodePool(ctx, &csv1.CreateNodePoolRequest{NodePool: &csv1.NodePool{
		Id: "d0000000000000000000000000000002", ClusterId: cl.GetId(), ArmResourceId: armID + "/nodePools/np1", Spec: poolSent,
	}})
	if err != nil {
		t.Fatalf("create a node pool in Cluster Service: %v", err)
	}

	for _, c := range []struct {
		name           string
		sent, held     proto.Message
		listed         []string
		chosenByItself []string
	}{
		{"cluster", clusterSent, cl.GetSpec(), clusterDefaulted, []string{"dns_base_domain", "issuer_url"}},
		{"node pool", poolSent, np.GetSpec(), nodePoolDefaulted, nil},
	} {
		var sent, held []string
		setScalarPaths(c.sent.ProtoReflect(), "", &sent)
		setScalarPaths(c.held.ProtoReflect(), "", &held)
		filled := slices.DeleteFunc(held, func(p string) bool { return slices.Contains(sent, p) || slices.Contains(c.chosenByItself, p) })
		listed := slices.Clone(c.listed)
		sort.Strings(filled)
		sort.Strings(listed)
		if len(listed) == 0 || !slices.Equal(filled, listed) {
			t.Errorf("Cluster Service fills the %s fields %v; the frontend fills %v", c.name, filled, listed)
		}
		got := proto.Clone(c.sent).ProtoReflect()
		fillDefaulted(got, c.held.ProtoReflect(), c.listed)
		fillDefaulted(got, c.held.ProtoReflect(), c.chosenByItself)
		if !proto.Equal(got.Interface(), c.held) {
			t.Errorf("filled %s spec %v; Cluster Service holds %v", c.name, got.Interface(), c.held)
		}
	}
}
