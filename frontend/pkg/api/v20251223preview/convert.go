package v20251223preview

import (
	"github.com/openhcp/openhcp/frontend/pkg/api"
	"github.com/openhcp/openhcp/frontend/pkg/api/profiles"
)

// DecodeCluster implements api.Version.
func (v version) DecodeCluster(body []byte) (*api.Cluster, error) {
	return v.DecodeClusterUpdate(body, nil)
}

// DecodeClusterUpdate implements api.Version.
func (version) DecodeClusterUpdate(body []byte, stored *api.Cluster) (*api.Cluster, error) {
	var ext HcpOpenShiftCluster
	if err := api.DecodeStrict(body, &ext); err != nil {
		return nil, err
	}
	if err := validate(&ext, stored); err != nil {
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

func ptr[T comparable](v T) *T {
	var zero T
	if v == zero {
		return nil
	}
	return &v
}

// toInternal converts a validated body, applying defaults. Read-only fields are dropped.
func toInternal(e *HcpOpenShiftCluster) *api.Cluster {
	c := &api.Cluster{Location: str(e.Location, ""), Tags: e.Tags}
	p := e.Properties
	if p == nil {
		p = &HcpOpenShiftClusterProperties{}
	}
	// What Cluster Service's spec holds is filled through its arm_path options, defaults
	// applied; the rest is this version's.
	c.Properties = api.SpecPropertiesFromARM(e)
	out := &c.Properties
	if pl := p.Platform; pl != nil {
		if oa := pl.OperatorsAuthentication; oa != nil && oa.UserAssignedIdentities != nil {
			out.Platform.OperatorsAuthentication.UserAssignedIdentities = oa.UserAssignedIdentities.ToInternal()
		}
	}
	// The etcd block's layout is this version's (where vaultName sits, which modes exist), and
	// the model keeps the key's parts, where Cluster Service holds one key URL.
	out.Etcd.DataEncryption.KeyManagementMode = api.KeyManagementPlatform
	if et := p.Etcd; et != nil && et.DataEncryption != nil {
		de := et.DataEncryption
		out.Etcd.DataEncryption.KeyManagementMode = str(de.KeyManagementMode, api.KeyManagementPlatform)
		if cm := de.CustomerManaged; cm != nil {
			icm := &api.CustomerManagedEncryptionProfile{EncryptionType: str(cm.EncryptionType, api.EncryptionTypeKMS)}
			if cm.KMS != nil && cm.KMS.ActiveKey != nil {
				k := cm.KMS.ActiveKey
				icm.KMS = &api.KMSKey{VaultName: str(cm.KMS.VaultName, ""), Visibility: str(cm.KMS.Visibility, ""), Name: str(k.Name, ""), Version: str(k.Version, "")}
			}
			out.Etcd.DataEncryption.CustomerManaged = icm
		}
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
	// What every version renders alike (api.Cluster.RenderProperties): the spec's properties and
	// the read-only ones; the rest is this version's.
	props := &HcpOpenShiftClusterProperties{}
	c.RenderProperties(props)
	props.Version.ID = profiles.Present(p.Version.ID)                                             // required in this version's schema
	props.Platform.VnetIntegrationSubnetID = profiles.Present(p.Platform.VnetIntegrationSubnetID) // required in this version's schema
	props.Etcd = &EtcdProfile{DataEncryption: &EtcdDataEncryptionProfile{KeyManagementMode: ptr(p.Etcd.DataEncryption.KeyManagementMode)}}
	if cm := p.Etcd.DataEncryption.CustomerManaged; cm != nil {
		ecm := &CustomerManagedEncryptionProfile{EncryptionType: ptr(cm.EncryptionType)}
		if cm.KMS != nil {
			ecm.KMS = &KmsEncryptionProfile{VaultName: ptr(cm.KMS.VaultName), Visibility: ptr(cm.KMS.Visibility), ActiveKey: &KmsKey{Name: ptr(cm.KMS.Name), Version: ptr(cm.KMS.Version)}}
		}
		props.Etcd.DataEncryption.CustomerManaged = ecm
	}
	ext.Properties = props
	if id := c.Identity; id != nil {
		ext.Identity = profiles.RenderIdentity(id)
	}
	return ext
}

// PatchCluster implements api.Version.
func (v version) PatchCluster(stored *api.Cluster, body []byte) (*api.Cluster, error) {
	return api.Patch(v, stored, body, specClusterUpdatePaths) // what a PATCH body may hold: the specification's HcpOpenShiftClusterUpdate
}

// Preserve implements api.Version: this version predates ingress and crypto restrictions.
func (version) Preserve(stored, next *api.Cluster) {
	next.Properties.Ingress = stored.Properties.Ingress
	next.Properties.CryptoRestrictions = stored.Properties.CryptoRestrictions
}

// UpdatableFields implements api.Version (x-ms-mutability "update" in this version's spec).
func (version) UpdatableFields() []string {
	return []string{
		"identity",
		"properties.version.id",
		"properties.version.channelGroup",
		"properties.platform.operatorsAuthentication",
		"properties.autoscaling",
		"properties.nodeDrainTimeoutMinutes",
		"properties.api.authorizedCidrs",
		"properties.etcd.dataEncryption.customerManaged.kms.version",
		"properties.imageDigestMirrors",
	}
}

// ExternalPath implements api.Version.
func (version) ExternalPath(p string) string { return api.KMSExternalPath(p, false) }
