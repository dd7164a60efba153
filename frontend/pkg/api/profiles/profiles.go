// Package profiles holds the external sub-structures of hcpOpenShiftCluster whose JSON shape is
// the same in every api-version, and their conversion to and from the internal model. A version
// package aliases these types; a version whose shape of one of them differs defines its own
// type instead of the alias (as each does for the platform and etcd profiles).
package profiles

import "github.com/openhcp/openhcp/frontend/pkg/api"

type VersionProfile struct {
	ID           *string `json:"id,omitempty"`
	ChannelGroup *string `json:"channelGroup,omitempty"`
}

type DNSProfile struct {
	BaseDomain       *string `json:"baseDomain,omitempty"`
	BaseDomainPrefix *string `json:"baseDomainPrefix,omitempty"`
}

type NetworkProfile struct {
	NetworkType *string `json:"networkType,omitempty"`
	PodCIDR     *string `json:"podCidr,omitempty"`
	ServiceCIDR *string `json:"serviceCidr,omitempty"`
	MachineCIDR *string `json:"machineCidr,omitempty"`
	HostPrefix  *int32  `json:"hostPrefix,omitempty"`
}

type ConsoleProfile struct {
	URL *string `json:"url,omitempty"`
}

type APIProfile struct {
	URL             *string  `json:"url,omitempty"`
	Visibility      *string  `json:"visibility,omitempty"`
	AuthorizedCIDRs []string `json:"authorizedCidrs,omitempty"`
}

type OperatorsAuthenticationProfile struct {
	UserAssignedIdentities *UserAssignedIdentitiesProfile `json:"userAssignedIdentities,omitempty"`
}

type UserAssignedIdentitiesProfile struct {
	ControlPlaneOperators  map[string]string `json:"controlPlaneOperators"`
	DataPlaneOperators     map[string]string `json:"dataPlaneOperators"`
	ServiceManagedIdentity *string           `json:"serviceManagedIdentity,omitempty"`
}

type ClusterAutoscalingProfile struct {
	MaxNodesTotal               *int32 `json:"maxNodesTotal,omitempty"`
	MaxPodGracePeriodSeconds    *int32 `json:"maxPodGracePeriodSeconds,omitempty"`
	MaxNodeProvisionTimeSeconds *int32 `json:"maxNodeProvisionTimeSeconds,omitempty"`
	PodPriorityThreshold        *int32 `json:"podPriorityThreshold,omitempty"`
}

type ClusterImageRegistryProfile struct {
	State *string `json:"state,omitempty"`
}

type ManagedServiceIdentity struct {
	PrincipalID            *string                          `json:"principalId,omitempty"`
	TenantID               *string                          `json:"tenantId,omitempty"`
	Type                   *string                          `json:"type,omitempty"`
	UserAssignedIdentities map[string]*UserAssignedIdentity `json:"userAssignedIdentities,omitempty"`
}

type UserAssignedIdentity struct {
	PrincipalID *string `json:"principalId,omitempty"`
	ClientID    *string `json:"clientId,omitempty"`
}

// ImageDigestMirror is one entry of properties.imageDigestMirrors (from 2025-12-23-preview on).
type ImageDigestMirror struct {
	Source  *string  `json:"source,omitempty"`
	Mirrors []string `json:"mirrors"`
}

// ToInternal converts the operators' identities.
func (u *UserAssignedIdentitiesProfile) ToInternal() api.UserAssignedIdentitiesProfile {
	return api.UserAssignedIdentitiesProfile{
		ControlPlaneOperators:  copyMap(u.ControlPlaneOperators),
		DataPlaneOperators:     copyMap(u.DataPlaneOperators),
		ServiceManagedIdentity: str(u.ServiceManagedIdentity, ""),
	}
}

// RenderOperatorsAuthentication is properties.platform.operatorsAuthentication of a stored
// cluster.
func RenderOperatorsAuthentication(u *api.UserAssignedIdentitiesProfile) *OperatorsAuthenticationProfile {
	return &OperatorsAuthenticationProfile{UserAssignedIdentities: &UserAssignedIdentitiesProfile{
		ControlPlaneOperators:  copyMap(u.ControlPlaneOperators),
		DataPlaneOperators:     copyMap(u.DataPlaneOperators),
		ServiceManagedIdentity: ptr(u.ServiceManagedIdentity),
	}}
}

// ToInternal converts the resource's identity.
func (id *ManagedServiceIdentity) ToInternal() *api.ManagedServiceIdentity {
	out := &api.ManagedServiceIdentity{Type: str(id.Type, "")}
	if len(id.UserAssignedIdentities) > 0 {
		out.UserAssignedIdentities = map[string]*api.UserAssignedIdentity{}
		for k, v := range id.UserAssignedIdentities {
			// principalId and clientId are read-only for customers; ARM fills them in when
			// it forwards the request, and the client IDs become the workload identities.
			u := &api.UserAssignedIdentity{}
			if v != nil {
				u.PrincipalID, u.ClientID = str(v.PrincipalID, ""), str(v.ClientID, "")
			}
			out.UserAssignedIdentities[k] = u
		}
	}
	return out
}

// RenderIdentity is the identity of a stored cluster.
func RenderIdentity(id *api.ManagedServiceIdentity) *ManagedServiceIdentity {
	out := &ManagedServiceIdentity{Type: ptr(id.Type), PrincipalID: ptr(id.PrincipalID), TenantID: ptr(id.TenantID)}
	if len(id.UserAssignedIdentities) > 0 {
		out.UserAssignedIdentities = map[string]*UserAssignedIdentity{}
		for k, v := range id.UserAssignedIdentities {
			u := &UserAssignedIdentity{}
			if v != nil {
				u.PrincipalID, u.ClientID = ptr(v.PrincipalID), ptr(v.ClientID)
			}
			out.UserAssignedIdentities[k] = u
		}
	}
	return out
}

func str(p *string, def string) string {
	if p == nil {
		return def
	}
	return *p
}

// Present renders a property the spec marks required: it is in the body even when the model
// has no value for it yet, as its zero value (api.url before the control plane is up renders
// ""). docs/api.md says why.
func Present[T any](v T) *T { return &v }

func ptr[T comparable](v T) *T {
	var zero T
	if v == zero {
		return nil
	}
	return &v
}

func copyMap(m map[string]string) map[string]string {
	out := make(map[string]string, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}
