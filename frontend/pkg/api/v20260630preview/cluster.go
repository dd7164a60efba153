package v20260630preview

import (
	"github.com/openhcp/openhcp/frontend/pkg/api"
	"github.com/openhcp/openhcp/frontend/pkg/api/codec"
	"github.com/openhcp/openhcp/frontend/pkg/api/fieldcheck"
)

func init() { api.Register(SameSchema(APIVersion)) }

// SameSchema is the api.Version of an api-version whose cluster schema is this one's
// (2026-09-01-preview): what it means beyond its generated types and checks. It expresses every
// field of the model.
func SameSchema(apiVersion string) api.Version {
	return codec.Cluster[HcpOpenShiftCluster]{
		Name: apiVersion,
		Spec: specCluster,
		// version.id, the vnet integration subnet and the KMS key vault visibility are required,
		// except for a cluster created before 2025-12-23-preview without them; keyManagementMode
		// has only CustomerManaged from this version on (a platform-managed key is what a cluster
		// without etcd.dataEncryption gets), so there is no PlatformManaged rule.
		Rules: fieldcheck.ClusterRules{
			VersionIDRequiredSince: true, VnetIntegrationSubnet: true,
			KMSVisibility: KeyVaultVisibilityValues,
		},
	}
}
