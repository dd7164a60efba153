package frontend

import (
	"fmt"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"

	csv1 "github.com/openhcp/openhcp/cluster-service/api/v1"
	"github.com/openhcp/openhcp/frontend/pkg/api"
)

// updateTestCluster is a cluster with every property an update may change set: the seven
// control plane operators' identities with their client IDs, a customer-managed key.
func updateTestCluster() *api.Cluster {
	mi := "/subscriptions/" + testSub + "/resourceGroups/rg/providers/Microsoft.ManagedIdentity/userAssignedIdentities/"
	c := &api.Cluster{Identity: &api.ManagedServiceIdentity{Type: "UserAssigned", UserAssignedIdentities: map[string]*api.UserAssignedIdentity{}}}
	c.OperatorIdentities.ControlPlaneOperators = map[string]string{}
	for i, op := range controlPlaneOperators {
		c.OperatorIdentities.ControlPlaneOperators[op] = mi + op
		c.Identity.UserAssignedIdentities[mi+op] = &api.UserAssignedIdentity{ClientID: fmt.Sprintf("00000000-0000-4000-8000-%012d", i)}
	}
	c.Spec = api.SpecProperties(&csv1.ClusterSpec{VersionId: "4.19.7", ChannelGroup: api.ChannelGroupStable,
		Autoscaling: &csv1.ClusterAutoscaling{MaxNodesTotal: proto.Int32(10)}, NodeDrainTimeoutMinutes: 30, ApiAuthorizedCidrs: []string{"10.0.0.0/8"},
		ImageDigestMirrors: []*csv1.ImageDigestMirror{{Source: "quay.io/a", Mirrors: []string{"m.example.com/a"}}}})
	c.Etcd = api.EtcdDataEncryptionProfile{KeyManagementMode: api.KeyManagementCustomer,
		CustomerManaged: &api.CustomerManagedEncryptionProfile{EncryptionType: api.EncryptionTypeKMS,
			KMS: &api.KMSKey{VaultName: "v", Name: "k", Version: "v1", Visibility: api.VisibilityPublic}}}
	return c
}

// TestClusterUpdateOfAChange: the ClusterUpdate a PUT or PATCH sends for a change of the model,
// in the api-version of the request (what the version does not let a write update is not sent).
func TestClusterUpdateOfAChange(t *testing.T) {
	const latest, oldest = "2026-06-30-preview", "2024-06-10-preview"
	wi := workloadIdentities(updateTestCluster())
	for _, tc := range []struct {
		name    string
		version string
		change  func(*api.Cluster)
		want    *csv1.ClusterUpdate // nil: no update
	}{
		{"nothing", latest, func(*api.Cluster) {}, nil},
		{"version", latest, func(c *api.Cluster) { c.Spec.VersionId = "4.20" }, &csv1.ClusterUpdate{VersionId: "4.20"}},
		{"version_not_updatable_in_2024", oldest, func(c *api.Cluster) { c.Spec.VersionId = "4.20" }, nil},
		{"channel_group", latest, func(c *api.Cluster) { c.Spec.ChannelGroup = "fast" }, &csv1.ClusterUpdate{ChannelGroup: "fast"}},
		{"autoscaling_removed_sends_it_empty", latest, func(c *api.Cluster) { c.Spec.Autoscaling = &csv1.ClusterAutoscaling{} },
			&csv1.ClusterUpdate{Autoscaling: &csv1.ClusterAutoscaling{}}},
		{"autoscaling_zero_is_a_value", latest, func(c *api.Cluster) { c.Spec.Autoscaling.PodPriorityThreshold = proto.Int32(0) },
			&csv1.ClusterUpdate{Autoscaling: &csv1.ClusterAutoscaling{MaxNodesTotal: proto.Int32(10), PodPriorityThreshold: proto.Int32(0)}}},
		{"drain_timeout_to_zero", latest, func(c *api.Cluster) { c.Spec.NodeDrainTimeoutMinutes = 0 },
			&csv1.ClusterUpdate{NodeDrainTimeoutMinutes: proto.Int32(0)}},
		{"drain_timeout_in_2024", oldest, func(c *api.Cluster) { c.Spec.NodeDrainTimeoutMinutes = 60 },
			&csv1.ClusterUpdate{NodeDrainTimeoutMinutes: proto.Int32(60)}},
		{"an_address_is_sent_as_its_block", latest, func(c *api.Cluster) { c.Spec.ApiAuthorizedCidrs = []string{"10.0.0.0/8", "1.2.3.4"} },
			&csv1.ClusterUpdate{ApiAuthorizedCidrs: &csv1.StringList{Values: []string{"10.0.0.0/8", "1.2.3.4/32"}}}},
		{"an_address_written_as_its_block_is_a_change", latest, func(c *api.Cluster) { c.Spec.ApiAuthorizedCidrs = []string{"1.2.3.4/32"} },
			&csv1.ClusterUpdate{ApiAuthorizedCidrs: &csv1.StringList{Values: []string{"1.2.3.4/32"}}}},
		{"cidrs_removed_allow_any", latest, func(c *api.Cluster) { c.Spec.ApiAuthorizedCidrs = nil },
			&csv1.ClusterUpdate{ApiAuthorizedCidrs: &csv1.StringList{}}},
		{"mirrors_removed", latest, func(c *api.Cluster) { c.Spec.ImageDigestMirrors = nil },
			&csv1.ClusterUpdate{ImageDigestMirrors: &csv1.ImageDigestMirrors{}}},
		{"mirrors_not_updatable_in_2024", oldest, func(c *api.Cluster) { c.Spec.ImageDigestMirrors = nil }, nil},
		{"key_version", latest, func(c *api.Cluster) { c.Etcd.CustomerManaged.KMS.Version = "v2" },
			&csv1.ClusterUpdate{EtcdEncryptionKeyVersion: "v2"}},
		{"a_data_plane_identity_resends_the_workload_identities", latest, func(c *api.Cluster) {
			c.OperatorIdentities.DataPlaneOperators = map[string]string{"disk-csi-driver": "/x"}
		}, &csv1.ClusterUpdate{WorkloadIdentities: wi}},
		{"a_client_id_changed", oldest, func(c *api.Cluster) {
			for _, v := range c.Identity.UserAssignedIdentities {
				v.ClientID = v.ClientID[:len(v.ClientID)-1] + "9"
			}
		}, &csv1.ClusterUpdate{WorkloadIdentities: &csv1.AzureWorkloadIdentities{ImageRegistry: "00000000-0000-4000-8000-000000000009",
			Ingress: "00000000-0000-4000-8000-000000000009", File: "00000000-0000-4000-8000-000000000009", Disk: "00000000-0000-4000-8000-000000000009",
			NodePoolManagement: "00000000-0000-4000-8000-000000000009", CloudProvider: "00000000-0000-4000-8000-000000000009",
			Network: "00000000-0000-4000-8000-000000000009"}}},
		{"several_at_once", latest, func(c *api.Cluster) {
			c.Spec.VersionId = "4.20"
			c.Spec.NodeDrainTimeoutMinutes = 5
			c.Spec.Autoscaling.MaxNodesTotal = proto.Int32(20)
		}, &csv1.ClusterUpdate{VersionId: "4.20", NodeDrainTimeoutMinutes: proto.Int32(5), Autoscaling: &csv1.ClusterAutoscaling{MaxNodesTotal: proto.Int32(20)}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ver, ok := api.Lookup(tc.version)
			if !ok {
				t.Fatalf("no api-version %s", tc.version)
			}
			stored, next := updateTestCluster(), updateTestCluster()
			tc.change(next)
			if tc.name == "an_address_written_as_its_block_is_a_change" {
				stored.Spec.ApiAuthorizedCidrs = []string{"1.2.3.4"} // stored as the caller wrote it
			}
			got := clusterUpdate(ver, stored, next)
			if (got == nil) != (tc.want == nil) || (got != nil && !proto.Equal(got, tc.want)) {
				t.Fatalf("clusterUpdate = %v, want %v", got, tc.want)
			}
		})
	}
}

// TestChangedFieldsNameTheProperty: a change that no write may make is refused at the property
// it changes, also where the property is taken away (an object left empty is compared by its
// properties, as the stored document showed each object of the cluster even when empty).
func TestChangedFieldsNameTheProperty(t *testing.T) {
	ver, ok := api.Lookup("2026-06-30-preview")
	if !ok {
		t.Fatal("no api-version 2026-06-30-preview")
	}
	for _, tc := range []struct {
		name         string
		stored, next func(*csv1.ClusterSpec)
		wantTargets  string
	}{
		{"prefix_removed", func(s *csv1.ClusterSpec) { s.DnsBaseDomainPrefix = "abc" }, func(*csv1.ClusterSpec) {}, "properties.dns.baseDomainPrefix"},
		{"prefix_added", func(*csv1.ClusterSpec) {}, func(s *csv1.ClusterSpec) { s.DnsBaseDomainPrefix = "abc" }, "properties.dns.baseDomainPrefix"},
		{"image_registry_removed", func(s *csv1.ClusterSpec) { s.ImageRegistryState = api.RegistryEnabled }, func(*csv1.ClusterSpec) {},
			"properties.clusterImageRegistry.state"},
		{"network_removed", func(s *csv1.ClusterSpec) { s.Network = &csv1.NetworkSpec{HostPrefix: 23} }, func(*csv1.ClusterSpec) {},
			"properties.network.hostPrefix"},
		{"ingress_removed", func(s *csv1.ClusterSpec) { s.IngressVisibility = api.IngressPrivate }, func(*csv1.ClusterSpec) {},
			"properties.ingress.type"},
		// Through Cluster Service's update: no refusal.
		{"channel_group_removed", func(s *csv1.ClusterSpec) { s.ChannelGroup = "stable" }, func(*csv1.ClusterSpec) {}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			stored, next := updateTestCluster(), updateTestCluster()
			stored.Spec, next.Spec = api.SpecProperties(&csv1.ClusterSpec{}), api.SpecProperties(&csv1.ClusterSpec{})
			tc.stored(stored.Spec)
			tc.next(next.Spec)
			var targets []string
			for _, e := range changedFields(ver, stored, next) {
				targets = append(targets, e.Target)
			}
			if got := strings.Join(targets, ","); got != tc.wantTargets {
				t.Fatalf("refused at %q, want %q", got, tc.wantTargets)
			}
		})
	}
}
