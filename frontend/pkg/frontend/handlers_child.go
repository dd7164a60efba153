package frontend

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"regexp"
	"strings"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/openhcp/openhcp/internal/arm"
	"github.com/openhcp/openhcp/internal/armdoc"
	"github.com/openhcp/openhcp/internal/docstore"
)

// A cluster's child resources (hcpOpenShiftClusters/{cluster}/nodePools/{name},
// .../externalAuths/{name}) are served by one set of handlers: PUT (create, a retried create,
// replace), PATCH, GET, DELETE and list. The resource and operation documents work as a
// cluster's do; Cluster Service's service of the kind does the work and the backend follows it
// to a terminal state. A childResource holds what differs between kinds: names, the internal
// model's decoding and rendering in the request's api-version, its Cluster Service spec and
// calls, and a few rules (what may change after create, how busy the cluster may be).
//
// One rule holds for every kind: a write that asks nothing new of Cluster Service (the same
// Cluster Service spec) makes no Cluster Service call. A PUT answers 200 at once; a PATCH 202
// with an operation that has already Succeeded. The exception is a resource whose last update
// ended UpdateNotRecorded (unconfirmedUpdate): its document's spec may not be Cluster Service's,
// so a write sends its full update under a new operation.

// childMeta points at the ARM envelope of a child's internal model. Location and Tags are nil
// for a kind without them (external auths).
type childMeta struct {
	ID                **arm.ResourceID
	SystemData        **arm.SystemData
	ProvisioningState *armdoc.ProvisioningState
	Location          *string
	Tags              *map[string]string
}

// childResource is one child kind. M is its internal model (*api.NodePool), Spec its Cluster
// Service spec, Update its Cluster Service partial update and Version its schema in one
// api-version (api.NodePoolVersion). The hooks never refer to the
// kind's resourceKind (the shared paths call them through it); the handlers find it by kind().
type childResource[M any, Spec proto.Message, Update proto.Message, Version any] struct {
	typeName string // the ARM type under the cluster: "nodePools" (paths /nodepools/{nodePoolName})
	noun     string // "node pool"
	// served says whether Server has the kind's Cluster Service client.
	served func(s *Server) bool
	// busyCluster refuses a write while the cluster has any operation in progress, not only
	// its delete.
	busyCluster bool

	meta func(M) childMeta
	// newModel is an empty model; defaults fills in what a stored one may lack (nil: nothing).
	newModel func() M
	defaults func(M)
	// lookup is the kind's schema in an api-version (api.LookupNodePool). In it, decode decodes
	// a PUT body (stored: the resource it replaces, nil on create), patch merges a PATCH body
	// into stored, and render is the resource as the api-version shows it.
	lookup func(apiVersion string) (Version, bool)
	decode func(v Version, body []byte, stored M) (M, error)
	patch  func(v Version, stored M, body []byte) (M, error)
	render func(v Version, m M) any
	// carry copies into next, written over stored, what the request cannot change or leaves
	// to what is stored (nil: nothing). prepareCreate completes a new one from its cluster
	// before its first write (nil: nothing): what is written then is what Cluster Service is
	// sent and holds, so no second write stands between Cluster Service's answer and the
	// client's.
	carry         func(v Version, stored, next M)
	prepareCreate func(s *Server, r *http.Request, cluster *armdoc.ResourceDocument, m M) error
	// changeErrors lists what a write over stored may not change in api-version v (nil:
	// everything may).
	changeErrors func(v Version, stored, next M) []*arm.CloudError
	// decorate adds Cluster Service's view to a GET's answer (nil: nothing).
	decorate func(s *Server, r *http.Request, m M, csID string)

	// spec is m's Cluster Service spec; fullUpdate and diffUpdate are the update of a PUT
	// (every updatable field) and of a PATCH (only what differs).
	spec       func(m M) Spec
	fullUpdate func(next Spec) Update
	diffUpdate func(stored, next Spec) Update
	// cs is the kind's Cluster Service client: its Create, Get, Update and Delete methods.
	cs func(s *Server) childCalls
}

// childCalls are a child service's Create, Get, Update and Delete RPCs (csv1.NodePoolsClient's
// CreateNodePool, …). Their requests have the same fields in every kind, so they are built
// here: Create{<object>: {id, cluster_id, arm_resource_id, spec}}, Get{id}, Update{id, update},
// Delete{id}.
type childCalls struct {
	create, get, update, delete csCall
}

// csCall is one unary RPC with its request type.
type csCall struct {
	newRequest func() protoreflect.Message
	invoke     func(ctx context.Context, req proto.Message) (protoreflect.Message, error)
}

// rpc makes a csCall of a generated client method.
func rpc[Req, Resp proto.Message](method func(context.Context, Req, ...grpc.CallOption) (Resp, error)) csCall {
	return csCall{
		newRequest: func() protoreflect.Message { var zero Req; return zero.ProtoReflect().Type().New() },
		invoke: func(ctx context.Context, req proto.Message) (protoreflect.Message, error) {
			resp, err := method(ctx, req.(Req))
			if err != nil {
				return nil, err
			}
			return resp.ProtoReflect(), nil
		},
	}
}

// call builds c's request with set, sends it and returns the response; the request is
// returned too, for fieldViolations.
func (c csCall) call(ctx context.Context, set func(req protoreflect.Message)) (proto.Message, protoreflect.Message, error) {
	req := c.newRequest()
	set(req)
	resp, err := c.invoke(ctx, req.Interface())
	return req.Interface(), resp, err
}

// setField sets m's field name.
func setField(m protoreflect.Message, name string, v protoreflect.Value) {
	m.Set(m.Descriptor().Fields().ByName(protoreflect.Name(name)), v)
}

// getField is m's field name; the zero value for a nil m (a failed call).
func getField(m protoreflect.Message, name string) protoreflect.Value {
	if m == nil {
		return protoreflect.Value{}
	}
	return m.Get(m.Descriptor().Fields().ByName(protoreflect.Name(name)))
}

// childNameRE is the specification's name pattern of a cluster's child resource (node pool,
// external auth): 1 to 15 letters, digits and '-', starting with a letter, not ending with '-'.
var childNameRE = regexp.MustCompile(`^[a-zA-Z]([-a-zA-Z0-9]{0,13}[a-zA-Z0-9])?$`)

// path is the kind's collection path under a cluster: "/nodepools".
func (k *childResource[M, Spec, Update, Version]) path() string {
	return "/" + strings.ToLower(k.typeName)
}

// routes registers the kind's paths; without its Cluster Service client they are not served.
func (k *childResource[M, Spec, Update, Version]) routes(s *Server) {
	if !k.served(s) {
		return
	}
	pattern := clusterPattern + k.path() + "/{" + strings.TrimSuffix(k.typeName, "s") + "Name}"
	s.handle("PUT "+pattern, k.put(s), resourceRoute)
	s.handle("PATCH "+pattern, k.patchHandler(s), resourceRoute)
	s.handle("GET "+pattern, k.get(s), resourceRoute)
	s.handle("DELETE "+pattern, k.delete(s), resourceRoute)
	s.handle("GET "+clusterPattern+k.path(), k.list(s), resourceRoute)
}

// id is the child's ID in the request, in the caller's casing.
func (k *childResource[M, Spec, Update, Version]) id(r *http.Request) (*arm.ResourceID, error) {
	return childID(r, k.noun, childNameRE)
}

// notFound is the 404 of a child that does not exist.
func (k *childResource[M, Spec, Update, Version]) notFound(id *arm.ResourceID) error {
	return cloudError(http.StatusNotFound, arm.CodeResourceNotFound, "",
		"The resource 'hcpOpenShiftClusters/%s/%s/%s' under resource group '%s' was not found.", id.Names[0], k.typeName, id.Name(), id.ResourceGroup)
}

// model is the resource document's properties: the internal model as stored.
func (k *childResource[M, Spec, Update, Version]) model(m M) (json.RawMessage, error) {
	b, err := json.Marshal(m)
	if err != nil {
		return nil, fmt.Errorf("encode %s: %w", k.noun, err)
	}
	return b, nil
}

// same says whether two versions of a child are the same resource: model, tags and location.
func (k *childResource[M, Spec, Update, Version]) same(a, b M) bool {
	ja, _ := k.model(a)
	jb, _ := k.model(b)
	ma, mb := k.meta(a), k.meta(b)
	if ma.Location != nil && normalizeLocation(*ma.Location) != normalizeLocation(*mb.Location) {
		return false
	}
	if ma.Tags != nil {
		if len(*ma.Tags) != len(*mb.Tags) {
			return false
		}
		for key, v := range *ma.Tags {
			if bv, ok := (*mb.Tags)[key]; !ok || bv != v {
				return false
			}
		}
	}
	return string(ja) == string(jb)
}

// fromDocMeta fills the ARM envelope of m from its resource document.
func (k *childResource[M, Spec, Update, Version]) fromDocMeta(rd *armdoc.ResourceDocument, m M) error {
	id, err := arm.ParseResourceID(rd.ResourceID)
	if err != nil {
		return fmt.Errorf("stored resource ID %q: %w", rd.ResourceID, err)
	}
	mm := k.meta(m)
	*mm.ID, *mm.ProvisioningState = id, rd.ProvisioningState
	if mm.Location != nil {
		*mm.Location, *mm.Tags = rd.Location, rd.Tags
	}
	if len(rd.SystemData) > 0 {
		var sd arm.SystemData
		if json.Unmarshal(rd.SystemData, &sd) == nil {
			*mm.SystemData = &sd
		}
	}
	return nil
}

// fromDoc rebuilds the internal model from a resource document.
func (k *childResource[M, Spec, Update, Version]) fromDoc(rd *armdoc.ResourceDocument) (M, error) {
	m := k.newModel()
	if len(rd.Properties) > 0 {
		if err := json.Unmarshal(rd.Properties, m); err != nil {
			return m, fmt.Errorf("decode %s %s: %w", k.noun, rd.ResourceID, err)
		}
	}
	if k.defaults != nil {
		k.defaults(m)
	}
	return m, k.fromDocMeta(rd, m)
}

// version is the request's api-version's schema of the kind (checkServed has checked there is
// one).
func (k *childResource[M, Spec, Update, Version]) version(r *http.Request) Version {
	v, _ := k.lookup(info(r).apiVersion)
	return v
}

// checkServed fails with 400 InvalidResourceType when the request's api-version does not
// serve the kind.
func (k *childResource[M, Spec, Update, Version]) checkServed(r *http.Request) error {
	if _, ok := k.lookup(info(r).apiVersion); !ok {
		return cloudError(http.StatusBadRequest, arm.CodeInvalidResourceType, "api-version",
			"The resource type 'hcpOpenShiftClusters/%s' is not served in api-version '%s'.", k.typeName, info(r).apiVersion)
	}
	return nil
}

func (k *childResource[M, Spec, Update, Version]) respond(w http.ResponseWriter, r *http.Request, code int, m M, etag string) error {
	if err := k.checkServed(r); err != nil {
		return err
	}
	b, err := json.Marshal(k.render(k.version(r), m))
	if err != nil {
		return fmt.Errorf("render %s %s: %w", k.noun, *k.meta(m).ID, err)
	}
	if etag != "" {
		w.Header().Set(arm.HeaderETag, quoteETag(etag))
	}
	writeJSON(w, code, b)
	return nil
}

// respondResult is the kind's resourceKind.respondResult: the stored resource, without what a
// GET adds (decorate).
func (k *childResource[M, Spec, Update, Version]) respondResult(_ *Server, w http.ResponseWriter, r *http.Request, rd *armdoc.ResourceDocument, doc *docstore.Document) error {
	m, err := k.fromDoc(rd)
	if err != nil {
		return err
	}
	return k.respond(w, r, http.StatusOK, m, doc.ETag)
}

// checkCluster refuses a write while the cluster is being deleted, and for a busyCluster kind
// while any operation is in progress on it (409, naming it).
func (k *childResource[M, Spec, Update, Version]) checkCluster(ctx context.Context, s *Server, cluster *armdoc.ResourceDocument) error {
	if cluster.ActiveOperationID != "" {
		op, _, err := s.getOperationDoc(ctx, partitionKey(mustSub(cluster.ResourceID)), cluster.ActiveOperationID)
		if err != nil && !errors.Is(err, docstore.ErrNotFound) {
			return err
		}
		if err == nil && !op.Status.Terminal() {
			if op.Request == armdoc.OperationDelete {
				return cloudError(http.StatusConflict, arm.CodeConflict, "",
					"The cluster '%s' is being deleted (operation '%s'); its %ss cannot be written.", cluster.ResourceID, op.ID, k.noun)
			}
			if k.busyCluster {
				return cloudError(http.StatusConflict, arm.CodeConflict, "",
					"Cannot write %ss of cluster '%s' while operation '%s' (%s) is in progress on it.", k.noun, cluster.ResourceID, op.ID, op.Request)
			}
		}
	}
	if cluster.ProvisioningState == armdoc.StateDeleting {
		return cloudError(http.StatusConflict, arm.CodeConflict, "", "The cluster '%s' is being deleted; its %ss cannot be written.", cluster.ResourceID, k.noun)
	}
	return nil
}

// writeTarget checks a PUT's or PATCH's ID, api-version and body, and reads the child's cluster
// (404 ParentResourceNotFound without it).
func (k *childResource[M, Spec, Update, Version]) writeTarget(s *Server, r *http.Request) (*arm.ResourceID, *armdoc.ResourceDocument, error) {
	id, err := k.id(r)
	if err != nil {
		return nil, nil, err
	}
	if err := k.checkServed(r); err != nil {
		return nil, nil, err
	}
	if len(info(r).body) == 0 {
		return nil, nil, cloudError(http.StatusBadRequest, arm.CodeInvalidRequestContent, "", "The request content is empty.")
	}
	cluster, err := s.parentCluster(r.Context(), id)
	if err != nil {
		return nil, nil, err
	}
	return id, cluster, nil
}

// put creates a child, retries a create still pending, or replaces one.
func (k *childResource[M, Spec, Update, Version]) put(s *Server) handlerFunc {
	return func(w http.ResponseWriter, r *http.Request) error {
		ri := info(r)
		id, cluster, err := k.writeTarget(s, r)
		if err != nil {
			return err
		}
		rd, doc, err := s.getResourceDoc(r.Context(), id)
		if err != nil && !errors.Is(err, docstore.ErrNotFound) {
			return err
		}
		var stored M
		if rd != nil {
			if stored, err = k.fromDoc(rd); err != nil {
				return err
			}
		}
		next, err := k.decode(k.version(r), ri.body, stored)
		if err != nil {
			return err
		}
		meta := k.meta(next)
		if meta.Location != nil && normalizeLocation(*meta.Location) != s.cfg.Location {
			return cloudError(http.StatusBadRequest, arm.CodeInvalidRequestContent, "location",
				"The location '%s' is not served by this endpoint, which serves '%s'.", *meta.Location, s.cfg.Location)
		}
		*meta.ID = id
		pre, err := checkPutPreconditions(r, rd, doc)
		if err != nil {
			return err
		}
		*meta.SystemData = requestSystemData(r)
		if doc == nil {
			if err := k.checkCluster(r.Context(), s, cluster); err != nil {
				return err
			}
			return k.create(s, w, r, cluster, next, nil, "")
		}
		if k.carry != nil {
			k.carry(k.version(r), stored, next)
		}
		return k.update(s, w, r, cluster, stored, next, rd, doc, false, pre)
	}
}

// create makes m, a new child, or (prev set: the document of one whose create never reached
// Cluster Service, recreate) that child again under its Cluster Service ID csID.
func (k *childResource[M, Spec, Update, Version]) create(s *Server, w http.ResponseWriter, r *http.Request, cluster *armdoc.ResourceDocument, m M, prev *docstore.Document, csID string) error {
	if k.prepareCreate != nil {
		if err := k.prepareCreate(s, r, cluster, m); err != nil {
			return err
		}
	}
	meta := k.meta(m)
	*meta.ProvisioningState = armdoc.StateAccepted
	id := *meta.ID
	if csID == "" {
		csID = newClusterServiceID()
	}
	opID := newUUID()
	props, err := k.model(m)
	if err != nil {
		return err
	}
	rd := &armdoc.ResourceDocument{
		ResourceID: id.String(), InternalID: csID, ProvisioningState: armdoc.StateAccepted, ActiveOperationID: opID, Properties: props,
	}
	if meta.Location != nil {
		rd.Location, rd.Tags = *meta.Location, *meta.Tags
	}
	if *meta.SystemData != nil {
		rd.SystemData, _ = json.Marshal(*meta.SystemData)
	}
	etag, err := s.startCreate(r, k.kind(), id, rd, prev, []any{"clusterID", cluster.InternalID}, func() (string, error) {
		return k.callCreate(s, r, m, csID, cluster.InternalID)
	})
	if err != nil {
		return err
	}
	s.setAsyncHeaders(w, r, id.SubscriptionID, opID, false)
	return k.respond(w, r, http.StatusCreated, m, etag)
}

// callCreate has Cluster Service create m (idempotent on its ARM ID) and returns the ID it
// answers with.
func (k *childResource[M, Spec, Update, Version]) callCreate(s *Server, r *http.Request, m M, csID, clusterCSID string) (string, error) {
	ctx, cancel := s.csContext(r.Context(), info(r))
	defer cancel()
	req, got, err := k.cs(s).create.call(ctx, func(req protoreflect.Message) {
		// The request's one field is the object.
		fd := req.Descriptor().Fields().Get(0)
		obj := req.NewField(fd).Message()
		setField(obj, "id", protoreflect.ValueOfString(csID))
		setField(obj, "cluster_id", protoreflect.ValueOfString(clusterCSID))
		setField(obj, "arm_resource_id", protoreflect.ValueOfString((*k.meta(m).ID).String()))
		setField(obj, "spec", protoreflect.ValueOfMessage(k.spec(m).ProtoReflect()))
		req.Set(fd, protoreflect.ValueOfMessage(obj))
	})
	if err != nil {
		return "", fieldViolations(info(r).version, req, err)
	}
	return getField(got, "id").String(), nil
}

// update writes next over an existing child, for a PUT (200) or a PATCH (202). pre, when set,
// is the request's failed If-Match or If-None-Match (checkPutPreconditions, readForPatch): only
// a retry of the running operation goes on, anything else answers it. What changeErrors names may not change. A change Cluster Service must roll out becomes an update
// call naming what changes, and an Update operation the backend ends once the child is READY as
// asked; anything else (tags, identity, an unchanged body) is written at once, except after an
// update that ended UpdateNotRecorded: then every write sends the full update.
func (k *childResource[M, Spec, Update, Version]) update(s *Server, w http.ResponseWriter, r *http.Request, cluster *armdoc.ResourceDocument, stored, next M,
	rd *armdoc.ResourceDocument, doc *docstore.Document, patch bool, pre error) error {
	ctx := r.Context()
	id := *k.meta(next).ID
	// A PUT or PATCH that leaves the child as the document holds it, from the caller whose update
	// runs, is that update's retry (after a 503) and joins it; only a PUT is a create's retry.
	same := k.same(stored, next)
	if pre != nil && (!same || !s.conditionalRetry(r, doc.PartitionKey, rd)) {
		return pre
	}
	if same {
		running, opDoc, err := s.activeOperation(ctx, doc.PartitionKey, rd)
		if err != nil {
			return err
		}
		// Another caller's identical write is not a retry: it gets the 409 below.
		if running != nil && running.Request == armdoc.OperationUpdate && startedBy(r, running) {
			call := func(string) (updateStarted, error) {
				u, err := k.recordedUpdate(running, stored)
				if err != nil {
					return updateStarted{}, err
				}
				revision, err := k.callUpdate(s, r, rd.InternalID, id, u)
				return updateStarted{revision: revision}, err
			}
			return s.joinUpdate(w, r, id, rd, doc, running, opDoc, patch, call, func(etag string) error {
				return k.respond(w, r, http.StatusOK, stored, etag)
			})
		}
	}
	op, err := s.pendingCreate(r, doc.PartitionKey, rd, id, same && !patch)
	if pre != nil && (err != nil || op == nil) {
		return pre
	}
	if err != nil {
		return err
	}
	if op != nil {
		// The caller retries a create we accepted: drive Cluster Service again with the stored
		// ID (its create is idempotent), while that call ends within the backend's grace
		// (resendCreate), and point at the same operation.
		if s.resendCreate(r, op) {
			if _, err := k.callCreate(s, r, stored, rd.InternalID, cluster.InternalID); err != nil {
				return fmt.Errorf("retry create of %s %s: %w", k.noun, id, err)
			}
		}
		s.setAsyncHeaders(w, r, id.SubscriptionID, op.ID, false)
		return k.respond(w, r, http.StatusCreated, stored, doc.ETag)
	}
	if !patch {
		// A PUT on a child whose create never reached Cluster Service creates it again.
		if again, err := s.neverCreated(r, k.kind(), rd); again || err != nil {
			if err != nil {
				return err
			}
			if err := k.checkCluster(ctx, s, cluster); err != nil {
				return err
			}
			return k.create(s, w, r, cluster, next, doc, rd.InternalID)
		}
	}
	if k.changeErrors != nil {
		if errs := k.changeErrors(k.version(r), stored, next); len(errs) > 0 {
			return arm.Multiple(errs)
		}
	}
	if err := k.checkCluster(ctx, s, cluster); err != nil {
		return err
	}
	props, err := k.model(next)
	if err != nil {
		return err
	}
	nrd := *rd
	nrd.Properties = props
	if meta := k.meta(next); meta.Tags != nil {
		nrd.Tags = *meta.Tags
	}
	mergeSystemData(&nrd, *k.meta(next).SystemData)

	// After an update that ended UpdateNotRecorded the document's spec is not known to be
	// Cluster Service's: even an unchanged spec is sent, in full but for what neither the lost
	// update nor this request names (unconfirmedUpdate, sendOnlyWhatWasAsked).
	lost, err := s.unconfirmedUpdate(ctx, doc.PartitionKey, rd)
	if err != nil {
		return err
	}
	if lost == nil && proto.Equal(k.spec(stored), k.spec(next)) {
		return k.writeOnly(s, w, r, id, &nrd, doc, patch)
	}
	u := k.updateOf(stored, next, patch && lost == nil)
	if lost != nil {
		if err := sendOnlyWhatWasAsked(u, lost, k.updateOf(stored, next, true)); err != nil {
			return fmt.Errorf("update of %s %s after an unconfirmed one: %w", k.noun, id, err)
		}
	}
	// Recorded in the operation, for a later write to know what this one asked if its answer
	// is lost (unconfirmedUpdate).
	sent, err := protojson.Marshal(u)
	if err != nil {
		return fmt.Errorf("record the update of %s %s: %w", k.noun, id, err)
	}
	call := func(string) (updateStarted, error) {
		revision, err := k.callUpdate(s, r, rd.InternalID, id, u)
		return updateStarted{revision: revision}, err
	}
	return s.startUpdate(w, r, k.kind(), id, &nrd, doc, patch, sent, call, func(etag string) error {
		*k.meta(next).ProvisioningState = nrd.ProvisioningState // as written: Updating, or Succeeded if it ended at once
		return k.respond(w, r, http.StatusOK, next, etag)
	})
}

// updateOf is what Cluster Service's update gets for a change from stored to next. A PUT
// replaces: it sends every updatable field (and so also brings back one an SRE changed in
// Cluster Service that the document does not show); a PATCH sends only what differs. Cluster
// Service applies it to its own spec, so the frontend never reads that spec to write it back.
func (k *childResource[M, Spec, Update, Version]) updateOf(stored, next M, patch bool) Update {
	if !patch {
		return k.fullUpdate(k.spec(next))
	}
	return k.diffUpdate(k.spec(stored), k.spec(next))
}

// recordedUpdate is the update op sent Cluster Service, as op recorded it (SentUpdate), for a
// retry to send again: what a PATCH named, or a PUT's full update. An op recorded without it (by
// an earlier frontend) sends stored's full update, as that frontend's retry did.
func (k *childResource[M, Spec, Update, Version]) recordedUpdate(op *armdoc.OperationDocument, stored M) (Update, error) {
	u := k.updateOf(stored, stored, false)
	if len(op.SentUpdate) == 0 {
		return u, nil
	}
	proto.Reset(u)
	if err := protojson.Unmarshal(op.SentUpdate, u); err != nil {
		return u, fmt.Errorf("decode the update recorded in operation %s: %w", op.ID, err)
	}
	return u, nil
}

// callUpdate sends the partial update and returns the spec_revision it took effect at (the
// operation's InternalRevision: the backend ends it once a READY status has observed it). It is
// unconditional in Cluster Service: the update names only what this request changes, Cluster
// Service merges it under its own lock, and the ARM-level race was decided before the call, by
// the resource document's ETag (startUpdate).
func (k *childResource[M, Spec, Update, Version]) callUpdate(s *Server, r *http.Request, csID string, id *arm.ResourceID, u Update) (int64, error) {
	ctx, cancel := s.csContext(r.Context(), info(r))
	defer cancel()
	req, got, err := k.cs(s).update.call(ctx, func(req protoreflect.Message) {
		setField(req, "id", protoreflect.ValueOfString(csID))
		setField(req, "update", protoreflect.ValueOfMessage(u.ProtoReflect()))
	})
	if err != nil {
		return 0, fmt.Errorf("update %s %s in cluster service: %w", k.noun, id, fieldViolations(info(r).version, req, err))
	}
	return getField(got, "spec_revision").Int(), nil
}

// writeOnly records a change Cluster Service does not see. A PUT answers 200 as a GET would; a
// PATCH still answers 202 with an operation, recorded already Succeeded.
func (k *childResource[M, Spec, Update, Version]) writeOnly(s *Server, w http.ResponseWriter, r *http.Request, id *arm.ResourceID, nrd *armdoc.ResourceDocument,
	doc *docstore.Document, patch bool) error {
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
		updated, err := k.fromDoc(nrd)
		if err != nil {
			return err
		}
		return k.respond(w, r, http.StatusOK, updated, written.ETag)
	}
	opID := newUUID()
	now := time.Now().UTC()
	op := s.newOperation(r, opID, armdoc.OperationUpdate, id.String(), nrd.InternalID, now)
	op.Status, op.EndTime = armdoc.StateSucceeded, &now
	opDoc, err := newDoc(doc.PartitionKey, opID, docstore.TypeOperation, id.String(), op, s.cfg.OperationTTL)
	if err != nil {
		return err
	}
	if _, err := s.store.Transact(ctx, doc.PartitionKey, []docstore.TxOp{
		{Kind: docstore.TxReplace, Doc: resDoc, IfMatch: doc.ETag},
		{Kind: docstore.TxCreate, Doc: opDoc},
	}); err != nil {
		return err
	}
	s.setAsyncHeaders(w, r, id.SubscriptionID, opID, true)
	w.WriteHeader(http.StatusAccepted)
	return nil
}

// patchHandler merges the body into the child as the request's api-version shows it.
func (k *childResource[M, Spec, Update, Version]) patchHandler(s *Server) handlerFunc {
	return func(w http.ResponseWriter, r *http.Request) error {
		ri := info(r)
		id, cluster, err := k.writeTarget(s, r)
		if err != nil {
			return err
		}
		rd, doc, pre, err := s.readForPatch(r, id, k.notFound)
		if err != nil {
			return err
		}
		stored, err := k.fromDoc(rd)
		if err != nil {
			return err
		}
		next, err := k.patch(k.version(r), stored, ri.body)
		if err != nil {
			return err
		}
		*k.meta(next).ID = id
		*k.meta(next).SystemData = requestSystemData(r)
		if k.carry != nil {
			k.carry(k.version(r), stored, next)
		}
		return k.update(s, w, r, cluster, stored, next, rd, doc, true, pre)
	}
}

func (k *childResource[M, Spec, Update, Version]) get(s *Server) handlerFunc {
	return func(w http.ResponseWriter, r *http.Request) error {
		id, err := k.id(r)
		if err != nil {
			return err
		}
		rd, doc, done, err := s.readForGet(w, r, id, k.notFound)
		if err != nil || done {
			return err
		}
		m, err := k.fromDoc(rd)
		if err != nil {
			return err
		}
		if k.decorate != nil {
			k.decorate(s, r, m, rd.InternalID)
		}
		return k.respond(w, r, http.StatusOK, m, doc.ETag)
	}
}

func (k *childResource[M, Spec, Update, Version]) delete(s *Server) handlerFunc {
	return func(w http.ResponseWriter, r *http.Request) error {
		id, err := k.id(r)
		if err != nil {
			return err
		}
		return s.deleteResource(w, r, k.kind(), id)
	}
}

// known is the kind's resourceKind.known.
func (k *childResource[M, Spec, Update, Version]) known(s *Server, r *http.Request, csID string) (bool, error) {
	ctx, cancel := s.csContext(r.Context(), info(r))
	defer cancel()
	_, _, err := k.cs(s).get.call(ctx, func(req protoreflect.Message) { setField(req, "id", protoreflect.ValueOfString(csID)) })
	return knownFrom(err)
}

// callDelete is the kind's resourceKind.callDelete: a child Cluster Service no longer has is
// deleted already (the backend completes the delete).
func (k *childResource[M, Spec, Update, Version]) callDelete(s *Server, r *http.Request, csID string) error {
	if csID == "" {
		return nil
	}
	ctx, cancel := s.csContext(r.Context(), info(r))
	defer cancel()
	_, _, err := k.cs(s).delete.call(ctx, func(req protoreflect.Message) { setField(req, "id", protoreflect.ValueOfString(csID)) })
	if status.Code(err) != codes.NotFound {
		return err
	}
	return nil
}

// list lists a cluster's children, a page at a time.
func (k *childResource[M, Spec, Update, Version]) list(s *Server) handlerFunc {
	return func(w http.ResponseWriter, r *http.Request) error {
		if err := k.checkServed(r); err != nil {
			return err
		}
		return s.listChildren(w, r, k.kind(), k.path(), func(rd *armdoc.ResourceDocument) (any, error) {
			m, err := k.fromDoc(rd)
			if err != nil {
				return nil, err
			}
			return k.render(k.version(r), m), nil
		})
	}
}

// kind is the shared paths' resourceKind of this kind.
func (k *childResource[M, Spec, Update, Version]) kind() *resourceKind {
	for _, rk := range []*resourceKind{&nodePools, &externalAuths} {
		if rk.noun == k.noun {
			return rk
		}
	}
	panic("no resourceKind for " + k.noun)
}

// parentCluster reads a child's cluster: 404 ParentResourceNotFound if there is none.
func (s *Server) parentCluster(ctx context.Context, id *arm.ResourceID) (*armdoc.ResourceDocument, error) {
	parent := id.Parent()
	rd, _, err := s.getResourceDoc(ctx, parent)
	if errors.Is(err, docstore.ErrNotFound) {
		return nil, cloudError(http.StatusNotFound, "ParentResourceNotFound", "",
			"The parent resource 'hcpOpenShiftClusters/%s' under resource group '%s' was not found.", parent.Name(), parent.ResourceGroup)
	}
	return rd, err
}

func mustSub(resourceID string) string {
	id, err := arm.ParseResourceID(resourceID)
	if err != nil {
		return ""
	}
	return id.SubscriptionID
}
