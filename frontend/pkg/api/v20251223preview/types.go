// Package v20251223preview is api-version 2025-12-23-preview of Microsoft.RedHatOpenShift
// hcpOpenShiftClusters: its external types, defaults and validation, taken from the OpenAPI
// specification, and their conversion to and from the internal model in package api.
package v20251223preview

import (
	"github.com/openhcp/openhcp/frontend/pkg/api"
)

// APIVersion is this package's api-version.
const APIVersion = "2025-12-23-preview"

func init() { api.Register(version{}) }

type version struct{}

func (version) String() string { return APIVersion }

// The resource types (HcpOpenShiftCluster, NodePool, ExternalAuth and what they reference), their
// enums and the specification's structural checks are generated from this version's OpenAPI
// specification into zz_generated_types.go and zz_generated_validate.go (make generate).

// HcpOpenShiftClusterListResult is one page of a list. Not generated: a page holds resources
// already rendered (any), not this version's typed value list.
type HcpOpenShiftClusterListResult struct {
	Value    []any  `json:"value"`
	NextLink string `json:"nextLink,omitempty"`
}
