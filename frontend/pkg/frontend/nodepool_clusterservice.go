package frontend

import (
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

// nodePoolUpdate is what UpdateNodePool gets for a change from stored to next
// (childResource.updateOf). An empty version or channel group leaves the pool's; an unset
// nodeDrainTimeoutMinutes goes back to the cluster's.
func nodePoolUpdate(stored, next *api.NodePool, patch bool) *csv1.NodePoolUpdate {
	return nodePoolResource.updateOf(stored, next, patch)
}
