package frontend

import (
	"cmp"

	"google.golang.org/protobuf/proto"

	csv1 "github.com/openhcp/openhcp/cluster-service/api/v1"
	"github.com/openhcp/openhcp/frontend/pkg/api"
)

// nodePoolSpec is the spec Cluster Service gets for np: np's model is that spec already (the
// api-versions fill it through its arm_path options).
func nodePoolSpec(np *api.NodePool) *csv1.NodePoolSpec {
	if np.Spec == nil {
		return &csv1.NodePoolSpec{}
	}
	return np.Spec
}

// withDefaultsOf fills what next leaves empty of the fields Cluster Service defaults (version,
// channel group, subnet, OS disk) with from's values. After a create, from is Cluster Service's
// answer, so the document and every GET show it: the frontend has no node pool defaults of its
// own, and what the caller sent stays as sent ("4.20" is shown as "4.20", as a cluster's version
// is, although Cluster Service resolved it). On a replace, from is the stored pool: for Cluster
// Service an empty version or channel group leaves the pool's, and the platform cannot change,
// so a PUT that omits them asks for what the pool has.
func withDefaultsOf(next *api.NodePool, from *csv1.NodePoolSpec) {
	if from == nil {
		return
	}
	// A copy: next's spec may have been handed to Cluster Service's client already.
	s, fp := proto.Clone(nodePoolSpec(next)).(*csv1.NodePoolSpec), from.GetPlatform()
	next.Spec = s
	s.VersionId = cmp.Or(s.VersionId, from.GetVersionId())
	s.ChannelGroup = cmp.Or(s.ChannelGroup, from.GetChannelGroup())
	if fp == nil {
		return
	}
	if s.Platform == nil {
		s.Platform = &csv1.NodePoolPlatform{}
	}
	p := s.Platform
	p.SubnetId = cmp.Or(p.SubnetId, fp.GetSubnetId())
	p.OsDiskSizeGib = cmp.Or(p.OsDiskSizeGib, fp.GetOsDiskSizeGib())
	p.OsDiskStorageAccountType = cmp.Or(p.OsDiskStorageAccountType, fp.GetOsDiskStorageAccountType())
	p.OsDiskPersistence = cmp.Or(p.OsDiskPersistence, fp.GetOsDiskPersistence())
}

// nodePoolUpdate is what UpdateNodePool gets for a change from stored to next
// (childResource.updateOf). An empty version or channel group leaves the pool's; an unset
// nodeDrainTimeoutMinutes goes back to the cluster's.
func nodePoolUpdate(stored, next *api.NodePool, patch bool) *csv1.NodePoolUpdate {
	return nodePoolResource.updateOf(stored, next, patch)
}
