package frontend

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"reflect"
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
	if t := registeredTenant(info(r).subscription); t != "" {
		return t
	}
	return r.Header.Get(arm.HeaderHomeTenantID)
}

func (s *Server) newOperation(r *http.Request, opID string, req armdoc.OperationRequest, externalID, internalID string, now time.Time) *armdoc.OperationDocument {
	return &armdoc.OperationDocument{
		ID:                 opID,
		Request:            req,
		ExternalID:         externalID,
		InternalID:         internalID,
		Location:           s.cfg.Location,
		Status:             armdoc.StateAccepted,
		StartTime:          now,
		LastTransitionTime: now,
		TenantID:           r.Header.Get(arm.HeaderHomeTenantID),
		ClientID:           r.Header.Get(arm.HeaderClientObjectID),
		NotificationURI:    r.Header.Get(arm.HeaderAsyncNotificationURI),
		CorrelationID:      info(r).correlationID,
		Conditions:         conditionsOf(r),
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
func (s *Server) rollback(r *http.Request, partition, opID string, ops []docstore.TxOp) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(r.Context()), 10*time.Second)
	defer cancel()
	for attempt := 1; ; attempt++ {
		_, err := s.store.Transact(ctx, partition, ops)
		if err == nil {
			return
		}
		if !errors.Is(err, docstore.ErrPreconditionFailed) || attempt == 5 {
			info(r).logger().Error("roll back documents after a refused Cluster Service call", "operationID", opID, "attempts", attempt, "error", err)
			return
		}
		// Someone wrote in between — typically the backend, which reacts to a new operation at
		// once (it records it as Updating, Deleting, …). Undo against what is there now, as long
		// as the resource still belongs to this request's operation.
		next, ok, err := s.refreshUndo(ctx, partition, opID, ops)
		if err != nil || !ok {
			info(r).logger().Error("roll back documents after a refused Cluster Service call: not retried", "operationID", opID, "stillOurs", ok, "error", err)
			return
		}
		ops = next
	}
}

// refreshUndo re-reads the documents of an undo and makes each step conditional on their current
// ETags. It reports false when the undo must not go on: a resource now belongs to another
// operation (a newer request's), or a document to restore is gone.
func (s *Server) refreshUndo(ctx context.Context, partition, opID string, ops []docstore.TxOp) ([]docstore.TxOp, bool, error) {
	var out []docstore.TxOp
	for _, op := range ops {
		cur, err := s.store.Get(ctx, partition, op.Doc.ID)
		if errors.Is(err, docstore.ErrNotFound) {
			if op.Kind == docstore.TxDelete {
				continue // already gone
			}
			return nil, false, nil
		}
		if err != nil {
			return nil, false, fmt.Errorf("read %s for the undo: %w", op.Doc.ID, err)
		}
		if cur.Type != docstore.TypeOperation {
			var rd armdoc.ResourceDocument
			if err := json.Unmarshal(cur.Body, &rd); err != nil || rd.ActiveOperationID != opID {
				return nil, false, err
			}
		}
		op.IfMatch = cur.ETag
		out = append(out, op)
	}
	return out, len(out) > 0, nil
}

func (s *Server) callCreate(r *http.Request, c *api.Cluster, csID string) (*csv1.Cluster, error) {
	ctx, cancel := s.csContext(r.Context(), info(r))
	defer cancel()
	req := &csv1.CreateClusterRequest{Cluster: &csv1.Cluster{
		Id:            csID,
		ArmResourceId: c.ID.String(),
		Spec:          clusterSpec(c, tenantID(r)),
	}}
	cl, err := s.cs.CreateCluster(ctx, req)
	return cl, fieldViolations(info(r).version, req, err)
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
	if err != nil && !errors.Is(err, docstore.ErrNotFound) {
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
	sd := requestSystemData(r)
	pre, err := checkPutPreconditions(r, rd, doc)
	if err != nil {
		return err
	}
	if doc == nil {
		return s.createCluster(w, r, c, sd, nil, "")
	}
	return s.updateCluster(w, r, c, sd, rd, doc, pre)
}

// checkClientProvisioningState rejects a body whose properties.provisioningState (read-only)
// differs from the stored one: a client that sends it back unchanged after a GET is fine, one
// that tries to set it is told so instead of being silently ignored. It runs before the
// decoder, so it reads the keys exactly: a wrong-case or repeated key is the decoder's to name.
func checkClientProvisioningState(body []byte, stored armdoc.ProvisioningState) error {
	// A key reads provisioningState only if the body holds those bytes, or writes some key with
	// an escape: without either there is nothing to check, and the body (up to MaxBodyBytes) is
	// not scanned again here.
	if !bytes.Contains(body, []byte("provisioningState")) && bytes.IndexByte(body, '\\') < 0 {
		return nil
	}
	var b, props map[string]json.RawMessage
	var got string
	if json.Unmarshal(body, &b) != nil || json.Unmarshal(b["properties"], &props) != nil ||
		json.Unmarshal(props["provisioningState"], &got) != nil || got == "" {
		return nil // absent, or a body the decoder refuses with its reason
	}
	if stored == "" || !strings.EqualFold(got, string(stored)) {
		return cloudError(http.StatusBadRequest, arm.CodeInvalidRequestContent, "properties.provisioningState",
			"The read-only field 'properties.provisioningState' cannot be set: it is '%s', the request says '%s'.", orNone(string(stored)), got)
	}
	return nil
}

func orNone(s string) string {
	if s == "" {
		return "not set (the resource does not exist)"
	}
	return s
}

// clusterKnown is clusters' resourceKind.known.
func (s *Server) clusterKnown(r *http.Request, csID string) (bool, error) {
	ctx, cancel := s.csContext(r.Context(), info(r))
	defer cancel()
	_, err := s.cs.GetCluster(ctx, &csv1.GetClusterRequest{Id: csID})
	return knownFrom(err)
}

// createCluster makes c, a new cluster, or (prev set: the document of one whose create never
// reached Cluster Service, neverCreated) that cluster again under its Cluster Service ID csID.
func (s *Server) createCluster(w http.ResponseWriter, r *http.Request, c *api.Cluster, sd *arm.SystemData, prev *docstore.Document, csID string) error {
	if c.Spec.Azure.ManagedResourceGroup == "" {
		c.Spec.Azure.ManagedResourceGroup = defaultManagedResourceGroup(c.ID.Name())
	}
	withClusterServiceDefaults(c)
	c.ProvisioningState = armdoc.StateAccepted
	c.SystemData = sd
	// The Cluster Service ID is chosen and stored before the call, so a retry after a crash
	// or timeout calls CreateCluster again with the same ID and never makes a second cluster.
	if csID == "" {
		csID = newClusterServiceID()
	}
	opID := newUUID()
	props, err := storedModel(c)
	if err != nil {
		return err
	}
	rd := &armdoc.ResourceDocument{
		ResourceID:        c.ID.String(),
		InternalID:        csID,
		ProvisioningState: armdoc.StateAccepted,
		ActiveOperationID: opID,
		Location:          c.Location,
		Tags:              c.Tags,
		Properties:        props,
	}
	if sd != nil {
		rd.SystemData, _ = json.Marshal(sd)
	}
	var created *csv1.Cluster
	etag, err := s.startCreate(r, &clusters, c.ID, rd, prev, nil, func() (string, error) {
		var err error
		created, err = s.callCreate(r, c, csID)
		return created.GetId(), err
	})
	if err != nil {
		return err
	}
	// The DNS domain and the OIDC issuer are chosen by Cluster Service at create: known at once.
	c.BaseDomain = created.GetSpec().GetDnsBaseDomain()
	c.IssuerURL = created.GetSpec().GetIssuerUrl()
	s.setAsyncHeaders(w, r, c.ID.SubscriptionID, opID, false)
	return s.respondCluster(w, r, http.StatusCreated, c, etag)
}

// adoptClusterID points the resource and its operation at the Cluster Service ID that exists.
func (s *Server) adoptClusterID(ctx context.Context, part string, written []*docstore.Document, csID string) (string, error) {
	var rd armdoc.ResourceDocument
	var op armdoc.OperationDocument
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
	out, err := s.store.Transact(ctx, part, []docstore.TxOp{
		{Kind: docstore.TxReplace, Doc: res, IfMatch: written[0].ETag},
		{Kind: docstore.TxReplace, Doc: opd, IfMatch: written[1].ETag},
	})
	if err != nil {
		return "", fmt.Errorf("record existing cluster ID %s: %w", csID, err)
	}
	return out[0].ETag, nil
}

// updateCluster writes c over the existing cluster rd. pre, when set, is the request's failed
// If-Match or If-None-Match (checkPutPreconditions): only a retry of the running operation goes
// on, anything else answers it.
func (s *Server) updateCluster(w http.ResponseWriter, r *http.Request, c *api.Cluster, sd *arm.SystemData, rd *armdoc.ResourceDocument, doc *docstore.Document, pre error) error {
	ctx := r.Context()
	part := partitionKey(c.ID.SubscriptionID)
	stored, err := clusterFromDoc(rd)
	if err != nil {
		return err
	}
	if c.Spec.Azure.ManagedResourceGroup == "" {
		c.Spec.Azure.ManagedResourceGroup = stored.Spec.GetAzure().GetManagedResourceGroup()
	}
	// A PUT replaces: what it leaves out takes Cluster Service's default (the specification's
	// "if not specified" for every api-version), so leaving out a channel group asks for stable,
	// and leaving out a create-only property whose stored value is not the default is a change
	// the write is refused. Then what the request's api-version cannot express keeps its stored
	// value (Preserve).
	withClusterServiceDefaults(c)
	info(r).version.Preserve(stored, c)
	same, err := sameModel(stored, c)
	if err != nil {
		return err
	}
	if pre != nil && (!same || !s.conditionalRetry(r, part, rd)) {
		return pre
	}
	if same {
		// The caller's retry of an update answered 503 joins it (handlers_cluster_update.go).
		if joined, err := s.joinClusterUpdate(w, r, c.ID, rd, doc, false); joined || err != nil {
			return err
		}
	}
	op, err := s.pendingCreate(r, part, rd, c.ID, same)
	if pre != nil && (err != nil || op == nil) {
		return pre
	}
	if err != nil {
		return err
	}
	if op != nil {
		// The caller retries a create we accepted: drive Cluster Service again with the
		// stored ID (CreateCluster is idempotent), while that call ends within the backend's
		// grace (resendCreate), and point at the same operation.
		if s.resendCreate(r, op) {
			created, err := s.callCreate(r, stored, rd.InternalID)
			if err != nil {
				return fmt.Errorf("retry create of cluster %s: %w", c.ID, err)
			}
			stored.BaseDomain = created.GetSpec().GetDnsBaseDomain()
			stored.IssuerURL = created.GetSpec().GetIssuerUrl()
		}
		s.setAsyncHeaders(w, r, c.ID.SubscriptionID, op.ID, false)
		return s.respondCluster(w, r, http.StatusCreated, stored, doc.ETag)
	}
	// A PUT on a cluster whose create never reached Cluster Service creates it again.
	if again, err := s.neverCreated(r, &clusters, rd); again || err != nil {
		if err != nil {
			return err
		}
		return s.createCluster(w, r, c, sd, doc, rd.InternalID)
	}
	// After an update that ended UpdateNotRecorded even the same body is compared with what
	// Cluster Service holds (unconfirmedUpdate).
	lost, err := s.unconfirmedUpdate(ctx, part, rd)
	if err != nil {
		return err
	}
	if !same || lost != nil {
		if errs := changedFields(info(r).version, stored, c); len(errs) > 0 {
			return arm.Multiple(errs)
		}
		u, cl, err := s.syncedClusterUpdate(r, rd, stored, c, lost)
		if err != nil {
			return err
		}
		if u != nil {
			return s.startClusterUpdate(w, r, c, rd, doc, u, cl, false) // handlers_cluster_update.go
		}
	}
	// Only tags (and ARM's systemData) change; no operation is needed.
	rd.Tags = c.Tags
	mergeSystemData(rd, sd)
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
	s.addClusterStatus(r, updated, rd) // a replace shows what a GET would
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

// changedFields lists the fields a PUT or PATCH on an existing cluster may not change, each as
// a PropertyChangeNotAllowed error whose target is the field's path in the request's
// api-version: every field the version's spec does not let a write update (every updatable one
// goes through Cluster Service's UpdateCluster, handlers_cluster_update.go). An identity change
// Cluster Service cannot carry out is refused too (identityUpdateErrors).
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
		ext := ver.ExternalPath(p)
		errs = append(errs, cloudError(http.StatusBadRequest, "PropertyChangeNotAllowed", ext,
			"Field '%s' cannot be changed after the cluster is created.", ext))
	}
	if len(errs) == 0 {
		errs = identityUpdateErrors(ver, stored, next)
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

// getCluster answers the cluster as clusterBody renders it. When a rendering of it is kept
// whose status the cache still vouches for (keptETag), the document is read without its body
// if its ETag is still the kept one: PostgreSQL neither renders nor sends it, and it is not
// decoded. If the status moved between that look and the lookup that decides (keptItem), the
// body is read after all, in a second round trip.
func (s *Server) getCluster(w http.ResponseWriter, r *http.Request) error {
	id, err := clusterID(r)
	if err != nil {
		return err
	}
	key := listItemKey{partition: partitionKey(id.SubscriptionID), id: id.Lower(), version: info(r).version.String()}
	doc, rd, err := s.getClusterDoc(r.Context(), id, key, s.keptETag(key))
	if err != nil {
		return err
	}
	if done, err := getPreconditions(w, r, doc); done || err != nil {
		return err
	}
	body, l := s.keptItem(key, doc.ETag)
	if body == nil {
		if rd == nil {
			read, readRD, err := s.getClusterDoc(r.Context(), id, key, "")
			if err != nil {
				return err
			}
			if read.ETag != doc.ETag {
				// Written since: the lookup was of the kept item, not of this document.
				if done, err := getPreconditions(w, r, read); done || err != nil {
					return err
				}
				l = nil
			}
			doc, rd = read, readRD
		}
		if body, err = s.renderCluster(r, key, rd, doc, l); err != nil {
			return err
		}
	}
	respondCluster(w, doc.ETag, body)
	return nil
}

// getClusterDoc reads the document of cluster id (404 without one; key: its partition and
// document ID) and decodes it, except when its ETag is etag (a non-empty one) and the store can
// leave its body out (docstore.HeadQuerier): then its Body and rd are nil.
func (s *Server) getClusterDoc(ctx context.Context, id *arm.ResourceID, key listItemKey, etag string) (*docstore.Document, *armdoc.ResourceDocument, error) {
	var doc *docstore.Document
	var err error
	if hq, ok := docstore.HeadsOf(s.store); ok && etag != "" {
		doc, err = hq.GetUnlessETag(ctx, key.partition, key.id, etag)
	} else {
		doc, err = s.store.Get(ctx, key.partition, key.id)
	}
	if errors.Is(err, docstore.ErrNotFound) {
		return nil, nil, notFound(id)
	}
	if err != nil {
		return nil, nil, err
	}
	if doc.Body == nil {
		return doc, nil, nil
	}
	// As readForGet: a document that does not decode fails the GET before its preconditions.
	rd, err := decodeResourceDoc(id, doc)
	if err != nil {
		return nil, nil, err
	}
	return doc, rd, nil
}

// respondCluster writes body, the cluster whose document has etag, as a 200.
func respondCluster(w http.ResponseWriter, etag string, body json.RawMessage) {
	w.Header().Set(arm.HeaderETag, quoteETag(etag))
	writeJSON(w, http.StatusOK, body)
}

// addClusterStatus fills the read-only URLs and conditions from Cluster Service: from the
// watch-fed cache (cfg.ClusterStatus) when it can vouch for the cluster, else by a call. It is
// best effort: without Cluster Service a GET still answers from the store. The call gets the same
// bound as every other Cluster Service call (not a shorter one): under load a slow answer is
// better than a response that silently lacks its status.
func (s *Server) addClusterStatus(r *http.Request, c *api.Cluster, rd *armdoc.ResourceDocument) {
	if cl := s.clusterStatus(r, rd, nil); cl != nil {
		setClusterStatus(c, cl)
	}
}

// clusterStatus is rd's cluster as Cluster Service holds it (nil: it has none yet, or the call
// failed): from the status cache when it vouches for the cluster (l: the lookup the request made
// already; nil: look up now), else by a call.
func (s *Server) clusterStatus(r *http.Request, rd *armdoc.ResourceDocument, l *looked) *csv1.Cluster {
	csID := rd.InternalID
	if csID == "" {
		return nil
	}
	if l == nil {
		cl, cached := s.cachedStatus(rd)
		l = &looked{cl: cl, cached: cached}
	}
	if l.cached {
		return l.cl
	}
	ctx, cancel := s.csContext(r.Context(), info(r))
	defer cancel()
	cl, err := s.cs.GetCluster(ctx, &csv1.GetClusterRequest{Id: csID})
	if err != nil {
		info(r).logger().Warn("cluster status unavailable; answering from the store without it", "clusterID", csID, "error", err)
		return nil
	}
	return cl
}

// setClusterStatus copies what Cluster Service chose (the DNS domain, the OIDC issuer, the
// defaults the stored document lacks: withClusterDefaultsOf) and observed (the URLs, the
// conditions) of a cluster into the model.
func setClusterStatus(c *api.Cluster, cl *csv1.Cluster) {
	withClusterDefaultsOf(c, cl.GetSpec())
	c.BaseDomain = cl.GetSpec().GetDnsBaseDomain()
	c.IssuerURL = cl.GetSpec().GetIssuerUrl()
	c.ConsoleURL = cl.GetStatus().GetConsoleUrl()
	c.APIURL = cl.GetStatus().GetApiUrl()
	c.Conditions = specConditions(cl.GetStatus().GetConditions())
}

// maxStatusIDs is how many IDs one ListClusters call may filter by (Cluster Service's limit).
const maxStatusIDs = 1000

// clusterStatuses asks Cluster Service for the clusters of a list page the status cache could
// not vouch for (renderClusterPage), by Cluster Service ID: one ListClusters call filtered by
// their IDs (one more per further 1000 IDs, beyond the default page size), never a call per
// item. Best effort like addClusterStatus: when a call fails the page answers from the store
// without the status it would have added, and a warning says so.
func (s *Server) clusterStatuses(r *http.Request, csIDs []string) map[string]*csv1.Cluster {
	out := make(map[string]*csv1.Cluster, len(csIDs))
	for len(csIDs) > 0 {
		chunk := csIDs[:min(len(csIDs), maxStatusIDs)]
		csIDs = csIDs[len(chunk):]
		ctx, cancel := s.csContext(r.Context(), info(r))
		resp, err := s.cs.ListClusters(ctx, &csv1.ListClustersRequest{Ids: chunk, PageSize: int32(len(chunk))})
		cancel()
		if err != nil {
			info(r).logger().Warn("cluster status unavailable for a list page; answering from the store without it", "clusters", len(chunk), "error", err)
			continue
		}
		for _, cl := range resp.GetClusters() {
			out[cl.GetId()] = cl
		}
	}
	return out
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
	return s.deleteResource(w, r, &clusters, id)
}

// listClusters lists a resource group's or a subscription's clusters, a page at a time.
func (s *Server) listClusters(w http.ResponseWriter, r *http.Request) error {
	subID := r.PathValue("subscriptionId")
	prefix := "/subscriptions/" + subID + "/resourcegroups/"
	if rg := r.PathValue("resourceGroupName"); rg != "" {
		prefix += rg + clustersPath + "/"
	}
	// Node pools and other child resources share the prefix; renderClusterPage leaves them out.
	return s.listPage(w, r, partitionKey(subID), prefix, true, func(docs []*docstore.Document) ([]json.RawMessage, error) {
		return s.renderClusterPage(r, docs)
	})
}
