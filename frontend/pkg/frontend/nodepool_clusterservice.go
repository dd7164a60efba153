package frontend

import (
	"cmp"

	csv1 "github.com/openhcp/openhcp/cluster-service/api/v1"
	"github.com/openhcp/openhcp/frontend/pkg/api"
)

// nodePoolSpec maps the internal model to Cluster Service's node pool spec through the spec's
// own arm_path options (each field's path in the internal model), so a new property with its
// arm_path needs no edit here. Where the two shapes differ, nodePoolShapes converts.
func nodePoolSpec(np *api.NodePool) *csv1.NodePoolSpec {
	spec := &csv1.NodePoolSpec{}
	doc := armDocument(np)
	fillFromARM(spec.ProtoReflect(), doc, doc, "", nodePoolShapes)
	return spec
}

// nodePoolShapes are the node pool properties whose internal shape is not the proto's, by
// their internal path: labels are a list of key and value (a map in the proto), and a Managed
// disk is Persistent (HyperShift's word).
var nodePoolShapes = armShapes{
	"properties.labels": func(v any) any {
		m := map[string]any{}
		for _, l := range v.([]any) {
			l := l.(map[string]any)
			value, _ := l["value"].(string)
			m[l["key"].(string)] = value
		}
		return m
	},
	"properties.platform.osDisk.diskType": func(v any) any { return osDiskPersistence(v.(string)) },
}

// osDiskPersistence is Cluster Service's name for an ARM diskType: a Managed disk is
// Persistent (HyperShift's word); empty leaves Cluster Service's default (Persistent).
func osDiskPersistence(diskType string) string {
	switch diskType {
	case api.DiskTypeManaged:
		return "Persistent"
	case api.DiskTypeEphemeral:
		return "Ephemeral"
	}
	return diskType
}

// fromClusterServiceSpec fills what the caller left out of np with what Cluster Service holds
// (its defaults), so the document and every GET show Cluster Service's answer: the frontend has
// no node pool defaults of its own. What the caller sent stays as sent ("4.20" is shown as
// "4.20", as a cluster's version is, although Cluster Service resolved it).
func fromClusterServiceSpec(np *api.NodePool, spec *csv1.NodePoolSpec) {
	if spec == nil {
		return
	}
	p, pl := &np.Properties, spec.GetPlatform()
	p.Version.ID = cmp.Or(p.Version.ID, spec.GetVersionId())
	p.Version.ChannelGroup = cmp.Or(p.Version.ChannelGroup, spec.GetChannelGroup())
	p.Platform.SubnetID = cmp.Or(p.Platform.SubnetID, pl.GetSubnetId())
	p.Platform.OSDisk.SizeGiB = cmp.Or(p.Platform.OSDisk.SizeGiB, pl.GetOsDiskSizeGib())
	p.Platform.OSDisk.DiskStorageAccountType = cmp.Or(p.Platform.OSDisk.DiskStorageAccountType, pl.GetOsDiskStorageAccountType())
	p.Platform.OSDisk.DiskType = cmp.Or(p.Platform.OSDisk.DiskType, diskType(pl.GetOsDiskPersistence()))
}

// keepStored fills what a PUT left out with the stored pool's (Cluster Service's) values: for
// Cluster Service an empty version or channel group leaves the pool's, and the platform cannot
// change, so a replace that omits them asks for what the pool has.
func keepStored(stored, next *api.NodePool) {
	p, s := &next.Properties, &stored.Properties
	p.Version.ID = cmp.Or(p.Version.ID, s.Version.ID)
	p.Version.ChannelGroup = cmp.Or(p.Version.ChannelGroup, s.Version.ChannelGroup)
	p.Platform.SubnetID = cmp.Or(p.Platform.SubnetID, s.Platform.SubnetID)
	p.Platform.OSDisk.SizeGiB = cmp.Or(p.Platform.OSDisk.SizeGiB, s.Platform.OSDisk.SizeGiB)
	p.Platform.OSDisk.DiskStorageAccountType = cmp.Or(p.Platform.OSDisk.DiskStorageAccountType, s.Platform.OSDisk.DiskStorageAccountType)
	p.Platform.OSDisk.DiskType = cmp.Or(p.Platform.OSDisk.DiskType, s.Platform.OSDisk.DiskType)
}

// diskType is the ARM diskType of Cluster Service's OS disk persistence.
func diskType(persistence string) string {
	switch persistence {
	case "Persistent":
		return api.DiskTypeManaged
	case "Ephemeral":
		return api.DiskTypeEphemeral
	}
	return persistence
}

// nodePoolUpdate is what UpdateNodePool gets for a change from stored to next
// (childResource.updateOf). An empty version or channel group leaves the pool's; an unset
// nodeDrainTimeoutMinutes goes back to the cluster's.
func nodePoolUpdate(stored, next *api.NodePool, patch bool) *csv1.NodePoolUpdate {
	return nodePoolResource.updateOf(stored, next, patch)
}
