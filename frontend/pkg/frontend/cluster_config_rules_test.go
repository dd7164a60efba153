//go:build !fuzzlean

// Left out of the fuzzing build, as nodepool_rules_test.go: it links Cluster Service's server.

package frontend

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"

	csv1 "github.com/openhcp/openhcp/cluster-service/api/v1"
	"github.com/openhcp/openhcp/cluster-service/pkg/model"
	"github.com/openhcp/openhcp/frontend/pkg/api"
)

// newestClusterVersion is the newest api-version; it has every cluster property these tests
// drive (imageDigestMirrors and vnetIntegrationSubnetId came in 2025-12-23-preview).
const newestClusterVersion = "2026-09-01-preview"

// configCase is one value of a cluster property with a rule: the body's edit, and the same
// value in the spec the frontend sends Cluster Service (nil: the value cannot reach Cluster
// Service distinguishably, see frontendOnly).
type configCase struct {
	name string
	body func(b map[string]any)
	spec func(s *csv1.ClusterSpec)
	// frontendOnly, when set, is the one field the frontend refuses for a reason Cluster Service
	// cannot see: an explicit empty value (Cluster Service's proto3 strings have no presence, so
	// "" is its absent field) or a field the api-version requires. The test then requires the
	// frontend to refuse naming exactly this field.
	frontendOnly string
}

// configCases are the values around every bound of every cluster property with a rule in the
// frontend's checks or in Cluster Service's model (ValidateConfig, ValidateClusterSpec).
func configCases() []configCase {
	var cases []configCase
	add := func(c configCase) { cases = append(cases, c) }
	i32 := func(n int32) *int32 { return &n }
	subnet := func(name string) string {
		return "/subscriptions/" + testSub + "/resourceGroups/rg/providers/Microsoft.Network/virtualNetworks/vnet/subnets/" + name
	}

	add(configCase{name: "base", body: func(map[string]any) {}, spec: func(*csv1.ClusterSpec) {}})

	// properties.dns.baseDomainPrefix: 1-15 of [a-z0-9-], a letter first, no '-' last.
	for _, p := range []string{"a", "abcdefghijklmno", "abcdefghijklmnop", "1abc", "abc-", "Abc", "a-b", "a.b", "a_b", "-ab", "a1"} {
		add(configCase{name: "baseDomainPrefix=" + p,
			body: func(b map[string]any) { set(b, "properties.dns.baseDomainPrefix", p) },
			spec: func(s *csv1.ClusterSpec) { s.DnsBaseDomainPrefix = p }})
	}
	add(configCase{name: "baseDomainPrefix=empty",
		body:         func(b map[string]any) { set(b, "properties.dns.baseDomainPrefix", "") },
		frontendOnly: "properties.dns.baseDomainPrefix"})

	// properties.api.authorizedCidrs: at most 500 IPv4 blocks (or single addresses, sent as /32),
	// no duplicates.
	cidrs := func(n int) []string {
		out := make([]string, n)
		for i := range out {
			out[i] = fmt.Sprintf("10.%d.%d.0/24", i/256, i%256)
		}
		return out
	}
	for _, l := range []struct {
		name  string
		cidrs []string
	}{
		{"none", []string{}},
		{"one", []string{"192.0.2.0/24"}},
		{"500", cidrs(500)},
		{"501", cidrs(501)},
		{"duplicate", []string{"192.0.2.0/24", "198.51.100.0/24", "192.0.2.0/24"}},
		{"address_and_its_32", []string{"192.0.2.1", "192.0.2.1/32"}},
		{"host_bits_set", []string{"192.0.2.1/24"}},
		{"single_address", []string{"192.0.2.1"}},
		{"ipv6", []string{"2001:db8::/32"}},
		{"ipv6_address", []string{"2001:db8::1"}},
		{"ipv4_mapped_ipv6", []string{"::ffff:192.0.2.0/120"}},
		{"not_a_cidr", []string{"not-a-cidr"}},
		{"prefix_33", []string{"192.0.2.0/33"}},
		{"empty_entry", []string{""}},
		{"leading_zeros", []string{"192.0.02.0/24"}},
		{"prefix_length_leading_zero", []string{"192.0.2.0/024"}},
	} {
		add(configCase{name: "authorizedCidrs=" + l.name,
			body: func(b map[string]any) { set(b, "properties.api.authorizedCidrs", l.cidrs) },
			spec: func(s *csv1.ClusterSpec) { s.ApiAuthorizedCidrs = csCIDRs(l.cidrs) }})
	}

	// properties.imageDigestMirrors: at most 240 sources, each once, host[:port][/path] or *.host of
	// at most 255 characters, with 1 to 255 mirrors.
	mirror := func(src string, mirrors ...string) map[string]any {
		m := map[string]any{"source": src}
		if mirrors != nil {
			m["mirrors"] = mirrors
		}
		return m
	}
	sources := func(n int) []map[string]any {
		out := make([]map[string]any, n)
		for i := range out {
			out[i] = mirror(fmt.Sprintf("registry%d.example.com/ns", i), "mirror.example.com/ns")
		}
		return out
	}
	mirrorsOf := func(n int) []string {
		out := make([]string, n)
		for i := range out {
			out[i] = fmt.Sprintf("mirror%d.example.com/ns", i)
		}
		return out
	}
	long := func(prefix string, n int) string { return prefix + strings.Repeat("a", n-len(prefix)) }
	for _, l := range []struct {
		name string
		list []map[string]any
	}{
		{"none", []map[string]any{}},
		{"240", sources(240)},
		{"241", sources(241)},
		{"wildcard", []map[string]any{mirror("*.example.com", "mirror.example.com")}},
		{"wildcard_with_path", []map[string]any{mirror("*.example.com/ns", "mirror.example.com")}},
		{"empty_mirrors", []map[string]any{mirror("quay.io/openshift", []string{}...)}},
		{"no_mirrors", []map[string]any{mirror("quay.io/openshift")}},
		{"255_mirrors", []map[string]any{mirror("quay.io/openshift", mirrorsOf(255)...)}},
		{"256_mirrors", []map[string]any{mirror("quay.io/openshift", mirrorsOf(256)...)}},
		{"duplicate_source", []map[string]any{mirror("quay.io/openshift", "a.example.com"), mirror("quay.io/openshift", "b.example.com")}},
		{"duplicate_mirror", []map[string]any{mirror("quay.io/openshift", "a.example.com", "a.example.com")}},
		{"source_255", []map[string]any{mirror(long("q.io/", 255), "a.example.com")}},
		{"source_256", []map[string]any{mirror(long("q.io/", 256), "a.example.com")}},
		{"wildcard_source_255", []map[string]any{mirror(long("*.q", 255), "a.example.com")}},
		{"wildcard_source_256", []map[string]any{mirror(long("*.q", 256), "a.example.com")}},
		{"mirror_255", []map[string]any{mirror("quay.io/openshift", long("m.io/", 255))}},
		{"mirror_256", []map[string]any{mirror("quay.io/openshift", long("m.io/", 256))}},
		{"empty_source", []map[string]any{mirror("", "a.example.com")}},
		{"source_with_tag", []map[string]any{mirror("quay.io/openshift:4.19", "a.example.com")}},
		{"source_with_port", []map[string]any{mirror("quay.io:5000/openshift", "a.example.com")}},
		{"wildcard_mirror", []map[string]any{mirror("quay.io/openshift", "*.example.com")}},
		{"uppercase_path", []map[string]any{mirror("quay.io/OpenShift", "a.example.com")}},
	} {
		add(configCase{name: "imageDigestMirrors=" + l.name,
			body: func(b map[string]any) { set(b, "properties.imageDigestMirrors", l.list) },
			spec: func(s *csv1.ClusterSpec) {
				s.ImageDigestMirrors = nil
				for _, m := range l.list {
					ms, _ := m["mirrors"].([]string)
					s.ImageDigestMirrors = append(s.ImageDigestMirrors, &csv1.ImageDigestMirror{Source: m["source"].(string), Mirrors: ms})
				}
			}})
	}

	// properties.autoscaling.*: not negative (podPriorityThreshold: any int32).
	for _, f := range []struct {
		json string
		set  func(a *csv1.ClusterAutoscaling, n *int32)
	}{
		{"maxNodesTotal", func(a *csv1.ClusterAutoscaling, n *int32) { a.MaxNodesTotal = n }},
		{"maxPodGracePeriodSeconds", func(a *csv1.ClusterAutoscaling, n *int32) { a.MaxPodGracePeriodSeconds = n }},
		{"maxNodeProvisionTimeSeconds", func(a *csv1.ClusterAutoscaling, n *int32) { a.MaxNodeProvisionTimeSeconds = n }},
		{"podPriorityThreshold", func(a *csv1.ClusterAutoscaling, n *int32) { a.PodPriorityThreshold = n }},
	} {
		for _, n := range []int32{-2147483648, -1, 0, 1, 2147483647} {
			add(configCase{name: fmt.Sprintf("autoscaling.%s=%d", f.json, n),
				body: func(b map[string]any) { set(b, "properties.autoscaling."+f.json, n) },
				spec: func(s *csv1.ClusterSpec) { s.Autoscaling = &csv1.ClusterAutoscaling{}; f.set(s.Autoscaling, i32(n)) }})
		}
	}

	// properties.nodeDrainTimeoutMinutes: 0 to 10080.
	for _, n := range []int32{-1, 0, 1, 10080, 10081, 2147483647} {
		add(configCase{name: fmt.Sprintf("nodeDrainTimeoutMinutes=%d", n),
			body: func(b map[string]any) { set(b, "properties.nodeDrainTimeoutMinutes", n) },
			spec: func(s *csv1.ClusterSpec) { s.NodeDrainTimeoutMinutes = n }})
	}

	// properties.platform.vnetIntegrationSubnetId: a subnet ID, not the cluster's subnet.
	for _, id := range []struct{ name, id string }{
		{"other_subnet", subnet("other")},
		{"the_cluster_subnet", subnet("workers")},
		{"the_cluster_subnet_other_case", strings.ToUpper(subnet("workers"))},
		{"not_a_resource_id", "integration"},
		{"a_vnet", "/subscriptions/" + testSub + "/resourceGroups/rg/providers/Microsoft.Network/virtualNetworks/vnet"},
		{"an_nsg", "/subscriptions/" + testSub + "/resourceGroups/rg/providers/Microsoft.Network/networkSecurityGroups/nsg"},
		{"subnet_name_ends_with_dash", subnet("integration-")},
		{"subnet_name_ends_with_dot", subnet("integration.")},
		{"subscription_not_a_uuid", "/subscriptions/sub/resourceGroups/rg/providers/Microsoft.Network/virtualNetworks/vnet/subnets/integration"},
		{"one_character_vnet", "/subscriptions/" + testSub + "/resourceGroups/rg/providers/Microsoft.Network/virtualNetworks/v/subnets/integration"},
		{"trailing_slash", subnet("integration") + "/"},
	} {
		add(configCase{name: "vnetIntegrationSubnetId=" + id.name,
			body: func(b map[string]any) { set(b, "properties.platform.vnetIntegrationSubnetId", id.id) },
			spec: func(s *csv1.ClusterSpec) { s.Azure.VnetIntegrationSubnetId = id.id }})
	}
	add(configCase{name: "vnetIntegrationSubnetId=empty",
		body:         func(b map[string]any) { set(b, "properties.platform.vnetIntegrationSubnetId", "") },
		frontendOnly: "properties.platform.vnetIntegrationSubnetId"})
	add(configCase{name: "vnetIntegrationSubnetId=absent",
		body: func(b map[string]any) {
			delete(b["properties"].(map[string]any)["platform"].(map[string]any), "vnetIntegrationSubnetId")
		},
		frontendOnly: "properties.platform.vnetIntegrationSubnetId"})

	// The cluster's own subnet and network security group: resource IDs as HyperShift takes them.
	for _, id := range []struct{ name, id string }{
		{"name_ends_with_dash", subnet("workers-")},
		{"one_character_vnet", "/subscriptions/" + testSub + "/resourceGroups/rg/providers/Microsoft.Network/virtualNetworks/v/subnets/workers"},
		{"subscription_not_a_uuid", "/subscriptions/sub/resourceGroups/rg/providers/Microsoft.Network/virtualNetworks/vnet/subnets/workers"},
	} {
		add(configCase{name: "subnetId=" + id.name,
			body: func(b map[string]any) { set(b, "properties.platform.subnetId", id.id) },
			spec: func(s *csv1.ClusterSpec) { s.Azure.SubnetId = id.id }})
	}
	for _, id := range []struct{ name, id string }{
		{"resource_group_ends_with_dot", "/subscriptions/" + testSub + "/resourceGroups/rg./providers/Microsoft.Network/networkSecurityGroups/nsg"},
		{"subscription_not_a_uuid", "/subscriptions/sub/resourceGroups/rg/providers/Microsoft.Network/networkSecurityGroups/nsg"},
	} {
		add(configCase{name: "networkSecurityGroupId=" + id.name,
			body: func(b map[string]any) { set(b, "properties.platform.networkSecurityGroupId", id.id) },
			spec: func(s *csv1.ClusterSpec) { s.Azure.NetworkSecurityGroupId = id.id }})
	}

	// properties.etcd.dataEncryption.customerManaged.kms: the key's parts, which Cluster Service
	// holds as one Key Vault key URL (api.EtcdKeyID), and the key vault's visibility.
	for _, k := range []struct{ name, vault, key, version, visibility string }{
		{"valid", "vault", "key", "v1", "Private"},
		{"public", "vault", "key", "v1", "Public"},
		{"key_name_with_slash", "vault", "a/b", "v1", "Private"},
		{"version_with_slash", "vault", "key", "v1/v2", "Private"},
		{"vault_with_slash", "va/ult", "key", "v1", "Private"},
		{"vault_with_dot", "va.ult", "key", "v1", "Private"},
		{"vault_with_vault_suffix", "abc.vault", "key", "v1", "Private"},
		{"vault_with_port", "kv1.vault.azure.net:8443/x", "key", "v1", "Private"},
		{"vault_with_space", "va ult", "key", "v1", "Private"},
		{"vault_of_2", "kv", "key", "v1", "Private"},
		{"vault_of_3", "kv1", "key", "v1", "Private"},
		{"vault_of_24", "abcdefghijklmnopqrstuvwx", "key", "v1", "Private"},
		{"vault_of_25", "abcdefghijklmnopqrstuvwxy", "key", "v1", "Private"},
		{"vault_digit_first", "1vault", "key", "v1", "Private"},
		{"visibility_lowercase", "vault", "key", "v1", "private"},
	} {
		add(configCase{name: "kms=" + k.name,
			body: func(b map[string]any) {
				set(b, "properties.etcd", map[string]any{"dataEncryption": map[string]any{
					"keyManagementMode": "CustomerManaged",
					"customerManaged": map[string]any{"encryptionType": "KMS", "kms": map[string]any{
						"vaultName": k.vault, "visibility": k.visibility, "activeKey": map[string]any{"name": k.key, "version": k.version},
					}},
				}})
			},
			spec: func(s *csv1.ClusterSpec) {
				s.EtcdEncryptionKeyId = api.EtcdKeyID(&api.KMSKey{VaultName: k.vault, Name: k.key, Version: k.version})
				s.EtcdEncryptionKeyVaultVisibility = k.visibility
			}})
	}

	// The enums Cluster Service checks too.
	for _, e := range []struct {
		path, value string
		spec        func(s *csv1.ClusterSpec, v string)
	}{
		{"properties.api.visibility", "Private", func(s *csv1.ClusterSpec, v string) { s.ApiVisibility = v }},
		{"properties.api.visibility", "private", func(s *csv1.ClusterSpec, v string) { s.ApiVisibility = v }},
		{"properties.ingress.type", "Private", func(s *csv1.ClusterSpec, v string) { s.IngressVisibility = v }},
		{"properties.ingress.type", "Disabled", func(s *csv1.ClusterSpec, v string) { s.IngressVisibility = v }},
		{"properties.ingress.type", "None", func(s *csv1.ClusterSpec, v string) { s.IngressVisibility = v }},
		{"properties.cryptoRestrictions", "FIPS", func(s *csv1.ClusterSpec, v string) { s.CryptoRestrictions = v }},
		{"properties.cryptoRestrictions", "fips", func(s *csv1.ClusterSpec, v string) { s.CryptoRestrictions = v }},
		{"properties.clusterImageRegistry.state", "Disabled", func(s *csv1.ClusterSpec, v string) { s.ImageRegistryState = v }},
		{"properties.clusterImageRegistry.state", "Removed", func(s *csv1.ClusterSpec, v string) { s.ImageRegistryState = v }},
		{"properties.platform.outboundType", "UserDefinedRouting", func(s *csv1.ClusterSpec, v string) { s.Azure.OutboundType = v }},
	} {
		add(configCase{name: e.path[len("properties."):] + "=" + e.value,
			body: func(b map[string]any) { set(b, e.path, e.value) },
			spec: func(s *csv1.ClusterSpec) { e.spec(s, e.value) }})
	}
	return cases
}

// TestClusterConfigRulesAgree: for every cluster property with a rule in the frontend or in
// Cluster Service's model, values around each bound and hostile shapes (configCases), the
// frontend's answer to a cluster PUT through the newest api-version (a real Cluster Service
// behind it) and Cluster Service's own rule (model.DefaultCluster, then
// model.ValidateClusterSpec, as its CreateCluster) on the spec the frontend sends agree: both
// accept, or both refuse, every field the frontend names being one Cluster Service names.
func TestClusterConfigRulesAgree(t *testing.T) {
	e := newCSEnv(t, realClusters(true))
	base := e.do("PUT", withVersion(clusterPath("rg", "base"), newestClusterVersion), mustJSON(configBody()), nil)
	if base.code != 201 {
		t.Fatalf("PUT of a valid cluster = %d %s", base.code, base.body)
	}
	rd, _ := e.resource(clusterPath("rg", "base"))
	held, err := e.clusters.GetCluster(context.Background(), &csv1.GetClusterRequest{Id: rd.InternalID})
	if err != nil {
		t.Fatal(err)
	}
	request := (&csv1.CreateClusterRequest{}).ProtoReflect().Descriptor()

	for i, c := range configCases() {
		t.Run(strings.ReplaceAll(c.name, "/", ":"), func(t *testing.T) {
			body := configBody()
			c.body(body)
			resp := e.do("PUT", withVersion(clusterPath("rg", fmt.Sprintf("c%d", i)), newestClusterVersion), mustJSON(body), nil)
			var frontend []string
			switch resp.code {
			case 201:
			case 400:
				frontend = refusalTargets(t, resp)
			default:
				t.Fatalf("PUT = %d %s", resp.code, resp.body)
			}
			if c.frontendOnly != "" {
				if len(frontend) != 1 || frontend[0] != c.frontendOnly {
					t.Fatalf("the frontend answers %d with targets %v; want a refusal of %s alone (%s)", resp.code, frontend,
						c.frontendOnly, strings.TrimSpace(string(resp.body)))
				}
				return
			}

			// Cluster Service's answer: its model's rule on the valid cluster's spec with this
			// value, as the frontend sends it.
			spec := proto.Clone(held.GetSpec()).(*csv1.ClusterSpec)
			spec.IssuerUrl, spec.DnsBaseDomain = "", "" // chosen by Cluster Service, never sent
			c.spec(spec)
			model.DefaultCluster(spec)
			var v model.Violations
			model.ValidateClusterSpec(&v, "cluster.spec", spec)
			requireAgreement(t, resp, frontend, request, v)
		})
	}
}

// configBody is a valid cluster for the newest api-version: minimalBody with a version in
// Cluster Service's catalogue and the vnet integration subnet the version requires.
func configBody() map[string]any {
	b := set(minimalBody(), "properties.version.id", "4.19.17")
	return set(b, "properties.platform.vnetIntegrationSubnetId",
		"/subscriptions/"+testSub+"/resourceGroups/rg/providers/Microsoft.Network/virtualNetworks/vnet/subnets/integration")
}

// TestClusterConfigUpdateRulesAgree: for nodeDrainTimeoutMinutes and api.authorizedCidrs around
// each bound, the frontend's answer to an update of a created cluster through the newest
// api-version (a PATCH; a PUT for authorizedCidrs, which the version's PATCH body does not hold),
// a real Cluster Service behind it, and Cluster Service's rule for an update
// (model.ValidateConfigUpdate, then model.ApplyConfigUpdate on the cluster's spec, as its
// UpdateCluster) on the update the frontend sends agree.
func TestClusterConfigUpdateRulesAgree(t *testing.T) {
	e := newCSEnv(t, realClusters(true))
	request := (&csv1.UpdateClusterRequest{}).ProtoReflect().Descriptor()
	type patchCase struct {
		name   string
		method string
		body   map[string]any
		update *csv1.ClusterUpdate
	}
	var cases []patchCase
	for _, n := range []int32{-1, 1, 10080, 10081, 2147483647} {
		cases = append(cases, patchCase{fmt.Sprintf("nodeDrainTimeoutMinutes=%d", n), "PATCH",
			map[string]any{"properties": map[string]any{"nodeDrainTimeoutMinutes": n}}, &csv1.ClusterUpdate{NodeDrainTimeoutMinutes: &n}})
	}
	cidrs := func(n int) []string {
		out := make([]string, n)
		for i := range out {
			out[i] = fmt.Sprintf("10.%d.%d.0/24", i/256, i%256)
		}
		return out
	}
	for _, l := range []struct {
		name  string
		cidrs []string
	}{
		{"one", []string{"192.0.2.0/24"}},
		{"500", cidrs(500)},
		{"501", cidrs(501)},
		{"duplicate", []string{"192.0.2.0/24", "192.0.2.0/24"}},
		{"address_and_its_32", []string{"192.0.2.1", "192.0.2.1/32"}},
		{"single_address", []string{"192.0.2.1"}},
		{"ipv6", []string{"2001:db8::/32"}},
		{"not_a_cidr", []string{"not-a-cidr"}},
		{"empty_entry", []string{""}},
	} {
		cases = append(cases, patchCase{"authorizedCidrs=" + l.name, "PUT",
			set(configBody(), "properties.api.authorizedCidrs", l.cidrs),
			&csv1.ClusterUpdate{ApiAuthorizedCidrs: &csv1.StringList{Values: csCIDRs(l.cidrs)}}})
	}

	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			path := clusterPath("rg", fmt.Sprintf("p%d", i))
			created := e.do("PUT", withVersion(path, newestClusterVersion), mustJSON(configBody()), nil)
			if created.code != 201 {
				t.Fatalf("PUT of a valid cluster = %d %s", created.code, created.body)
			}
			e.finish(opIDFrom(t, created.header.Get("Azure-AsyncOperation")), "Succeeded", nil)
			rd, _ := e.resource(path)
			held, err := e.clusters.GetCluster(context.Background(), &csv1.GetClusterRequest{Id: rd.InternalID})
			if err != nil {
				t.Fatal(err)
			}

			resp := e.do(c.method, withVersion(path, newestClusterVersion), mustJSON(c.body), nil)
			var frontend []string
			switch resp.code {
			case 200, 201, 202:
			case 400:
				frontend = refusalTargets(t, resp)
			default:
				t.Fatalf("PATCH = %d %s", resp.code, resp.body)
			}

			var v model.Violations
			model.ValidateConfigUpdate(&v, c.update)
			var want *csv1.ClusterSpec
			if len(v) == 0 {
				want = model.ApplyConfigUpdate(&v, held.GetSpec(), c.update)
			}
			requireAgreement(t, resp, frontend, request, v)
			if frontend == nil {
				// The accepted update reached Cluster Service as the rule was given it.
				after, err := e.clusters.GetCluster(context.Background(), &csv1.GetClusterRequest{Id: rd.InternalID})
				if err != nil {
					t.Fatal(err)
				}
				if !proto.Equal(after.GetSpec(), want) {
					t.Fatalf("Cluster Service holds %v; the update applied gives %v", after.GetSpec(), want)
				}
			}
		})
	}
}
