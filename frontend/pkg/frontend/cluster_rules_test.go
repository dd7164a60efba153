//go:build !fuzzlean

// Left out of the fuzzing build, as nodepool_rules_test.go: it links Cluster Service's server.

package frontend

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"

	csv1 "github.com/openhcp/openhcp/cluster-service/api/v1"
	"github.com/openhcp/openhcp/cluster-service/pkg/model"
)

// TestClusterNetworkRulesAgree: for hostPrefix around each bound (Cluster Service's 23–26, the
// pod network's prefix) and the three CIDR blocks around each overlap, the frontend's answer to
// a cluster PUT (a real Cluster Service behind it) and Cluster Service's own rule
// (model.DefaultCluster, then model.ValidateClusterSpec) agree: both accept, or both refuse,
// every field the frontend names being one Cluster Service names.
func TestClusterNetworkRulesAgree(t *testing.T) {
	e := newCSEnv(t, realClusters(true))
	// minimalBody's 4.19.7 is not in Cluster Service's catalogue.
	validBody := func() map[string]any { return set(minimalBody(), "properties.version.id", "4.19.17") }
	base := e.put(clusterPath("rg", "base"), validBody())
	if base.code != 201 {
		t.Fatalf("PUT of a valid cluster = %d %s", base.code, base.body)
	}
	rd, _ := e.resource(clusterPath("rg", "base"))
	held, err := e.clusters.GetCluster(context.Background(), &csv1.GetClusterRequest{Id: rd.InternalID})
	if err != nil {
		t.Fatal(err)
	}
	request := (&csv1.CreateClusterRequest{}).ProtoReflect().Descriptor()

	type network struct{ pod, service, machine *string }
	str := func(s string) *string { return &s }
	var cases []struct {
		hostPrefix *int32
		net        network
	}
	add := func(hp *int32, n network) {
		cases = append(cases, struct {
			hostPrefix *int32
			net        network
		}{hp, n})
	}
	for _, pod := range []*string{nil, str("10.128.0.0/22"), str("10.128.0.0/24"), str("10.128.0.0/26")} {
		for _, hp := range []int32{-1, 0, 1, 14, 15, 21, 22, 23, 24, 25, 26, 27, 32, 33} {
			add(&hp, network{pod: pod})
		}
	}
	for _, n := range []network{
		{service: str("10.128.0.0/16")}, // inside the default pod network
		{service: str("10.132.0.0/16")}, // just after it
		{service: str("10.127.0.0/16")}, // just before it
		{machine: str("172.30.0.0/24")}, // inside the default service network
		{machine: str("172.31.0.0/24")}, // just after it
		{machine: str("10.128.0.0/14")}, // the pod network itself
		{pod: str("10.0.0.0/8")},        // holds the default machine network
		{pod: str("10.1.0.0/16")},       // just after the machine network
		{pod: str("10.128.0.0/14"), service: str("10.128.0.0/14"), machine: str("10.128.0.0/14")}, // all three
		{pod: str("10.128.0.1/14")},  // host bits set
		{service: str("not-a-cidr")}, // not a CIDR block
		{machine: str("fd00::/48")},  // IPv6
		{pod: str("192.168.0.0/16"), service: str("192.168.0.0/24")},
	} {
		add(nil, n)
	}

	for i, c := range cases {
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
		t.Run(strings.ReplaceAll(name, "/", ":"), func(t *testing.T) {
			// The frontend's answer, through its handler.
			body := validBody()
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
			resp := e.put(clusterPath("rg", fmt.Sprintf("c%d", i)), body)
			var frontend []string
			switch resp.code {
			case 201:
			case 400:
				frontend = refusalTargets(t, resp)
			default:
				t.Fatalf("PUT = %d %s", resp.code, resp.body)
			}

			// Cluster Service's answer: its model's rule on the valid cluster's spec with this
			// network, the field mapped to the ARM path.
			spec := proto.Clone(held.GetSpec()).(*csv1.ClusterSpec)
			spec.IssuerUrl, spec.DnsBaseDomain = "", "" // chosen by Cluster Service, never sent
			spec.Network = &csv1.NetworkSpec{}
			if c.hostPrefix != nil {
				spec.Network.HostPrefix = *c.hostPrefix
			}
			for _, f := range []struct {
				p   *string
				dst *string
			}{{c.net.pod, &spec.Network.PodCidr}, {c.net.service, &spec.Network.ServiceCidr}, {c.net.machine, &spec.Network.MachineCidr}} {
				if f.p != nil {
					*f.dst = *f.p
				}
			}
			model.DefaultCluster(spec)
			if c.hostPrefix != nil {
				// A value the body gives is checked as given: Cluster Service cannot tell an
				// explicit 0 from an absent one (it defaults both), the frontend can and refuses
				// it, as it refuses every explicit empty value (docs/api.md).
				spec.Network.HostPrefix = *c.hostPrefix
			}
			var v model.Violations
			model.ValidateClusterSpec(&v, "cluster.spec", spec)
			requireAgreement(t, resp, frontend, request, v)
		})
	}
}

// TestClusterChannelGroupFromClusterService: a cluster created through ARM without a channel
// group (or a network) gets Cluster Service's defaults, decided there alone, and the 201, the
// stored document and every GET show what Cluster Service holds.
func TestClusterChannelGroupFromClusterService(t *testing.T) {
	e := newCSEnv(t, realClusters(true))
	body := set(minimalBody(), "properties.version.id", "4.19.17")
	resp := e.put(clusterPath("rg", "c1"), body)
	if resp.code != 201 {
		t.Fatalf("PUT = %d %s", resp.code, resp.body)
	}
	rd, _ := e.resource(clusterPath("rg", "c1"))
	held, err := e.clusters.GetCluster(context.Background(), &csv1.GetClusterRequest{Id: rd.InternalID})
	if err != nil {
		t.Fatal(err)
	}
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
// model.DefaultNodePool on an empty spec and a cluster whose every field is a placeholder) are
// exactly those the model fills for a real cluster, and filling them into an empty spec gives
// the model's defaulted spec.
func TestDefaultedFieldsAreClusterServices(t *testing.T) {
	cluster := &csv1.ClusterSpec{Azure: &csv1.AzureSpec{}}
	model.DefaultCluster(cluster)
	owner := &csv1.ClusterSpec{VersionId: "4.19.17", ChannelGroup: "stable", Azure: &csv1.AzureSpec{SubnetId: "subnet"}}
	pool := model.DefaultNodePool(&csv1.NodePoolSpec{}, model.Cluster{Spec: owner, Status: &csv1.ClusterStatus{CurrentVersion: "4.19.16"}}, nil)
	for _, c := range []struct {
		name      string
		defaulted proto.Message
		listed    []string
	}{{"cluster", cluster, clusterDefaulted}, {"node pool", pool, nodePoolDefaulted}} {
		var set []string
		setScalarPaths(c.defaulted.ProtoReflect(), "", &set)
		listed := slices.Clone(c.listed)
		sort.Strings(set)
		sort.Strings(listed)
		if len(listed) == 0 || !slices.Equal(set, listed) {
			t.Errorf("Cluster Service's model defaults the %s fields %v; the frontend fills %v", c.name, set, listed)
		}
		empty := c.defaulted.ProtoReflect().New()
		fillDefaulted(empty, c.defaulted.ProtoReflect(), c.listed)
		if !proto.Equal(empty.Interface(), c.defaulted) {
			t.Errorf("filled %s spec %v, want %v", c.name, empty.Interface(), c.defaulted)
		}
	}
}
