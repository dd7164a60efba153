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

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	csv1 "github.com/openhcp/openhcp/cluster-service/api/v1"
	"github.com/openhcp/openhcp/frontend/pkg/api"
	docs "github.com/openhcp/openhcp/internal/api"
	"github.com/openhcp/openhcp/internal/arm"
	"github.com/openhcp/openhcp/internal/store"
)

// External auths: hcpOpenShiftClusters/{cluster}/externalAuths/{name}, at most one per cluster.
// The resource and operation documents work as a node pool's do; Cluster Service's ExternalAuths
// service does the work (the OIDC provider goes into the cluster's HostedCluster) and the backend
// follows it to a terminal state.

const (
	externalAuthsPath   = "/externalauths"
	externalAuthPattern = clusterPattern + externalAuthsPath + "/{externalAuthName}"
)

// externalAuthNameRE is the name pattern from the specification.
var externalAuthNameRE = regexp.MustCompile(`^[a-zA-Z]([-a-zA-Z0-9]{0,13}[a-zA-Z0-9])?$`)

// externalAuthRoutes registers the external auth paths; without an ExternalAuths client they
// are not served.
func (s *Server) externalAuthRoutes() {
	if s.cfg.ExternalAuths == nil {
		return
	}
	s.handle("PUT "+externalAuthPattern, s.putExternalAuth, resourceRoute)
	s.handle("PATCH "+externalAuthPattern, s.patchExternalAuth, resourceRoute)
	s.handle("GET "+externalAuthPattern, s.getExternalAuth, resourceRoute)
	s.handle("DELETE "+externalAuthPattern, s.deleteExternalAuth, resourceRoute)
	s.handle("GET "+clusterPattern+externalAuthsPath, s.listExternalAuths, resourceRoute)
}

// isExternalAuthID reports whether a resource ID names an external auth.
func isExternalAuthID(id *arm.ResourceID) bool {
	return strings.EqualFold(id.ResourceType(), api.ExternalAuthResourceType)
}

// externalAuthID is the external auth ID of the request, in the caller's casing.
func externalAuthID(r *http.Request) (*arm.ResourceID, error) {
	id, err := arm.ParseResourceID(info(r).originalPath)
	if err != nil || len(id.Names) != 2 {
		return nil, cloudError(http.StatusBadRequest, arm.CodeInvalidResourceName, "", "The resource ID %q is not valid.", info(r).originalPath)
	}
	if !clusterNameRE.MatchString(id.Names[0]) {
		return nil, cloudError(http.StatusBadRequest, arm.CodeInvalidResourceName, "name",
			"The cluster name '%s' is invalid: 1 to 54 letters, digits and '-', starting with a letter and not ending with '-'.", id.Names[0])
	}
	if !externalAuthNameRE.MatchString(id.Name()) {
		return nil, cloudError(http.StatusBadRequest, arm.CodeInvalidResourceName, "name",
			"The external auth name '%s' is invalid: 1 to 15 letters, digits and '-', starting with a letter and not ending with '-'.", id.Name())
	}
	return id, nil
}

func externalAuthVersion(r *http.Request) (api.ExternalAuthVersion, error) {
	v, ok := api.LookupExternalAuth(info(r).apiVersion)
	if !ok {
		return nil, cloudError(http.StatusBadRequest, arm.CodeInvalidResourceType, "api-version",
			"The resource type 'hcpOpenShiftClusters/externalAuths' is not served in api-version '%s'.", info(r).apiVersion)
	}
	return v, nil
}

func externalAuthNotFound(id *arm.ResourceID) error {
	return cloudError(http.StatusNotFound, arm.CodeResourceNotFound, "",
		"The resource 'hcpOpenShiftClusters/%s/externalAuths/%s' under resource group '%s' was not found.", id.Names[0], id.Name(), id.ResourceGroup)
}

// checkClusterNotDeleting refuses an external auth write while its cluster is being deleted.
func (s *Server) checkClusterNotDeleting(ctx context.Context, cluster *docs.ResourceDocument) error {
	deleting := cluster.ProvisioningState == docs.StateDeleting
	if !deleting && cluster.ActiveOperationID != "" {
		op, _, err := s.getOperationDoc(ctx, partitionKey(mustSub(cluster.ResourceID)), cluster.ActiveOperationID)
		if err != nil && !errors.Is(err, store.ErrNotFound) {
			return err
		}
		deleting = err == nil && !op.Status.Terminal() && op.Request == docs.OperationDelete
	}
	if deleting {
		return cloudError(http.StatusConflict, arm.CodeConflict, "", "The cluster '%s' is being deleted; its external auths cannot be written.", cluster.ResourceID)
	}
	return nil
}

func externalAuthFromDoc(rd *docs.ResourceDocument) (*api.ExternalAuth, error) {
	ea := &api.ExternalAuth{}
	if len(rd.Properties) > 0 {
		if err := json.Unmarshal(rd.Properties, ea); err != nil {
			return nil, fmt.Errorf("decode external auth %s: %w", rd.ResourceID, err)
		}
	}
	id, err := arm.ParseResourceID(rd.ResourceID)
	if err != nil {
		return nil, fmt.Errorf("stored resource ID %q: %w", rd.ResourceID, err)
	}
	ea.ID, ea.ProvisioningState = id, rd.ProvisioningState
	if len(rd.SystemData) > 0 {
		var sd arm.SystemData
		if json.Unmarshal(rd.SystemData, &sd) == nil {
			ea.SystemData = &sd
		}
	}
	return ea, nil
}

func externalAuthModel(ea *api.ExternalAuth) (json.RawMessage, error) {
	b, err := json.Marshal(ea)
	if err != nil {
		return nil, fmt.Errorf("encode external auth: %w", err)
	}
	return b, nil
}

func sameExternalAuth(a, b *api.ExternalAuth) bool {
	ja, _ := externalAuthModel(a)
	jb, _ := externalAuthModel(b)
	return string(ja) == string(jb)
}

func (s *Server) respondExternalAuth(w http.ResponseWriter, r *http.Request, code int, ea *api.ExternalAuth, etag string) error {
	v, err := externalAuthVersion(r)
	if err != nil {
		return err
	}
	b, err := json.Marshal(v.RenderExternalAuth(ea))
	if err != nil {
		return fmt.Errorf("render external auth %s: %w", ea.ID, err)
	}
	if etag != "" {
		w.Header().Set(arm.HeaderETag, quoteETag(etag))
	}
	writeJSON(w, code, b)
	return nil
}

// externalAuthSpec is the Cluster Service spec of an external auth.
func externalAuthSpec(ea *api.ExternalAuth) *csv1.ExternalAuthSpec {
	p := ea.Properties
	spec := &csv1.ExternalAuthSpec{
		Issuer: &csv1.TokenIssuer{Url: p.Issuer.URL, Audiences: p.Issuer.Audiences, Ca: p.Issuer.CA},
		ClaimMappings: &csv1.TokenClaimMappings{Username: &csv1.UsernameClaimMapping{
			Claim: p.Claim.Mappings.Username.Claim, Prefix: p.Claim.Mappings.Username.Prefix, PrefixPolicy: p.Claim.Mappings.Username.PrefixPolicy,
		}},
	}
	if g := p.Claim.Mappings.Groups; g != nil {
		spec.ClaimMappings.Groups = &csv1.GroupsClaimMapping{Claim: g.Claim, Prefix: g.Prefix}
	}
	for _, c := range p.Clients {
		spec.Clients = append(spec.Clients, &csv1.ExternalAuthClient{ComponentName: c.Component.Name, ComponentNamespace: c.Component.AuthClientNamespace,
			ClientId: c.ClientID, ExtraScopes: c.ExtraScopes, Type: c.Type})
	}
	for _, r := range p.Claim.ValidationRules {
		spec.ValidationRules = append(spec.ValidationRules, &csv1.TokenClaimValidationRule{Type: r.Type, RequiredClaim: r.RequiredClaim.Claim, RequiredValue: r.RequiredClaim.RequiredValue})
	}
	return spec
}

// putExternalAuth creates an external auth, retries a create still pending, or replaces one.
func (s *Server) putExternalAuth(w http.ResponseWriter, r *http.Request) error {
	ri := info(r)
	id, err := externalAuthID(r)
	if err != nil {
		return err
	}
	ver, err := externalAuthVersion(r)
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
	if err != nil && !errors.Is(err, store.ErrNotFound) {
		return err
	}
	ea, err := ver.DecodeExternalAuth(ri.body)
	if err != nil {
		return err
	}
	ea.ID = id
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
	sd, err := arm.ParseSystemData(r.Header.Get(arm.HeaderSystemData))
	if err != nil {
		ri.log.Warn("ignoring invalid systemData header", "error", err)
	}
	ea.SystemData = sd
	if err := s.checkClusterNotDeleting(r.Context(), cluster); err != nil {
		return err
	}
	if doc == nil {
		return s.createExternalAuth(w, r, cluster, ea)
	}
	return s.updateExternalAuth(w, r, cluster, rd, doc, ea, false)
}

func (s *Server) createExternalAuth(w http.ResponseWriter, r *http.Request, cluster *docs.ResourceDocument, ea *api.ExternalAuth) error {
	ctx := r.Context()
	ea.ProvisioningState = docs.StateAccepted
	csID := newClusterServiceID()
	opID := newUUID()
	now := time.Now().UTC()
	props, err := externalAuthModel(ea)
	if err != nil {
		return err
	}
	rd := &docs.ResourceDocument{ResourceID: ea.ID.String(), InternalID: csID, ProvisioningState: docs.StateAccepted, ActiveOperationID: opID, Properties: props}
	if ea.SystemData != nil {
		rd.SystemData, _ = json.Marshal(ea.SystemData)
	}
	part := partitionKey(ea.ID.SubscriptionID)
	resDoc, err := newDoc(part, ea.ID.Lower(), store.TypeResource, ea.ID.String(), rd, 0)
	if err != nil {
		return err
	}
	opDoc, err := newDoc(part, opID, store.TypeOperation, ea.ID.String(), s.newOperation(r, opID, docs.OperationCreate, ea.ID.String(), csID, now), s.cfg.OperationTTL)
	if err != nil {
		return err
	}
	written, err := s.store.Transact(ctx, part, []store.TxOp{{Kind: store.TxCreate, Doc: resDoc}, {Kind: store.TxCreate, Doc: opDoc}})
	if errors.Is(err, store.ErrAlreadyExists) {
		return cloudError(http.StatusConflict, arm.CodeConflict, "", "Another request created '%s' at the same time.", ea.ID)
	}
	if err != nil {
		return err
	}
	info(r).log.Info("external auth create accepted", "resourceID", ea.ID.String(), "externalAuthID", csID, "clusterID", cluster.InternalID, "operationID", opID)
	created, err := s.callCreateExternalAuth(r, ea, csID, cluster.InternalID)
	if err != nil {
		if definitive(err) {
			s.rollback(r, part, []store.TxOp{
				{Kind: store.TxDelete, Doc: written[0], IfMatch: written[0].ETag},
				{Kind: store.TxDelete, Doc: written[1], IfMatch: written[1].ETag},
			})
		}
		return fmt.Errorf("create external auth %s in cluster service: %w", ea.ID, err)
	}
	etag := written[0].ETag
	if got := created.GetId(); got != "" && got != csID {
		if etag, err = s.adoptClusterID(ctx, part, written, got); err != nil {
			return err
		}
	}
	s.setAsyncHeaders(w, r, ea.ID.SubscriptionID, opID, false)
	return s.respondExternalAuth(w, r, http.StatusCreated, ea, etag)
}

func (s *Server) callCreateExternalAuth(r *http.Request, ea *api.ExternalAuth, csID, clusterCSID string) (*csv1.ExternalAuth, error) {
	ctx, cancel := s.csContext(r.Context(), info(r))
	defer cancel()
	return s.cfg.ExternalAuths.CreateExternalAuth(ctx, &csv1.CreateExternalAuthRequest{ExternalAuth: &csv1.ExternalAuth{
		Id: csID, ClusterId: clusterCSID, ArmResourceId: ea.ID.String(), Spec: externalAuthSpec(ea),
	}})
}

// updateExternalAuth writes next over an existing external auth, for a PUT (200) or a PATCH
// (202). Every property may change; a change becomes an UpdateExternalAuth call, conditional on
// the revision read, and an Update operation the backend ends once it is READY again.
func (s *Server) updateExternalAuth(w http.ResponseWriter, r *http.Request, cluster *docs.ResourceDocument, rd *docs.ResourceDocument, doc *store.Document,
	next *api.ExternalAuth, patch bool) error {
	ctx := r.Context()
	part := doc.PartitionKey
	stored, err := externalAuthFromDoc(rd)
	if err != nil {
		return err
	}
	op, _, err := s.activeOperation(ctx, part, rd)
	if err != nil {
		return err
	}
	if op != nil {
		if !patch && op.Request == docs.OperationCreate && sameExternalAuth(stored, next) {
			// A retried create: drive Cluster Service again with the stored ID (idempotent).
			if _, err := s.callCreateExternalAuth(r, stored, rd.InternalID, cluster.InternalID); err != nil {
				return fmt.Errorf("retry create of external auth %s: %w", next.ID, err)
			}
			s.setAsyncHeaders(w, r, next.ID.SubscriptionID, op.ID, false)
			return s.respondExternalAuth(w, r, http.StatusCreated, stored, doc.ETag)
		}
		return cloudError(http.StatusConflict, arm.CodeConflict, "",
			"Cannot write resource '%s' while operation '%s' (%s) is in progress.", next.ID, op.ID, op.Request)
	}
	props, err := externalAuthModel(next)
	if err != nil {
		return err
	}
	nrd := *rd
	nrd.Properties = props
	mergeSystemData(&nrd, next.SystemData)
	if sameExternalAuth(stored, next) && !patch {
		// Nothing for Cluster Service to do: record ARM's systemData and answer as a GET would.
		resDoc, err := withBody(doc, nrd)
		if err != nil {
			return err
		}
		written, err := s.store.Replace(ctx, resDoc, doc.ETag)
		if err != nil {
			return err
		}
		return s.respondExternalAuth(w, r, http.StatusOK, stored, written.ETag)
	}
	revision, err := s.callUpdateExternalAuth(r, rd.InternalID, next)
	if err != nil {
		return err
	}
	opID := newUUID()
	now := time.Now().UTC()
	nrd.ProvisioningState, nrd.ActiveOperationID = docs.StateUpdating, opID
	resDoc, err := withBody(doc, nrd)
	if err != nil {
		return err
	}
	opBody := s.newOperation(r, opID, docs.OperationUpdate, next.ID.String(), rd.InternalID, now)
	opBody.InternalRevision = revision
	opDoc, err := newDoc(part, opID, store.TypeOperation, next.ID.String(), opBody, s.cfg.OperationTTL)
	if err != nil {
		return err
	}
	written, err := s.store.Transact(ctx, part, []store.TxOp{{Kind: store.TxReplace, Doc: resDoc, IfMatch: doc.ETag}, {Kind: store.TxCreate, Doc: opDoc}})
	if err != nil {
		return fmt.Errorf("record update of external auth %s: %w", next.ID, err)
	}
	info(r).log.Info("external auth update accepted", "resourceID", next.ID.String(), "externalAuthID", rd.InternalID, "operationID", opID, "revision", revision)
	if patch {
		s.setAsyncHeaders(w, r, next.ID.SubscriptionID, opID, true)
		w.WriteHeader(http.StatusAccepted)
		return nil
	}
	s.setAsyncHeaders(w, r, next.ID.SubscriptionID, opID, false)
	next.ProvisioningState = docs.StateUpdating
	return s.respondExternalAuth(w, r, http.StatusOK, next, written[0].ETag)
}

func (s *Server) callUpdateExternalAuth(r *http.Request, csID string, next *api.ExternalAuth) (int64, error) {
	ctx, cancel := s.csContext(r.Context(), info(r))
	defer cancel()
	cur, err := s.cfg.ExternalAuths.GetExternalAuth(ctx, &csv1.GetExternalAuthRequest{Id: csID})
	if err != nil {
		return 0, fmt.Errorf("get external auth %s from cluster service: %w", csID, err)
	}
	updated, err := s.cfg.ExternalAuths.UpdateExternalAuth(ctx, &csv1.UpdateExternalAuthRequest{Id: csID, Spec: externalAuthSpec(next), Revision: cur.GetRevision()})
	if status.Code(err) == codes.Aborted {
		return 0, cloudError(http.StatusConflict, arm.CodeConflict, "", "The external auth '%s' was changed at the same time; retry the request.", next.ID)
	}
	if err != nil {
		return 0, fmt.Errorf("update external auth %s in cluster service: %w", next.ID, err)
	}
	return updated.GetRevision(), nil
}

// patchExternalAuth merges the body into the external auth as the request's version shows it.
func (s *Server) patchExternalAuth(w http.ResponseWriter, r *http.Request) error {
	ri := info(r)
	ctx := r.Context()
	id, err := externalAuthID(r)
	if err != nil {
		return err
	}
	ver, err := externalAuthVersion(r)
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
	rd, doc, err := s.getResourceDoc(ctx, id)
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
		return externalAuthNotFound(id)
	}
	if err := checkClientProvisioningState(ri.body, rd.ProvisioningState); err != nil {
		return err
	}
	if err := s.checkClusterNotDeleting(ctx, cluster); err != nil {
		return err
	}
	stored, err := externalAuthFromDoc(rd)
	if err != nil {
		return err
	}
	next, err := api.PatchExternalAuth(ver, stored, ri.body)
	if err != nil {
		return err
	}
	next.ID = id
	if next.SystemData, err = arm.ParseSystemData(r.Header.Get(arm.HeaderSystemData)); err != nil {
		ri.log.Warn("ignoring invalid systemData header", "error", err)
	}
	return s.updateExternalAuth(w, r, cluster, rd, doc, next, true)
}

func (s *Server) getExternalAuth(w http.ResponseWriter, r *http.Request) error {
	id, err := externalAuthID(r)
	if err != nil {
		return err
	}
	rd, doc, err := s.getResourceDoc(r.Context(), id)
	if errors.Is(err, store.ErrNotFound) {
		return externalAuthNotFound(id)
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
	ea, err := externalAuthFromDoc(rd)
	if err != nil {
		return err
	}
	s.addExternalAuthCondition(r, ea, rd.InternalID)
	return s.respondExternalAuth(w, r, http.StatusOK, ea, doc.ETag)
}

// addExternalAuthCondition shows Cluster Service's state as the specification's condition
// (READY → Available, ERROR → Degraded, installing or updating → Progressing). Best effort: a
// GET still answers from the store without Cluster Service.
func (s *Server) addExternalAuthCondition(r *http.Request, ea *api.ExternalAuth, csID string) {
	if csID == "" {
		return
	}
	ctx, cancel := s.csContext(r.Context(), info(r))
	defer cancel()
	ctx, cancel2 := context.WithTimeout(ctx, 2*time.Second)
	defer cancel2()
	got, err := s.cfg.ExternalAuths.GetExternalAuth(ctx, &csv1.GetExternalAuthRequest{Id: csID})
	if err != nil {
		info(r).log.Debug("external auth status unavailable", "externalAuthID", csID, "error", err)
		return
	}
	st := got.GetStatus()
	c := &api.Condition{Status: "True", Reason: "AsExpected", Message: st.GetMessage(), LastTransitionTime: got.GetUpdateTime().AsTime()}
	switch st.GetState() {
	case csv1.ExternalAuthState_EXTERNAL_AUTH_STATE_READY:
		c.Type = "Available"
	case csv1.ExternalAuthState_EXTERNAL_AUTH_STATE_ERROR:
		c.Type, c.Reason = "Degraded", st.GetErrorCode()
		if !conditionReasonRE.MatchString(c.Reason) {
			c.Reason = "Unknown"
		}
	default:
		c.Type, c.Reason = "Progressing", "Progressing"
	}
	ea.Condition = c
}

// respondExternalAuthResult is the operation result of a finished create or update.
func (s *Server) respondExternalAuthResult(w http.ResponseWriter, r *http.Request, id *arm.ResourceID) error {
	rd, doc, err := s.getResourceDoc(r.Context(), id)
	if errors.Is(err, store.ErrNotFound) {
		return externalAuthNotFound(id)
	}
	if err != nil {
		return err
	}
	ea, err := externalAuthFromDoc(rd)
	if err != nil {
		return err
	}
	return s.respondExternalAuth(w, r, http.StatusOK, ea, doc.ETag)
}

func (s *Server) deleteExternalAuth(w http.ResponseWriter, r *http.Request) error {
	id, err := externalAuthID(r)
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
	opID, err := s.startExternalAuthDelete(r, rd, doc)
	if err != nil {
		return err
	}
	s.setAsyncHeaders(w, r, id.SubscriptionID, opID, true)
	w.WriteHeader(http.StatusAccepted)
	return nil
}

func (s *Server) callDeleteExternalAuth(r *http.Request, csID string) error {
	if csID == "" {
		return nil
	}
	ctx, cancel := s.csContext(r.Context(), info(r))
	defer cancel()
	_, err := s.cfg.ExternalAuths.DeleteExternalAuth(ctx, &csv1.DeleteExternalAuthRequest{Id: csID})
	if status.Code(err) == codes.NotFound {
		return nil // already gone: the backend completes the delete
	}
	return err
}

// startExternalAuthDelete writes the delete operation and asks Cluster Service to remove the
// external auth. A delete while one runs returns it; a delete during a create or update
// cancels that operation.
func (s *Server) startExternalAuthDelete(r *http.Request, rd *docs.ResourceDocument, doc *store.Document) (string, error) {
	ctx := r.Context()
	part := doc.PartitionKey
	op, opDoc, err := s.activeOperation(ctx, part, rd)
	if err != nil {
		return "", err
	}
	var canceled *store.Document
	if op != nil {
		if op.Request == docs.OperationDelete {
			if err := s.callDeleteExternalAuth(r, rd.InternalID); err != nil {
				return "", fmt.Errorf("retry delete of external auth %s: %w", rd.ResourceID, err)
			}
			return op.ID, nil
		}
		now := time.Now().UTC()
		op.Status, op.LastTransitionTime, op.EndTime = docs.StateCanceled, now, &now
		op.Error = &docs.CloudErrorBody{Code: arm.CodeCanceled, Message: "The operation was canceled because the external auth is being deleted."}
		if canceled, err = withBody(opDoc, op); err != nil {
			return "", err
		}
	}
	opID := newUUID()
	now := time.Now().UTC()
	next := *rd
	next.ProvisioningState, next.ActiveOperationID = docs.StateDeleting, opID
	resDoc, err := withBody(doc, next)
	if err != nil {
		return "", err
	}
	newOp, err := newDoc(part, opID, store.TypeOperation, rd.ResourceID, s.newOperation(r, opID, docs.OperationDelete, rd.ResourceID, rd.InternalID, now), s.cfg.OperationTTL)
	if err != nil {
		return "", err
	}
	ops := []store.TxOp{{Kind: store.TxReplace, Doc: resDoc, IfMatch: doc.ETag}, {Kind: store.TxCreate, Doc: newOp}}
	if canceled != nil {
		ops = append(ops, store.TxOp{Kind: store.TxReplace, Doc: canceled, IfMatch: opDoc.ETag})
	}
	written, err := s.store.Transact(ctx, part, ops)
	if err != nil {
		return "", fmt.Errorf("record delete of %s: %w", rd.ResourceID, err)
	}
	info(r).log.Info("external auth delete accepted", "resourceID", rd.ResourceID, "externalAuthID", rd.InternalID, "operationID", opID)
	if err := s.callDeleteExternalAuth(r, rd.InternalID); err != nil {
		if definitive(err) {
			undo := []store.TxOp{
				{Kind: store.TxReplace, Doc: doc, IfMatch: written[0].ETag},
				{Kind: store.TxDelete, Doc: written[1], IfMatch: written[1].ETag},
			}
			if canceled != nil {
				undo = append(undo, store.TxOp{Kind: store.TxReplace, Doc: opDoc, IfMatch: written[2].ETag})
			}
			s.rollback(r, part, undo)
		}
		return "", fmt.Errorf("delete external auth %s in cluster service: %w", rd.ResourceID, err)
	}
	return opID, nil
}

// listExternalAuths lists a cluster's external auths (zero or one), paged like every list.
func (s *Server) listExternalAuths(w http.ResponseWriter, r *http.Request) error {
	ri := info(r)
	ver, err := externalAuthVersion(r)
	if err != nil {
		return err
	}
	clusterRID, err := arm.ParseResourceID(strings.TrimSuffix(strings.TrimSuffix(ri.originalPath, "/"), "/"+lastSegment(ri.originalPath)))
	if err != nil || len(clusterRID.Names) != 1 {
		return cloudError(http.StatusBadRequest, arm.CodeInvalidResourceName, "", "The resource ID %q is not valid.", ri.originalPath)
	}
	if _, _, err := s.getResourceDoc(r.Context(), clusterRID); errors.Is(err, store.ErrNotFound) {
		return cloudError(http.StatusNotFound, "ParentResourceNotFound", "",
			"The parent resource 'hcpOpenShiftClusters/%s' under resource group '%s' was not found.", clusterRID.Name(), clusterRID.ResourceGroup)
	} else if err != nil {
		return err
	}
	page, err := s.store.Query(r.Context(), store.Query{
		Partition:        partitionKey(clusterRID.SubscriptionID),
		Type:             store.TypeResource,
		ResourceIDPrefix: clusterRID.Lower() + externalAuthsPath + "/",
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
		if err != nil || !isExternalAuthID(id) {
			continue
		}
		ea, err := externalAuthFromDoc(&rd)
		if err != nil {
			return err
		}
		out.Value = append(out.Value, ver.RenderExternalAuth(ea))
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
