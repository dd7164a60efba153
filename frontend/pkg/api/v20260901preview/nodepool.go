package v20260901preview

import (
	"github.com/openhcp/openhcp/frontend/pkg/api"
	"github.com/openhcp/openhcp/frontend/pkg/api/v20260630preview"
)

// The node pool schema of this version (NodePool, NodePoolUpdate and what they reference) is
// 2026-06-30-preview's too.
func init() { api.RegisterNodePool(v20260630preview.SameNodePoolSchema(APIVersion)) }
