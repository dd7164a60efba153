package v20251223preview

import (
	"github.com/openhcp/openhcp/frontend/pkg/api"
	"github.com/openhcp/openhcp/frontend/pkg/api/codec"
	"github.com/openhcp/openhcp/frontend/pkg/api/fieldcheck"
)

func init() { api.Register(cluster) }

// cluster is this version's cluster: what it means beyond its generated types and checks.
var cluster = codec.Cluster[HcpOpenShiftCluster]{
	Name: APIVersion,
	Spec: specCluster,
	// version.id, the vnet integration subnet and the KMS key vault visibility became required
	// with this version, so a cluster created before without them keeps them empty;
	// keyManagementMode still has PlatformManaged, its default.
	Rules: fieldcheck.ClusterRules{
		VersionIDRequiredSince: true, VnetIntegrationSubnet: true, PlatformManagedKey: true,
		KMSVisibility: KeyVaultVisibilityValues,
	},
	KeepStored: keepNewer,
}

// keepNewer: this version predates ingress and crypto restrictions, so a write through it
// keeps the stored ones.
func keepNewer(stored, next *api.Cluster) {
	next.Spec.IngressVisibility = stored.Spec.GetIngressVisibility()
	next.Spec.CryptoRestrictions = stored.Spec.GetCryptoRestrictions()
}
