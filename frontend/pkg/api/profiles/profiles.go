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

// ToInternal converts properties.version (nil when absent).
func (v *VersionProfile) ToInternal() api.VersionProfile {
	var out api.VersionProfile
	if v != nil {
		out.ID = str(v.ID, "")
		out.ChannelGroup = str(v.ChannelGroup, "")
	}
	if out.ChannelGroup == "" {
		out.ChannelGroup = api.ChannelGroupStable
	}
	return out
}

// ToInternal converts properties.dns (nil when absent); baseDomain is read-only.
func (d *DNSProfile) ToInternal() api.DNSProfile {
	var out api.DNSProfile
	if d != nil {
		out.BaseDomainPrefix = str(d.BaseDomainPrefix, "")
	}
	return out
}

// ToInternal converts properties.api (nil when absent); url is read-only.
func (a *APIProfile) ToInternal() api.APIProfile {
	out := api.APIProfile{Visibility: api.VisibilityPublic}
	if a != nil {
		out.Visibility = str(a.Visibility, api.VisibilityPublic)
		out.AuthorizedCIDRs = append([]string(nil), a.AuthorizedCIDRs...)
	}
	return out
}

// ImageDigestMirrorsToInternal converts properties.imageDigestMirrors.
func ImageDigestMirrorsToInternal(ms []ImageDigestMirror) []api.ImageDigestMirror {
	var out []api.ImageDigestMirror
	for _, m := range ms {
		out = append(out, api.ImageDigestMirror{Source: str(m.Source, ""), Mirrors: append([]string(nil), m.Mirrors...)})
	}
	return out
}

// RenderImageDigestMirrors is properties.imageDigestMirrors of a stored cluster.
func RenderImageDigestMirrors(ms []api.ImageDigestMirror) []ImageDigestMirror {
	var out []ImageDigestMirror
	for _, m := range ms {
		out = append(out, ImageDigestMirror{Source: ptr(m.Source), Mirrors: append([]string{}, m.Mirrors...)})
	}
	return out
}

// NetworkDefaults are a version's defaults for what properties.network leaves out.
type NetworkDefaults struct {
	PodCIDR, ServiceCIDR, MachineCIDR string
	HostPrefix                        int32
}

// ToInternal converts properties.network (nil when absent), applying the version's defaults.
func (n *NetworkProfile) ToInternal(d NetworkDefaults) api.NetworkProfile {
	if n == nil {
		n = &NetworkProfile{}
	}
	return api.NetworkProfile{
		NetworkType: str(n.NetworkType, api.NetworkTypeOVNKubernetes),
		PodCIDR:     str(n.PodCIDR, d.PodCIDR),
		ServiceCIDR: str(n.ServiceCIDR, d.ServiceCIDR),
		MachineCIDR: str(n.MachineCIDR, d.MachineCIDR),
		HostPrefix:  i32(n.HostPrefix, d.HostPrefix),
	}
}

// RenderNetwork is properties.network of a stored cluster.
func RenderNetwork(n *api.NetworkProfile) *NetworkProfile {
	return &NetworkProfile{
		NetworkType: ptr(n.NetworkType),
		PodCIDR:     ptr(n.PodCIDR),
		ServiceCIDR: ptr(n.ServiceCIDR),
		MachineCIDR: ptr(n.MachineCIDR),
		HostPrefix:  &n.HostPrefix,
	}
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

// ToInternal converts properties.autoscaling: what is absent stays absent, 0 included as given.
func (a *ClusterAutoscalingProfile) ToInternal() api.ClusterAutoscalingProfile {
	return api.ClusterAutoscalingProfile{
		MaxNodesTotal:               copyInt32(a.MaxNodesTotal),
		MaxPodGracePeriodSeconds:    copyInt32(a.MaxPodGracePeriodSeconds),
		MaxNodeProvisionTimeSeconds: copyInt32(a.MaxNodeProvisionTimeSeconds),
		PodPriorityThreshold:        copyInt32(a.PodPriorityThreshold),
	}
}

// RenderAutoscaling is properties.autoscaling of a stored cluster: the values the caller set
// (0 included); a value never set is left out, as HyperShift's default applies to it.
func RenderAutoscaling(a *api.ClusterAutoscalingProfile) *ClusterAutoscalingProfile {
	return &ClusterAutoscalingProfile{
		MaxNodesTotal:               copyInt32(a.MaxNodesTotal),
		MaxPodGracePeriodSeconds:    copyInt32(a.MaxPodGracePeriodSeconds),
		MaxNodeProvisionTimeSeconds: copyInt32(a.MaxNodeProvisionTimeSeconds),
		PodPriorityThreshold:        copyInt32(a.PodPriorityThreshold),
	}
}

func copyInt32(p *int32) *int32 {
	if p == nil {
		return nil
	}
	v := *p
	return &v
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

func i32(p *int32, def int32) int32 {
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
