// Package v20240610preview is api-version 2024-06-10-preview of Microsoft.RedHatOpenShift
// hcpOpenShiftClusters: its external types and structural checks, generated from the OpenAPI
// specification, and what it means beyond them (cluster.go, nodepool.go), given to package
// codec, which does what every api-version does alike.
package v20240610preview

// APIVersion is this package's api-version.
const APIVersion = "2024-06-10-preview"

// The resource types (HcpOpenShiftCluster, NodePool, ExternalAuth and what they reference), their
// enums and the specification's structural checks are generated from this version's OpenAPI
// specification into zz_generated_types.go and zz_generated_validate.go (make generate).
