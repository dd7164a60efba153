package v20260630preview

import (
	"github.com/openhcp/openhcp/frontend/pkg/api"
	"github.com/openhcp/openhcp/frontend/pkg/api/fieldcheck"
)

// clusterRules are what a cluster body of this version means beyond its schema
// (fieldcheck.Cluster): version.id, the vnet integration subnet and the KMS key vault
// visibility are required, except for a cluster created before 2025-12-23-preview without
// them; keyManagementMode has only CustomerManaged from this version on (a platform-managed
// key is what a cluster without etcd.dataEncryption gets), so there is no PlatformManaged
// rule.
var clusterRules = fieldcheck.ClusterRules{
	VersionIDRequiredSince: true, VnetIntegrationSubnet: true,
	KMSVisibility: KeyVaultVisibilityValues, ImageRegistryStates: ClusterImageRegistryStateValues,
}

// validate checks a decoded body: first what the specification says of each field (required
// fields, enums, ranges, lengths: validateSpec, generated), then what it cannot say
// (fieldcheck.Cluster).
func validate(e *HcpOpenShiftCluster, stored *api.Cluster) error {
	v := &fieldcheck.Checker{Stored: stored}
	e.validateSpec(v, "")
	v.Cluster(e, clusterRules)
	return v.Err()
}
