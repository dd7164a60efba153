package codec

import (
	"slices"

	"github.com/openhcp/openhcp/frontend/pkg/api"
	"github.com/openhcp/openhcp/frontend/pkg/api/armpath"
	"github.com/openhcp/openhcp/frontend/pkg/api/fieldcheck"
	"github.com/openhcp/openhcp/frontend/pkg/api/profiles"
)

// NodePool is the api.NodePoolVersion of an api-version whose generated node pool type is T.
type NodePool[T any] struct {
	// Name is the api-version.
	Name string
	// ValidateSpec checks what the version's specification says of each field (T's generated
	// validateSpec), calling the hand-written checks of what it cannot say at their property.
	ValidateSpec func(x *T, v *fieldcheck.Checker, path string)
	// Rules are what the version's node pool means beyond its specification's structure;
	// Rules.VersionIDRequired also shapes a rendered version without an id
	// (versionWithRequiredID).
	Rules fieldcheck.NodePoolRules
	// UpdatePaths are what a PATCH body may hold: the version's NodePoolUpdate, generated
	// (specNodePoolUpdatePaths).
	UpdatePaths []string
	// KeepStored copies into next what the version cannot express, from stored (nil: it expresses
	// every field).
	KeepStored func(stored, next *api.NodePool)
}

func (n NodePool[T]) String() string { return n.Name }

// DecodeNodePool implements api.NodePoolVersion: the body, checked against the version's
// schema (ValidateSpec, with Rules and the stored pool), is filled into Cluster Service's spec through its arm_path options.
func (n NodePool[T]) DecodeNodePool(body []byte, stored *api.NodePool) (*api.NodePool, error) {
	var ext T
	if err := api.DecodeStrict(body, &ext); err != nil {
		return nil, err
	}
	rules := n.Rules
	rules.StoredWithoutVersionID = stored != nil && stored.Spec.GetVersionId() == ""
	if stored != nil {
		rules.StoredOSDiskSizeGiB = stored.Spec.GetPlatform().GetOsDiskSizeGib()
	}
	v := &fieldcheck.Checker{NodePoolRules: rules}
	n.ValidateSpec(&ext, v, "")
	location := str(&ext, "location")
	identity := armpath.As[profiles.ManagedServiceIdentity](&ext, "identity")
	v.NodePoolIdentity(identity)
	v.Tags(tags(&ext))
	if err := v.Err(); err != nil {
		return nil, err
	}
	np := api.NodePoolFromARM(&ext)
	np.Location, np.Tags = location, tags(&ext)
	if identity != nil {
		np.Identity = identity.ToInternal()
	}
	return np, nil
}

// RenderNodePool implements api.NodePoolVersion: the spec's ARM form read into the version's
// type.
func (n NodePool[T]) RenderNodePool(np *api.NodePool) any {
	doc := envelope(np.ID, api.NodePoolResourceType, np.Location, np.Tags, np.SystemData)
	props := np.RenderedProperties()
	if np.ProvisioningState != "" {
		props["provisioningState"] = string(np.ProvisioningState)
	}
	if n.Rules.VersionIDRequired {
		versionWithRequiredID(props)
	}
	doc["properties"] = props
	if np.Identity != nil {
		doc["identity"] = profiles.RenderIdentity(np.Identity)
	}
	return render[T](doc)
}

// NodePoolUpdatePaths implements api.NodePoolVersion.
func (n NodePool[T]) NodePoolUpdatePaths() []string { return slices.Clone(n.UpdatePaths) }

// PreserveNodePool implements api.NodePoolVersion.
func (n NodePool[T]) PreserveNodePool(stored, next *api.NodePool) {
	if n.KeepStored != nil {
		n.KeepStored(stored, next)
	}
}

// versionWithRequiredID shapes a rendered version that has no id, for the api-versions whose
// NodePoolVersionProfile requires id (from 2025-12-23-preview): a pool created without a version
// runs its cluster's, and showing {"channelGroup":"stable"} would break the schema and make the
// GET body fail as a PUT (found by FuzzDecodeNodePoolAllVersions), so a version that says only
// the default channel group is left out (a PUT of the GET body keeps it). A pool created through
// 2024-06-10-preview with another channel group and no id shows the group and the required id
// as "" (docs/api.md, Required properties in responses); a PUT or PATCH of that keeps it.
func versionWithRequiredID(props map[string]any) {
	ver, ok := props["version"].(map[string]any)
	if !ok {
		return
	}
	if id, _ := ver["id"].(string); id != "" {
		return
	}
	if group, _ := ver["channelGroup"].(string); group == "" || group == api.ChannelGroupStable {
		delete(props, "version")
		return
	}
	ver["id"] = ""
}
