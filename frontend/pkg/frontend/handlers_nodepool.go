package frontend

import (
	"encoding/json"
	"net/http"
	"slices"
	"sort"
	"strings"

	csv1 "github.com/openhcp/openhcp/cluster-service/api/v1"
	"github.com/openhcp/openhcp/frontend/pkg/api"
	"github.com/openhcp/openhcp/internal/arm"
)

// Node pools: hcpOpenShiftClusters/{cluster}/nodePools/{name}, served by the child-resource
// handlers (handlers_child.go) with what is particular to a node pool: location and tags,
// create-only fields, Cluster Service's defaults written with the first write of a create, and no
// write while the cluster has any operation in progress.

var nodePoolResource = &childResource[*api.NodePool, *csv1.NodePoolSpec, *csv1.NodePoolUpdate, api.NodePoolVersion]{
	typeName: "nodePools", noun: "node pool",
	served:      func(s *Server) bool { return s.cfg.NodePools != nil },
	busyCluster: true,
	meta: func(np *api.NodePool) childMeta {
		return childMeta{ID: &np.ID, SystemData: &np.SystemData, ProvisioningState: &np.ProvisioningState, Location: &np.Location, Tags: &np.Tags}
	},
	newModel: func() *api.NodePool { return &api.NodePool{} },
	defaults: (*api.NodePool).Default,
	lookup:   api.LookupNodePool,
	decode:   api.NodePoolVersion.DecodeNodePool,
	patch:    api.PatchNodePool,
	render:   api.NodePoolVersion.RenderNodePool,
	carry: func(v api.NodePoolVersion, stored, next *api.NodePool) {
		v.PreserveNodePool(stored, next)
		withDefaultsOf(next, stored.Spec)
	},
	// The frontend has no node pool defaults of its own: what the caller left out is filled,
	// before the first write, by Cluster Service's model (DefaultNodePool) from the cluster
	// Cluster Service holds, and sent as filled.
	prepareCreate: withClusterServiceNodePoolDefaults,
	changeErrors:  nodePoolChangedFields,
	spec:          nodePoolSpec, fullUpdate: csv1.FullNodePoolUpdate, diffUpdate: csv1.NodePoolUpdateDiff,
	cs: func(s *Server) childCalls {
		c := s.cfg.NodePools
		return childCalls{create: rpc(c.CreateNodePool), get: rpc(c.GetNodePool), update: rpc(c.UpdateNodePool), delete: rpc(c.DeleteNodePool)}
	},
}

// nodePoolChangedFields lists the fields a write tries to change that the api-version's
// NodePoolUpdate schema does not name (its update paths, generated from the specification), as
// PropertyChangeNotAllowed errors whose targets are the field's path.
func nodePoolChangedFields(v api.NodePoolVersion, stored, next *api.NodePool) []*arm.CloudError {
	var a, b map[string]any
	ja, _ := json.Marshal(stored)
	jb, _ := json.Marshal(next)
	json.Unmarshal(ja, &a)
	json.Unmarshal(jb, &b)
	var paths []string
	diffPaths(a, b, "", &paths)
	if normalizeLocation(stored.Location) != normalizeLocation(next.Location) {
		paths = append(paths, "location")
	}
	sort.Strings(paths)
	updatePaths := v.NodePoolUpdatePaths()
	var errs []*arm.CloudError
	for _, p := range paths {
		updatable := slices.ContainsFunc(updatePaths, func(u string) bool { return p == u || strings.HasPrefix(p, u+".") })
		if !updatable {
			errs = append(errs, cloudError(http.StatusBadRequest, "PropertyChangeNotAllowed", p,
				"Field '%s' cannot be changed after the node pool is created.", p))
		}
	}
	return errs
}
