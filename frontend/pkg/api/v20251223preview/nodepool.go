package v20251223preview

import (
	"github.com/openhcp/openhcp/frontend/pkg/api"
	"github.com/openhcp/openhcp/frontend/pkg/api/codec"
	"github.com/openhcp/openhcp/frontend/pkg/api/fieldcheck"
)

// The node pool of this version: version.id required (NodePoolVersionProfile), no maximum disk
// size; it expresses every field.
func init() {
	api.RegisterNodePool(codec.NodePool[NodePool]{
		Name: APIVersion, Rules: fieldcheck.NodePoolRules{VersionIDRequired: true, MinOSDiskSizeGiB: specOsDiskProfileSizeGiBMinimum}, UpdatePaths: specNodePoolUpdatePaths,
	})
}
