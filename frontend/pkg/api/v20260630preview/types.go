// Package v20260630preview is api-version 2026-06-30-preview of Microsoft.RedHatOpenShift
// hcpOpenShiftClusters (and 2026-09-01-preview, whose cluster schema is the same): its external
// types, defaults and validation, taken from the OpenAPI specification, and their conversion to
// and from the internal model in package api.
package v20260630preview

import (
	"github.com/openhcp/openhcp/frontend/pkg/api"
)

// APIVersion is this package's api-version.
const APIVersion = "2026-06-30-preview"

func init() { api.Register(version{APIVersion}) }

// version is this package's types under an api-version name: 2026-09-01-preview has the same
// cluster schema and is served by this package too (see v20260901preview).
type version struct{ name string }

func (v version) String() string { return v.name }

// SameSchema is the api.Version of an api-version whose cluster schema is this one's.
func SameSchema(apiVersion string) api.Version { return version{apiVersion} }

// The resource types (HcpOpenShiftCluster, NodePool, ExternalAuth and what they reference), their
// enums and the specification's structural checks are generated from this version's OpenAPI
// specification into zz_generated_types.go and zz_generated_validate.go (make generate).

// HcpOpenShiftClusterListResult is one page of a list. Not generated: a page holds resources
// already rendered (any), not this version's typed value list.
type HcpOpenShiftClusterListResult struct {
	Value    []any  `json:"value"`
	NextLink string `json:"nextLink,omitempty"`
}
