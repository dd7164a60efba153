package v20251223preview

import (
	"slices"

	"github.com/openhcp/openhcp/frontend/pkg/api"
	"github.com/openhcp/openhcp/frontend/pkg/api/fieldcheck"
	"github.com/openhcp/openhcp/frontend/pkg/api/profiles"
)

func init() { api.RegisterNodePool(version{}) }

// nodePoolRules: version.id required (NodePoolVersionProfile), no maximum disk size.
var nodePoolRules = fieldcheck.NodePoolRules{VersionIDRequired: true}

func (e *NodePool) fields() profiles.NodePoolFields {
	p := e.Properties
	if p == nil {
		p = &NodePoolProperties{}
	}
	f := profiles.NodePoolFields{
		Version: p.Version, Replicas: p.Replicas, AutoRepair: p.AutoRepair, AutoScaling: p.AutoScaling,
		Labels: p.Labels, Taints: p.Taints, NodeDrainTimeoutMinutes: p.NodeDrainTimeoutMinutes,
	}
	if pl := p.Platform; pl != nil {
		f.SubnetID, f.VMSize, f.EnableEncryptionAtHost, f.AvailabilityZone = pl.SubnetID, pl.VMSize, pl.EnableEncryptionAtHost, pl.AvailabilityZone
		if d := pl.OSDisk; d != nil {
			f.OSDiskSizeGiB, f.DiskStorageAccountType, f.EncryptionSetID, f.DiskType = d.SizeGiB, d.DiskStorageAccountType, d.EncryptionSetID, d.DiskType
		}
	}
	return f
}

// DecodeNodePool implements api.NodePoolVersion.
func (version) DecodeNodePool(body []byte, stored *api.NodePool) (*api.NodePool, error) {
	var ext NodePool
	if err := api.DecodeStrict(body, &ext); err != nil {
		return nil, err
	}
	f := ext.fields()
	v := &fieldcheck.Checker{}
	v.Required(ext.Location != nil && *ext.Location != "", "location")
	rules := nodePoolRules
	rules.StoredWithoutVersionID = stored != nil && stored.Properties.Version.ID == ""
	v.NodePool(&f, ext.Properties != nil && ext.Properties.Platform != nil, rules)
	v.NodePoolIdentity(ext.Identity)
	if err := v.Err(); err != nil {
		return nil, err
	}
	np := &api.NodePool{Location: str(ext.Location, ""), Tags: ext.Tags, Properties: f.ToInternal()}
	if ext.Identity != nil {
		np.Identity = ext.Identity.ToInternal()
	}
	return np, nil
}

// RenderNodePool implements api.NodePoolVersion.
func (version) RenderNodePool(np *api.NodePool) any {
	ext := &NodePool{Location: ptr(np.Location), Tags: np.Tags, SystemData: np.SystemData}
	if np.ID != nil {
		ext.ID, ext.Name, ext.Type = ptr(np.ID.String()), ptr(np.ID.Name()), ptr(api.NodePoolResourceType)
	}
	if ext.Tags == nil {
		ext.Tags = map[string]string{}
	}
	f := profiles.RenderNodePoolFields(&np.Properties)
	f.VersionWithRequiredID() // version.id is required in this version's schema
	ext.Properties = &NodePoolProperties{
		ProvisioningState: ptr(string(np.ProvisioningState)),
		Version:           f.Version, Replicas: f.Replicas, AutoRepair: f.AutoRepair, AutoScaling: f.AutoScaling,
		Labels: f.Labels, Taints: f.Taints, NodeDrainTimeoutMinutes: f.NodeDrainTimeoutMinutes,
		Platform: &NodePoolPlatformProfile{
			SubnetID: f.SubnetID, VMSize: f.VMSize, EnableEncryptionAtHost: f.EnableEncryptionAtHost, AvailabilityZone: f.AvailabilityZone,
			OSDisk: &OsDiskProfile{SizeGiB: f.OSDiskSizeGiB, DiskStorageAccountType: f.DiskStorageAccountType, EncryptionSetID: f.EncryptionSetID, DiskType: f.DiskType},
		},
	}
	if np.Identity != nil {
		ext.Identity = profiles.RenderIdentity(np.Identity)
	}
	return ext
}

// NodePoolUpdatePaths implements api.NodePoolVersion: NodePoolUpdate of this version, generated
// from the specification.
func (version) NodePoolUpdatePaths() []string { return slices.Clone(specNodePoolUpdatePaths) }

// PreserveNodePool implements api.NodePoolVersion: this version expresses every field.
func (version) PreserveNodePool(stored, next *api.NodePool) {}
