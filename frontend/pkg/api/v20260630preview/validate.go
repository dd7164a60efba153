package v20260630preview

import (
	"strings"

	"github.com/openhcp/openhcp/frontend/pkg/api"
	"github.com/openhcp/openhcp/frontend/pkg/api/fieldcheck"
)

// validate checks a decoded body: first what the specification says of each field (required
// fields, enums, ranges, lengths: validateSpec, generated), then the rules it cannot say,
// written here: resource ID types, CIDR blocks, identities, fields required since this
// version, and cross-field rules. These stay hand-written because they are meaning, not shape.
func validate(e *HcpOpenShiftCluster, stored *api.Cluster) error {
	v := &fieldcheck.Checker{Stored: stored}
	e.validateSpec(v, "")
	// The specification lets properties out; a cluster cannot be created without them.
	if v.Required(e.Properties != nil, "properties") {
		validateProperties(v, e.Properties)
	}
	validateIdentity(v, e)
	return v.Err()
}

func validateProperties(v *fieldcheck.Checker, p *HcpOpenShiftClusterProperties) {
	if p.Version != nil {
		v.RequiredSince(p.Version.ID, func(c *api.Cluster) bool { return c.Properties.Version.ID == "" }, "properties.version.id")
		v.ChannelGroup(p.Version.ChannelGroup, "properties.version.channelGroup")
	}
	v.ImageDigestMirrors(p.ImageDigestMirrors)
	if d := p.DNS; d != nil {
		v.BaseDomainPrefix(d.BaseDomainPrefix)
	}
	if n := p.Network; n != nil {
		v.Network(n, networkDefaults)
	}
	if a := p.API; a != nil {
		v.API(a)
	}
	if p.Platform != nil {
		validatePlatform(v, p.Platform)
	}
	if a := p.Autoscaling; a != nil {
		v.Autoscaling(a)
	}
	if et := p.Etcd; et != nil && et.DataEncryption != nil {
		validateEtcd(v, et.DataEncryption)
	}
	// clusterImageRegistry is a shared type (profiles), which the generated checks leave out.
	if r := p.ClusterImageRegistry; r != nil {
		v.Enum(r.State, "properties.clusterImageRegistry.state", ClusterImageRegistryStateValues...)
	}
}

func validatePlatform(v *fieldcheck.Checker, pl *PlatformProfile) {
	v.ManagedResourceGroup(pl.ManagedResourceGroup)
	if pl.SubnetID != nil {
		v.ArmID(*pl.SubnetID, "properties.platform.subnetId", fieldcheck.TypeSubnet)
	}
	if v.RequiredSince(pl.VnetIntegrationSubnetID, func(c *api.Cluster) bool { return c.Properties.Platform.VnetIntegrationSubnetID == "" },
		"properties.platform.vnetIntegrationSubnetId") {
		v.ArmID(*pl.VnetIntegrationSubnetID, "properties.platform.vnetIntegrationSubnetId", fieldcheck.TypeSubnet)
		if pl.SubnetID != nil && strings.EqualFold(*pl.SubnetID, *pl.VnetIntegrationSubnetID) {
			v.Add("properties.platform.vnetIntegrationSubnetId", "The VNet integration subnet must not be the cluster subnet '%s'.", *pl.SubnetID)
		}
	}
	if pl.NetworkSecurityGroupID != nil {
		v.ArmID(*pl.NetworkSecurityGroupID, "properties.platform.networkSecurityGroupId", fieldcheck.TypeNSG)
	}
	v.OperatorsAuthentication(pl.OperatorsAuthentication)
}

func validateEtcd(v *fieldcheck.Checker, de *EtcdDataEncryptionProfile) {
	const base = "properties.etcd.dataEncryption"
	// From this version on the only mode is CustomerManaged, and it is required (generated); a
	// platform-managed key is what a cluster without etcd.dataEncryption gets.
	if str(de.KeyManagementMode, "") == api.KeyManagementCustomer && de.CustomerManaged == nil {
		v.Add(base+".customerManaged", "Missing required field '%s.customerManaged' (keyManagementMode is CustomerManaged).", base)
	}
	cm := de.CustomerManaged
	if cm == nil {
		return
	}
	// encryptionType KMS (the only one) needs kms, which the specification lets out.
	if !v.Required(cm.KMS != nil, base+".customerManaged.kms") {
		return
	}
	noVisibility := func(c *api.Cluster) bool {
		cm := c.Properties.Etcd.DataEncryption.CustomerManaged
		return cm == nil || cm.KMS == nil || cm.KMS.Visibility == ""
	}
	if v.RequiredSince(cm.KMS.Visibility, noVisibility, base+".customerManaged.kms.visibility") {
		v.Enum(cm.KMS.Visibility, base+".customerManaged.kms.visibility", KeyVaultVisibilityValues...)
	}
}

func validateIdentity(v *fieldcheck.Checker, e *HcpOpenShiftCluster) {
	var operators *UserAssignedIdentitiesProfile
	if p := e.Properties; p != nil && p.Platform != nil && p.Platform.OperatorsAuthentication != nil {
		operators = p.Platform.OperatorsAuthentication.UserAssignedIdentities
	}
	v.Identity(e.Identity, operators)
}
