package v20260630preview

import (
	"github.com/openhcp/openhcp/frontend/pkg/api"
	"github.com/openhcp/openhcp/frontend/pkg/api/codec"
	"github.com/openhcp/openhcp/frontend/pkg/api/fieldcheck"
)

func init() { api.RegisterNodePool(SameNodePoolSchema(APIVersion)) }

// SameNodePoolSchema is the api.NodePoolVersion of an api-version whose node pool schema is
// this one's (2026-09-01-preview): its structural checks generated from this version's
// specification (sizeGiB at most its OsDiskProfile maximum), version.id required (a rule of the
// version's: see fieldcheck.NodePoolRules); it expresses every field.
func SameNodePoolSchema(apiVersion string) api.NodePoolVersion {
	return codec.NodePool[NodePool]{
		Name: apiVersion, ValidateSpec: (*NodePool).validateSpec, Rules: fieldcheck.NodePoolRules{VersionIDRequired: true}, UpdatePaths: specNodePoolUpdatePaths,
	}
}
