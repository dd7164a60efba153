// Package v20260901preview is api-version 2026-09-01-preview of Microsoft.RedHatOpenShift
// hcpOpenShiftClusters. Its cluster schema (HcpOpenShiftCluster, HcpOpenShiftClusterUpdate and
// everything they reference) is identical to 2026-06-30-preview's, so it is served by that
// package's types under this name; it differs only in the admin credential request.
package v20260901preview

import (
	"github.com/openhcp/openhcp/frontend/pkg/api"
	"github.com/openhcp/openhcp/frontend/pkg/api/v20260630preview"
)

// APIVersion is this package's api-version.
const APIVersion = "2026-09-01-preview"

func init() { api.Register(v20260630preview.SameSchema(APIVersion)) }
