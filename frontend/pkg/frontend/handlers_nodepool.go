package frontend

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"regexp"
	"sort"
	"strings"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	csv1 "github.com/openhcp/openhcp/cluster-service/api/v1"
	"github.com/openhcp/openhcp/frontend/pkg/api"
	"github.com/openhcp/openhcp/internal/arm"
	"github.com/openhcp/openhcp/internal/armdoc"
	"github.com/openhcp/openhcp/internal/docstore"
)

// Node pools: hcpOpenShiftClusters/{cluster}/nodePools/{name}. The resource and operation
// documents work as a cluster's do; Cluster Service's NodePools service does the work and the
// backend follows it to a terminal state.

const (
	nodePoolsPath   = "/nodepools"
	nodePoolPattern = clusterPattern + nodePoolsPath + "/{nodePoolName}"
)

// nodePoolNameRE is the name pattern from the specification.
var nodePoolNameRE = regexp.MustCompile(`^[a-zA-Z]([-a-zA-Z0-9]{0,13}[a-zA-Z0-9])?$`)

// nodePoolRoutes registers the node pool paths; without a NodePools client they are not served.
func (s *Server) nodePoolRoutes() {
	if s.cfg.NodePools == nil {
		return
	}
	s.handle("PUT "+nodePoolPattern, s.putNodePool, resourceRoute)
	s.handle("PATCH "+nodePoolPattern, s.patchNodePool, resourceRoute)
	s.handle("GET "+nodePoolPattern, s.getNodePool, resourceRoute)
	s.handle("DELETE "+nodePoolPattern, s.deleteNodePool, resourceRoute)
	s.handle("GET "+clusterPattern+nodePoolsPath, s.listNodePools, resourceRoute)
}

// nodePoolID is the node pool ID of the request, in the caller's casing.
func nodePoolID(r *http.Request) (*arm.ResourceID, error) {
	return childID(r, "node pool", nodePoolNameRE)
}

// nodePoolVersion is the request's api-version's node pool schema.
func nodePoolVersion(r *http.Request) (api.NodePoolVersion, error) {
	v, ok := api.LookupNodePool(info(r).apiVersion)
	if !ok {
		return nil, cloudError(http.StatusBadRequest, arm.CodeInvalidResourceType, "api-version",
			"The resource type 'hcpOpenShiftClusters/nodePools' is not served in api-version '%s'.", info(r).apiVersion)
	}
	return v, nil
}

func nodePoolNotFound(id *arm.ResourceID) error {
	return cloudError(http.StatusNotFound, arm.CodeResourceNotFound, "",
		"The resource 'hcpOpenShiftClusters/%s/nodePools/%s' under resource group '%s' was not found.", id.Names[0], id.Name(), id.ResourceGroup)
}

// parentCluster reads the node pool's cluster: 404 ParentResourceNotFound if there is none.
func (s *Server) parentCluster(ctx context.Context, id *arm.ResourceID) (*armdoc.ResourceDocument, error) {
	parent := id.Parent()
	rd, _, err := s.getResourceDoc(ctx, parent)
	if errors.Is(err, docstore.ErrNotFound) {
		return nil, cloudError(http.StatusNotFound, "ParentResourceNotFound", "",
			"The parent resource 'hcpOpenShiftClusters/%s' under resource group '%s' was not found.", parent.Name(), parent.ResourceGroup)
	}
	return rd, err
}

// checkClusterIdle refuses a node pool write while the parent cluster is being deleted or has
// an operation in progress (409, naming it).
func (s *Server) checkClusterIdle(ctx context.Context, cluster *armdoc.ResourceDocument) error {
	if cluster.ActiveOperationID != "" {
		op, _, err := s.getOperationDoc(ctx, partitionKey(mustSub(cluster.ResourceID)), cluster.ActiveOperationID)
		if err != nil && !errors.Is(err, docstore.ErrNotFound) {
			return err
		}
		if err == nil && !op.Status.Terminal() {
			if op.Request == armdoc.OperationDelete {
				return cloudError(http.StatusConflict, arm.CodeConflict, "",
					"The cluster '%s' is being deleted (operation '%s'); its node pools cannot be written.", cluster.ResourceID, op.ID)
			}
			return cloudError(http.StatusConflict, arm.CodeConflict, "",
				"Cannot write node pools of cluster '%s' while operation '%s' (%s) is in progress on it.", cluster.ResourceID, op.ID, op.Request)
		}
	}
	if cluster.ProvisioningState == armdoc.StateDeleting {
		return cloudError(http.StatusConflict, arm.CodeConflict, "", "The cluster '%s' is being deleted; its node pools cannot be written.", cluster.ResourceID)
	}
	return nil
}

func mustSub(resourceID string) string {
	id, err := arm.ParseResourceID(resourceID)
	if err != nil {
		return ""
	}
	return id.SubscriptionID
}

// nodePoolFromDoc rebuilds the internal model from a resource document.
func nodePoolFromDoc(rd *armdoc.ResourceDocument) (*api.NodePool, error) {
	np := &api.NodePool{}
	if len(rd.Properties) > 0 {
		if err := json.Unmarshal(rd.Properties, np); err != nil {
			return nil, fmt.Errorf("decode node pool %s: %w", rd.ResourceID, err)
		}
	}
	id, err := arm.ParseResourceID(rd.ResourceID)
	if err != nil {
		return nil, fmt.Errorf("stored resource ID %q: %w", rd.ResourceID, err)
	}
	np.Default()
	np.ID, np.Location, np.Tags, np.ProvisioningState = id, rd.Location, rd.Tags, rd.ProvisioningState
	if len(rd.SystemData) > 0 {
		var sd arm.SystemData
		if json.Unmarshal(rd.SystemData, &sd) == nil {
			np.SystemData = &sd
		}
	}
	return np, nil
}

func nodePoolModel(np *api.NodePool) (json.RawMessage, error) {
	b, err := json.Marshal(np)
	if err != nil {
		return nil, fmt.Errorf("encode node pool: %w", err)
	}
	return b, nil
}

func (s *Server) respondNodePool(w http.ResponseWriter, r *http.Request, code int, np *api.NodePool, etag string) error {
	v, err := nodePoolVersion(r)
	if err != nil {
		return err
	}
	b, err := json.Marshal(v.RenderNodePool(np))
	if err != nil {
		return fmt.Errorf("render node pool %s: %w", np.ID, err)
	}
	if etag != "" {
		w.Header().Set(arm.HeaderETag, quoteETag(etag))
	}
	writeJSON(w, code, b)
	return nil
}

// putNodePool creates a node pool, retries a create still pending, or replaces one.
func (s *Server) putNodePool(w http.ResponseWriter, r *http.Request) error {
	ri := info(r)
	id, err := nodePoolID(r)
	if err != nil {
		return err
	}
	ver, err := nodePoolVersion(r)
	if err != nil {
		return err
	}
	if len(ri.body) == 0 {
		return cloudError(http.StatusBadRequest, arm.CodeInvalidRequestContent, "", "The request content is empty.")
	}
	cluster, err := s.parentCluster(r.Context(), id)
	if err != nil {
		return err
	}
	rd, doc, err := s.getResourceDoc(r.Context(), id)
	if err != nil && !errors.Is(err, docstore.ErrNotFound) {
		return err
	}
	var stored *api.NodePool
	if rd != nil {
		if stored, err = nodePoolFromDoc(rd); err != nil {
			return err
		}
	}
	np, err := ver.DecodeNodePool(ri.body, stored)
	if err != nil {
		return err
	}
	if normalizeLocation(np.Location) != s.cfg.Location {
		return cloudError(http.StatusBadRequest, arm.CodeInvalidRequestContent, "location",
			"The location '%s' is not served by this endpoint, which serves '%s'.", np.Location, s.cfg.Location)
	}
	np.ID = id
	if err := checkPutPreconditions(r, rd, doc); err != nil {
		return err
	}
	sd := requestSystemData(r)
	if doc == nil {
		if err := s.checkClusterIdle(r.Context(), cluster); err != nil {
			return err
		}
		return s.createNodePool(w, r, cluster, np, sd)
	}
	ver.PreserveNodePool(stored, np)
	keepStored(stored, np)
	np.SystemData = sd
	return s.updateNodePool(w, r, cluster, stored, np, rd, doc, false)
}

func (s *Server) createNodePool(w http.ResponseWriter, r *http.Request, cluster *armdoc.ResourceDocument, np *api.NodePool, sd *arm.SystemData) error {
	np.ProvisioningState = armdoc.StateAccepted
	np.SystemData = sd
	csID := newClusterServiceID()
	opID := newUUID()
	props, err := nodePoolModel(np)
	if err != nil {
		return err
	}
	rd := &armdoc.ResourceDocument{
		ResourceID: np.ID.String(), InternalID: csID, ProvisioningState: armdoc.StateAccepted, ActiveOperationID: opID,
		Location: np.Location, Tags: np.Tags, Properties: props,
	}
	if sd != nil {
		rd.SystemData, _ = json.Marshal(sd)
	}
	var created *csv1.NodePool
	etag, err := s.startCreate(r, &nodePools, np.ID, rd, []any{"clusterID", cluster.InternalID}, func() (string, error) {
		created, err = s.callCreateNodePool(r, np, csID, cluster.InternalID)
		return created.GetId(), err
	})
	if err != nil {
		return err
	}
	fromClusterServiceSpec(np, created.GetSpec())
	if etag, err = s.storeNodePoolProperties(r.Context(), np); err != nil {
		return err
	}
	s.setAsyncHeaders(w, r, np.ID.SubscriptionID, opID, false)
	return s.respondNodePool(w, r, http.StatusCreated, np, etag)
}

func (s *Server) callCreateNodePool(r *http.Request, np *api.NodePool, csID, clusterCSID string) (*csv1.NodePool, error) {
	ctx, cancel := s.csContext(r.Context(), info(r))
	defer cancel()
	req := &csv1.CreateNodePoolRequest{NodePool: &csv1.NodePool{
		Id: csID, ClusterId: clusterCSID, ArmResourceId: np.ID.String(), Spec: nodePoolSpec(np),
	}}
	created, err := s.cfg.NodePools.CreateNodePool(ctx, req)
	return created, fieldViolations(info(r).version, req, err)
}

// storeNodePoolProperties writes np's properties (Cluster Service's answer) into its resource
// document, again on what is there now if another writer (the backend following the create)
// got in between; it returns the new ETag.
func (s *Server) storeNodePoolProperties(ctx context.Context, np *api.NodePool) (string, error) {
	props, err := nodePoolModel(np)
	if err != nil {
		return "", err
	}
	for attempt := 1; ; attempt++ {
		rd, doc, err := s.getResourceDoc(ctx, np.ID)
		if err != nil {
			return "", fmt.Errorf("read node pool %s to store Cluster Service's spec: %w", np.ID, err)
		}
		rd.Properties = props
		next, err := withBody(doc, rd)
		if err != nil {
			return "", err
		}
		written, err := s.store.Transact(ctx, doc.PartitionKey, []docstore.TxOp{{Kind: docstore.TxReplace, Doc: next, IfMatch: doc.ETag}})
		if errors.Is(err, docstore.ErrPreconditionFailed) && attempt < 5 {
			continue
		}
		if err != nil {
			return "", fmt.Errorf("store Cluster Service's spec of node pool %s: %w", np.ID, err)
		}
		return written[0].ETag, nil
	}
}

// updateNodePool writes next over an existing node pool, for a PUT (200) or a PATCH (202).
// Create-only fields may not change. A change Cluster Service must roll out becomes an
// UpdateNodePool call naming only what changes (nodePoolUpdate), and an Update operation the backend
// ends once the pool is READY as asked; anything else (tags, identity) is written at once.
func (s *Server) updateNodePool(w http.ResponseWriter, r *http.Request, cluster *armdoc.ResourceDocument, stored, next *api.NodePool,
	rd *armdoc.ResourceDocument, doc *docstore.Document, patch bool) error {
	ctx := r.Context()
	part := doc.PartitionKey
	op, err := s.pendingCreate(ctx, part, rd, next.ID, !patch && sameNodePool(stored, next))
	if err != nil {
		return err
	}
	if op != nil {
		// The caller retries a create we accepted: drive Cluster Service again with the
		// stored ID (CreateNodePool is idempotent) and point at the same operation.
		if _, err := s.callCreateNodePool(r, stored, rd.InternalID, cluster.InternalID); err != nil {
			return fmt.Errorf("retry create of node pool %s: %w", next.ID, err)
		}
		s.setAsyncHeaders(w, r, next.ID.SubscriptionID, op.ID, false)
		return s.respondNodePool(w, r, http.StatusCreated, stored, doc.ETag)
	}
	if errs := nodePoolChangedFields(stored, next); len(errs) > 0 {
		return arm.Multiple(errs)
	}
	if err := s.checkClusterIdle(ctx, cluster); err != nil {
		return err
	}
	props, err := nodePoolModel(next)
	if err != nil {
		return err
	}
	nrd := *rd
	nrd.Tags, nrd.Properties = next.Tags, props
	mergeSystemData(&nrd, next.SystemData)

	if sameClusterServiceSpec(stored, next) {
		return s.writeNodePoolOnly(w, r, next, &nrd, doc, patch)
	}
	u := nodePoolUpdate(stored, next, patch)
	call := func(string) (updateStarted, error) {
		revision, err := s.callUpdateNodePool(r, rd.InternalID, next, u)
		return updateStarted{revision: revision}, err
	}
	return s.startUpdate(w, r, &nodePools, next.ID, &nrd, doc, patch, call, func(etag string) error {
		next.ProvisioningState = armdoc.StateUpdating
		return s.respondNodePool(w, r, http.StatusOK, next, etag)
	})
}

// callUpdateNodePool sends the partial update and returns the spec_revision it took effect at
// (the operation's InternalRevision: the backend ends it once a READY status has observed it;
// an update that changed nothing returns the current spec's). It is unconditional in Cluster
// Service: the update names only what this request changes, Cluster Service merges it under its
// own lock, and the ARM-level race was decided before the call, by the resource document's ETag
// (startUpdate).
func (s *Server) callUpdateNodePool(r *http.Request, csID string, next *api.NodePool, u *csv1.NodePoolUpdate) (int64, error) {
	ctx, cancel := s.csContext(r.Context(), info(r))
	defer cancel()
	req := &csv1.UpdateNodePoolRequest{Id: csID, Update: u}
	updated, err := s.cfg.NodePools.UpdateNodePool(ctx, req)
	if err != nil {
		return 0, fmt.Errorf("update node pool %s in cluster service: %w", next.ID, fieldViolations(info(r).version, req, err))
	}
	return updated.GetSpecRevision(), nil
}

// writeNodePoolOnly records a change Cluster Service does not see. A PATCH still answers 202
// with an operation, recorded already Succeeded.
func (s *Server) writeNodePoolOnly(w http.ResponseWriter, r *http.Request, next *api.NodePool, nrd *armdoc.ResourceDocument, doc *docstore.Document, patch bool) error {
	ctx := r.Context()
	resDoc, err := withBody(doc, nrd)
	if err != nil {
		return err
	}
	if !patch {
		written, err := s.store.Replace(ctx, resDoc, doc.ETag)
		if err != nil {
			return err
		}
		updated, err := nodePoolFromDoc(nrd)
		if err != nil {
			return err
		}
		return s.respondNodePool(w, r, http.StatusOK, updated, written.ETag)
	}
	opID := newUUID()
	now := time.Now().UTC()
	op := s.newOperation(r, opID, armdoc.OperationUpdate, next.ID.String(), nrd.InternalID, now)
	op.Status, op.EndTime = armdoc.StateSucceeded, &now
	opDoc, err := newDoc(doc.PartitionKey, opID, docstore.TypeOperation, next.ID.String(), op, s.cfg.OperationTTL)
	if err != nil {
		return err
	}
	if _, err := s.store.Transact(ctx, doc.PartitionKey, []docstore.TxOp{
		{Kind: docstore.TxReplace, Doc: resDoc, IfMatch: doc.ETag},
		{Kind: docstore.TxCreate, Doc: opDoc},
	}); err != nil {
		return err
	}
	s.setAsyncHeaders(w, r, next.ID.SubscriptionID, opID, true)
	w.WriteHeader(http.StatusAccepted)
	return nil
}

func sameNodePool(a, b *api.NodePool) bool {
	ja, _ := nodePoolModel(a)
	jb, _ := nodePoolModel(b)
	sameTags := len(a.Tags) == len(b.Tags)
	for k, v := range a.Tags {
		if bv, ok := b.Tags[k]; !ok || bv != v {
			sameTags = false
		}
	}
	return sameTags && string(ja) == string(jb) && normalizeLocation(a.Location) == normalizeLocation(b.Location)
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
	ja, _ := nodePoolModel(stored)
	jb, _ := nodePoolModel(next)
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

// patchNodePool merges the body into the node pool as the request's api-version shows it.
func (s *Server) patchNodePool(w http.ResponseWriter, r *http.Request) error {
	ri := info(r)
	ctx := r.Context()
	id, err := nodePoolID(r)
	if err != nil {
		return err
	}
	ver, err := nodePoolVersion(r)
	if err != nil {
		return err
	}
	if len(ri.body) == 0 {
		return cloudError(http.StatusBadRequest, arm.CodeInvalidRequestContent, "", "The request content is empty.")
	}
	cluster, err := s.parentCluster(ctx, id)
	if err != nil {
		return err
	}
	rd, doc, err := s.readForPatch(r, id, nodePoolNotFound)
	if err != nil {
		return err
	}
	stored, err := nodePoolFromDoc(rd)
	if err != nil {
		return err
	}
	next, err := api.PatchNodePool(ver, stored, ri.body)
	if err != nil {
		return err
	}
	next.ID = id
	if next.Properties.Platform.SubnetID == "" {
		next.Properties.Platform.SubnetID = stored.Properties.Platform.SubnetID
	}
	next.SystemData = requestSystemData(r)
	return s.updateNodePool(w, r, cluster, stored, next, rd, doc, true)
}

func (s *Server) getNodePool(w http.ResponseWriter, r *http.Request) error {
	id, err := nodePoolID(r)
	if err != nil {
		return err
	}
	rd, doc, done, err := s.readForGet(w, r, id, nodePoolNotFound)
	if err != nil || done {
		return err
	}
	np, err := nodePoolFromDoc(rd)
	if err != nil {
		return err
	}
	return s.respondNodePool(w, r, http.StatusOK, np, doc.ETag)
}

func (s *Server) deleteNodePool(w http.ResponseWriter, r *http.Request) error {
	id, err := nodePoolID(r)
	if err != nil {
		return err
	}
	return s.deleteResource(w, r, &nodePools, id)
}

func (s *Server) callDeleteNodePool(r *http.Request, csID string) error {
	if csID == "" {
		return nil
	}
	ctx, cancel := s.csContext(r.Context(), info(r))
	defer cancel()
	_, err := s.cfg.NodePools.DeleteNodePool(ctx, &csv1.DeleteNodePoolRequest{Id: csID})
	if status.Code(err) == codes.NotFound {
		return nil // already gone: the backend completes the delete
	}
	return err
}

// listNodePools lists a cluster's node pools, a page at a time.
func (s *Server) listNodePools(w http.ResponseWriter, r *http.Request) error {
	ver, err := nodePoolVersion(r)
	if err != nil {
		return err
	}
	return s.listChildren(w, r, &nodePools, nodePoolsPath, func(rd *armdoc.ResourceDocument) (any, error) {
		np, err := nodePoolFromDoc(rd)
		if err != nil {
			return nil, err
		}
		return ver.RenderNodePool(np), nil
	})
}
