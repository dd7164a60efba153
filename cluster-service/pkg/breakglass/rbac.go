package breakglass

import "github.com/openhcp/openhcp/internal/hostedrbac"

// RBAC names inside every hosted cluster (created by the management side once the hosted
// kube-apiserver answers). internal/hostedrbac owns them, since hypershift-sim's module cannot
// import Cluster Service; these are the same values under the names the contract gives.
const (
	SREBreakGlassReadOnlyGroup        = hostedrbac.SREBreakGlassReadOnlyGroup
	SREBreakGlassAdminGroup           = hostedrbac.SREBreakGlassAdminGroup
	SREAdminGroup                     = hostedrbac.SREAdminGroup
	SREReadOnlyGroup                  = hostedrbac.SREReadOnlyGroup
	SREImpersonateReadOnlyClusterRole = hostedrbac.SREImpersonateReadOnlyClusterRole
	SREImpersonateAdminClusterRole    = hostedrbac.SREImpersonateAdminClusterRole
	SREReadOnlyClusterRole            = hostedrbac.SREReadOnlyClusterRole
)
