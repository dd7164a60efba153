package v20240610preview

import (
	"github.com/openhcp/openhcp/frontend/pkg/api"
	"github.com/openhcp/openhcp/frontend/pkg/api/fieldcheck"
)

// validate checks a decoded body: first what the specification says of each field (required
// fields, enums, ranges, lengths: validateSpec, generated), then the rules it cannot say,
// written here: resource ID types, CIDR blocks, identities and cross-field rules. These stay
// hand-written because they are meaning, not shape.
func validate(e *HcpOpenShiftCluster) error {
	v := &fieldcheck.Checker{}
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
		v.VersionID(p.Version.ID, "properties.version.id")
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
	if pl.NetworkSecurityGroupID != nil {
		v.ArmID(*pl.NetworkSecurityGroupID, "properties.platform.networkSecurityGroupId", fieldcheck.TypeNSG)
	}
	v.OperatorsAuthentication(pl.OperatorsAuthentication)
}

func validateEtcd(v *fieldcheck.Checker, de *EtcdDataEncryptionProfile) {
	const base = "properties.etcd.dataEncryption"
	// keyManagementMode (enum, generated) defaults to PlatformManaged; each mode has its own rule
	// about customerManaged, which the specification cannot say.
	mode := str(de.KeyManagementMode, api.KeyManagementPlatform)
	switch {
	case mode == api.KeyManagementCustomer && de.CustomerManaged == nil:
		v.Add(base+".customerManaged", "Missing required field '%s.customerManaged' (keyManagementMode is CustomerManaged).", base)
	case mode == api.KeyManagementPlatform && de.CustomerManaged != nil:
		v.Add(base+".customerManaged", "Field '%s.customerManaged' must not be set when keyManagementMode is PlatformManaged.", base)
	}
	// encryptionType KMS (the only one) needs kms, which the specification lets out. In this
	// version the key vault name belongs to the active key (KmsKey.vaultName, generated).
	if cm := de.CustomerManaged; cm != nil {
		v.Required(cm.KMS != nil, base+".customerManaged.kms")
	}
}

func validateIdentity(v *fieldcheck.Checker, e *HcpOpenShiftCluster) {
	var operators *UserAssignedIdentitiesProfile
	if p := e.Properties; p != nil && p.Platform != nil && p.Platform.OperatorsAuthentication != nil {
		operators = p.Platform.OperatorsAuthentication.UserAssignedIdentities
	}
	v.Identity(e.Identity, operators)
}
