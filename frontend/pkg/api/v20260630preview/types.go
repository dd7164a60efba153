// Package v20260630preview is api-version 2026-06-30-preview of Microsoft.RedHatOpenShift
// hcpOpenShiftClusters (and 2026-09-01-preview, whose cluster schema is the same): its external
// types and structural checks, generated from the OpenAPI specification, and what it means
// beyond them (cluster.go, nodepool.go, externalauth.go), given to package codec, which does what
// every api-version does alike.
package v20260630preview

// APIVersion is this package's api-version.
const APIVersion = "2026-06-30-preview"

// The resource types (HcpOpenShiftCluster, NodePool, ExternalAuth and what they reference), their
// enums and the specification's structural checks are generated from this version's OpenAPI
// specification into zz_generated_types.go and zz_generated_validate.go (make generate).
