package profiles

import "github.com/openhcp/openhcp/frontend/pkg/api"

// Node pool sub-structures whose shape is the same in every api-version.

// NodePoolVersionProfile is properties.version of a node pool (NodePoolVersionProfile, and
// NodePoolVersionProfileUpdate from 2025-12-23-preview on, which differ only in what is required).
type NodePoolVersionProfile struct {
	ID           *string `json:"id,omitempty"`
	ChannelGroup *string `json:"channelGroup,omitempty"`
}

type NodePoolAutoScaling struct {
	Min *int32 `json:"min,omitempty"`
	Max *int32 `json:"max,omitempty"`
}

type Label struct {
	Key   *string `json:"key,omitempty"`
	Value *string `json:"value,omitempty"`
}

type Taint struct {
	Key    *string `json:"key,omitempty"`
	Value  *string `json:"value,omitempty"`
	Effect *string `json:"effect,omitempty"`
}

// NodePoolFields are the node pool properties every api-version has, whatever its types; a
// version package fills them from its body and converts them here, so the defaults are the same
// everywhere.
type NodePoolFields struct {
	Version                 *NodePoolVersionProfile
	Replicas                *int32
	AutoRepair              *bool
	AutoScaling             *NodePoolAutoScaling
	Labels                  []Label
	Taints                  []Taint
	NodeDrainTimeoutMinutes *int32
	SubnetID                *string
	VMSize                  *string
	EnableEncryptionAtHost  *bool
	AvailabilityZone        *string
	OSDiskSizeGiB           *int32
	DiskStorageAccountType  *string
	EncryptionSetID         *string
	// DiskType is nil in versions without it.
	DiskType *string
}

// ToInternal converts what the body says. What it leaves out stays empty: Cluster Service's
// model defaults it (the channel group to the cluster's, the OS disk to 64 GiB Premium_LRS
// persistent, the subnet to the cluster's) and the frontend stores and renders its answer. Only
// autoRepair's default (true) is applied here: Cluster Service's spec cannot tell an absent
// autoRepair from false.
func (f *NodePoolFields) ToInternal() api.NodePoolProperties {
	var p api.NodePoolProperties
	if v := f.Version; v != nil {
		p.Version.ID = str(v.ID, "")
		p.Version.ChannelGroup = str(v.ChannelGroup, "")
	}
	p.Platform.SubnetID = str(f.SubnetID, "")
	p.Platform.VMSize = str(f.VMSize, "")
	p.Platform.EnableEncryptionAtHost = f.EnableEncryptionAtHost != nil && *f.EnableEncryptionAtHost
	p.Platform.AvailabilityZone = str(f.AvailabilityZone, "")
	p.Platform.OSDisk = api.OSDiskProfile{
		SizeGiB:                i32(f.OSDiskSizeGiB, 0),
		DiskStorageAccountType: str(f.DiskStorageAccountType, ""),
		EncryptionSetID:        str(f.EncryptionSetID, ""),
		DiskType:               str(f.DiskType, ""),
	}
	p.AutoRepair = f.AutoRepair == nil || *f.AutoRepair
	// Both as given: Cluster Service's model decides whether they exclude each other.
	p.Replicas = i32(f.Replicas, 0)
	if a := f.AutoScaling; a != nil {
		p.AutoScaling = &api.NodePoolAutoScaling{Min: i32(a.Min, 0), Max: i32(a.Max, 0)}
	}
	for _, l := range f.Labels {
		p.Labels = append(p.Labels, api.Label{Key: str(l.Key, ""), Value: str(l.Value, "")})
	}
	for _, t := range f.Taints {
		p.Taints = append(p.Taints, api.Taint{Key: str(t.Key, ""), Value: str(t.Value, ""), Effect: str(t.Effect, "")})
	}
	if f.NodeDrainTimeoutMinutes != nil {
		n := *f.NodeDrainTimeoutMinutes
		p.NodeDrainTimeoutMinutes = &n
	}
	return p
}

// RenderNodePoolFields is the inverse of ToInternal. Replicas is left out when autoscaling is
// set (the two exclude each other), so a GET body can be sent back as a PUT.
func RenderNodePoolFields(p *api.NodePoolProperties) NodePoolFields {
	f := NodePoolFields{
		Version:                &NodePoolVersionProfile{ID: ptr(p.Version.ID), ChannelGroup: ptr(p.Version.ChannelGroup)},
		AutoRepair:             &p.AutoRepair,
		SubnetID:               ptr(p.Platform.SubnetID),
		VMSize:                 ptr(p.Platform.VMSize),
		EnableEncryptionAtHost: &p.Platform.EnableEncryptionAtHost,
		AvailabilityZone:       ptr(p.Platform.AvailabilityZone),
		OSDiskSizeGiB:          ptr(p.Platform.OSDisk.SizeGiB),
		DiskStorageAccountType: ptr(p.Platform.OSDisk.DiskStorageAccountType),
		EncryptionSetID:        ptr(p.Platform.OSDisk.EncryptionSetID),
		DiskType:               ptr(p.Platform.OSDisk.DiskType),
	}
	if a := p.AutoScaling; a != nil {
		f.AutoScaling = &NodePoolAutoScaling{Min: &a.Min, Max: &a.Max}
	} else {
		r := p.Replicas
		f.Replicas = &r
	}
	for _, l := range p.Labels {
		f.Labels = append(f.Labels, Label{Key: ptr(l.Key), Value: &l.Value})
	}
	for _, t := range p.Taints {
		f.Taints = append(f.Taints, Taint{Key: ptr(t.Key), Value: ptr(t.Value), Effect: ptr(t.Effect)})
	}
	if n := p.NodeDrainTimeoutMinutes; n != nil {
		v := *n
		f.NodeDrainTimeoutMinutes = &v
	}
	return f
}

// VersionWithRequiredID shapes a rendered version that has no id, for the api-versions whose
// NodePoolVersionProfile requires id (from 2025-12-23-preview): a pool created without a version
// runs its cluster's, and showing {"channelGroup":"stable"} would break the schema and make the
// GET body fail as a PUT (found by FuzzDecodeNodePoolAllVersions), so a version that says only
// the default channel group is left out (a PUT of the GET body keeps it). A pool created through
// 2024-06-10-preview with another channel group and no id shows the group and the required id
// as "" (docs/api.md, Required properties in responses); a PUT or PATCH of that keeps it.
func (f *NodePoolFields) VersionWithRequiredID() {
	if f.Version == nil || (f.Version.ID != nil && *f.Version.ID != "") {
		return
	}
	if f.Version.ChannelGroup == nil || *f.Version.ChannelGroup == api.ChannelGroupStable {
		f.Version = nil
		return
	}
	f.Version.ID = Present("")
}
