package fieldcheck

import (
	"github.com/openhcp/openhcp/frontend/pkg/api"
	"github.com/openhcp/openhcp/frontend/pkg/api/armpath"
	"github.com/openhcp/openhcp/frontend/pkg/api/profiles"
)

// ClusterRules are what differs between api-versions in a cluster body's constraints beyond
// what the generated checks (validateSpec) say: each is a difference in meaning, and each
// version package says why it sets it.
type ClusterRules struct {
	// VersionIDRequiredSince: properties.version.id is required, except for a cluster created
	// through an older version without one (RequiredSince); otherwise it is optional and checked
	// only for its form (VersionID).
	VersionIDRequiredSince bool
	// VnetIntegrationSubnet: the version has properties.platform.vnetIntegrationSubnetId,
	// required since it came (RequiredSince), a subnet other than the cluster's.
	VnetIntegrationSubnet bool
	// PlatformManagedKey: keyManagementMode has the PlatformManaged mode (the default), with
	// which customerManaged must not be set. Without it the only mode is CustomerManaged and a
	// platform-managed key is what a body without etcd.dataEncryption gets.
	PlatformManagedKey bool
	// KMSVisibility: the version has kms.visibility, required since it came (RequiredSince);
	// its allowed values are the version's enum (KeyVaultVisibilityValues).
	KMSVisibility []string
}

// Cluster checks, after the generated checks, what the specification cannot say of a cluster
// body doc (decoded into its api-version's type): resource ID types, CIDR blocks, identities,
// fields required since a version, and cross-field rules. These are meaning, not shape.
func (v *Checker) Cluster(doc any, r ClusterRules) {
	// The specification lets properties out; a cluster cannot be created without them.
	if v.Required(armpath.Lookup(doc, "properties") != nil, "properties") {
		v.clusterProperties(doc, r)
	}
	operators := armpath.As[profiles.UserAssignedIdentitiesProfile](doc, OperatorIdentitiesPath)
	v.Identity(armpath.As[profiles.ManagedServiceIdentity](doc, "identity"), operators)
	v.operatorNames(strAt(doc, "properties.version.id"), operators)
}

func (v *Checker) clusterProperties(doc any, r ClusterRules) {
	at := func(path string) any { return armpath.Lookup(doc, path) }
	if at("properties.version") != nil {
		if r.VersionIDRequiredSince {
			v.RequiredSince(strAt(doc, "properties.version.id"), func(c *api.Cluster) bool { return c.Spec.GetVersionId() == "" }, "properties.version.id")
		} else {
			v.VersionID(strAt(doc, "properties.version.id"), "properties.version.id")
		}
		v.ChannelGroup(strAt(doc, "properties.version.channelGroup"), "properties.version.channelGroup")
	}
	mirrors, _ := at("properties.imageDigestMirrors").([]profiles.ImageDigestMirror) // none before 2025-12-23-preview
	v.ImageDigestMirrors(mirrors)
	if d := armpath.As[profiles.DNSProfile](doc, "properties.dns"); d != nil {
		v.DNS(d)
	}
	if n := armpath.As[profiles.NetworkProfile](doc, "properties.network"); n != nil {
		v.Network(n)
	}
	if a := armpath.As[profiles.APIProfile](doc, "properties.api"); a != nil {
		v.API(a)
	}
	if at("properties.platform") != nil {
		v.clusterPlatform(doc, r)
	}
	if a := armpath.As[profiles.ClusterAutoscalingProfile](doc, "properties.autoscaling"); a != nil {
		v.Autoscaling(a)
	}
	if at("properties.etcd.dataEncryption") != nil {
		v.etcd(doc, r)
	}
	if ir := armpath.As[profiles.ClusterImageRegistryProfile](doc, "properties.clusterImageRegistry"); ir != nil {
		v.ImageRegistry(ir)
	}
}

func (v *Checker) clusterPlatform(doc any, r ClusterRules) {
	v.ManagedResourceGroup(strAt(doc, "properties.platform.managedResourceGroup"))
	subnet := strAt(doc, "properties.platform.subnetId")
	if subnet != nil {
		v.ArmID(*subnet, "properties.platform.subnetId", TypeSubnet)
	}
	const vnet = "properties.platform.vnetIntegrationSubnetId"
	if vi := strAt(doc, vnet); r.VnetIntegrationSubnet &&
		v.RequiredSince(vi, func(c *api.Cluster) bool { return c.Spec.GetAzure().GetVnetIntegrationSubnetId() == "" }, vnet) {
		// That it is not the cluster's subnet is Cluster Service's rule
		// (model.ValidateVnetIntegrationSubnet), checked once there.
		v.ArmID(*vi, vnet, TypeSubnet)
	}
	if nsg := strAt(doc, "properties.platform.networkSecurityGroupId"); nsg != nil {
		v.ArmID(*nsg, "properties.platform.networkSecurityGroupId", TypeNSG)
	}
	v.OperatorsAuthentication(armpath.As[profiles.OperatorsAuthenticationProfile](doc, "properties.platform.operatorsAuthentication"))
}

// etcd checks properties.etcd.dataEncryption. Where the active key's fields sit (vaultName in
// the key or beside it) is the generated type's and its checks'; here only what the
// specification cannot say.
func (v *Checker) etcd(doc any, r ClusterRules) {
	const base = "properties.etcd.dataEncryption"
	// keyManagementMode (enum, generated) defaults to PlatformManaged; each mode has its own
	// rule about customerManaged.
	mode := strAt(doc, base+".keyManagementMode")
	customerManaged := armpath.Lookup(doc, base+".customerManaged") != nil
	switch {
	case (mode != nil && *mode == api.KeyManagementCustomer) && !customerManaged:
		v.Add(base+".customerManaged", "Missing required field '%s.customerManaged' (keyManagementMode is CustomerManaged).", base)
	case r.PlatformManagedKey && (mode == nil || *mode == api.KeyManagementPlatform) && customerManaged:
		v.Add(base+".customerManaged", "Field '%s.customerManaged' must not be set when keyManagementMode is PlatformManaged.", base)
	}
	if !customerManaged {
		return
	}
	// encryptionType KMS (the only one) needs kms, which the specification lets out.
	if !v.Required(armpath.Lookup(doc, base+".customerManaged.kms") != nil, base+".customerManaged.kms") || r.KMSVisibility == nil {
		return
	}
	noVisibility := func(c *api.Cluster) bool {
		cm := c.Etcd.CustomerManaged
		return cm == nil || cm.KMS == nil || cm.KMS.Visibility == ""
	}
	const visibility = base + ".customerManaged.kms.visibility"
	if p := strAt(doc, visibility); v.RequiredSince(p, noVisibility, visibility) {
		v.Enum(p, visibility, r.KMSVisibility...)
	}
}

// strAt is the string at path in doc; nil when absent (or null).
func strAt(doc any, path string) *string {
	if s, ok := armpath.Lookup(doc, path).(string); ok {
		return &s
	}
	return nil
}
