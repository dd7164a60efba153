package fieldcheck

import (
	"fmt"

	"github.com/openhcp/openhcp/frontend/pkg/api/profiles"
)

// NodePoolRules are what differs between api-versions in what a node pool body means beyond its
// specification's structure, and what the pool being written over says. A version's generated
// checks (its NodePool's validateSpec) hold the structural bounds and resource ID types, each
// from that version's specification, and call the hand-written checks below at their property's
// place (each marked //armgen:hook with the property), so a body with several problems is
// answered in the order of its properties.
type NodePoolRules struct {
	// VersionIDRequired: properties.version.id is required when properties.version is given
	// (from 2025-12-23-preview on).
	VersionIDRequired bool
	// StoredWithoutVersionID: the pool being replaced has no version.id (created through
	// 2024-06-10-preview without one); an empty or absent id keeps it so.
	StoredWithoutVersionID bool
	// StoredOSDiskSizeGiB is the OS disk size of the pool being written over (0: a create).
	StoredOSDiskSizeGiB int32
}

// NodePoolVersion checks properties.version (ver, nil when absent) at path for what its
// specification cannot say: an explicit empty channelGroup (ChannelGroup), and version.id,
// required by the version's rule (VersionIDRequired) rather than by the shared
// NodePoolVersionProfile's schema, because a pool created through 2024-06-10-preview without one
// keeps it empty through later versions (StoredWithoutVersionID).
//
//armgen:hook NodePoolProperties.version
func (v *Checker) NodePoolVersion(ver *profiles.NodePoolVersionProfile, path string) {
	if ver == nil {
		return
	}
	v.ChannelGroup(ver.ChannelGroup, path+".channelGroup")
	if v.NodePoolRules.VersionIDRequired {
		empty := ver.ID == nil || *ver.ID == ""
		if !(empty && v.NodePoolRules.StoredWithoutVersionID) {
			v.Required(!empty, path+".id")
		}
	}
}

// OSDiskSizeBounded reports whether osDisk.sizeGiB (p) is held to its version's bounds: not when
// the body keeps the size of the pool it writes over. The size cannot change after create, so a
// pool created through an api-version without a maximum, larger than a later one's, still takes
// a write through the later one. The generated checks of the size run only when it returns true.
//
//armgen:hook OsDiskProfile.sizeGiB
func (v *Checker) OSDiskSizeBounded(p *int32, _ string) bool {
	stored := v.NodePoolRules.StoredOSDiskSizeGiB
	return p == nil || stored == 0 || *p != stored
}

// NodePoolAutoScaling checks a present properties.autoScaling: all its rules (the minimums) are
// the specification's, generated (zz_generated_shared.go). How many nodes a pool may have, and
// that replicas and autoScaling exclude each other, are Cluster Service's rule (its model
// package), which refuses with the field's path. It is called at the property because a
// version's code cannot call the generated function of package fieldcheck.
//
//armgen:hook NodePoolProperties.autoScaling
func (v *Checker) NodePoolAutoScaling(a *profiles.NodePoolAutoScaling, path string) {
	if a != nil {
		specNodePoolAutoScaling(v, a, path)
	}
}

// NodePoolLabels checks properties.labels entry by entry: a key is required and given once. The
// key being given once is meaning (Kubernetes labels are a map), not the key and value pair its
// x-ms-identifiers name, and is checked with the key's presence so each entry's problems come
// together.
//
//armgen:hook NodePoolProperties.labels
func (v *Checker) NodePoolLabels(labels []profiles.Label, path string) {
	seen := map[string]bool{}
	for i, l := range labels {
		if v.Full() {
			break
		}
		target := fmt.Sprintf("%s[%d].key", path, i)
		if v.Required(l.Key != nil && *l.Key != "", target) {
			if seen[*l.Key] {
				v.Add(target, "The label key '%s' is given more than once.", *l.Key)
			}
			seen[*l.Key] = true
		}
	}
}

// NodePoolTaints checks properties.taints: all its rules (each entry's key, value and effect)
// are the specification's, generated (zz_generated_shared.go), and called here because a
// version's code cannot call the generated function of package fieldcheck.
//
//armgen:hook NodePoolProperties.taints
func (v *Checker) NodePoolTaints(taints []profiles.Taint, path string) {
	if taints != nil {
		specNodePoolPropertiesTaints(v, taints, path)
	}
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
