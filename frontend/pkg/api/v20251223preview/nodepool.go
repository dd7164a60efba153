package v20251223preview

import (
	"github.com/openhcp/openhcp/frontend/pkg/api"
	"github.com/openhcp/openhcp/frontend/pkg/api/codec"
	"github.com/openhcp/openhcp/frontend/pkg/api/fieldcheck"
)

// The node pool of this version: its structural checks generated from its specification (no
// maximum disk size), version.id required (NodePoolVersionProfile, a rule of the version's: see
// fieldcheck.NodePoolRules); it expresses every field.
func init() {
	api.RegisterNodePool(codec.NodePool[NodePool]{
		Name: APIVersion, ValidateSpec: (*NodePool).validateSpec, Rules: fieldcheck.NodePoolRules{VersionIDRequired: true}, UpdatePaths: specNodePoolUpdatePaths,
	})
}
