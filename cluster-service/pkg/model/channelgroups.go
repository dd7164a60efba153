package model

// DefaultChannelGroup is the channel group of a cluster created without one; a node pool
// created without one takes its cluster's (DefaultNodePool).
const DefaultChannelGroup = "stable"

// ChannelGroups are the groups a cluster may be in, checked at create and on update.
func ChannelGroups() []string {
	return []string{DefaultChannelGroup, "candidate", "fast", "eus", "nightly"}
}
