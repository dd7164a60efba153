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

// VersionWithRequiredID shapes a rendered version that has no id, for the api-versions whose
// NodePoolVersionProfile requires id (from 2025-12-23-preview): a pool created without a version
// runs its cluster's, and showing {"channelGroup":"stable"} would break the schema and make the
// GET body fail as a PUT (found by FuzzDecodeNodePoolAllVersions), so a version that says only
// the default channel group is left out (a PUT of the GET body keeps it). A pool created through
// 2024-06-10-preview with another channel group and no id shows the group and the required id
// as "" (docs/api.md, Required properties in responses); a PUT or PATCH of that keeps it.
func VersionWithRequiredID(v *NodePoolVersionProfile) *NodePoolVersionProfile {
	if v == nil || (v.ID != nil && *v.ID != "") {
		return v
	}
	if v.ChannelGroup == nil || *v.ChannelGroup == api.ChannelGroupStable {
		return nil
	}
	v.ID = Present("")
	return v
}
