package frontend

import (
	"fmt"
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
	p := &c.Properties
	p.Platform.OperatorsAuthentication.UserAssignedIdentities.ControlPlaneOperators = map[string]string{}
	for i, op := range controlPlaneOperators {
		p.Platform.OperatorsAuthentication.UserAssignedIdentities.ControlPlaneOperators[op] = mi + op
		c.Identity.UserAssignedIdentities[mi+op] = &api.UserAssignedIdentity{ClientID: fmt.Sprintf("00000000-0000-4000-8000-%012d", i)}
	}
	p.Version = api.VersionProfile{ID: "4.19.7", ChannelGroup: api.ChannelGroupStable}
	p.Autoscaling.MaxNodesTotal = proto.Int32(10)
	p.NodeDrainTimeoutMinutes = 30
	p.API.AuthorizedCIDRs = []string{"10.0.0.0/8"}
	p.ImageDigestMirrors = []api.ImageDigestMirror{{Source: "quay.io/a", Mirrors: []string{"m.example.com/a"}}}
	p.Etcd.DataEncryption = api.EtcdDataEncryptionProfile{KeyManagementMode: api.KeyManagementCustomer,
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
		{"version", latest, func(c *api.Cluster) { c.Properties.Version.ID = "4.20" }, &csv1.ClusterUpdate{VersionId: "4.20"}},
		{"version_not_updatable_in_2024", oldest, func(c *api.Cluster) { c.Properties.Version.ID = "4.20" }, nil},
		{"channel_group", latest, func(c *api.Cluster) { c.Properties.Version.ChannelGroup = "fast" }, &csv1.ClusterUpdate{ChannelGroup: "fast"}},
		{"autoscaling_removed_sends_it_empty", latest, func(c *api.Cluster) { c.Properties.Autoscaling = api.ClusterAutoscalingProfile{} },
			&csv1.ClusterUpdate{Autoscaling: &csv1.ClusterAutoscaling{}}},
		{"autoscaling_zero_is_a_value", latest, func(c *api.Cluster) { c.Properties.Autoscaling.PodPriorityThreshold = proto.Int32(0) },
			&csv1.ClusterUpdate{Autoscaling: &csv1.ClusterAutoscaling{MaxNodesTotal: proto.Int32(10), PodPriorityThreshold: proto.Int32(0)}}},
		{"drain_timeout_to_zero", latest, func(c *api.Cluster) { c.Properties.NodeDrainTimeoutMinutes = 0 },
			&csv1.ClusterUpdate{NodeDrainTimeoutMinutes: proto.Int32(0)}},
		{"drain_timeout_in_2024", oldest, func(c *api.Cluster) { c.Properties.NodeDrainTimeoutMinutes = 60 },
			&csv1.ClusterUpdate{NodeDrainTimeoutMinutes: proto.Int32(60)}},
		{"an_address_is_sent_as_its_block", latest, func(c *api.Cluster) { c.Properties.API.AuthorizedCIDRs = []string{"10.0.0.0/8", "1.2.3.4"} },
			&csv1.ClusterUpdate{ApiAuthorizedCidrs: &csv1.StringList{Values: []string{"10.0.0.0/8", "1.2.3.4/32"}}}},
		{"an_address_written_as_its_block_is_a_change", latest, func(c *api.Cluster) { c.Properties.API.AuthorizedCIDRs = []string{"1.2.3.4/32"} },
			&csv1.ClusterUpdate{ApiAuthorizedCidrs: &csv1.StringList{Values: []string{"1.2.3.4/32"}}}},
		{"cidrs_removed_allow_any", latest, func(c *api.Cluster) { c.Properties.API.AuthorizedCIDRs = nil },
			&csv1.ClusterUpdate{ApiAuthorizedCidrs: &csv1.StringList{}}},
		{"mirrors_removed", latest, func(c *api.Cluster) { c.Properties.ImageDigestMirrors = nil },
			&csv1.ClusterUpdate{ImageDigestMirrors: &csv1.ImageDigestMirrors{}}},
		{"mirrors_not_updatable_in_2024", oldest, func(c *api.Cluster) { c.Properties.ImageDigestMirrors = nil }, nil},
		{"key_version", latest, func(c *api.Cluster) { c.Properties.Etcd.DataEncryption.CustomerManaged.KMS.Version = "v2" },
			&csv1.ClusterUpdate{EtcdEncryptionKeyVersion: "v2"}},
		{"a_data_plane_identity_resends_the_workload_identities", latest, func(c *api.Cluster) {
			c.Properties.Platform.OperatorsAuthentication.UserAssignedIdentities.DataPlaneOperators = map[string]string{"disk-csi-driver": "/x"}
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
			c.Properties.Version.ID = "4.20"
			c.Properties.NodeDrainTimeoutMinutes = 5
			c.Properties.Autoscaling.MaxNodesTotal = proto.Int32(20)
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
				stored.Properties.API.AuthorizedCIDRs = []string{"1.2.3.4"} // stored as the caller wrote it
			}
			got := clusterUpdate(ver, stored, next)
			if (got == nil) != (tc.want == nil) || (got != nil && !proto.Equal(got, tc.want)) {
				t.Fatalf("clusterUpdate = %v, want %v", got, tc.want)
			}
		})
	}
}
