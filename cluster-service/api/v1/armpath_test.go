package csv1

import (
	"testing"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
)

// requests are the messages the frontend sends with a customer's fields in them.
var requests = []proto.Message{&CreateClusterRequest{}, &UpdateClusterRequest{}, &CreateNodePoolRequest{},
	&UpdateNodePoolRequest{}, &CreateExternalAuthRequest{}, &UpdateExternalAuthRequest{}, &RequestCredentialRequest{}}

// TestEveryRequestFieldHasAnARMPath: a field added to a request without arm_path would make
// its violations reach ARM clients without a target.
func TestEveryRequestFieldHasAnARMPath(t *testing.T) {
	seen := map[protoreflect.FullName]bool{}
	var walk func(md protoreflect.MessageDescriptor)
	walk = func(md protoreflect.MessageDescriptor) {
		if seen[md.FullName()] {
			return
		}
		seen[md.FullName()] = true
		for i := 0; i < md.Fields().Len(); i++ {
			fd := md.Fields().Get(i)
			p := ARMPathOf(fd)
			if p == "" {
				t.Errorf("%s has no arm_path option", fd.FullName())
			}
			if p != "-" && fd.Message() != nil && !fd.IsMap() {
				walk(fd.Message())
			}
		}
	}
	for _, r := range requests {
		walk(r.ProtoReflect().Descriptor())
	}
}

func TestARMPath(t *testing.T) {
	tests := []struct {
		root  proto.Message
		field string
		want  string // "" : no target
	}{
		{&CreateClusterRequest{}, "cluster.spec.network.host_prefix", "properties.network.hostPrefix"},
		{&CreateClusterRequest{}, "cluster.spec.version_id", "properties.version.id"},
		{&CreateClusterRequest{}, "cluster.spec.azure.subnet_id", "properties.platform.subnetId"},
		{&CreateClusterRequest{}, "cluster.spec.azure.location", "location"},
		{&CreateClusterRequest{}, "cluster.spec.azure.workload_identities.disk", "properties.platform.operatorsAuthentication.userAssignedIdentities.controlPlaneOperators.disk-csi-driver"},
		{&CreateClusterRequest{}, "cluster.spec.image_digest_mirrors[1].mirrors[0]", "properties.imageDigestMirrors[1].mirrors[0]"},
		{&CreateClusterRequest{}, "cluster.spec.autoscaling.max_nodes_total", "properties.autoscaling.maxNodesTotal"},
		{&CreateClusterRequest{}, "cluster.arm_resource_id", "name"},
		{&CreateClusterRequest{}, "cluster.spec", ""},
		{&CreateClusterRequest{}, "cluster.id", ""},
		{&CreateClusterRequest{}, "cluster.spec.issuer_url", ""},
		{&CreateClusterRequest{}, "cluster.spec.no_such_field", ""},
		{&UpdateClusterRequest{}, "update.api_authorized_cidrs.values[3]", "properties.api.authorizedCidrs[3]"},
		{&UpdateClusterRequest{}, "update.etcd_encryption_key_version", "properties.etcd.dataEncryption.customerManaged.kms.version"},
		{&UpdateClusterRequest{}, "revision", ""},
		{&CreateNodePoolRequest{}, "node_pool.spec.taints[2].effect", "properties.taints[2].effect"},
		{&CreateNodePoolRequest{}, "node_pool.spec.platform.os_disk_size_gib", "properties.platform.osDisk.sizeGiB"},
		{&CreateNodePoolRequest{}, "node_pool.spec.labels", "properties.labels"},
		{&CreateNodePoolRequest{}, "node_pool.spec.labels.team", "properties.labels.team"},
		{&UpdateNodePoolRequest{}, "update.autoscaling.max", "properties.autoScaling.max"},
		{&CreateExternalAuthRequest{}, "external_auth.spec.clients[0].component_namespace", "properties.clients[0].component.authClientNamespace"},
		{&UpdateExternalAuthRequest{}, "update.validation_rules.values[1].required_value", "properties.claim.validationRules[1].requiredClaim.requiredValue"},
		{&UpdateExternalAuthRequest{}, "update.issuer.audiences[2]", "properties.issuer.audiences[2]"},
		{&RequestCredentialRequest{}, "certificate_signing_request", "certificateSigningRequest"},
		{&RequestCredentialRequest{}, "cluster_id", ""},
	}
	for _, tc := range tests {
		got, ok := ARMPath(tc.root.ProtoReflect().Descriptor(), tc.field)
		if got != tc.want || ok != (tc.want != "") {
			t.Errorf("ARMPath(%T, %q) = %q, %v; want %q", tc.root, tc.field, got, ok, tc.want)
		}
	}
}
