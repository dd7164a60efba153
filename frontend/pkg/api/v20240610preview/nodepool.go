package v20240610preview

import (
	"github.com/openhcp/openhcp/frontend/pkg/api"
	"github.com/openhcp/openhcp/frontend/pkg/api/fieldcheck"
	"github.com/openhcp/openhcp/frontend/pkg/api/profiles"
	"github.com/openhcp/openhcp/internal/arm"
)

func init() { api.RegisterNodePool(version{}) }

// NodePool is the hcpOpenShiftClusters/nodePools resource of this version.
type NodePool struct {
	// Read-only envelope fields: accepted in a PUT body and ignored.
	ID         *string         `json:"id,omitempty"`
	Name       *string         `json:"name,omitempty"`
	Type       *string         `json:"type,omitempty"`
	SystemData *arm.SystemData `json:"systemData,omitempty"`

	Location   *string                 `json:"location,omitempty"`
	Tags       map[string]string       `json:"tags,omitempty"`
	Identity   *ManagedServiceIdentity `json:"identity,omitempty"`
	Properties *NodePoolProperties     `json:"properties,omitempty"`
}

type NodePoolProperties struct {
	ProvisioningState       *string                          `json:"provisioningState,omitempty"`
	Version                 *profiles.NodePoolVersionProfile `json:"version,omitempty"`
	Platform                *NodePoolPlatformProfile         `json:"platform,omitempty"`
	Replicas                *int32                           `json:"replicas,omitempty"`
	AutoRepair              *bool                            `json:"autoRepair,omitempty"`
	AutoScaling             *profiles.NodePoolAutoScaling    `json:"autoScaling,omitempty"`
	Labels                  []profiles.Label                 `json:"labels,omitempty"`
	Taints                  []profiles.Taint                 `json:"taints,omitempty"`
	NodeDrainTimeoutMinutes *int32                           `json:"nodeDrainTimeoutMinutes,omitempty"`
}

type NodePoolPlatformProfile struct {
	SubnetID               *string        `json:"subnetId,omitempty"`
	VMSize                 *string        `json:"vmSize,omitempty"`
	EnableEncryptionAtHost *bool          `json:"enableEncryptionAtHost,omitempty"`
	OSDisk                 *OsDiskProfile `json:"osDisk,omitempty"`
	AvailabilityZone       *string        `json:"availabilityZone,omitempty"`
}

type OsDiskProfile struct {
	SizeGiB                *int32  `json:"sizeGiB,omitempty"`
	DiskStorageAccountType *string `json:"diskStorageAccountType,omitempty"`
	EncryptionSetID        *string `json:"encryptionSetId,omitempty"`
}

// nodePoolRules: version.id optional, no maximum disk size; this version has no osDisk.diskType.
var nodePoolRules = fieldcheck.NodePoolRules{}

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
			f.OSDiskSizeGiB, f.DiskStorageAccountType, f.EncryptionSetID = d.SizeGiB, d.DiskStorageAccountType, d.EncryptionSetID
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
	v.NodePool(&f, ext.Properties != nil && ext.Properties.Platform != nil, nodePoolRules)
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
	ext.Properties = &NodePoolProperties{
		ProvisioningState: ptr(string(np.ProvisioningState)),
		Version:           f.Version, Replicas: f.Replicas, AutoRepair: f.AutoRepair, AutoScaling: f.AutoScaling,
		Labels: f.Labels, Taints: f.Taints, NodeDrainTimeoutMinutes: f.NodeDrainTimeoutMinutes,
		Platform: &NodePoolPlatformProfile{
			SubnetID: f.SubnetID, VMSize: f.VMSize, EnableEncryptionAtHost: f.EnableEncryptionAtHost, AvailabilityZone: f.AvailabilityZone,
			OSDisk: &OsDiskProfile{SizeGiB: f.OSDiskSizeGiB, DiskStorageAccountType: f.DiskStorageAccountType, EncryptionSetID: f.EncryptionSetID},
		},
	}
	if np.Identity != nil {
		ext.Identity = profiles.RenderIdentity(np.Identity)
	}
	return ext
}

// NodePoolUpdatePaths implements api.NodePoolVersion: NodePoolUpdate of this version.
func (version) NodePoolUpdatePaths() []string {
	return []string{
		"tags",
		"identity",
		"properties.version",
		"properties.replicas",
		"properties.autoScaling",
		"properties.labels",
		"properties.taints",
		"properties.nodeDrainTimeoutMinutes",
	}
}

// PreserveNodePool implements api.NodePoolVersion: osDisk.diskType came with
// 2025-12-23-preview, so a write through this version keeps the stored one.
func (version) PreserveNodePool(stored, next *api.NodePool) {
	if stored != nil && stored.Properties.Platform.OSDisk.DiskType != "" {
		next.Properties.Platform.OSDisk.DiskType = stored.Properties.Platform.OSDisk.DiskType
	}
}
