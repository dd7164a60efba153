package v20240610preview

import (
	"github.com/openhcp/openhcp/frontend/pkg/api"
	"github.com/openhcp/openhcp/frontend/pkg/api/codec"
	"github.com/openhcp/openhcp/frontend/pkg/api/fieldcheck"
)

// The node pool of this version: version.id optional, no maximum disk size, and no
// osDisk.diskType, which came with 2025-12-23-preview, so a write through this version keeps
// the stored one.
func init() {
	api.RegisterNodePool(codec.NodePool[NodePool]{
		Name: APIVersion, Rules: fieldcheck.NodePoolRules{MinOSDiskSizeGiB: specOsDiskProfileSizeGiBMinimum}, UpdatePaths: specNodePoolUpdatePaths, KeepStored: preserveDiskType,
	})
}

func preserveDiskType(stored, next *api.NodePool) {
	if stored == nil {
		return
	}
	if d := stored.Spec.GetPlatform().GetOsDiskPersistence(); d != "" && next.Spec.GetPlatform() != nil {
		next.Spec.Platform.OsDiskPersistence = d
	}
}
