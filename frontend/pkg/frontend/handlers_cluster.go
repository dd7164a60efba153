package frontend

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"reflect"
	"regexp"
	"sort"
	"strings"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	csv1 "github.com/openhcp/openhcp/cluster-service/api/v1"
	"github.com/openhcp/openhcp/frontend/pkg/api"
	docs "github.com/openhcp/openhcp/internal/api"
	"github.com/openhcp/openhcp/internal/arm"
	"github.com/openhcp/openhcp/internal/store"
)

// clusterNameRE is the name pattern from the specification.
var clusterNameRE = regexp.MustCompile(`^[a-zA-Z]([-a-zA-Z0-9]{0,52}[a-zA-Z0-9])?$`)

// clusterID is the resource ID of the request, in the caller's casing.
func clusterID(r *http.Request) (*arm.ResourceID, error) {
	id, err := arm.ParseResourceID(info(r).originalPath)
	if err != nil || len(id.Names) != 1 {
		return nil, cloudError(http.StatusBadRequest, arm.CodeInvalidResourceName, "", "The resource ID %q is not valid.", info(r).originalPath)
	}
	if !clusterNameRE.MatchString(id.Name()) {
		return nil, cloudError(http.StatusBadRequest, arm.CodeInvalidResourceName, "name",
			"The resource name '%s' is invalid: 1 to 54 letters, digits and '-', starting with a letter and not ending with '-'.", id.Name())
	}
	return id, nil
}

func notFound(id *arm.ResourceID) error {
	return cloudError(http.StatusNotFound, arm.CodeResourceNotFound, "",
		"The resource 'hcpOpenShiftClusters/%s' under resource group '%s' was not found.", id.Name(), id.ResourceGroup)
}

// tenantID is the customer's tenant: from the subscription registration, else ARM's header.
func tenantID(r *http.Request) string {
	if sub := info(r).subscription; sub != nil && len(sub.Properties) > 0 {
		var p struct {
			TenantID string `json:"tenantId"`
		}
		if json.Unmarshal(sub.Properties, &p) == nil && p.TenantID != "" {
			return p.TenantID
		}
	}
	return r.Header.Get(arm.HeaderHomeTenantID)
}

func (s *Server) newOperation(r *http.Request, opID string, req docs.OperationRequest, externalID, internalID string, now time.Time) *docs.OperationDocument {
	return &docs.OperationDocument{
		ID:                 opID,
		Request:            req,
		ExternalID:         externalID,
		InternalID:         internalID,
		Location:           s.cfg.Location,
		Status:             docs.StateAccepted,
		StartTime:          now,
		LastTransitionTime: now,
		TenantID:           r.Header.Get(arm.HeaderHomeTenantID),
		ClientID:           r.Header.Get(arm.HeaderClientObjectID),
		NotificationURI:    r.Header.Get(arm.HeaderAsyncNotificationURI),
		CorrelationID:      info(r).correlationID,
	}
}

func (s *Server) respondCluster(w http.ResponseWriter, r *http.Request, code int, c *api.Cluster, etag string) error {
	b, err := json.Marshal(info(r).version.RenderCluster(c))
	if err != nil {
		return fmt.Errorf("render cluster %s: %w", c.ID, err)
	}
	if etag != "" {
		w.Header().Set(arm.HeaderETag, quoteETag(etag))
	}
	writeJSON(w, code, b)
	return nil
}

// rollback undoes documents written for a call that Cluster Service refused. It is best effort:
// if it fails, the backend's operation deadline fails the orphaned operation.
func (s *Server) rollback(r *http.Request, partition string, ops []store.TxOp) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(r.Context()), 10*time.Second)
	defer cancel()
	if _, err := s.store.Transact(ctx, partition, ops); err != nil {
		info(r).log.Error("roll back documents after a refused Cluster Service call", "error", err)
	}
}

func (s *Server) callCreate(r *http.Request, c *api.Cluster, csID string) (*csv1.Cluster, error) {
	ctx, cancel := s.csContext(r.Context(), info(r))
	defer cancel()
	return s.cs.CreateCluster(ctx, &csv1.CreateClusterRequest{Cluster: &csv1.Cluster{
		Id:            csID,
		ArmResourceId: c.ID.String(),
		Spec:          clusterSpec(c, tenantID(r)),
	}})
}

func (s *Server) callDelete(r *http.Request, csID string) error {
	if csID == "" {
		return nil
	}
	ctx, cancel := s.csContext(r.Context(), info(r))
	defer cancel()
	_, err := s.cs.DeleteCluster(ctx, &csv1.DeleteClusterRequest{Id: csID})
	if status.Code(err) == codes.NotFound {
		return nil // already gone: the backend completes the delete
	}
	return err
}

// putCluster creates a cluster, retries a create that is still pending, or updates tags.
func (s *Server) putCluster(w http.ResponseWriter, r *http.Request) error {
	ri := info(r)
	id, err := clusterID(r)
	if err != nil {
		return err
	}
	if len(ri.body) == 0 {
		return cloudError(http.StatusBadRequest, arm.CodeInvalidRequestContent, "", "The request content is empty.")
	}
	rd, doc, err := s.getResourceDoc(r.Context(), id)
	if err != nil && !errors.Is(err, store.ErrNotFound) {
		return err
	}
	var stored *api.Cluster
	if rd != nil {
		if stored, err = clusterFromDoc(rd); err != nil {
			return err
		}
	}
	c, err := ri.version.DecodeClusterUpdate(ri.body, stored)
	if err != nil {
		return err
	}
	if normalizeLocation(c.Location) != s.cfg.Location {
		return cloudError(http.StatusBadRequest, arm.CodeInvalidRequestContent, "location",
			"The location '%s' is not served by this endpoint, which serves '%s'.", c.Location, s.cfg.Location)
	}
	c.ID = id
	sd, err := arm.ParseSystemData(r.Header.Get(arm.HeaderSystemData))
	if err != nil {
		ri.log.Warn("ignoring invalid systemData header", "error", err)
	}
	current := ""
	if doc != nil {
		current = doc.ETag
	}
	if err := checkPreconditions(r, current); err != nil {
		return err
	}
	storedState := docs.ProvisioningState("")
	if rd != nil {
		storedState = rd.ProvisioningState
	}
	if err := checkClientProvisioningState(ri.body, storedState); err != nil {
		return err
	}
	if doc == nil {
		return s.createCluster(w, r, c, sd)
	}
	return s.updateCluster(w, r, c, sd, rd, doc)
}

// checkClientProvisioningState rejects a body whose properties.provisioningState (read-only)
// differs from the stored one: a client that sends it back unchanged after a GET is fine, one
// that tries to set it is told so instead of being silently ignored.
func checkClientProvisioningState(body []byte, stored docs.ProvisioningState) error {
	var b struct {
		Properties map[string]json.RawMessage `json:"properties"`
	}
	if json.Unmarshal(body, &b) != nil {
		return nil // the decoder has already reported what is wrong with the body
	}
	for k, raw := range b.Properties {
		if !strings.EqualFold(k, "provisioningState") {
			continue
		}
		var got string
		if json.Unmarshal(raw, &got) != nil || got == "" {
			continue
		}
		if stored == "" || !strings.EqualFold(got, string(stored)) {
			return cloudError(http.StatusBadRequest, arm.CodeInvalidRequestContent, "properties.provisioningState",
				"The read-only field 'properties.provisioningState' cannot be set: it is '%s', the request says '%s'.", orNone(string(stored)), got)
		}
	}
	return nil
}

func orNone(s string) string {
	if s == "" {
		return "not set (the resource does not exist)"
	}
	return s
}

func (s *Server) createCluster(w http.ResponseWriter, r *http.Request, c *api.Cluster, sd *arm.SystemData) error {
	ri := info(r)
	ctx := r.Context()
	if c.Properties.Platform.ManagedResourceGroup == "" {
		c.Properties.Platform.ManagedResourceGroup = defaultManagedResourceGroup(c.ID.Name())
	}
	c.ProvisioningState = docs.StateAccepted
	c.SystemData = sd
	// The Cluster Service ID is chosen and stored before the call, so a retry after a crash
	// or timeout calls CreateCluster again with the same ID and never makes a second cluster.
	csID := newClusterServiceID()
	opID := newUUID()
	now := time.Now().UTC()
	props, err := storedModel(c)
	if err != nil {
		return err
	}
	rd := &docs.ResourceDocument{
		ResourceID:        c.ID.String(),
		InternalID:        csID,
		ProvisioningState: docs.StateAccepted,
		ActiveOperationID: opID,
		Location:          c.Location,
		Tags:              c.Tags,
		Properties:        props,
	}
	if sd != nil {
		rd.SystemData, _ = json.Marshal(sd)
	}
	part := partitionKey(c.ID.SubscriptionID)
	resDoc, err := newDoc(part, c.ID.Lower(), store.TypeResource, c.ID.String(), rd, 0)
	if err != nil {
		return err
	}
	opDoc, err := newDoc(part, opID, store.TypeOperation, c.ID.String(), s.newOperation(r, opID, docs.OperationCreate, c.ID.String(), csID, now), s.cfg.OperationTTL)
	if err != nil {
		return err
	}
	written, err := s.store.Transact(ctx, part, []store.TxOp{
		{Kind: store.TxCreate, Doc: resDoc},
		{Kind: store.TxCreate, Doc: opDoc},
	})
	if errors.Is(err, store.ErrAlreadyExists) {
		return cloudError(http.StatusConflict, arm.CodeConflict, "", "Another request created '%s' at the same time.", c.ID)
	}
	if err != nil {
		return err
	}
	ri.log.Info("cluster create accepted", "resourceID", c.ID.String(), "clusterID", csID, "operationID", opID)

	created, err := s.callCreate(r, c, csID)
	if err != nil {
		if definitive(err) {
			s.rollback(r, part, []store.TxOp{
				{Kind: store.TxDelete, Doc: written[0], IfMatch: written[0].ETag},
				{Kind: store.TxDelete, Doc: written[1], IfMatch: written[1].ETag},
			})
		}
		return fmt.Errorf("create cluster %s in cluster service: %w", c.ID, err)
	}
	etag := written[0].ETag
	if got := created.GetId(); got != "" && got != csID {
		// Cluster Service already had a cluster for this resource (created under another ID by
		// an earlier attempt whose documents are gone): follow the one that exists.
		if etag, err = s.adoptClusterID(ctx, part, written, got); err != nil {
			return err
		}
	}
	s.setAsyncHeaders(w, r, c.ID.SubscriptionID, opID, false)
	return s.respondCluster(w, r, http.StatusCreated, c, etag)
}

// adoptClusterID points the resource and its operation at the Cluster Service ID that exists.
func (s *Server) adoptClusterID(ctx context.Context, part string, written []*store.Document, csID string) (string, error) {
	var rd docs.ResourceDocument
	var op docs.OperationDocument
	if err := json.Unmarshal(written[0].Body, &rd); err != nil {
		return "", err
	}
	if err := json.Unmarshal(written[1].Body, &op); err != nil {
		return "", err
	}
	rd.InternalID, op.InternalID = csID, csID
	res, err := withBody(written[0], rd)
	if err != nil {
		return "", err
	}
	opd, err := withBody(written[1], op)
	if err != nil {
		return "", err
	}
	out, err := s.store.Transact(ctx, part, []store.TxOp{
		{Kind: store.TxReplace, Doc: res, IfMatch: written[0].ETag},
		{Kind: store.TxReplace, Doc: opd, IfMatch: written[1].ETag},
	})
	if err != nil {
		return "", fmt.Errorf("record existing cluster ID %s: %w", csID, err)
	}
	return out[0].ETag, nil
}

func (s *Server) updateCluster(w http.ResponseWriter, r *http.Request, c *api.Cluster, sd *arm.SystemData, rd *docs.ResourceDocument, doc *store.Document) error {
	ctx := r.Context()
	part := partitionKey(c.ID.SubscriptionID)
	stored, err := clusterFromDoc(rd)
	if err != nil {
		return err
	}
	if c.Properties.Platform.ManagedResourceGroup == "" {
		c.Properties.Platform.ManagedResourceGroup = stored.Properties.Platform.ManagedResourceGroup
	}
	info(r).version.Preserve(stored, c)
	same, err := sameModel(stored, c)
	if err != nil {
		return err
	}
	if rd.ActiveOperationID != "" {
		op, _, err := s.getOperationDoc(ctx, part, rd.ActiveOperationID)
		if err != nil && !errors.Is(err, store.ErrNotFound) {
			return err
		}
		if err == nil && !op.Status.Terminal() {
			if op.Request == docs.OperationCreate && same {
				// The caller retries a create we accepted: drive Cluster Service again with the
				// stored ID (CreateCluster is idempotent) and point at the same operation.
				if _, err := s.callCreate(r, stored, rd.InternalID); err != nil {
					return fmt.Errorf("retry create of cluster %s: %w", c.ID, err)
				}
				s.setAsyncHeaders(w, r, c.ID.SubscriptionID, op.ID, false)
				return s.respondCluster(w, r, http.StatusCreated, stored, doc.ETag)
			}
			return cloudError(http.StatusConflict, arm.CodeConflict, "",
				"Cannot write resource '%s' while operation '%s' (%s) is in progress.", c.ID, op.ID, op.Request)
		}
	}
	if !same {
		if errs := changedFields(info(r).version, stored, c); len(errs) > 0 {
			return arm.Multiple(errs)
		}
		if u := clusterUpdate(info(r).version, stored, c); u != nil {
			return s.startClusterUpdate(w, r, c, rd, doc, u, false) // handlers_cluster_update.go
		}
	}
	// Only tags (and ARM's systemData) change; no operation is needed.
	rd.Tags = c.Tags
	if sd != nil {
		var prev *arm.SystemData
		if len(rd.SystemData) > 0 {
			prev = &arm.SystemData{}
			json.Unmarshal(rd.SystemData, prev)
		}
		rd.SystemData, _ = json.Marshal(prev.Merge(sd))
	}
	next, err := withBody(doc, rd)
	if err != nil {
		return err
	}
	written, err := s.store.Replace(ctx, next, doc.ETag)
	if err != nil {
		return err
	}
	updated, err := clusterFromDoc(rd)
	if err != nil {
		return err
	}
	return s.respondCluster(w, r, http.StatusOK, updated, written.ETag)
}

func sameModel(a, b *api.Cluster) (bool, error) {
	ja, err := storedModel(a)
	if err != nil {
		return false, err
	}
	jb, err := storedModel(b)
	if err != nil {
		return false, err
	}
	sameTags := len(a.Tags) == len(b.Tags)
	for k, v := range a.Tags {
		if bv, ok := b.Tags[k]; !ok || bv != v {
			sameTags = false
		}
	}
	return sameTags && string(ja) == string(jb) && normalizeLocation(a.Location) == normalizeLocation(b.Location), nil
}

// changedFields lists the fields a PUT or PATCH on an existing cluster tries to change, each as
// a PropertyChangeNotAllowed error whose target is the field's path in the request's
// api-version. Fields the version's spec lets a write update are refused too, with a message
// saying so: Cluster Service has no update call yet.
func changedFields(ver api.Version, stored, next *api.Cluster) []*arm.CloudError {
	var a, b map[string]any
	ja, _ := storedModel(stored)
	jb, _ := storedModel(next)
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
		if updatableThroughCS(ver, p) {
			continue // handlers_cluster_update.go
		}
		updatable := false
		for _, u := range ver.UpdatableFields() {
			if p == u || strings.HasPrefix(p, u+".") {
				updatable = true
			}
		}
		ext := ver.ExternalPath(p)
		if updatable {
			errs = append(errs, cloudError(http.StatusBadRequest, "PropertyChangeNotAllowed", ext,
				"Changing '%s' of an existing cluster is not supported yet: only tags and properties.version can be changed.", ext))
		} else {
			errs = append(errs, cloudError(http.StatusBadRequest, "PropertyChangeNotAllowed", ext,
				"Field '%s' cannot be changed after the cluster is created.", ext))
		}
	}
	return errs
}

func diffPaths(a, b any, path string, out *[]string) {
	ma, okA := a.(map[string]any)
	mb, okB := b.(map[string]any)
	if okA && okB {
		keys := map[string]bool{}
		for k := range ma {
			keys[k] = true
		}
		for k := range mb {
			keys[k] = true
		}
		for k := range keys {
			p := k
			if path != "" {
				p = path + "." + k
			}
			diffPaths(ma[k], mb[k], p, out)
		}
		return
	}
	if !reflect.DeepEqual(a, b) {
		*out = append(*out, path)
	}
}

func (s *Server) getCluster(w http.ResponseWriter, r *http.Request) error {
	id, err := clusterID(r)
	if err != nil {
		return err
	}
	rd, doc, err := s.getResourceDoc(r.Context(), id)
	if errors.Is(err, store.ErrNotFound) {
		return notFound(id)
	}
	if err != nil {
		return err
	}
	if h := r.Header.Get(arm.HeaderIfNoneMatch); h != "" && etagMatches(h, doc.ETag) {
		w.Header().Set(arm.HeaderETag, quoteETag(doc.ETag))
		w.WriteHeader(http.StatusNotModified)
		return nil
	}
	if h := r.Header.Get(arm.HeaderIfMatch); h != "" && !etagMatches(h, doc.ETag) {
		return cloudError(http.StatusPreconditionFailed, arm.CodePreconditionFailed, "If-Match", "The resource's ETag does not match the If-Match header.")
	}
	c, err := clusterFromDoc(rd)
	if err != nil {
		return err
	}
	s.addClusterStatus(r, c, rd.InternalID)
	return s.respondCluster(w, r, http.StatusOK, c, doc.ETag)
}

// addClusterStatus fills the read-only URLs and conditions from Cluster Service. It is best
// effort: without Cluster Service a GET still answers from the store. The call gets the same
// bound as every other Cluster Service call (not a shorter one): under load a slow answer is
// better than a response that silently lacks its status.
func (s *Server) addClusterStatus(r *http.Request, c *api.Cluster, csID string) {
	if csID == "" {
		return
	}
	ctx, cancel := s.csContext(r.Context(), info(r))
	defer cancel()
	cl, err := s.cs.GetCluster(ctx, &csv1.GetClusterRequest{Id: csID})
	if err != nil {
		info(r).log.Warn("cluster status unavailable; answering from the store without it", "clusterID", csID, "error", err)
		return
	}
	c.Properties.Console.URL = cl.GetStatus().GetConsoleUrl()
	c.Properties.API.URL = cl.GetStatus().GetApiUrl()
	c.Conditions = specConditions(cl.GetStatus().GetConditions())
}

// conditionReasonRE is the spec's pattern for a condition reason.
var conditionReasonRE = regexp.MustCompile(`^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$`)

// specConditions keeps the HostedCluster conditions the spec's status.conditions knows
// (Available, Degraded, Progressing; True, False, Unknown), within its limits.
func specConditions(in []*csv1.Condition) []api.Condition {
	var out []api.Condition
	for _, c := range in {
		switch c.GetType() {
		case "Available", "Degraded", "Progressing":
		default:
			continue
		}
		switch c.GetStatus() {
		case "True", "False", "Unknown":
		default:
			continue
		}
		reason := c.GetReason()
		if len(reason) > 1024 || !conditionReasonRE.MatchString(reason) {
			reason = "Unknown"
		}
		msg := c.GetMessage()
		if len(msg) > 32768 {
			msg = msg[:32768]
		}
		if c.GetLastTransitionTime() == nil || len(out) == 10 {
			continue
		}
		out = append(out, api.Condition{Type: c.GetType(), Status: c.GetStatus(), Reason: reason, Message: msg,
			LastTransitionTime: c.GetLastTransitionTime().AsTime().UTC()})
	}
	return out
}

func (s *Server) deleteCluster(w http.ResponseWriter, r *http.Request) error {
	id, err := clusterID(r)
	if err != nil {
		return err
	}
	rd, doc, err := s.getResourceDoc(r.Context(), id)
	if err != nil && !errors.Is(err, store.ErrNotFound) {
		return err
	}
	current := ""
	if doc != nil {
		current = doc.ETag
	}
	if err := checkPreconditions(r, current); err != nil {
		return err
	}
	if doc == nil {
		w.WriteHeader(http.StatusNoContent)
		return nil
	}
	opID, err := s.startDelete(r, rd, doc)
	if err != nil {
		return err
	}
	s.setAsyncHeaders(w, r, id.SubscriptionID, opID, true)
	w.WriteHeader(http.StatusAccepted)
	return nil
}

// startDelete writes the delete operation and asks Cluster Service to uninstall. A delete
// while one runs returns the running one; a delete during a create or update cancels that
// operation. It returns the operation ID.
func (s *Server) startDelete(r *http.Request, rd *docs.ResourceDocument, doc *store.Document) (string, error) {
	ctx := r.Context()
	part := doc.PartitionKey
	var canceled, canceledOrig *store.Document
	if rd.ActiveOperationID != "" {
		op, opDoc, err := s.getOperationDoc(ctx, part, rd.ActiveOperationID)
		switch {
		case err == nil && !op.Status.Terminal() && op.Request == docs.OperationDelete:
			if err := s.callDelete(r, rd.InternalID); err != nil {
				return "", fmt.Errorf("retry delete of cluster %s: %w", rd.ResourceID, err)
			}
			return op.ID, nil
		case err == nil && !op.Status.Terminal():
			now := time.Now().UTC()
			op.Status, op.LastTransitionTime, op.EndTime = docs.StateCanceled, now, &now
			op.Error = &docs.CloudErrorBody{Code: arm.CodeCanceled, Message: "The operation was canceled because the resource is being deleted."}
			if canceled, err = withBody(opDoc, op); err != nil {
				return "", err
			}
			canceledOrig = opDoc
		case err != nil && !errors.Is(err, store.ErrNotFound):
			return "", err
		}
	}
	opID := newUUID()
	now := time.Now().UTC()
	next := *rd
	next.ProvisioningState = docs.StateDeleting
	next.ActiveOperationID = opID
	resDoc, err := withBody(doc, next)
	if err != nil {
		return "", err
	}
	opDoc, err := newDoc(part, opID, store.TypeOperation, rd.ResourceID, s.newOperation(r, opID, docs.OperationDelete, rd.ResourceID, rd.InternalID, now), s.cfg.OperationTTL)
	if err != nil {
		return "", err
	}
	ops := []store.TxOp{{Kind: store.TxReplace, Doc: resDoc, IfMatch: doc.ETag}, {Kind: store.TxCreate, Doc: opDoc}}
	if canceled != nil {
		ops = append(ops, store.TxOp{Kind: store.TxReplace, Doc: canceled, IfMatch: canceledOrig.ETag})
	}
	written, err := s.store.Transact(ctx, part, ops)
	if err != nil {
		return "", fmt.Errorf("record delete of %s: %w", rd.ResourceID, err)
	}
	info(r).log.Info("cluster delete accepted", "resourceID", rd.ResourceID, "clusterID", rd.InternalID, "operationID", opID)
	if err := s.callDelete(r, rd.InternalID); err != nil {
		if definitive(err) {
			undo := []store.TxOp{
				{Kind: store.TxReplace, Doc: doc, IfMatch: written[0].ETag},
				{Kind: store.TxDelete, Doc: written[1], IfMatch: written[1].ETag},
			}
			if canceled != nil {
				undo = append(undo, store.TxOp{Kind: store.TxReplace, Doc: canceledOrig, IfMatch: written[2].ETag})
			}
			s.rollback(r, part, undo)
		}
		return "", fmt.Errorf("delete cluster %s in cluster service: %w", rd.ResourceID, err)
	}
	return opID, nil
}

// listClusters lists a resource group's or a subscription's clusters, a page at a time.
func (s *Server) listClusters(w http.ResponseWriter, r *http.Request) error {
	ri := info(r)
	subID := r.PathValue("subscriptionId")
	prefix := "/subscriptions/" + subID + "/resourcegroups/"
	if rg := r.PathValue("resourceGroupName"); rg != "" {
		prefix += rg + clustersPath + "/"
	}
	page, err := s.store.Query(r.Context(), store.Query{
		Partition:        partitionKey(subID),
		Type:             store.TypeResource,
		ResourceIDPrefix: prefix,
		Limit:            s.cfg.PageSize,
		Continuation:     r.URL.Query().Get("$skipToken"),
	})
	if err != nil {
		return err
	}
	out := struct {
		Value    []any  `json:"value"`
		NextLink string `json:"nextLink,omitempty"`
	}{Value: []any{}}
	for _, d := range page.Documents {
		var rd docs.ResourceDocument
		if err := json.Unmarshal(d.Body, &rd); err != nil {
			return fmt.Errorf("decode resource %s: %w", d.ID, err)
		}
		id, err := arm.ParseResourceID(rd.ResourceID)
		if err != nil || !strings.EqualFold(id.ResourceType(), api.ClusterResourceType) {
			continue // node pools and other child resources share the prefix
		}
		c, err := clusterFromDoc(&rd)
		if err != nil {
			return err
		}
		out.Value = append(out.Value, ri.version.RenderCluster(c))
	}
	if page.Continuation != "" {
		q := url.Values{"api-version": {ri.apiVersion}, "$skipToken": {page.Continuation}}
		out.NextLink = externalBase(r) + ri.originalPath + "?" + q.Encode()
	}
	b, err := json.Marshal(out)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, b)
	return nil
}
