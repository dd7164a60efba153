package server

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"k8s.io/utils/ptr"

	csv1 "github.com/openhcp/openhcp/cluster-service/api/v1"
	"github.com/openhcp/openhcp/cluster-service/pkg/versions"
)

const otherSubnet = "/subscriptions/00000000-0000-0000-0000-000000000001/resourceGroups/rg/providers/Microsoft.Network/virtualNetworks/vnet/subnets/integration"

func TestValidateCreateConfiguration(t *testing.T) {
	catalogue, err := versions.Default()
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name  string
		edit  func(s *csv1.ClusterSpec)
		field string // "" when valid
	}{
		{"full_configuration_is_valid", func(s *csv1.ClusterSpec) {
			s.Autoscaling = &csv1.ClusterAutoscaling{MaxNodesTotal: ptr.To[int32](100), PodPriorityThreshold: ptr.To[int32](-10)}
			s.NodeDrainTimeoutMinutes = 10080
			s.ApiAuthorizedCidrs = []string{"192.0.2.0/24", "198.51.100.7/32"}
			s.ImageDigestMirrors = []*csv1.ImageDigestMirror{{Source: "quay.io/openshift-release-dev/ocp-release", Mirrors: []string{"mirror.example.com:5000/ocp"}},
				{Source: "*.redhat.io", Mirrors: []string{"mirror.example.com/redhat"}}}
			s.IngressVisibility, s.CryptoRestrictions, s.DnsBaseDomainPrefix = "Private", "FIPS", "shop-1"
			s.EtcdEncryptionKeyId, s.EtcdEncryptionKeyVaultVisibility = "https://kv1.vault.azure.net/keys/etcd/0123abcd", "Private"
			s.Azure.VnetIntegrationSubnetId = otherSubnet
		}, ""},
		{"negative_max_nodes_total", func(s *csv1.ClusterSpec) {
			s.Autoscaling = &csv1.ClusterAutoscaling{MaxNodesTotal: ptr.To[int32](-1)}
		}, "cluster.spec.autoscaling.max_nodes_total"},
		{"negative_grace_period", func(s *csv1.ClusterSpec) {
			s.Autoscaling = &csv1.ClusterAutoscaling{MaxPodGracePeriodSeconds: ptr.To[int32](-1)}
		}, "cluster.spec.autoscaling.max_pod_grace_period_seconds"},
		{"drain_timeout_over_a_week", func(s *csv1.ClusterSpec) { s.NodeDrainTimeoutMinutes = 10081 }, "cluster.spec.node_drain_timeout_minutes"},
		{"ipv6_authorized_cidr", func(s *csv1.ClusterSpec) { s.ApiAuthorizedCidrs = []string{"192.0.2.0/24", "2001:db8::/32"} }, "cluster.spec.api_authorized_cidrs[1]"},
		{"bare_ip_is_not_a_cidr", func(s *csv1.ClusterSpec) { s.ApiAuthorizedCidrs = []string{"192.0.2.1"} }, "cluster.spec.api_authorized_cidrs[0]"},
		{"duplicate_authorized_cidr", func(s *csv1.ClusterSpec) { s.ApiAuthorizedCidrs = []string{"192.0.2.0/24", "192.0.2.0/24"} }, "cluster.spec.api_authorized_cidrs[1]"},
		{"too_many_authorized_cidrs", func(s *csv1.ClusterSpec) { s.ApiAuthorizedCidrs = make([]string, 501) }, "cluster.spec.api_authorized_cidrs"},
		{"mirror_source_with_scheme", func(s *csv1.ClusterSpec) {
			s.ImageDigestMirrors = []*csv1.ImageDigestMirror{{Source: "https://quay.io", Mirrors: []string{"m.example.com"}}}
		}, "cluster.spec.image_digest_mirrors[0].source"},
		{"mirror_without_mirrors", func(s *csv1.ClusterSpec) {
			s.ImageDigestMirrors = []*csv1.ImageDigestMirror{{Source: "quay.io"}}
		}, "cluster.spec.image_digest_mirrors[0].mirrors"},
		{"wildcard_mirror_is_refused", func(s *csv1.ClusterSpec) {
			s.ImageDigestMirrors = []*csv1.ImageDigestMirror{{Source: "quay.io", Mirrors: []string{"*.example.com"}}}
		}, "cluster.spec.image_digest_mirrors[0].mirrors[0]"},
		{"duplicate_mirror_source", func(s *csv1.ClusterSpec) {
			s.ImageDigestMirrors = []*csv1.ImageDigestMirror{{Source: "quay.io", Mirrors: []string{"a.example.com"}}, {Source: "quay.io", Mirrors: []string{"b.example.com"}}}
		}, "cluster.spec.image_digest_mirrors[1].source"},
		{"unknown_ingress_visibility", func(s *csv1.ClusterSpec) { s.IngressVisibility = "Internal" }, "cluster.spec.ingress_visibility"},
		{"unknown_crypto_restrictions", func(s *csv1.ClusterSpec) { s.CryptoRestrictions = "FIPS140" }, "cluster.spec.crypto_restrictions"},
		{"base_domain_prefix_too_long", func(s *csv1.ClusterSpec) { s.DnsBaseDomainPrefix = "abcdefghijklmnop" }, "cluster.spec.dns_base_domain_prefix"},
		{"base_domain_prefix_starting_with_digit", func(s *csv1.ClusterSpec) { s.DnsBaseDomainPrefix = "1shop" }, "cluster.spec.dns_base_domain_prefix"},
		{"key_vault_visibility_without_customer_key", func(s *csv1.ClusterSpec) { s.EtcdEncryptionKeyVaultVisibility = "Private" }, "cluster.spec.etcd_encryption_key_vault_visibility"},
		{"backup_key_is_not_for_callers", func(s *csv1.ClusterSpec) {
			s.EtcdEncryptionKeyId, s.EtcdEncryptionBackupKeyId = "https://kv1.vault.azure.net/keys/etcd/2", "https://kv1.vault.azure.net/keys/etcd/1"
		}, "cluster.spec.etcd_encryption_backup_key_id"},
		{"vnet_integration_subnet_is_not_a_subnet", func(s *csv1.ClusterSpec) { s.Azure.VnetIntegrationSubnetId = "subnet-1" }, "cluster.spec.azure.vnet_integration_subnet_id"},
		{"vnet_integration_subnet_is_the_cluster_subnet", func(s *csv1.ClusterSpec) { s.Azure.VnetIntegrationSubnetId = strings.ToUpper(s.Azure.SubnetId) }, "cluster.spec.azure.vnet_integration_subnet_id"},
	}
	for i, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := validCluster(i, "cfg")
			tc.edit(c.Spec)
			spec, err := validateCreate(&csv1.CreateClusterRequest{Cluster: c}, catalogue, time.Now())
			if tc.field == "" {
				if err != nil {
					t.Fatalf("validateCreate = %v", err)
				}
				if spec.GetIngressVisibility() != "Private" || spec.GetCryptoRestrictions() != "FIPS" || len(spec.GetImageDigestMirrors()) != 2 {
					t.Fatalf("spec lost configuration: %v", spec)
				}
				return
			}
			if status.Code(err) != codes.InvalidArgument || !fieldViolations(err)[tc.field] {
				t.Fatalf("validateCreate = %v; want InvalidArgument on %s", err, tc.field)
			}
		})
	}
}

func TestCreateDefaultsConfiguration(t *testing.T) {
	catalogue, err := versions.Default()
	if err != nil {
		t.Fatal(err)
	}
	spec, err := validateCreate(&csv1.CreateClusterRequest{Cluster: validCluster(1, "defaults")}, catalogue, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if spec.GetIngressVisibility() != "Public" || spec.GetCryptoRestrictions() != "None" {
		t.Fatalf("ingress %q crypto %q; want Public and None", spec.GetIngressVisibility(), spec.GetCryptoRestrictions())
	}
}

func TestUpdateClusterConfiguration(t *testing.T) {
	e := start(t)
	ctx := context.Background()
	e.register(t, "mc-1", 50)
	const key = "https://kv1.vault.azure.net/keys/etcd/"
	id := func(n int) string { return fmt.Sprintf("00000000-0000-4000-8000-%012d", n) }
	newIdentities := &csv1.AzureWorkloadIdentities{ImageRegistry: id(11), Ingress: id(12), File: id(13), Disk: id(14),
		NodePoolManagement: id(15), CloudProvider: id(16), Network: id(17)}
	tests := []struct {
		name      string
		customer  bool // a customer-managed etcd key
		ready     bool // the cluster is READY before the update
		update    *csv1.ClusterUpdate
		field     string // InvalidArgument on this field, or "" when accepted
		check     func(t *testing.T, s *csv1.ClusterSpec)
		wantState csv1.ClusterState
	}{
		{name: "autoscaling_replaces_the_spec_and_a_ready_cluster_goes_updating", ready: true,
			update: &csv1.ClusterUpdate{Autoscaling: &csv1.ClusterAutoscaling{MaxNodesTotal: ptr.To[int32](30)}},
			check: func(t *testing.T, s *csv1.ClusterSpec) {
				if s.GetAutoscaling().GetMaxNodesTotal() != 30 || s.GetAutoscaling().MaxPodGracePeriodSeconds != nil {
					t.Fatalf("autoscaling = %v", s.GetAutoscaling())
				}
			}, wantState: csv1.ClusterState_CLUSTER_STATE_UPDATING},
		{name: "drain_timeout_and_cidrs", ready: true,
			update: &csv1.ClusterUpdate{NodeDrainTimeoutMinutes: ptr.To[int32](45), ApiAuthorizedCidrs: &csv1.StringList{Values: []string{"203.0.113.0/24"}}},
			check: func(t *testing.T, s *csv1.ClusterSpec) {
				if s.GetNodeDrainTimeoutMinutes() != 45 || len(s.GetApiAuthorizedCidrs()) != 1 || s.GetApiAuthorizedCidrs()[0] != "203.0.113.0/24" {
					t.Fatalf("spec = %v", s)
				}
			}, wantState: csv1.ClusterState_CLUSTER_STATE_UPDATING},
		{name: "an_empty_list_clears_the_cidrs_and_mirrors",
			update: &csv1.ClusterUpdate{ApiAuthorizedCidrs: &csv1.StringList{}, ImageDigestMirrors: &csv1.ImageDigestMirrors{}},
			check: func(t *testing.T, s *csv1.ClusterSpec) {
				if len(s.GetApiAuthorizedCidrs()) != 0 || len(s.GetImageDigestMirrors()) != 0 {
					t.Fatalf("spec = %v", s)
				}
			}, wantState: csv1.ClusterState_CLUSTER_STATE_PENDING},
		{name: "a_new_key_version_keeps_the_previous_as_backup", customer: true,
			update: &csv1.ClusterUpdate{EtcdEncryptionKeyVersion: "v2"},
			check: func(t *testing.T, s *csv1.ClusterSpec) {
				if s.GetEtcdEncryptionKeyId() != key+"v2" || s.GetEtcdEncryptionBackupKeyId() != key+"v1" {
					t.Fatalf("key %q backup %q", s.GetEtcdEncryptionKeyId(), s.GetEtcdEncryptionBackupKeyId())
				}
			}, wantState: csv1.ClusterState_CLUSTER_STATE_PENDING},
		{name: "the_same_values_change_nothing_and_a_ready_cluster_stays_ready", ready: true,
			update:    &csv1.ClusterUpdate{NodeDrainTimeoutMinutes: ptr.To[int32](0)},
			check:     func(t *testing.T, s *csv1.ClusterSpec) {},
			wantState: csv1.ClusterState_CLUSTER_STATE_READY},
		{name: "workload_identities_replace_the_spec_and_a_ready_cluster_goes_updating", ready: true,
			update: &csv1.ClusterUpdate{WorkloadIdentities: newIdentities},
			check: func(t *testing.T, s *csv1.ClusterSpec) {
				if !proto.Equal(s.GetAzure().GetWorkloadIdentities(), newIdentities) || s.GetAzure().GetSubnetId() == "" {
					t.Fatalf("azure = %v", s.GetAzure())
				}
			}, wantState: csv1.ClusterState_CLUSTER_STATE_UPDATING},
		{name: "an_sre_pause_goes_into_the_spec_and_a_ready_cluster_goes_updating", ready: true,
			update: &csv1.ClusterUpdate{PausedUntil: ptr.To("true")},
			check: func(t *testing.T, s *csv1.ClusterSpec) {
				if s.GetPausedUntil() != "true" {
					t.Fatalf("paused_until = %q", s.GetPausedUntil())
				}
			}, wantState: csv1.ClusterState_CLUSTER_STATE_UPDATING},
		{name: "a_pause_until_a_time", update: &csv1.ClusterUpdate{PausedUntil: ptr.To("2030-01-02T15:04:05Z")},
			check: func(t *testing.T, s *csv1.ClusterSpec) {
				if s.GetPausedUntil() != "2030-01-02T15:04:05Z" {
					t.Fatalf("paused_until = %q", s.GetPausedUntil())
				}
			}, wantState: csv1.ClusterState_CLUSTER_STATE_PENDING},
		{name: "resuming_a_cluster_never_paused_changes_nothing", ready: true, update: &csv1.ClusterUpdate{PausedUntil: ptr.To("")},
			check: func(t *testing.T, s *csv1.ClusterSpec) {}, wantState: csv1.ClusterState_CLUSTER_STATE_READY},
		{name: "bad_pause", update: &csv1.ClusterUpdate{PausedUntil: ptr.To("tomorrow")}, field: "update.paused_until"},
		{name: "workload_identities_must_all_be_uuids", update: &csv1.ClusterUpdate{WorkloadIdentities: &csv1.AzureWorkloadIdentities{ImageRegistry: "nope"}},
			field: "update.workload_identities.network"},
		{name: "key_version_of_a_platform_managed_key", update: &csv1.ClusterUpdate{EtcdEncryptionKeyVersion: "v2"}, field: "update.etcd_encryption_key_version"},
		{name: "bad_key_version", customer: true, update: &csv1.ClusterUpdate{EtcdEncryptionKeyVersion: "v2/../x"}, field: "update.etcd_encryption_key_version"},
		{name: "drain_timeout_out_of_range", update: &csv1.ClusterUpdate{NodeDrainTimeoutMinutes: ptr.To[int32](-1)}, field: "update.node_drain_timeout_minutes"},
		{name: "bad_cidr", update: &csv1.ClusterUpdate{ApiAuthorizedCidrs: &csv1.StringList{Values: []string{"10.0.0.0/33"}}}, field: "update.api_authorized_cidrs.values[0]"},
		{name: "bad_mirror", update: &csv1.ClusterUpdate{ImageDigestMirrors: &csv1.ImageDigestMirrors{Mirrors: []*csv1.ImageDigestMirror{{Source: "quay.io"}}}},
			field: "update.image_digest_mirrors.mirrors[0].mirrors"},
		{name: "negative_autoscaling", update: &csv1.ClusterUpdate{Autoscaling: &csv1.ClusterAutoscaling{MaxNodeProvisionTimeSeconds: ptr.To[int32](-5)}},
			field: "update.autoscaling.max_node_provision_time_seconds"},
		{name: "nothing_to_change", update: &csv1.ClusterUpdate{}, field: "update"},
	}
	for i, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			in := validCluster(200+i, "cfgupd"+string(rune('a'+i)))
			if tc.customer {
				in.Spec.EtcdEncryptionKeyId = key + "v1"
			}
			cl, err := e.clusters.CreateCluster(ctx, &csv1.CreateClusterRequest{Cluster: in})
			if err != nil {
				t.Fatal(err)
			}
			if tc.ready {
				st := proto.Clone(cl.GetStatus()).(*csv1.ClusterStatus)
				st.State = csv1.ClusterState_CLUSTER_STATE_READY
				if _, err := e.st.UpdateStatus(ctx, cl.GetId(), cl.GetRevision(), st); err != nil {
					t.Fatal(err)
				}
			}
			got, err := e.clusters.UpdateCluster(ctx, &csv1.UpdateClusterRequest{Id: cl.GetId(), Update: tc.update})
			if tc.field != "" {
				if status.Code(err) != codes.InvalidArgument || !fieldViolations(err)[tc.field] {
					t.Fatalf("UpdateCluster = %v; want InvalidArgument on %s", err, tc.field)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			tc.check(t, got.GetSpec())
			if got.GetStatus().GetState() != tc.wantState {
				t.Fatalf("state %s; want %s", got.GetStatus().GetState(), tc.wantState)
			}
			stored, err := e.clusters.GetCluster(ctx, &csv1.GetClusterRequest{Id: cl.GetId()})
			if err != nil || !proto.Equal(stored.GetSpec(), got.GetSpec()) {
				t.Fatalf("stored spec %v (err %v) differs from the returned one %v", stored.GetSpec(), err, got.GetSpec())
			}
		})
	}
}
