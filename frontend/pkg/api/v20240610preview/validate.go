package v20240610preview

import (
	"github.com/openhcp/openhcp/frontend/pkg/api"
	"github.com/openhcp/openhcp/frontend/pkg/api/fieldcheck"
)

// validate checks a decoded body against the specification's constraints (required fields,
// enums, ranges, patterns, resource ID types) and a few cross-field rules.
func validate(e *HcpOpenShiftCluster) error {
	v := &fieldcheck.Checker{}
	v.Required(e.Location != nil && *e.Location != "", "location")
	if v.Required(e.Properties != nil, "properties") {
		validateProperties(v, e.Properties)
	}
	validateIdentity(v, e)
	return v.Err()
}

func validateProperties(v *fieldcheck.Checker, p *HcpOpenShiftClusterProperties) {
	if p.Version != nil {
		v.ChannelGroup(p.Version.ChannelGroup, "properties.version.channelGroup")
	}
	if d := p.DNS; d != nil {
		v.BaseDomainPrefix(d.BaseDomainPrefix)
	}
	if n := p.Network; n != nil {
		v.Network(n, networkDefaults)
	}
	if a := p.API; a != nil {
		v.API(a)
	}
	if v.Required(p.Platform != nil, "properties.platform") {
		validatePlatform(v, p.Platform)
	}
	if a := p.Autoscaling; a != nil {
		v.Autoscaling(a)
	}
	v.RangeInt(p.NodeDrainTimeoutMinutes, "properties.nodeDrainTimeoutMinutes", 0, 10080)
	if et := p.Etcd; et != nil && et.DataEncryption != nil {
		validateEtcd(v, et.DataEncryption)
	}
	if r := p.ClusterImageRegistry; r != nil {
		v.Enum(r.State, "properties.clusterImageRegistry.state", api.RegistryEnabled, api.RegistryDisabled)
	}
}

func validatePlatform(v *fieldcheck.Checker, pl *PlatformProfile) {
	v.ManagedResourceGroup(pl.ManagedResourceGroup)
	if v.Required(pl.SubnetID != nil, "properties.platform.subnetId") {
		v.ArmID(*pl.SubnetID, "properties.platform.subnetId", fieldcheck.TypeSubnet)
	}
	if v.Required(pl.NetworkSecurityGroupID != nil, "properties.platform.networkSecurityGroupId") {
		v.ArmID(*pl.NetworkSecurityGroupID, "properties.platform.networkSecurityGroupId", fieldcheck.TypeNSG)
	}
	v.Enum(pl.OutboundType, "properties.platform.outboundType", api.OutboundTypeLoadBalancer)
	v.OperatorsAuthentication(pl.OperatorsAuthentication)
}

func validateEtcd(v *fieldcheck.Checker, de *EtcdDataEncryptionProfile) {
	const base = "properties.etcd.dataEncryption"
	v.Enum(de.KeyManagementMode, base+".keyManagementMode", api.KeyManagementCustomer, api.KeyManagementPlatform)
	mode := str(de.KeyManagementMode, api.KeyManagementPlatform)
	switch {
	case mode == api.KeyManagementCustomer && de.CustomerManaged == nil:
		v.Add(base+".customerManaged", "Missing required field '%s.customerManaged' (keyManagementMode is CustomerManaged).", base)
	case mode == api.KeyManagementPlatform && de.CustomerManaged != nil:
		v.Add(base+".customerManaged", "Field '%s.customerManaged' must not be set when keyManagementMode is PlatformManaged.", base)
	}
	cm := de.CustomerManaged
	if cm == nil {
		return
	}
	v.Enum(cm.EncryptionType, base+".customerManaged.encryptionType", api.EncryptionTypeKMS)
	if !v.Required(cm.KMS != nil, base+".customerManaged.kms") {
		return
	}
	k := cm.KMS.ActiveKey
	if !v.Required(k != nil, base+".customerManaged.kms.activeKey") {
		return
	}
	// In this version the key vault name belongs to the active key.
	v.Length(k.VaultName, base+".customerManaged.kms.activeKey.vaultName")
	v.Length(k.Name, base+".customerManaged.kms.activeKey.name")
	v.Length(k.Version, base+".customerManaged.kms.activeKey.version")
}

func validateIdentity(v *fieldcheck.Checker, e *HcpOpenShiftCluster) {
	var operators *UserAssignedIdentitiesProfile
	if p := e.Properties; p != nil && p.Platform != nil && p.Platform.OperatorsAuthentication != nil {
		operators = p.Platform.OperatorsAuthentication.UserAssignedIdentities
	}
	v.Identity(e.Identity, operators)
}
