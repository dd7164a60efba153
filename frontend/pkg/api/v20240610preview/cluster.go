package v20240610preview

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
	// version.id is optional (required from 2025-12-23-preview on); there is no vnet
	// integration subnet and no KMS key vault visibility (both came with 2025-12-23-preview);
	// keyManagementMode has PlatformManaged, its default.
	Rules: fieldcheck.ClusterRules{PlatformManagedKey: true},
	// Every field this version requires, it required from the start, so a write to a stored
	// cluster is checked as a create.
	CheckAsCreate: true,
	// The key vault name is a part of the active key (KmsKey.vaultName).
	VaultNameInKey: true,
	KeepStored:     keepNewer,
}

// keepNewer: this version predates vnet integration, KMS key vault visibility, image digest
// mirrors, ingress and crypto restrictions, so a write through it keeps the stored ones.
func keepNewer(stored, next *api.Cluster) {
	sp, np := stored.CopySpec(), next.Spec
	np.Azure.VnetIntegrationSubnetId = sp.Azure.VnetIntegrationSubnetId
	np.ImageDigestMirrors = sp.ImageDigestMirrors
	np.IngressVisibility = sp.IngressVisibility
	np.CryptoRestrictions = sp.CryptoRestrictions
	if s, n := stored.Etcd.CustomerManaged, next.Etcd.CustomerManaged; s != nil && n != nil && s.KMS != nil && n.KMS != nil {
		n.KMS.Visibility = s.KMS.Visibility
	}
}
