package v20240610preview

import (
	"github.com/openhcp/openhcp/frontend/pkg/api"
	"github.com/openhcp/openhcp/frontend/pkg/api/profiles"
)

// DecodeClusterUpdate implements api.Version: every field this version requires, it required
// from the start.
func (v version) DecodeClusterUpdate(body []byte, stored *api.Cluster) (*api.Cluster, error) {
	return v.DecodeCluster(body)
}

// DecodeCluster implements api.Version.
func (version) DecodeCluster(body []byte) (*api.Cluster, error) {
	var ext HcpOpenShiftCluster
	if err := api.DecodeStrict(body, &ext); err != nil {
		return nil, err
	}
	if err := validate(&ext); err != nil {
		return nil, err
	}
	return toInternal(&ext), nil
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

func ptr[T comparable](v T) *T {
	var zero T
	if v == zero {
		return nil
	}
	return &v
}

// Defaults from the OpenAPI specification of this version.
const (
	defaultPodCIDR     = "10.128.0.0/14"
	defaultServiceCIDR = "172.30.0.0/16"
	defaultMachineCIDR = "10.0.0.0/16"
	defaultHostPrefix  = 23
)

var networkDefaults = profiles.NetworkDefaults{
	PodCIDR: defaultPodCIDR, ServiceCIDR: defaultServiceCIDR, MachineCIDR: defaultMachineCIDR, HostPrefix: defaultHostPrefix,
}

// toInternal converts a validated body, applying defaults. Read-only fields are dropped.
func toInternal(e *HcpOpenShiftCluster) *api.Cluster {
	c := &api.Cluster{Location: str(e.Location, ""), Tags: e.Tags}
	p := e.Properties
	if p == nil {
		p = &HcpOpenShiftClusterProperties{}
	}
	out := &c.Properties
	out.Version = p.Version.ToInternal()
	out.DNS = p.DNS.ToInternal()
	out.Network = p.Network.ToInternal(networkDefaults)
	out.API = p.API.ToInternal()
	if pl := p.Platform; pl != nil {
		out.Platform.ManagedResourceGroup = str(pl.ManagedResourceGroup, "")
		out.Platform.SubnetID = str(pl.SubnetID, "")
		out.Platform.OutboundType = str(pl.OutboundType, api.OutboundTypeLoadBalancer)
		out.Platform.NetworkSecurityGroupID = str(pl.NetworkSecurityGroupID, "")
		if oa := pl.OperatorsAuthentication; oa != nil && oa.UserAssignedIdentities != nil {
			out.Platform.OperatorsAuthentication.UserAssignedIdentities = oa.UserAssignedIdentities.ToInternal()
		}
	}
	if a := p.Autoscaling; a != nil {
		out.Autoscaling = a.ToInternal()
	}
	out.Etcd.DataEncryption.KeyManagementMode = api.KeyManagementPlatform
	if et := p.Etcd; et != nil && et.DataEncryption != nil {
		de := et.DataEncryption
		out.Etcd.DataEncryption.KeyManagementMode = str(de.KeyManagementMode, api.KeyManagementPlatform)
		if cm := de.CustomerManaged; cm != nil {
			icm := &api.CustomerManagedEncryptionProfile{EncryptionType: str(cm.EncryptionType, api.EncryptionTypeKMS)}
			if cm.KMS != nil && cm.KMS.ActiveKey != nil {
				k := cm.KMS.ActiveKey
				icm.KMS = &api.KMSKey{VaultName: str(k.VaultName, ""), Name: str(k.Name, ""), Version: str(k.Version, "")}
			}
			out.Etcd.DataEncryption.CustomerManaged = icm
		}
	}
	out.NodeDrainTimeoutMinutes = i32(p.NodeDrainTimeoutMinutes, 0)
	out.ClusterImageRegistry.State = api.RegistryEnabled
	if r := p.ClusterImageRegistry; r != nil {
		out.ClusterImageRegistry.State = str(r.State, api.RegistryEnabled)
	}
	if id := e.Identity; id != nil {
		c.Identity = id.ToInternal()
	}
	c.Default()
	return c
}

// RenderCluster implements api.Version.
func (version) RenderCluster(c *api.Cluster) any {
	p := &c.Properties
	ext := &HcpOpenShiftCluster{
		Location:   ptr(c.Location),
		Tags:       c.Tags,
		SystemData: c.SystemData,
	}
	if c.ID != nil {
		ext.ID = ptr(c.ID.String())
		ext.Name = ptr(c.ID.Name())
		ext.Type = ptr(api.ClusterResourceType)
	}
	if ext.Tags == nil {
		ext.Tags = map[string]string{}
	}
	props := &HcpOpenShiftClusterProperties{
		ProvisioningState: ptr(string(c.ProvisioningState)),
		Version:           &VersionProfile{ID: ptr(p.Version.ID), ChannelGroup: ptr(p.Version.ChannelGroup)},
		DNS:               &DNSProfile{BaseDomain: ptr(p.DNS.BaseDomain), BaseDomainPrefix: ptr(p.DNS.BaseDomainPrefix)},
		Network:           profiles.RenderNetwork(&p.Network),
		Console:           &ConsoleProfile{URL: ptr(p.Console.URL)},
		API:               &APIProfile{URL: profiles.Present(p.API.URL), Visibility: ptr(p.API.Visibility), AuthorizedCIDRs: p.API.AuthorizedCIDRs},
		Platform: &PlatformProfile{
			ManagedResourceGroup:    ptr(p.Platform.ManagedResourceGroup),
			SubnetID:                ptr(p.Platform.SubnetID),
			OutboundType:            ptr(p.Platform.OutboundType),
			NetworkSecurityGroupID:  ptr(p.Platform.NetworkSecurityGroupID),
			OperatorsAuthentication: profiles.RenderOperatorsAuthentication(&p.Platform.OperatorsAuthentication.UserAssignedIdentities),
			IssuerURL:               profiles.Present(p.Platform.IssuerURL),
		},
		Autoscaling:             profiles.RenderAutoscaling(&p.Autoscaling),
		Etcd:                    &EtcdProfile{DataEncryption: &EtcdDataEncryptionProfile{KeyManagementMode: ptr(p.Etcd.DataEncryption.KeyManagementMode)}},
		NodeDrainTimeoutMinutes: &p.NodeDrainTimeoutMinutes,
		ClusterImageRegistry:    &ClusterImageRegistryProfile{State: ptr(p.ClusterImageRegistry.State)},
	}
	if cm := p.Etcd.DataEncryption.CustomerManaged; cm != nil {
		ecm := &CustomerManagedEncryptionProfile{EncryptionType: ptr(cm.EncryptionType)}
		if cm.KMS != nil {
			ecm.KMS = &KmsEncryptionProfile{ActiveKey: &KmsKey{VaultName: ptr(cm.KMS.VaultName), Name: ptr(cm.KMS.Name), Version: ptr(cm.KMS.Version)}}
		}
		props.Etcd.DataEncryption.CustomerManaged = ecm
	}
	if props.Console.URL == nil {
		props.Console = nil
	}
	ext.Properties = props
	if id := c.Identity; id != nil {
		ext.Identity = profiles.RenderIdentity(id)
	}
	return ext
}

// updatePaths is HcpOpenShiftClusterUpdate of this version: what a PATCH body may hold.
var updatePaths = []string{
	"tags",
	"identity",
	"properties.version",
	"properties.platform.operatorsAuthentication",
	"properties.autoscaling",
	"properties.nodeDrainTimeoutMinutes",
}

// PatchCluster implements api.Version.
func (v version) PatchCluster(stored *api.Cluster, body []byte) (*api.Cluster, error) {
	return api.Patch(v, stored, body, updatePaths)
}

// Preserve implements api.Version: this version predates vnet integration, KMS key vault
// visibility, image digest mirrors, ingress and crypto restrictions.
func (version) Preserve(stored, next *api.Cluster) {
	sp, np := &stored.Properties, &next.Properties
	np.Platform.VnetIntegrationSubnetID = sp.Platform.VnetIntegrationSubnetID
	np.ImageDigestMirrors = sp.ImageDigestMirrors
	np.Ingress = sp.Ingress
	np.CryptoRestrictions = sp.CryptoRestrictions
	if s, n := sp.Etcd.DataEncryption.CustomerManaged, np.Etcd.DataEncryption.CustomerManaged; s != nil && n != nil && s.KMS != nil && n.KMS != nil {
		n.KMS.Visibility = s.KMS.Visibility
	}
}

// UpdatableFields implements api.Version (x-ms-mutability "update" in this version's spec).
func (version) UpdatableFields() []string {
	return []string{
		"identity",
		"properties.version.channelGroup",
		"properties.platform.operatorsAuthentication",
		"properties.autoscaling",
		"properties.nodeDrainTimeoutMinutes",
		"properties.api.authorizedCidrs",
		"properties.etcd.dataEncryption.customerManaged.kms.version",
	}
}

// ExternalPath implements api.Version.
func (version) ExternalPath(p string) string { return api.KMSExternalPath(p, true) }
