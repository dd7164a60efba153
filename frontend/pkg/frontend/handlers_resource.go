package frontend

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"time"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/openhcp/openhcp/frontend/pkg/api"
	"github.com/openhcp/openhcp/internal/arm"
	"github.com/openhcp/openhcp/internal/armdoc"
	"github.com/openhcp/openhcp/internal/docstore"
)

// The paths every resource type takes the same way — clusters and their children (node pools,
// external auths): reads with preconditions, the Create operation, DELETE and its operation,
// operation results and lists. A resourceKind holds the few things that differ.

// resourceKind is what the shared paths need to know about one resource type.
type resourceKind struct {
	noun         string // in messages and log lines: "cluster", "node pool", "external auth"
	logKey       string // the log field of its Cluster Service ID: "clusterID", "nodePoolID", …
	canceledNoun string // what a canceled operation's error says is being deleted
	resourceType string // the ARM type, to tell it from others under the same prefix in lists
	notFound     func(id *arm.ResourceID) error
	callDelete   func(s *Server, r *http.Request, csID string) error
	// known asks Cluster Service whether it holds the object csID.
	known func(s *Server, r *http.Request, csID string) (bool, error)
	// respondResult answers the stored resource as the request's api-version shows it: the
	// result of a finished create or update operation.
	respondResult func(s *Server, w http.ResponseWriter, r *http.Request, rd *armdoc.ResourceDocument, doc *docstore.Document) error
}

var clusters = resourceKind{
	noun: "cluster", logKey: "clusterID", canceledNoun: "resource", resourceType: api.ClusterResourceType,
	notFound:   notFound,
	callDelete: (*Server).callDelete,
	known:      (*Server).clusterKnown,
	respondResult: func(s *Server, w http.ResponseWriter, r *http.Request, rd *armdoc.ResourceDocument, doc *docstore.Document) error {
		b, err := s.clusterBody(r, rd, doc)
		if err != nil {
			return err
		}
		respondCluster(w, doc.ETag, b)
		return nil
	},
}

var nodePools = resourceKind{
	noun: "node pool", logKey: "nodePoolID", canceledNoun: "node pool", resourceType: api.NodePoolResourceType,
	notFound: nodePoolResource.notFound, callDelete: nodePoolResource.callDelete, known: nodePoolResource.known, respondResult: nodePoolResource.respondResult,
}

// externalAuths' result shows what was written, without Cluster Service's condition (a GET
// adds it).
var externalAuths = resourceKind{
	noun: "external auth", logKey: "externalAuthID", canceledNoun: "external auth", resourceType: api.ExternalAuthResourceType,
	notFound: externalAuthResource.notFound, callDelete: externalAuthResource.callDelete, known: externalAuthResource.known, respondResult: externalAuthResource.respondResult,
}

// kindOf is the kind of a resource ID.
func kindOf(id *arm.ResourceID) *resourceKind {
	for _, k := range []*resourceKind{&nodePools, &externalAuths} {
		if strings.EqualFold(id.ResourceType(), k.resourceType) {
			return k
		}
	}
	return &clusters
}

// childID is the ID of a cluster's child resource in the request, in the caller's casing.
func childID(r *http.Request, noun string, nameRE *regexp.Regexp) (*arm.ResourceID, error) {
	id, err := arm.ParseResourceID(info(r).originalPath)
	if err != nil || len(id.Names) != 2 {
		return nil, cloudError(http.StatusBadRequest, arm.CodeInvalidResourceName, "", "The resource ID %q is not valid.", info(r).originalPath)
	}
	if !clusterNameRE.MatchString(id.Names[0]) {
		return nil, cloudError(http.StatusBadRequest, arm.CodeInvalidResourceName, "name",
			"The cluster name '%s' is invalid: 1 to 54 letters, digits and '-', starting with a letter and not ending with '-'.", id.Names[0])
	}
	if !nameRE.MatchString(id.Name()) {
		return nil, cloudError(http.StatusBadRequest, arm.CodeInvalidResourceName, "name",
			"The %s name '%s' is invalid: 1 to 15 letters, digits and '-', starting with a letter and not ending with '-'.", noun, id.Name())
	}
	return id, nil
}

// requestSystemData is ARM's systemData header; an invalid one is logged and ignored.
func requestSystemData(r *http.Request) *arm.SystemData {
	sd, err := arm.ParseSystemData(r.Header.Get(arm.HeaderSystemData))
	if err != nil {
		info(r).logger().Warn("ignoring invalid systemData header", "error", err)
	}
	return sd
}

// mergeSystemData keeps the creation fields of what is stored and takes ARM's latest.
func mergeSystemData(rd *armdoc.ResourceDocument, sd *arm.SystemData) {
	if sd == nil {
		return
	}
	var prev *arm.SystemData
	if len(rd.SystemData) > 0 {
		prev = &arm.SystemData{}
		json.Unmarshal(rd.SystemData, prev)
	}
	rd.SystemData, _ = json.Marshal(prev.Merge(sd))
}

// etagOf is the ETag of a stored document, "" when there is none.
func etagOf(doc *docstore.Document) string {
	if doc == nil {
		return ""
	}
	return doc.ETag
}

// checkPutPreconditions checks a PUT against what is stored (rd and doc nil when nothing is):
// If-Match and If-None-Match, then the body's read-only provisioningState. A failed If-Match
// or If-None-Match is returned as retry, not err, when the resource has an operation running:
// that may be this request's own first attempt, whose write changed the ETag (or made the
// resource) before its answer was lost or was a 5xx, and a client's retry sends the same
// headers again. The write path joins that operation when the request is its retry (the same
// caller, the same body, the same conditions: conditionalRetry) and answers retry, the 412,
// otherwise.
func checkPutPreconditions(r *http.Request, rd *armdoc.ResourceDocument, doc *docstore.Document) (retry, err error) {
	if retry, err = preconditionsOrRetry(r, rd, doc); err != nil {
		return nil, err
	}
	storedState := armdoc.ProvisioningState("")
	if rd != nil {
		storedState = rd.ProvisioningState
	}
	return retry, checkClientProvisioningState(info(r).body, storedState)
}

// preconditionsOrRetry checks If-Match and If-None-Match against doc (nil when nothing is
// stored). A failure is err, unless an operation runs on rd: then it is retry, for the write
// path to answer unless the request is that operation's retry (conditionalRetry).
func preconditionsOrRetry(r *http.Request, rd *armdoc.ResourceDocument, doc *docstore.Document) (retry, err error) {
	if err := checkPreconditions(r, etagOf(doc)); err != nil {
		if rd == nil || doc == nil || rd.ActiveOperationID == "" {
			return nil, err
		}
		return err, nil
	}
	return nil, nil
}

// conditionsOf is a request's If-Match and If-None-Match headers, as sent
// (armdoc.OperationDocument.Conditions).
func conditionsOf(r *http.Request) string {
	m, n := r.Header.Values(arm.HeaderIfMatch), r.Header.Values(arm.HeaderIfNoneMatch)
	if len(m) == 0 && len(n) == 0 {
		return ""
	}
	return "If-Match: " + strings.Join(m, ", ") + "\nIf-None-Match: " + strings.Join(n, ", ")
}

// conditionalRetry reports whether r, a conditional write whose precondition failed, may be the
// retry of the operation running on rd: the same caller sent the same If-Match and If-None-Match
// when it started it (the caller's body is compared by the write path).
func (s *Server) conditionalRetry(r *http.Request, part string, rd *armdoc.ResourceDocument) bool {
	op, _, err := s.activeOperation(r.Context(), part, rd)
	return err == nil && op != nil && op.Conditions != "" && op.Conditions == conditionsOf(r) && startedBy(r, op)
}

// readForPatch reads the resource a PATCH changes and checks the request against it:
// If-Match and If-None-Match, 404 when there is none, then the body's read-only
// provisioningState. A failed If-Match or If-None-Match is returned as retry, not err, when the
// resource has an operation running, as checkPutPreconditions does: the PATCH may be the retry
// of the update its first attempt started.
func (s *Server) readForPatch(r *http.Request, id *arm.ResourceID, notFound func(*arm.ResourceID) error) (rd *armdoc.ResourceDocument, doc *docstore.Document, retry, err error) {
	rd, doc, err = s.getResourceDoc(r.Context(), id)
	if err != nil && !errors.Is(err, docstore.ErrNotFound) {
		return nil, nil, nil, err
	}
	if retry, err = preconditionsOrRetry(r, rd, doc); err != nil {
		return nil, nil, nil, err
	}
	if doc == nil {
		return nil, nil, nil, notFound(id)
	}
	if err := checkClientProvisioningState(info(r).body, rd.ProvisioningState); err != nil {
		return nil, nil, nil, err
	}
	return rd, doc, retry, nil
}

// readForGet reads the resource of a GET. It answers If-None-Match itself (304: done is
// true) and refuses a failed If-Match (412).
func (s *Server) readForGet(w http.ResponseWriter, r *http.Request, id *arm.ResourceID, notFound func(*arm.ResourceID) error) (
	rd *armdoc.ResourceDocument, doc *docstore.Document, done bool, err error) {
	rd, doc, err = s.getResourceDoc(r.Context(), id)
	if errors.Is(err, docstore.ErrNotFound) {
		return nil, nil, false, notFound(id)
	}
	if err != nil {
		return nil, nil, false, err
	}
	if done, err := getPreconditions(w, r, doc); done || err != nil {
		return nil, nil, done, err
	}
	return rd, doc, false, nil
}

// getPreconditions answers a GET's If-None-Match itself (304: done is true) and refuses a
// failed If-Match (412), against doc's ETag.
func getPreconditions(w http.ResponseWriter, r *http.Request, doc *docstore.Document) (done bool, err error) {
	if h := r.Header.Get(arm.HeaderIfNoneMatch); h != "" && etagMatches(h, doc.ETag) {
		w.Header().Set(arm.HeaderETag, quoteETag(doc.ETag))
		w.WriteHeader(http.StatusNotModified)
		return true, nil
	}
	if h := r.Header.Get(arm.HeaderIfMatch); h != "" && !etagMatches(h, doc.ETag) {
		return false, cloudError(http.StatusPreconditionFailed, arm.CodePreconditionFailed, "If-Match", "The resource's ETag does not match the If-Match header.")
	}
	return false, nil
}

// respondResult is the operation result of a finished create or update of id.
func (s *Server) respondResult(w http.ResponseWriter, r *http.Request, id *arm.ResourceID) error {
	k := kindOf(id)
	rd, doc, err := s.getResourceDoc(r.Context(), id)
	if errors.Is(err, docstore.ErrNotFound) {
		return k.notFound(id)
	}
	if err != nil {
		return err
	}
	return k.respondResult(s, w, r, rd, doc)
}

// startCreate writes a new resource document (its InternalID and ActiveOperationID chosen)
// with its Create operation, then has Cluster Service create it: call returns the ID Cluster
// Service answers with. A definitive refusal takes both documents back; an ID Cluster Service
// already had for the resource is adopted. With prev, the document of a resource whose create
// never reached Cluster Service (neverCreated), rd replaces it, conditional on its ETag, and a
// refusal puts it back. logArgs go into the log line before the operation ID. It returns the
// resource document's ETag.
func (s *Server) startCreate(r *http.Request, k *resourceKind, id *arm.ResourceID, rd *armdoc.ResourceDocument, prev *docstore.Document, logArgs []any, call func() (string, error)) (string, error) {
	ctx := r.Context()
	csID, opID, now := rd.InternalID, rd.ActiveOperationID, time.Now().UTC()
	part := partitionKey(id.SubscriptionID)
	resDoc, err := newDoc(part, id.Lower(), docstore.TypeResource, id.String(), rd, 0)
	if err != nil {
		return "", err
	}
	opDoc, err := newDoc(part, opID, docstore.TypeOperation, id.String(), s.newOperation(r, opID, armdoc.OperationCreate, id.String(), csID, now), s.cfg.OperationTTL)
	if err != nil {
		return "", err
	}
	write := docstore.TxOp{Kind: docstore.TxCreate, Doc: resDoc}
	if prev != nil {
		write = docstore.TxOp{Kind: docstore.TxReplace, Doc: resDoc, IfMatch: prev.ETag}
	}
	written, err := s.store.Transact(ctx, part, []docstore.TxOp{write, {Kind: docstore.TxCreate, Doc: opDoc}})
	if errors.Is(err, docstore.ErrAlreadyExists) || errors.Is(err, docstore.ErrPreconditionFailed) {
		return "", cloudError(http.StatusConflict, arm.CodeConflict, "", "Another request wrote '%s' at the same time.", id)
	}
	if err != nil {
		return "", err
	}
	args := append(append([]any{"resourceID", id.String(), k.logKey, csID}, logArgs...), "operationID", opID)
	if prev != nil {
		args = append(args, "recreate", true)
	}
	info(r).logger().Info(k.noun+" create accepted", args...)
	got, err := call()
	if err != nil {
		if definitive(err) {
			undo := docstore.TxOp{Kind: docstore.TxDelete, Doc: written[0], IfMatch: written[0].ETag}
			if prev != nil {
				undo = docstore.TxOp{Kind: docstore.TxReplace, Doc: prev, IfMatch: written[0].ETag}
			}
			s.rollback(r, part, opID, []docstore.TxOp{undo, {Kind: docstore.TxDelete, Doc: written[1], IfMatch: written[1].ETag}})
		}
		return "", fmt.Errorf("create %s %s in cluster service: %w", k.noun, id, err)
	}
	etag := written[0].ETag
	if got != "" && got != csID {
		// Cluster Service already had one for this resource (created under another ID by an
		// earlier attempt whose documents are gone): follow the one that exists.
		if etag, err = s.adoptClusterID(ctx, part, written, got); err != nil {
			return "", err
		}
	}
	return etag, nil
}

// neverCreated reports whether rd is a resource whose create never reached Cluster Service: it
// is Failed, with nothing running, and Cluster Service does not know its ID. Such a create was
// failed by the backend once its grace had passed (the frontend stopped before its call, or the
// call ended without an answer and was not repeated in time), and Cluster Service's create is
// bounded well within that grace, so it will not land now. ARM's contract is that a PUT on a
// Failed resource tries again to reach what it asks: for this one, that is a create. Only a PUT
// on a Failed resource asks Cluster Service.
func (s *Server) neverCreated(r *http.Request, k *resourceKind, rd *armdoc.ResourceDocument) (bool, error) {
	if rd.ProvisioningState != armdoc.StateFailed || rd.ActiveOperationID != "" || rd.InternalID == "" {
		return false, nil
	}
	known, err := k.known(s, r, rd.InternalID)
	if err != nil {
		return false, fmt.Errorf("ask cluster service for %s %s: %w", k.noun, rd.ResourceID, err)
	}
	return !known, nil
}

// deleteAttempts is how many times deleteResource records a delete whose documents another
// writer changed in between (the backend follows a running create or update and writes its
// documents as it goes) before it answers 409.
const deleteAttempts = 5

// deleteResource answers a DELETE: 204 when there is nothing, else 202 with the operation. A
// conditional write that loses a race with another writer is tried again on what is there now,
// so a client's DELETE during a create is not refused for the backend's own progress; the
// client's If-Match/If-None-Match are checked again against each read.
func (s *Server) deleteResource(w http.ResponseWriter, r *http.Request, k *resourceKind, id *arm.ResourceID) error {
	for attempt := 1; ; attempt++ {
		rd, doc, err := s.getResourceDoc(r.Context(), id)
		if err != nil && !errors.Is(err, docstore.ErrNotFound) {
			return err
		}
		if err := checkPreconditions(r, etagOf(doc)); err != nil {
			return err
		}
		if doc == nil {
			w.WriteHeader(http.StatusNoContent)
			return nil
		}
		opID, err := s.startDelete(r, k, rd, doc)
		if errors.Is(err, docstore.ErrPreconditionFailed) && attempt < deleteAttempts {
			info(r).logger().Info(k.noun+" delete raced another write; reading it again", "resourceID", rd.ResourceID, "attempt", attempt)
			continue
		}
		if err != nil {
			return err
		}
		s.setAsyncHeaders(w, r, id.SubscriptionID, opID, true)
		w.WriteHeader(http.StatusAccepted)
		return nil
	}
}

// startDelete writes the delete operation and asks Cluster Service to delete the resource. A
// delete while one runs returns the running one; a delete during a create or update cancels
// that operation. It returns the operation ID.
func (s *Server) startDelete(r *http.Request, k *resourceKind, rd *armdoc.ResourceDocument, doc *docstore.Document) (string, error) {
	ctx := r.Context()
	part := doc.PartitionKey
	op, opDoc, err := s.activeOperation(ctx, part, rd)
	if err != nil {
		return "", err
	}
	var canceled *docstore.Document
	if op != nil {
		if op.Request == armdoc.OperationDelete {
			if err := k.callDelete(s, r, rd.InternalID); err != nil {
				return "", fmt.Errorf("retry delete of %s %s: %w", k.noun, rd.ResourceID, err)
			}
			return op.ID, nil
		}
		now := time.Now().UTC()
		op.Status, op.LastTransitionTime, op.EndTime = armdoc.StateCanceled, now, &now
		op.Error = &armdoc.CloudErrorBody{Code: arm.CodeCanceled, Message: "The operation was canceled because the " + k.canceledNoun + " is being deleted."}
		if canceled, err = withBody(opDoc, op); err != nil {
			return "", err
		}
	}
	opID := newUUID()
	now := time.Now().UTC()
	next := *rd
	next.ProvisioningState, next.ActiveOperationID = armdoc.StateDeleting, opID
	resDoc, err := withBody(doc, next)
	if err != nil {
		return "", err
	}
	delOp := s.newOperation(r, opID, armdoc.OperationDelete, rd.ResourceID, rd.InternalID, now)
	delOp.AfterCreate = armdoc.AfterCreateOf(op)
	newOp, err := newDoc(part, opID, docstore.TypeOperation, rd.ResourceID, delOp, s.cfg.OperationTTL)
	if err != nil {
		return "", err
	}
	ops := []docstore.TxOp{{Kind: docstore.TxReplace, Doc: resDoc, IfMatch: doc.ETag}, {Kind: docstore.TxCreate, Doc: newOp}}
	if canceled != nil {
		ops = append(ops, docstore.TxOp{Kind: docstore.TxReplace, Doc: canceled, IfMatch: opDoc.ETag})
	}
	written, err := s.store.Transact(ctx, part, ops)
	if err != nil {
		return "", fmt.Errorf("record delete of %s: %w", rd.ResourceID, err)
	}
	info(r).logger().Info(k.noun+" delete accepted", "resourceID", rd.ResourceID, k.logKey, rd.InternalID, "operationID", opID)
	if err := k.callDelete(s, r, rd.InternalID); err != nil {
		if definitive(err) {
			undo := []docstore.TxOp{
				{Kind: docstore.TxReplace, Doc: doc, IfMatch: written[0].ETag},
				{Kind: docstore.TxDelete, Doc: written[1], IfMatch: written[1].ETag},
			}
			if canceled != nil {
				undo = append(undo, docstore.TxOp{Kind: docstore.TxReplace, Doc: opDoc, IfMatch: written[2].ETag})
			}
			s.rollback(r, part, opID, undo)
		}
		return "", fmt.Errorf("delete %s %s in cluster service: %w", k.noun, rd.ResourceID, err)
	}
	return opID, nil
}

// activeOperation returns the resource's operation if one is in progress.
func (s *Server) activeOperation(ctx context.Context, part string, rd *armdoc.ResourceDocument) (*armdoc.OperationDocument, *docstore.Document, error) {
	if rd.ActiveOperationID == "" {
		return nil, nil, nil
	}
	op, d, err := s.getOperationDoc(ctx, part, rd.ActiveOperationID)
	if errors.Is(err, docstore.ErrNotFound) {
		return nil, nil, nil
	}
	if err != nil || op.Status.Terminal() {
		return nil, nil, err
	}
	return op, d, nil
}

// listChildren lists a cluster's children under segment ("/nodepools", …), a page at a time:
// 404 ParentResourceNotFound when the cluster does not exist.
func (s *Server) listChildren(w http.ResponseWriter, r *http.Request, k *resourceKind, segment string, render func(*armdoc.ResourceDocument) (any, error)) error {
	ri := info(r)
	clusterRID, err := arm.ParseResourceID(strings.TrimSuffix(strings.TrimSuffix(ri.originalPath, "/"), "/"+lastSegment(ri.originalPath)))
	if err != nil || len(clusterRID.Names) != 1 {
		return cloudError(http.StatusBadRequest, arm.CodeInvalidResourceName, "", "The resource ID %q is not valid.", ri.originalPath)
	}
	if _, _, err := s.getResourceDoc(r.Context(), clusterRID); errors.Is(err, docstore.ErrNotFound) {
		return cloudError(http.StatusNotFound, "ParentResourceNotFound", "",
			"The parent resource 'hcpOpenShiftClusters/%s' under resource group '%s' was not found.", clusterRID.Name(), clusterRID.ResourceGroup)
	} else if err != nil {
		return err
	}
	return s.listResources(w, r, partitionKey(clusterRID.SubscriptionID), clusterRID.Lower()+segment+"/", k.resourceType, eachItem(render))
}

// listResources answers one page of the resources of one type whose IDs start with prefix;
// others sharing the prefix (a cluster's children under its resource group) are left out.
// eachItem renders a page one resource at a time, for resources whose list needs nothing beyond
// the store.
func eachItem(render func(*armdoc.ResourceDocument) (any, error)) func([]*armdoc.ResourceDocument) ([]any, error) {
	return func(rds []*armdoc.ResourceDocument) ([]any, error) {
		out := make([]any, 0, len(rds))
		for _, rd := range rds {
			v, err := render(rd)
			if err != nil {
				return nil, err
			}
			out = append(out, v)
		}
		return out, nil
	}
}

// listResources answers one page of resourceType's resources under prefix. renderPage gets the
// page's documents at once, so a kind can read what the store lacks for the whole page in one
// call.
func (s *Server) listResources(w http.ResponseWriter, r *http.Request, partition, prefix, resourceType string, renderPage func([]*armdoc.ResourceDocument) ([]any, error)) error {
	return s.listPage(w, r, partition, prefix, false, func(docs []*docstore.Document) ([]json.RawMessage, error) {
		var rds []*armdoc.ResourceDocument
		var at []int // the index in docs of each of rds
		for i, d := range docs {
			rd, ok, err := decodeResource(d, resourceType)
			if err != nil {
				return nil, err
			}
			if ok {
				rds = append(rds, rd)
				at = append(at, i)
			}
		}
		values, err := renderPage(rds)
		if err != nil {
			return nil, err
		}
		out := make([]json.RawMessage, len(docs))
		for i, v := range values {
			b, err := json.Marshal(v)
			if err != nil {
				return nil, err
			}
			out[at[i]] = b
		}
		return out, nil
	})
}

// listedAs is false for a document whose stored resource ID is of another type than
// resourceType, so a page listed without bodies reads none of, say, a cluster's node pools.
func listedAs(d *docstore.Document, resourceType string) bool {
	id, err := arm.ParseResourceID(d.ResourceID)
	return err != nil || strings.EqualFold(id.ResourceType(), resourceType)
}

// decodeResource decodes a listed document; ok is false for one of another type than
// resourceType (a cluster's children share its prefix).
func decodeResource(d *docstore.Document, resourceType string) (rd *armdoc.ResourceDocument, ok bool, err error) {
	rd = &armdoc.ResourceDocument{}
	if err := json.Unmarshal(d.Body, rd); err != nil {
		return nil, false, fmt.Errorf("decode resource %s: %w", d.ID, err)
	}
	id, err := arm.ParseResourceID(rd.ResourceID)
	if err != nil || !strings.EqualFold(id.ResourceType(), resourceType) {
		return nil, false, nil
	}
	return rd, true, nil
}

// listPage answers one page of the resource documents whose IDs start with prefix as ARM's
// list body, {"value":[…],"nextLink":…}: renderPage renders the page's documents as its items
// (each as json.Marshal writes it, at its document's index; nil for one not listed). A page
// holds at most PageSize documents and, past its first item, PageBytes of items: a page cut by
// size ends inside the store's page, and its nextLink names where (pageCursor). With heads, a store that is
// (or wraps) a docstore.HeadQuerier and a synced status cache, the page's documents come without
// bodies (nil Body) and renderPage reads the ones it needs (readBodies); the page itself (order,
// size, nextLink) is the same. Without a synced cache few listed items can be kept, and the heads
// query would only add a second round trip, so the page is read with its bodies at once.
func (s *Server) listPage(w http.ResponseWriter, r *http.Request, partition, prefix string, heads bool, renderPage func([]*docstore.Document) ([]json.RawMessage, error)) error {
	ri := info(r)
	cursor, err := parsePageCursor(r.URL.Query().Get("$skipToken"))
	if err != nil {
		return err
	}
	q := docstore.Query{
		Partition:        partition,
		Type:             docstore.TypeResource,
		ResourceIDPrefix: prefix,
		Limit:            s.cfg.PageSize,
		Continuation:     cursor.store,
	}
	query := s.store.Query
	if hq, ok := docstore.HeadsOf(s.store); ok && heads && s.statusCacheSynced() {
		query = hq.QueryHeads
	}
	page, err := query(r.Context(), q)
	if err != nil {
		return err
	}
	docs := cursor.unserved(page.Documents)
	rendered, err := renderPage(docs)
	if err != nil {
		return err
	}
	var nextToken string
	if n := cutPage(rendered, s.cfg.PageBytes); n < len(docs) {
		nextToken = cursor.after(docs[:n]).String()
		rendered = rendered[:n]
	} else if page.Continuation != "" {
		nextToken = cursor.into(page.Continuation, page.Documents).String()
	}
	items := make([]json.RawMessage, 0, len(rendered))
	for _, it := range rendered {
		if it != nil {
			items = append(items, it)
		}
	}
	size := len(`{"value":[]}`) + len(items)
	for _, it := range items {
		size += len(it)
	}
	var next []byte
	if nextToken != "" {
		q := url.Values{"api-version": {ri.apiVersion}, "$skipToken": {nextToken}}
		if next, err = json.Marshal(externalBase(r) + ri.originalPath + "?" + q.Encode()); err != nil {
			return err
		}
		size += len(`,"nextLink":`) + len(next)
	}
	// The bytes json.Marshal writes for struct{Value []any; NextLink string `json:",omitempty"`}.
	b := make([]byte, 0, size)
	b = append(b, `{"value":[`...)
	for i, it := range items {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, it...)
	}
	b = append(b, ']')
	if next != nil {
		b = append(b, `,"nextLink":`...)
		b = append(b, next...)
	}
	b = append(b, '}')
	writeJSON(w, http.StatusOK, b)
	return nil
}

func lastSegment(p string) string {
	p = strings.TrimSuffix(p, "/")
	return p[strings.LastIndex(p, "/")+1:]
}

// pendingCreate checks that no operation runs on rd before r writes to id. The one exception is
// a create still running when retryOK (a PUT of what that create stored) and r comes from the
// caller that started it (startedBy): its operation is returned, for the caller to drive
// Cluster Service again and point at it. Any other running operation is a 409 naming it.
func (s *Server) pendingCreate(r *http.Request, part string, rd *armdoc.ResourceDocument, id *arm.ResourceID, retryOK bool) (*armdoc.OperationDocument, error) {
	op, _, err := s.activeOperation(r.Context(), part, rd)
	if err != nil || op == nil {
		return nil, err
	}
	if retryOK && op.Request == armdoc.OperationCreate && startedBy(r, op) {
		return op, nil
	}
	return nil, cloudError(http.StatusConflict, arm.CodeConflict, "",
		"Cannot write resource '%s' while operation '%s' (%s) is in progress.", id, op.ID, op.Request)
}

// resendMargin is what resendCreate keeps between the latest end of a create's call and the
// backend's grace: the frontend's and the backend's clocks are not the same clock (a pod each,
// in production on other machines), and a Cluster Service handler whose COMMIT was sent when its
// caller's deadline passed still lands. It costs only an earlier "joined its operation" answer.
const resendMargin = 30 * time.Second

// resendCreate tells whether a retry of the running create op may send the create to Cluster
// Service again: only while the call, bounded by ClusterServiceTimeout, ends before
// armdoc.NotFoundGrace from op's start, after which the backend takes an object Cluster Service
// does not know as a create that never reached it (it fails the create, a DELETE meanwhile
// ends, and a PUT creates it again under the same ID: neverCreated). A call still running then
// could land after all, an object no document names or one made from an older body. Later, the
// retry is answered with op without a call; if Cluster Service never got the create, the backend
// fails it, and a PUT then creates it again. The call must end resendMargin before the grace.
func (s *Server) resendCreate(r *http.Request, op *armdoc.OperationDocument) bool {
	if time.Since(op.StartTime)+s.cfg.ClusterServiceTimeout+resendMargin < armdoc.NotFoundGrace {
		return true
	}
	info(r).logger().Info("create repeated too late to send to cluster service again; joined its operation",
		"resourceID", op.ExternalID, "operationID", op.ID)
	return false
}

// joinUpdate answers a request that repeats the running update op (the resource document rd
// already holds what the request asks for), from the caller that started op (startedBy), with
// op, as a create's retry is answered with its create: a PUT 200 through respond, a PATCH 202,
// both with op's Azure-AsyncOperation, never a 409 for an operation the caller was never shown.
// That retry is what ARM and the Azure SDK send after a 503, and startUpdate answers 503 when
// Cluster Service's answer was lost (the call failed without a definitive answer) while it keeps
// op, since the change may have been taken. So while op has no revision recorded, Cluster
// Service is asked again through call, with op's ID (an update is idempotent there), and its
// answer is recorded as startUpdate records it; without this the retry was refused until the
// backend failed op UpdateNotRecorded (docs/reliability.md, the first full chaos run). An op
// the backend ends meanwhile stays as the backend wrote it, and the request is a 409 naming it.
func (s *Server) joinUpdate(w http.ResponseWriter, r *http.Request, id *arm.ResourceID, rd *armdoc.ResourceDocument, doc *docstore.Document,
	op *armdoc.OperationDocument, opDoc *docstore.Document, patch bool, call func(opID string) (updateStarted, error), respond func(etag string) error) error {
	etag := doc.ETag
	resent := op.InternalRevision == 0
	if resent {
		started, err := call(op.ID)
		if err != nil {
			return err
		}
		switch {
		case started.revision > 0:
			err = s.recordUpdateRevision(r, opDoc, op, started.revision)
		case started.done:
			etag, err = s.finishUpdateNow(r, []*docstore.Document{doc, opDoc}, rd, op)
		default:
			// Followed by its ID (an upgrade): nothing to record, but an op the backend ended
			// meanwhile is not pointed at as if it ran.
			var cur *armdoc.OperationDocument
			if cur, _, err = s.getOperationDoc(r.Context(), opDoc.PartitionKey, op.ID); err == nil && cur.Status.Terminal() {
				err = fmt.Errorf("operation %s is %s: %w", op.ID, cur.Status, errOperationEnded)
			}
		}
		if errors.Is(err, errOperationEnded) || errors.Is(err, docstore.ErrPreconditionFailed) {
			return s.endedMeanwhile(r, id, op, opDoc, err)
		}
		if err != nil {
			return err
		}
	}
	info(r).logger().Info("update repeated; joined its operation", "resourceID", op.ExternalID, "operationID", op.ID, "sentToClusterService", resent)
	s.setAsyncHeaders(w, r, id.SubscriptionID, op.ID, patch)
	if patch {
		w.WriteHeader(http.StatusAccepted)
		return nil
	}
	return respond(etag)
}

// endedMeanwhile is the 409 of a retry whose operation ended (the backend failed it
// UpdateNotRecorded, or a DELETE canceled it) while the retry sent it to Cluster Service again,
// so that its answer could not be recorded (err). If op has not ended, err is returned as it is.
func (s *Server) endedMeanwhile(r *http.Request, id *arm.ResourceID, op *armdoc.OperationDocument, opDoc *docstore.Document, err error) error {
	cur, _, rerr := s.getOperationDoc(r.Context(), opDoc.PartitionKey, op.ID)
	if rerr != nil || !cur.Status.Terminal() {
		return err
	}
	st := cur.Status
	info(r).logger().Warn("update repeated after its operation ended", "resourceID", op.ExternalID, "operationID", op.ID, "status", st)
	return cloudError(http.StatusConflict, arm.CodeConflict, "",
		"The operation '%s' (%s) on resource '%s' that this request repeats ended (%s) while the request was being sent again; read the resource before writing it again.",
		op.ID, op.Request, id, st)
}

// unconfirmedUpdate returns the update (as its operation recorded it, SentUpdate) of rd's last
// update when that update ended Failed UpdateNotRecorded (its Cluster Service answer was never
// recorded: the call may or may not have taken effect) and no operation runs on rd since; nil
// otherwise. The resource document then holds a spec Cluster Service may not, so a write that
// matches the document is not taken for one that asks nothing of Cluster Service: each kind
// derives its update from what Cluster Service holds instead (a cluster: GetCluster and the diff
// to the request; a child: its full update, which Cluster Service merges), limited to the fields
// the lost update or the request itself names (sendOnlyWhatWasAsked), and sends it through
// startUpdate under a new Update operation, even when that update is empty. This is what makes
// "Send the same request again", the operation's error message, true (docs/architecture.md,
// Crash safety). An update recorded without SentUpdate (by an earlier frontend) is not known
// well enough to send again: the write is then compared with the document, as before.
func (s *Server) unconfirmedUpdate(ctx context.Context, part string, rd *armdoc.ResourceDocument) (json.RawMessage, error) {
	if rd.ProvisioningState != armdoc.StateFailed || rd.UpdateOperationID == "" {
		return nil, nil
	}
	if running, _, err := s.activeOperation(ctx, part, rd); err != nil || running != nil {
		return nil, err
	}
	op, _, err := s.getOperationDoc(ctx, part, rd.UpdateOperationID)
	if errors.Is(err, docstore.ErrNotFound) {
		return nil, nil // expired (OperationTTL): nothing left to say the update was lost
	}
	if err != nil {
		return nil, fmt.Errorf("read the last update operation %s of %s: %w", rd.UpdateOperationID, rd.ResourceID, err)
	}
	if op.Status == armdoc.StateFailed && op.Error != nil && op.Error.Code == armdoc.CodeUpdateNotRecorded {
		return op.SentUpdate, nil
	}
	return nil, nil
}

// sendOnlyWhatWasAsked clears from u, an update from what Cluster Service holds to what the
// resource document asks for, every field that neither lost (the unconfirmed update, as its
// operation recorded it) nor own (this request's update from the document; nil: none) names.
// Cluster Service's spec may differ from the document for reasons of its own (a maintenance
// z-stream upgrade moves the version Cluster Service holds, not the document's): sending those
// fields back would undo them, or be refused (a downgrade), and leave the resource Failed.
func sendOnlyWhatWasAsked(u proto.Message, lost json.RawMessage, own proto.Message) error {
	named := map[protoreflect.Name]bool{}
	lostU := proto.Clone(u)
	proto.Reset(lostU)
	if err := protojson.Unmarshal(lost, lostU); err != nil {
		return fmt.Errorf("decode the unconfirmed update: %w", err)
	}
	for _, m := range []proto.Message{lostU, own} {
		if m == nil || !m.ProtoReflect().IsValid() {
			continue
		}
		m.ProtoReflect().Range(func(fd protoreflect.FieldDescriptor, _ protoreflect.Value) bool {
			named[fd.Name()] = true
			return true
		})
	}
	m := u.ProtoReflect()
	var clear []protoreflect.FieldDescriptor
	m.Range(func(fd protoreflect.FieldDescriptor, _ protoreflect.Value) bool {
		if !named[fd.Name()] {
			clear = append(clear, fd)
		}
		return true
	})
	for _, fd := range clear {
		m.Clear(fd)
	}
	return nil
}

// updateStarted is what a kind's Cluster Service call reports of an update it accepted.
type updateStarted struct {
	// revision, when above 0, is the spec_revision the change took effect at: the backend ends
	// the operation once a READY status has observed it (readyAt).
	revision int64
	// done: nothing is left to roll out (a change Cluster Service does not act on), so the
	// operation ends Succeeded at once.
	done bool
	// Neither: the backend follows the operation by its ID (a control-plane upgrade's policy
	// carries it).
}

// startUpdate is the one update protocol of every kind (docs/architecture.md, Crash safety),
// the same order as a create's and a delete's: it writes nrd (the resource as it will be, marked
// Updating) and a new Update operation in one transaction, conditional on the ETag read, then
// asks Cluster Service through call, with the operation's ID. A definitive refusal takes both
// documents back and is returned (a 400 names the field); an accepted change records its
// revision in the operation, or ends it now (updateStarted). sent, when the kind's update cannot
// be derived again from the resource once it is written (a cluster's, a diff), is the update as
// call sends it, stored in the operation (SentUpdate) for a retry to send again (joinUpdate). A
// PATCH answers 202, a PUT 200 through respond with the resource's new ETag; both carry
// Azure-AsyncOperation.
func (s *Server) startUpdate(w http.ResponseWriter, r *http.Request, k *resourceKind, id *arm.ResourceID, nrd *armdoc.ResourceDocument,
	doc *docstore.Document, patch bool, sent json.RawMessage, call func(opID string) (updateStarted, error), respond func(etag string) error) error {
	part := doc.PartitionKey
	opID := newUUID()
	now := time.Now().UTC()
	nrd.ProvisioningState, nrd.ActiveOperationID, nrd.UpdateOperationID = armdoc.StateUpdating, opID, opID
	resDoc, err := withBody(doc, nrd)
	if err != nil {
		return err
	}
	// The operation names the stored resource (its ID as created), as a delete's does.
	op := s.newOperation(r, opID, armdoc.OperationUpdate, nrd.ResourceID, nrd.InternalID, now)
	op.SentUpdate = sent
	opDoc, err := newDoc(part, opID, docstore.TypeOperation, nrd.ResourceID, op, s.cfg.OperationTTL)
	if err != nil {
		return err
	}
	written, err := s.store.Transact(r.Context(), part, []docstore.TxOp{
		{Kind: docstore.TxReplace, Doc: resDoc, IfMatch: doc.ETag},
		{Kind: docstore.TxCreate, Doc: opDoc},
	})
	if err != nil {
		return fmt.Errorf("record update of %s %s: %w", k.noun, nrd.ResourceID, err)
	}
	info(r).logger().Info(k.noun+" update accepted", "resourceID", nrd.ResourceID, k.logKey, nrd.InternalID, "operationID", opID)
	started, err := call(opID)
	if err != nil {
		if definitive(err) {
			s.rollback(r, part, opID, []docstore.TxOp{
				{Kind: docstore.TxReplace, Doc: doc, IfMatch: written[0].ETag},
				{Kind: docstore.TxDelete, Doc: written[1], IfMatch: written[1].ETag},
			})
		}
		return err
	}
	etag := written[0].ETag
	switch {
	case started.revision > 0:
		// An operation that ended meanwhile (a DELETE canceled it) is left as it is.
		if err := s.recordUpdateRevision(r, written[1], op, started.revision); err != nil && !errors.Is(err, errOperationEnded) {
			return err
		}
	case started.done:
		// An operation that ended meanwhile (a DELETE canceled it) is left as it is.
		done, err := s.finishUpdateNow(r, written, nrd, op)
		switch {
		case err == nil:
			etag = done
		case !errors.Is(err, errOperationEnded):
			return err
		}
	}
	s.setAsyncHeaders(w, r, id.SubscriptionID, opID, patch)
	if patch {
		w.WriteHeader(http.StatusAccepted)
		return nil
	}
	return respond(etag)
}

// readBodies reads, in one query, the current version of docs[i] for each i of unread (documents
// listed by QueryHeads without a body, all of one partition). A document written since the page
// was listed comes back with its new ETag and body and is rendered from them; one deleted since
// is absent from the map and left out of the page, as a list made a moment later would.
func (s *Server) readBodies(r *http.Request, docs []*docstore.Document, unread []int) (map[string]*docstore.Document, error) {
	hq, ok := docstore.HeadsOf(s.store)
	if !ok {
		return nil, fmt.Errorf("read %d listed bodies: the store lists no heads", len(unread))
	}
	ids := make([]string, 0, len(unread))
	for _, i := range unread {
		ids = append(ids, docs[i].ID)
	}
	read, err := hq.GetMany(r.Context(), docs[unread[0]].PartitionKey, docstore.TypeResource, ids)
	if err != nil {
		return nil, fmt.Errorf("read %d listed bodies: %w", len(ids), err)
	}
	out := make(map[string]*docstore.Document, len(read))
	for _, d := range read {
		out[d.ID] = d
	}
	return out, nil
}
