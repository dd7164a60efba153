package fieldcheck

import (
	"fmt"

	"github.com/openhcp/openhcp/frontend/pkg/api/profiles"
)

// Resource types that fields of a node pool refer to.
const TypeDiskEncryptionSet = "Microsoft.Compute/diskEncryptionSets"

// NodePoolRules are what differs between api-versions in a node pool's constraints.
type NodePoolRules struct {
	// VersionIDRequired: properties.version.id is required when properties.version is given
	// (from 2025-12-23-preview on).
	VersionIDRequired bool
	// StoredWithoutVersionID: the pool being replaced has no version.id (created through
	// 2024-06-10-preview without one); an empty or absent id keeps it so.
	StoredWithoutVersionID bool
	// MaxOSDiskSizeGiB is osDisk.sizeGiB's maximum (0: none).
	MaxOSDiskSizeGiB int64
}

// NodePool checks the node pool properties shared by every api-version. hasPlatform says
// whether properties.platform was in the body.
func (v *Checker) NodePool(f *profiles.NodePoolFields, hasPlatform bool, r NodePoolRules) {
	if f.Version != nil {
		v.ChannelGroup(f.Version.ChannelGroup, "properties.version.channelGroup")
	}
	if ver := f.Version; ver != nil && r.VersionIDRequired {
		empty := ver.ID == nil || *ver.ID == ""
		if !(empty && r.StoredWithoutVersionID) {
			v.Required(!empty, "properties.version.id")
		}
	}
	if v.Required(hasPlatform, "properties.platform") {
		if v.Required(f.VMSize != nil && *f.VMSize != "", "properties.platform.vmSize") && len(*f.VMSize) > 255 {
			v.Add("properties.platform.vmSize", "Field 'properties.platform.vmSize' must be at most 255 characters long.")
		}
		if f.SubnetID != nil {
			v.ArmID(*f.SubnetID, "properties.platform.subnetId", TypeSubnet)
		}
		hi := int64(1<<31 - 1)
		if r.MaxOSDiskSizeGiB > 0 {
			hi = r.MaxOSDiskSizeGiB
		}
		v.RangeInt(f.OSDiskSizeGiB, "properties.platform.osDisk.sizeGiB", 64, hi)
		v.Enum(f.DiskStorageAccountType, "properties.platform.osDisk.diskStorageAccountType", "Premium_LRS", "StandardSSD_LRS", "Standard_LRS")
		if f.EncryptionSetID != nil {
			v.ArmID(*f.EncryptionSetID, "properties.platform.osDisk.encryptionSetId", TypeDiskEncryptionSet)
		}
		v.Enum(f.DiskType, "properties.platform.osDisk.diskType", "Managed", "Ephemeral")
	}
	// The specification's structural bound only: how many nodes a pool may have, and that
	// replicas and autoScaling exclude each other, are Cluster Service's rule (its model
	// package), which refuses with the field's path.
	v.notNegative(f.Replicas, "properties.replicas")
	if a := f.AutoScaling; a != nil {
		v.notNegative(a.Min, "properties.autoScaling.min")
		v.notNegative(a.Max, "properties.autoScaling.max")
	}
	seen := map[string]bool{}
	for i, l := range f.Labels {
		if v.Full() {
			break
		}
		target := fmt.Sprintf("properties.labels[%d].key", i)
		if v.Required(l.Key != nil && *l.Key != "", target) {
			if seen[*l.Key] {
				v.Add(target, "The label key '%s' is given more than once.", *l.Key)
			}
			seen[*l.Key] = true
		}
	}
	for i, t := range f.Taints {
		if v.Full() {
			break
		}
		base := fmt.Sprintf("properties.taints[%d]", i)
		if v.Required(t.Key != nil, base+".key") && (len(*t.Key) < 1 || len(*t.Key) > 316) {
			v.Add(base+".key", "Field '%s.key' must be 1 to 316 characters long.", base)
		}
		if t.Value != nil && len(*t.Value) > 63 {
			v.Add(base+".value", "Field '%s.value' must be at most 63 characters long.", base)
		}
		if v.Required(t.Effect != nil, base+".effect") {
			v.Enum(t.Effect, base+".effect", "NoSchedule", "PreferNoSchedule", "NoExecute")
		}
	}
	v.RangeInt(f.NodeDrainTimeoutMinutes, "properties.nodeDrainTimeoutMinutes", 0, 10080)
}

// notNegative is the specification's "minimum: 0".
func (v *Checker) notNegative(p *int32, target string) {
	if p != nil && *p < 0 {
		v.Add(target, "Invalid value '%d' for field '%s' (must be at least 0).", *p, target)
	}
}

// NodePoolIdentity checks a node pool's identity block: only its type has constraints in the
// specification (node pools act through the cluster's identities).
func (v *Checker) NodePoolIdentity(id *profiles.ManagedServiceIdentity) {
	if id == nil {
		return
	}
	if v.Required(id.Type != nil, "identity.type") {
		v.Enum(id.Type, "identity.type", "None", "SystemAssigned", "UserAssigned", "SystemAssigned,UserAssigned")
	}
}
