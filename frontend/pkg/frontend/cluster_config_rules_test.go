//go:build !fuzzlean

// Left out of the fuzzing build, as rules_agreement_test.go: it links Cluster Service's server.

package frontend

import (
	"fmt"
	"strings"
	"testing"

	csv1 "github.com/openhcp/openhcp/cluster-service/api/v1"
	"github.com/openhcp/openhcp/frontend/pkg/api"
)

// newestClusterVersion is the newest api-version; it has every cluster property these tests
// drive (imageDigestMirrors and vnetIntegrationSubnetId came in 2025-12-23-preview).
const newestClusterVersion = "2026-09-01-preview"

// configCases are the values around every bound of every cluster property with a rule in the
// frontend's checks or in Cluster Service's model (ValidateConfig, ValidateClusterSpec), each
// with the outcome the specification or the documented rule (docs/api.md, docs/cluster-service.md)
// gives. A case without spec is the frontend's alone (ruleCase): an explicit empty value
// (Cluster Service's proto3 strings have no presence, so "" is its absent field) or a field the
// api-version requires.
func configCases() []ruleCase[*csv1.ClusterSpec] {
	var cases []ruleCase[*csv1.ClusterSpec]
	add := func(c ruleCase[*csv1.ClusterSpec]) { cases = append(cases, c) }
	i32 := func(n int32) *int32 { return &n }
	subnet := func(name string) string {
		return "/subscriptions/" + testSub + "/resourceGroups/rg/providers/Microsoft.Network/virtualNetworks/vnet/subnets/" + name
	}

	add(ruleCase[*csv1.ClusterSpec]{name: "base", body: func(map[string]any) {}, spec: func(*csv1.ClusterSpec) {}, want: accepted()})

	// properties.dns.baseDomainPrefix: 1-15 of [a-z0-9-], a letter first, no '-' last.
	for _, p := range []struct {
		prefix string
		ok     bool
	}{
		{"a", true}, {"abcdefghijklmno", true}, {"abcdefghijklmnop", false}, {"1abc", false}, {"abc-", false}, {"Abc", false},
		{"a-b", true}, {"a.b", false}, {"a_b", false}, {"-ab", false}, {"a1", true},
	} {
		add(ruleCase[*csv1.ClusterSpec]{name: "baseDomainPrefix=" + p.prefix,
			body: func(b map[string]any) { set(b, "properties.dns.baseDomainPrefix", p.prefix) },
			spec: func(s *csv1.ClusterSpec) { s.DnsBaseDomainPrefix = p.prefix },
			want: refusedUnless(p.ok, "properties.dns.baseDomainPrefix")})
	}
	add(ruleCase[*csv1.ClusterSpec]{name: "baseDomainPrefix=empty",
		body: func(b map[string]any) { set(b, "properties.dns.baseDomainPrefix", "") },
		want: refused("properties.dns.baseDomainPrefix")})

	// properties.api.authorizedCidrs: at most 500 IPv4 blocks in dotted form (or single
	// addresses, sent as /32), no duplicates (docs/api.md, docs/cluster-service.md); a violation
	// names the entry.
	const cidrsAt = "properties.api.authorizedCidrs"
	for _, l := range []struct {
		name  string
		cidrs []string
		want  outcome
	}{
		{"none", []string{}, accepted()},
		{"one", []string{"192.0.2.0/24"}, accepted()},
		{"500", authorizedCIDRs(500), accepted()},
		{"501", authorizedCIDRs(501), refused(cidrsAt)},
		{"duplicate", []string{"192.0.2.0/24", "198.51.100.0/24", "192.0.2.0/24"}, refused(cidrsAt + "[2]")},
		{"address_and_its_32", []string{"192.0.2.1", "192.0.2.1/32"}, refused(cidrsAt + "[1]")},
		{"host_bits_set", []string{"192.0.2.1/24"}, accepted()}, // a block as written: HyperShift's CIDRBlock pattern takes it
		{"single_address", []string{"192.0.2.1"}, accepted()},
		{"ipv6", []string{"2001:db8::/32"}, refused(cidrsAt + "[0]")},
		{"ipv6_address", []string{"2001:db8::1"}, refused(cidrsAt + "[0]")},
		{"ipv4_mapped_ipv6", []string{"::ffff:192.0.2.0/120"}, refused(cidrsAt + "[0]")},
		{"not_a_cidr", []string{"not-a-cidr"}, refused(cidrsAt + "[0]")},
		{"prefix_33", []string{"192.0.2.0/33"}, refused(cidrsAt + "[0]")},
		{"empty_entry", []string{""}, refused(cidrsAt + "[0]")},
		{"leading_zeros", []string{"192.0.02.0/24"}, refused(cidrsAt + "[0]")},
		{"prefix_length_leading_zero", []string{"192.0.2.0/024"}, refused(cidrsAt + "[0]")},
	} {
		add(ruleCase[*csv1.ClusterSpec]{name: "authorizedCidrs=" + l.name,
			body: func(b map[string]any) { set(b, "properties.api.authorizedCidrs", l.cidrs) },
			spec: func(s *csv1.ClusterSpec) { s.ApiAuthorizedCidrs = csCIDRs(l.cidrs) },
			want: l.want})
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
	const idm = "properties.imageDigestMirrors"
	for _, l := range []struct {
		name string
		list []map[string]any
		want outcome
	}{
		{"none", []map[string]any{}, accepted()},
		{"240", sources(240), accepted()},
		{"241", sources(241), refused(idm)},
		{"wildcard", []map[string]any{mirror("*.example.com", "mirror.example.com")}, accepted()},
		{"wildcard_with_path", []map[string]any{mirror("*.example.com/ns", "mirror.example.com")}, refused(idm + "[0].source")},
		{"empty_mirrors", []map[string]any{mirror("quay.io/openshift", []string{}...)}, refused(idm + "[0].mirrors")},
		{"no_mirrors", []map[string]any{mirror("quay.io/openshift")}, refused(idm + "[0].mirrors")},
		{"255_mirrors", []map[string]any{mirror("quay.io/openshift", mirrorsOf(255)...)}, accepted()},
		{"256_mirrors", []map[string]any{mirror("quay.io/openshift", mirrorsOf(256)...)}, refused(idm + "[0].mirrors")},
		{"duplicate_source", []map[string]any{mirror("quay.io/openshift", "a.example.com"), mirror("quay.io/openshift", "b.example.com")}, refused(idm + "[1].source")},
		{"duplicate_mirror", []map[string]any{mirror("quay.io/openshift", "a.example.com", "a.example.com")}, refused(idm + "[0].mirrors[1]")},
		{"source_255", []map[string]any{mirror(long("q.io/", 255), "a.example.com")}, accepted()},
		{"source_256", []map[string]any{mirror(long("q.io/", 256), "a.example.com")}, refused(idm + "[0].source")},
		{"wildcard_source_255", []map[string]any{mirror(long("*.q", 255), "a.example.com")}, accepted()},
		{"wildcard_source_256", []map[string]any{mirror(long("*.q", 256), "a.example.com")}, refused(idm + "[0].source")},
		{"mirror_255", []map[string]any{mirror("quay.io/openshift", long("m.io/", 255))}, accepted()},
		{"mirror_256", []map[string]any{mirror("quay.io/openshift", long("m.io/", 256))}, refused(idm + "[0].mirrors[0]")},
		{"empty_source", []map[string]any{mirror("", "a.example.com")}, refused(idm + "[0].source")},
		{"source_with_tag", []map[string]any{mirror("quay.io/openshift:4.19", "a.example.com")}, refused(idm + "[0].source")},
		{"source_with_port", []map[string]any{mirror("quay.io:5000/openshift", "a.example.com")}, accepted()},
		{"wildcard_mirror", []map[string]any{mirror("quay.io/openshift", "*.example.com")}, refused(idm + "[0].mirrors[0]")},
		{"uppercase_path", []map[string]any{mirror("quay.io/OpenShift", "a.example.com")}, refused(idm + "[0].source")},
	} {
		add(ruleCase[*csv1.ClusterSpec]{name: "imageDigestMirrors=" + l.name,
			body: func(b map[string]any) { set(b, "properties.imageDigestMirrors", l.list) },
			spec: func(s *csv1.ClusterSpec) {
				s.ImageDigestMirrors = nil
				for _, m := range l.list {
					ms, _ := m["mirrors"].([]string)
					s.ImageDigestMirrors = append(s.ImageDigestMirrors, &csv1.ImageDigestMirror{Source: m["source"].(string), Mirrors: ms})
				}
			},
			want: l.want})
	}

	// properties.autoscaling.*: the specification's minimum 0 (podPriorityThreshold: any int32).
	for _, f := range []struct {
		json     string
		set      func(a *csv1.ClusterAutoscaling, n *int32)
		negative bool
	}{
		{"maxNodesTotal", func(a *csv1.ClusterAutoscaling, n *int32) { a.MaxNodesTotal = n }, false},
		{"maxPodGracePeriodSeconds", func(a *csv1.ClusterAutoscaling, n *int32) { a.MaxPodGracePeriodSeconds = n }, false},
		{"maxNodeProvisionTimeSeconds", func(a *csv1.ClusterAutoscaling, n *int32) { a.MaxNodeProvisionTimeSeconds = n }, false},
		{"podPriorityThreshold", func(a *csv1.ClusterAutoscaling, n *int32) { a.PodPriorityThreshold = n }, true},
	} {
		for _, n := range []int32{-2147483648, -1, 0, 1, 2147483647} {
			add(ruleCase[*csv1.ClusterSpec]{name: fmt.Sprintf("autoscaling.%s=%d", f.json, n),
				body: func(b map[string]any) { set(b, "properties.autoscaling."+f.json, n) },
				spec: func(s *csv1.ClusterSpec) { s.Autoscaling = &csv1.ClusterAutoscaling{}; f.set(s.Autoscaling, i32(n)) },
				want: refusedUnless(n >= 0 || f.negative, "properties.autoscaling."+f.json)})
		}
	}

	// properties.nodeDrainTimeoutMinutes: 0 to 10080.
	for _, n := range []int32{-1, 0, 1, 10080, 10081, 2147483647} {
		add(ruleCase[*csv1.ClusterSpec]{name: fmt.Sprintf("nodeDrainTimeoutMinutes=%d", n),
			body: func(b map[string]any) { set(b, "properties.nodeDrainTimeoutMinutes", n) },
			spec: func(s *csv1.ClusterSpec) { s.NodeDrainTimeoutMinutes = n },
			want: refusedUnless(n >= 0 && n <= 10080, "properties.nodeDrainTimeoutMinutes")})
	}

	// properties.platform.vnetIntegrationSubnetId: a subnet ID (Azure's names: a subnet ends with
	// a letter, digit or '_', a virtual network has 2-64 characters), not the cluster's subnet
	// (ARM IDs are case-insensitive).
	for _, id := range []struct {
		name, id string
		ok       bool
	}{
		{"other_subnet", subnet("other"), true},
		{"the_cluster_subnet", subnet("workers"), false},
		{"the_cluster_subnet_other_case", strings.ToUpper(subnet("workers")), false},
		{"not_a_resource_id", "integration", false},
		{"a_vnet", "/subscriptions/" + testSub + "/resourceGroups/rg/providers/Microsoft.Network/virtualNetworks/vnet", false},
		{"an_nsg", "/subscriptions/" + testSub + "/resourceGroups/rg/providers/Microsoft.Network/networkSecurityGroups/nsg", false},
		{"subnet_name_ends_with_dash", subnet("integration-"), false},
		{"subnet_name_ends_with_dot", subnet("integration."), false},
		{"subscription_not_a_uuid", "/subscriptions/sub/resourceGroups/rg/providers/Microsoft.Network/virtualNetworks/vnet/subnets/integration", false},
		{"one_character_vnet", "/subscriptions/" + testSub + "/resourceGroups/rg/providers/Microsoft.Network/virtualNetworks/v/subnets/integration", false},
		{"trailing_slash", subnet("integration") + "/", false},
	} {
		add(ruleCase[*csv1.ClusterSpec]{name: "vnetIntegrationSubnetId=" + id.name,
			body: func(b map[string]any) { set(b, "properties.platform.vnetIntegrationSubnetId", id.id) },
			spec: func(s *csv1.ClusterSpec) { s.Azure.VnetIntegrationSubnetId = id.id },
			want: refusedUnless(id.ok, "properties.platform.vnetIntegrationSubnetId")})
	}
	add(ruleCase[*csv1.ClusterSpec]{name: "vnetIntegrationSubnetId=empty",
		body: func(b map[string]any) { set(b, "properties.platform.vnetIntegrationSubnetId", "") },
		want: refused("properties.platform.vnetIntegrationSubnetId")})
	add(ruleCase[*csv1.ClusterSpec]{name: "vnetIntegrationSubnetId=absent",
		body: func(b map[string]any) {
			delete(b["properties"].(map[string]any)["platform"].(map[string]any), "vnetIntegrationSubnetId")
		},
		want: refused("properties.platform.vnetIntegrationSubnetId")})

	// The cluster's own subnet and network security group: resource IDs as HyperShift takes them
	// (Azure's names, as above; a resource group does not end with '.'); none of these is one.
	for _, id := range []struct{ name, id string }{
		{"name_ends_with_dash", subnet("workers-")},
		{"one_character_vnet", "/subscriptions/" + testSub + "/resourceGroups/rg/providers/Microsoft.Network/virtualNetworks/v/subnets/workers"},
		{"subscription_not_a_uuid", "/subscriptions/sub/resourceGroups/rg/providers/Microsoft.Network/virtualNetworks/vnet/subnets/workers"},
	} {
		add(ruleCase[*csv1.ClusterSpec]{name: "subnetId=" + id.name,
			body: func(b map[string]any) { set(b, "properties.platform.subnetId", id.id) },
			spec: func(s *csv1.ClusterSpec) { s.Azure.SubnetId = id.id },
			want: refused("properties.platform.subnetId")})
	}
	for _, id := range []struct{ name, id string }{
		{"resource_group_ends_with_dot", "/subscriptions/" + testSub + "/resourceGroups/rg./providers/Microsoft.Network/networkSecurityGroups/nsg"},
		{"subscription_not_a_uuid", "/subscriptions/sub/resourceGroups/rg/providers/Microsoft.Network/networkSecurityGroups/nsg"},
	} {
		add(ruleCase[*csv1.ClusterSpec]{name: "networkSecurityGroupId=" + id.name,
			body: func(b map[string]any) { set(b, "properties.platform.networkSecurityGroupId", id.id) },
			spec: func(s *csv1.ClusterSpec) { s.Azure.NetworkSecurityGroupId = id.id },
			want: refused("properties.platform.networkSecurityGroupId")})
	}

	// properties.etcd.dataEncryption.customerManaged.kms: the key's parts, which Cluster Service
	// holds as one Key Vault key URL (api.EtcdKeyID), and the key vault's visibility.
	// A Key Vault's name: 3-24 letters, digits and '-', a letter first; a key's name and version
	// are one segment of the key's URL each; the visibility is the specification's enum.
	const kms = "properties.etcd.dataEncryption.customerManaged.kms"
	for _, k := range []struct {
		name, vault, key, version, visibility string
		want                                  outcome
	}{
		{"valid", "vault", "key", "v1", "Private", accepted()},
		{"public", "vault", "key", "v1", "Public", accepted()},
		{"key_name_with_slash", "vault", "a/b", "v1", "Private", refused(kms)},
		{"version_with_slash", "vault", "key", "v1/v2", "Private", refused(kms)},
		{"vault_with_slash", "va/ult", "key", "v1", "Private", refused(kms)},
		{"vault_with_dot", "va.ult", "key", "v1", "Private", refused(kms)},
		{"vault_with_vault_suffix", "abc.vault", "key", "v1", "Private", refused(kms)},
		{"vault_with_port", "kv1.vault.azure.net:8443/x", "key", "v1", "Private", refused(kms)},
		{"vault_with_space", "va ult", "key", "v1", "Private", refused(kms)},
		{"vault_of_2", "kv", "key", "v1", "Private", refused(kms)},
		{"vault_of_3", "kv1", "key", "v1", "Private", accepted()},
		{"vault_of_24", "abcdefghijklmnopqrstuvwx", "key", "v1", "Private", accepted()},
		{"vault_of_25", "abcdefghijklmnopqrstuvwxy", "key", "v1", "Private", refused(kms)},
		{"vault_digit_first", "1vault", "key", "v1", "Private", refused(kms)},
		{"visibility_lowercase", "vault", "key", "v1", "private", refused(kms + ".visibility")},
	} {
		add(ruleCase[*csv1.ClusterSpec]{name: "kms=" + k.name,
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
			},
			want: k.want})
	}

	// The enums Cluster Service checks too, as the specification spells them.
	for _, e := range []struct {
		path, value string
		spec        func(s *csv1.ClusterSpec, v string)
		ok          bool
	}{
		{"properties.api.visibility", "Private", func(s *csv1.ClusterSpec, v string) { s.ApiVisibility = v }, true},
		{"properties.api.visibility", "private", func(s *csv1.ClusterSpec, v string) { s.ApiVisibility = v }, false},
		{"properties.ingress.type", "Private", func(s *csv1.ClusterSpec, v string) { s.IngressVisibility = v }, true},
		{"properties.ingress.type", "Disabled", func(s *csv1.ClusterSpec, v string) { s.IngressVisibility = v }, true},
		{"properties.ingress.type", "None", func(s *csv1.ClusterSpec, v string) { s.IngressVisibility = v }, false},
		{"properties.cryptoRestrictions", "FIPS", func(s *csv1.ClusterSpec, v string) { s.CryptoRestrictions = v }, true},
		{"properties.cryptoRestrictions", "fips", func(s *csv1.ClusterSpec, v string) { s.CryptoRestrictions = v }, false},
		{"properties.clusterImageRegistry.state", "Disabled", func(s *csv1.ClusterSpec, v string) { s.ImageRegistryState = v }, true},
		{"properties.clusterImageRegistry.state", "Removed", func(s *csv1.ClusterSpec, v string) { s.ImageRegistryState = v }, false},
		{"properties.platform.outboundType", "UserDefinedRouting", func(s *csv1.ClusterSpec, v string) { s.Azure.OutboundType = v }, false},
	} {
		add(ruleCase[*csv1.ClusterSpec]{name: e.path[len("properties."):] + "=" + e.value,
			body: func(b map[string]any) { set(b, e.path, e.value) },
			spec: func(s *csv1.ClusterSpec) { e.spec(s, e.value) },
			want: refusedUnless(e.ok, e.path)})
	}
	return cases
}

// TestClusterConfigRulesAgree: for every cluster property with a rule in the frontend or in
// Cluster Service's model, values around each bound and hostile shapes (configCases), the
// frontend's answer to a cluster PUT through the newest api-version (a real Cluster Service
// behind it), Cluster Service's own rule (model.DefaultCluster, then model.ValidateClusterSpec,
// as its CreateCluster) on the spec the frontend sends, and each case's specified outcome agree.
func TestClusterConfigRulesAgree(t *testing.T) {
	e := newCSEnv(t, realClusters(true))
	_, held := e.heldCluster(t, clusterPath("rg", "base"), newestClusterVersion, configBody())
	runRuleCases(t, e, clusterCreates(held.GetSpec(), newestClusterVersion, configBody), configCases())
}

// authorizedCIDRs are n distinct IPv4 blocks.
func authorizedCIDRs(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("10.%d.%d.0/24", i/256, i%256)
	}
	return out
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
// a real Cluster Service behind it, Cluster Service's rule for an update
// (model.ValidateConfigUpdate, then model.ApplyConfigUpdate on the cluster's spec, as its
// UpdateCluster) on the update the frontend sends, and the rules' outcome (as on a create)
// agree; an accepted update reaches Cluster Service as the rule applies it.
func TestClusterConfigUpdateRulesAgree(t *testing.T) {
	e := newCSEnv(t, realClusters(true))
	var patches []ruleCase[*csv1.ClusterUpdate]
	for _, n := range []int32{-1, 1, 10080, 10081, 2147483647} {
		patches = append(patches, ruleCase[*csv1.ClusterUpdate]{name: fmt.Sprintf("nodeDrainTimeoutMinutes=%d", n),
			body: func(b map[string]any) { set(b, "properties.nodeDrainTimeoutMinutes", n) },
			spec: func(u *csv1.ClusterUpdate) { u.NodeDrainTimeoutMinutes = &n },
			want: refusedUnless(n >= 0 && n <= 10080, "properties.nodeDrainTimeoutMinutes")})
	}
	const cidrsAt = "properties.api.authorizedCidrs"
	var puts []ruleCase[*csv1.ClusterUpdate]
	for _, l := range []struct {
		name  string
		cidrs []string
		want  outcome
	}{
		{"one", []string{"192.0.2.0/24"}, accepted()},
		{"500", authorizedCIDRs(500), accepted()},
		{"501", authorizedCIDRs(501), refused(cidrsAt)},
		{"duplicate", []string{"192.0.2.0/24", "192.0.2.0/24"}, refused(cidrsAt + "[1]")},
		{"address_and_its_32", []string{"192.0.2.1", "192.0.2.1/32"}, refused(cidrsAt + "[1]")},
		{"single_address", []string{"192.0.2.1"}, accepted()},
		{"ipv6", []string{"2001:db8::/32"}, refused(cidrsAt + "[0]")},
		{"not_a_cidr", []string{"not-a-cidr"}, refused(cidrsAt + "[0]")},
		{"empty_entry", []string{""}, refused(cidrsAt + "[0]")},
	} {
		puts = append(puts, ruleCase[*csv1.ClusterUpdate]{name: "authorizedCidrs=" + l.name,
			body: func(b map[string]any) { set(b, "properties.api.authorizedCidrs", l.cidrs) },
			spec: func(u *csv1.ClusterUpdate) { u.ApiAuthorizedCidrs = &csv1.StringList{Values: csCIDRs(l.cidrs)} },
			want: l.want})
	}
	runRuleCases(t, e, clusterUpdates(e, "PATCH", newestClusterVersion, func() map[string]any { return map[string]any{"properties": map[string]any{}} }), patches)
	runRuleCases(t, e, clusterUpdates(e, "PUT", newestClusterVersion, configBody), puts)
}
