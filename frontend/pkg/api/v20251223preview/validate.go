package v20251223preview

import (
	"github.com/openhcp/openhcp/frontend/pkg/api"
	"github.com/openhcp/openhcp/frontend/pkg/api/fieldcheck"
)

// clusterRules are what a cluster body of this version means beyond its schema
// (fieldcheck.Cluster): version.id, the vnet integration subnet and the KMS key vault
// visibility became required with this version, so a cluster created before without them
// keeps them empty; keyManagementMode still has PlatformManaged, its default.
var clusterRules = fieldcheck.ClusterRules{
	VersionIDRequiredSince: true, VnetIntegrationSubnet: true, PlatformManagedKey: true,
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
