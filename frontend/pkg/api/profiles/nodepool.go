package profiles

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
