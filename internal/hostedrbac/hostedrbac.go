// Package hostedrbac names the kube groups, ClusterRoles and bindings OpenHCP creates inside
// every hosted cluster for SRE break-glass access. It lives in the shared internal module
// because both sides need the same names: the management side that creates them
// (hypershift-sim, whose module Cluster Service already depends on, so it cannot import Cluster
// Service) and Cluster Service and the gateway, which put the groups in certificates and
// impersonation headers. cluster-service/pkg/breakglass re-exports them.
package hostedrbac

// An SRE break-glass certificate's organisation is one of the SREBreakGlass*Group groups. Those
// groups may do nothing but impersonate a person with one of the SRE*Group groups, which hold
// the rights. So the credential, held only by the gateway, grants nothing by itself, and the
// hosted audit log names the person the gateway impersonates.
const (
	// Groups carried by SRE break-glass certificates.
	SREBreakGlassReadOnlyGroup = "openhcp:sre-break-glass:read-only"
	SREBreakGlassAdminGroup    = "openhcp:sre-break-glass:admin"
	// Groups the gateway impersonates: admin is bound to cluster-admin, read-only to
	// SREReadOnlyClusterRole (get, list, watch on every resource but Secrets).
	SREAdminGroup    = "openhcp:sre:admin"
	SREReadOnlyGroup = "openhcp:sre:read-only"

	// ClusterRoles; each is bound by a ClusterRoleBinding of the same name.
	SREImpersonateReadOnlyClusterRole = "openhcp:sre-break-glass:impersonate-read-only"
	SREImpersonateAdminClusterRole    = "openhcp:sre-break-glass:impersonate-admin"
	SREReadOnlyClusterRole            = "openhcp:sre:read-only"
	// SREAdminClusterRoleBinding binds SREAdminGroup to the bootstrap ClusterRole cluster-admin.
	SREAdminClusterRoleBinding = "openhcp:sre:admin"
	ClusterAdminClusterRole    = "cluster-admin"
)

// SREImpersonatedUserPrefix starts the user name the gateway impersonates for an SRE:
// openhcp:sre-person:<person>. Not the bare person name: a customer's user of that name in the
// hosted cluster (an external auth without a username prefix) would lend its own bindings to
// the SRE's session, and the hosted audit log could not tell the two apart.
const SREImpersonatedUserPrefix = "openhcp:sre-person:"

// SREImpersonatedUser is the user name the gateway impersonates for person.
func SREImpersonatedUser(person string) string { return SREImpersonatedUserPrefix + person }

// Impersonation is what one break-glass group may impersonate: any user name, with only these
// groups, granted by ClusterRole (bound to the group under the same name).
type Impersonation struct {
	ClusterRole string
	Groups      []string
}

// SREImpersonatedGroups maps the group of an SRE break-glass certificate to what it may
// impersonate.
var SREImpersonatedGroups = map[string]Impersonation{
	SREBreakGlassReadOnlyGroup: {ClusterRole: SREImpersonateReadOnlyClusterRole, Groups: []string{SREReadOnlyGroup}},
	SREBreakGlassAdminGroup:    {ClusterRole: SREImpersonateAdminClusterRole, Groups: []string{SREAdminGroup, SREReadOnlyGroup}},
}
