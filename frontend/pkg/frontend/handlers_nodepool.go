package frontend

import (
	"context"
	"encoding/json"
	"net/http"
	"regexp"
	"sort"
	"strings"

	"google.golang.org/protobuf/proto"

	csv1 "github.com/openhcp/openhcp/cluster-service/api/v1"
	"github.com/openhcp/openhcp/frontend/pkg/api"
	"github.com/openhcp/openhcp/internal/arm"
	"github.com/openhcp/openhcp/internal/armdoc"
)

// Node pools: hcpOpenShiftClusters/{cluster}/nodePools/{name}, served by the child-resource
// handlers (handlers_child.go) with what is particular to a node pool: location and tags,
// create-only fields, the cluster's subnet as default, and no write while the cluster has any
// operation in progress.

const nodePoolsPath = "/nodepools"

// nodePoolNameRE is the name pattern from the specification.
var nodePoolNameRE = regexp.MustCompile(`^[a-zA-Z]([-a-zA-Z0-9]{0,13}[a-zA-Z0-9])?$`)

var nodePoolResource = &childResource[*api.NodePool, *csv1.NodePoolSpec, *csv1.NodePoolUpdate]{
	typeName: "nodePools", path: nodePoolsPath, param: "nodePoolName", nameRE: nodePoolNameRE, noun: "node pool",
	served:      func(s *Server) bool { return s.cfg.NodePools != nil },
	busyCluster: true,
	meta: func(np *api.NodePool) childMeta {
		return childMeta{ID: &np.ID, SystemData: &np.SystemData, ProvisioningState: &np.ProvisioningState, Location: &np.Location, Tags: &np.Tags}
	},
	newModel: func() *api.NodePool { return &api.NodePool{} },
	defaults: (*api.NodePool).Default,
	servedIn: func(v string) bool { _, ok := api.LookupNodePool(v); return ok },
	decode: func(r *http.Request, body []byte, stored *api.NodePool) (*api.NodePool, error) {
		return nodePoolVersion(r).DecodeNodePool(body, stored)
	},
	patch: func(r *http.Request, stored *api.NodePool, body []byte) (*api.NodePool, error) {
		return api.PatchNodePool(nodePoolVersion(r), stored, body)
	},
	render: func(r *http.Request, np *api.NodePool) any { return nodePoolVersion(r).RenderNodePool(np) },
	carry: func(r *http.Request, stored, next *api.NodePool) {
		nodePoolVersion(r).PreserveNodePool(stored, next)
		if next.Properties.Platform.SubnetID == "" {
			next.Properties.Platform.SubnetID = stored.Properties.Platform.SubnetID
		}
	},
	prepareCreate: func(cluster *armdoc.ResourceDocument, np *api.NodePool) error {
		c, err := clusterFromDoc(cluster)
		if err != nil {
			return err
		}
		if np.Properties.Platform.SubnetID == "" {
			// The specification's default: the cluster's subnet (Cluster Service does the same).
			np.Properties.Platform.SubnetID = c.Properties.Platform.SubnetID
		}
		return nil
	},
	changeErrors: nodePoolChangedFields,
	spec:         nodePoolSpec, fullUpdate: csv1.FullNodePoolUpdate, diffUpdate: csv1.NodePoolUpdateDiff,
	csCreate: func(ctx context.Context, s *Server, csID, clusterCSID, armID string, spec *csv1.NodePoolSpec) (proto.Message, string, error) {
		req := &csv1.CreateNodePoolRequest{NodePool: &csv1.NodePool{Id: csID, ClusterId: clusterCSID, ArmResourceId: armID, Spec: spec}}
		got, err := s.cfg.NodePools.CreateNodePool(ctx, req)
		return req, got.GetId(), err
	},
	csUpdate: func(ctx context.Context, s *Server, csID string, u *csv1.NodePoolUpdate) (proto.Message, int64, error) {
		req := &csv1.UpdateNodePoolRequest{Id: csID, Update: u}
		got, err := s.cfg.NodePools.UpdateNodePool(ctx, req)
		return req, got.GetSpecRevision(), err
	},
	csDelete: func(ctx context.Context, s *Server, csID string) error {
		_, err := s.cfg.NodePools.DeleteNodePool(ctx, &csv1.DeleteNodePoolRequest{Id: csID})
		return err
	},
}

// nodePoolRoutes registers the node pool paths.
func (s *Server) nodePoolRoutes() { nodePoolResource.routes(s) }

// nodePoolVersion is the request's api-version's node pool schema (one that serves node
// pools: the handlers check it first).
func nodePoolVersion(r *http.Request) api.NodePoolVersion {
	v, _ := api.LookupNodePool(info(r).apiVersion)
	return v
}

// nodePoolUpdatable are the internal paths the specification lets a write change
// (x-ms-mutability "update"); the same in every api-version.
var nodePoolUpdatable = []string{
	"identity",
	"properties.version",
	"properties.replicas",
	"properties.autoScaling",
	"properties.labels",
	"properties.taints",
	"properties.nodeDrainTimeoutMinutes",
}

// nodePoolChangedFields lists the create-only fields a write tries to change, as
// PropertyChangeNotAllowed errors whose targets are the field's path (the same in every
// api-version).
func nodePoolChangedFields(stored, next *api.NodePool) []*arm.CloudError {
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
	var errs []*arm.CloudError
	for _, p := range paths {
		updatable := false
		for _, u := range nodePoolUpdatable {
			if p == u || strings.HasPrefix(p, u+".") {
				updatable = true
			}
		}
		if !updatable {
			errs = append(errs, cloudError(http.StatusBadRequest, "PropertyChangeNotAllowed", p,
				"Field '%s' cannot be changed after the node pool is created.", p))
		}
	}
	return errs
}
