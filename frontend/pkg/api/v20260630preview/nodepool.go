package v20260630preview

import (
	"github.com/openhcp/openhcp/frontend/pkg/api"
	"github.com/openhcp/openhcp/frontend/pkg/api/codec"
	"github.com/openhcp/openhcp/frontend/pkg/api/fieldcheck"
)

func init() { api.RegisterNodePool(SameNodePoolSchema(APIVersion)) }

// SameNodePoolSchema is the api.NodePoolVersion of an api-version whose node pool schema is
// this one's (2026-09-01-preview): version.id required, sizeGiB at most this version's
// OsDiskProfile maximum (generated from its specification); it expresses every field.
func SameNodePoolSchema(apiVersion string) api.NodePoolVersion {
	return codec.NodePool[NodePool]{
		Name: apiVersion, Rules: fieldcheck.NodePoolRules{VersionIDRequired: true, MinOSDiskSizeGiB: specOsDiskProfileSizeGiBMinimum, MaxOSDiskSizeGiB: specOsDiskProfileSizeGiBMaximum}, UpdatePaths: specNodePoolUpdatePaths,
	}
}
