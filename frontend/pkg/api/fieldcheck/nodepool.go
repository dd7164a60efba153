package fieldcheck

import (
	"fmt"

	"github.com/openhcp/openhcp/frontend/pkg/api/armpath"
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
	// MinOSDiskSizeGiB and MaxOSDiskSizeGiB are osDisk.sizeGiB's minimum and maximum (a maximum
	// of 0: none), the version's specification's (generated constants of the version package).
	MinOSDiskSizeGiB, MaxOSDiskSizeGiB int64
	// StoredOSDiskSizeGiB is the OS disk size of the pool being written over (0: a create). The
	// size cannot change after create, so a body that keeps it is not held to a bound the pool
	// predates (one created through an api-version without a maximum, larger than a later one's).
	StoredOSDiskSizeGiB int32
}

// NodePool checks the node pool properties shared by every api-version in doc, the body decoded
// into the version's type (each property found by its path, armpath.Lookup). The checks of its
// shared profiles (autoScaling, each taint) are generated (zz_generated_shared.go); the bounds
// of the version-local properties are still hand-written, since the versions' generated node
// pool checks would change answers (docs/architecture.md), and a label key is checked for being
// given once, which is meaning (Kubernetes labels are a map), not the key and value pair its
// x-ms-identifiers name.
func (v *Checker) NodePool(doc any, r NodePoolRules) {
	at := func(path string) any { return armpath.Lookup(doc, path) }
	if ver := at("properties.version"); ver != nil {
		v.ChannelGroup(strAt(doc, "properties.version.channelGroup"), "properties.version.channelGroup")
		if r.VersionIDRequired {
			id := strAt(doc, "properties.version.id")
			empty := id == nil || *id == ""
			if !(empty && r.StoredWithoutVersionID) {
				v.Required(!empty, "properties.version.id")
			}
		}
	}
	if v.Required(at("properties.platform") != nil, "properties.platform") {
		// Only required: what a VM size is (and its length) is Cluster Service's rule
		// (model.ValidateVMSize); the specification states no bound.
		vmSize := strAt(doc, "properties.platform.vmSize")
		v.Required(vmSize != nil && *vmSize != "", "properties.platform.vmSize")
		if s := strAt(doc, "properties.platform.subnetId"); s != nil {
			v.ArmID(*s, "properties.platform.subnetId", TypeSubnet)
		}
		hi := int64(1<<31 - 1)
		if r.MaxOSDiskSizeGiB > 0 {
			hi = r.MaxOSDiskSizeGiB
		}
		if size := int32At(doc, "properties.platform.osDisk.sizeGiB"); size == nil || r.StoredOSDiskSizeGiB == 0 || *size != r.StoredOSDiskSizeGiB {
			v.RangeInt(size, "properties.platform.osDisk.sizeGiB", r.MinOSDiskSizeGiB, hi)
		}
		v.Enum(strAt(doc, "properties.platform.osDisk.diskStorageAccountType"), "properties.platform.osDisk.diskStorageAccountType", "Premium_LRS", "StandardSSD_LRS", "Standard_LRS")
		if s := strAt(doc, "properties.platform.osDisk.encryptionSetId"); s != nil {
			v.ArmID(*s, "properties.platform.osDisk.encryptionSetId", TypeDiskEncryptionSet)
		}
		v.Enum(strAt(doc, "properties.platform.osDisk.diskType"), "properties.platform.osDisk.diskType", "Managed", "Ephemeral")
	}
	// The specification's structural bound only: how many nodes a pool may have, and that
	// replicas and autoScaling exclude each other, are Cluster Service's rule (its model
	// package), which refuses with the field's path.
	v.AtLeast(int32At(doc, "properties.replicas"), "properties.replicas", 0)
	if a := armpath.As[profiles.NodePoolAutoScaling](doc, "properties.autoScaling"); a != nil {
		specNodePoolAutoScaling(v, a, "properties.autoScaling")
	}
	labels := armpath.Elements(at("properties.labels"))
	seen := map[string]bool{}
	for i, l := range labels {
		if v.Full() {
			break
		}
		target := fmt.Sprintf("properties.labels[%d].key", i)
		if key := strAt(l, "key"); v.Required(key != nil && *key != "", target) {
			if seen[*key] {
				v.Add(target, "The label key '%s' is given more than once.", *key)
			}
			seen[*key] = true
		}
	}
	if taints := armpath.As[[]profiles.Taint](doc, "properties.taints"); taints != nil {
		specNodePoolPropertiesTaints(v, *taints, "properties.taints")
	}
	// nodeDrainTimeoutMinutes has no bound in a node pool's specification (a cluster's has):
	// 0-10080 is Cluster Service's rule (model.ValidateDrainTimeout), which refuses with the
	// field's path.
}

// strAt is the string at path in doc; nil when absent (or null).
func strAt(doc any, path string) *string {
	if s, ok := armpath.Lookup(doc, path).(string); ok {
		return &s
	}
	return nil
}

// int32At is the number at path in doc; nil when absent.
func int32At(doc any, path string) *int32 {
	if n, ok := armpath.Lookup(doc, path).(int32); ok {
		return &n
	}
	return nil
}

// NodePoolIdentity checks a node pool's identity block: only its type has constraints in the
// specification (node pools act through the cluster's identities); its identities are counted
// as a cluster's are (MaxIdentities).
func (v *Checker) NodePoolIdentity(id *profiles.ManagedServiceIdentity) {
	if id == nil {
		return
	}
	v.identityType(id)
	identityCount(v, id.UserAssignedIdentities, "identity.userAssignedIdentities")
}
