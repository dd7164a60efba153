package frontend

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"regexp"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	csv1 "github.com/openhcp/openhcp/cluster-service/api/v1"
	"github.com/openhcp/openhcp/frontend/pkg/api"
	"github.com/openhcp/openhcp/internal/arm"
	"github.com/openhcp/openhcp/internal/armdoc"
	"github.com/openhcp/openhcp/internal/docstore"
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

// externalAuthID is the external auth ID of the request, in the caller's casing.
func externalAuthID(r *http.Request) (*arm.ResourceID, error) {
	return childID(r, "external auth", externalAuthNameRE)
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
func (s *Server) checkClusterNotDeleting(ctx context.Context, cluster *armdoc.ResourceDocument) error {
	deleting := cluster.ProvisioningState == armdoc.StateDeleting
	if !deleting && cluster.ActiveOperationID != "" {
		op, _, err := s.getOperationDoc(ctx, partitionKey(mustSub(cluster.ResourceID)), cluster.ActiveOperationID)
		if err != nil && !errors.Is(err, docstore.ErrNotFound) {
			return err
		}
		deleting = err == nil && !op.Status.Terminal() && op.Request == armdoc.OperationDelete
	}
	if deleting {
		return cloudError(http.StatusConflict, arm.CodeConflict, "", "The cluster '%s' is being deleted; its external auths cannot be written.", cluster.ResourceID)
	}
	return nil
}

func externalAuthFromDoc(rd *armdoc.ResourceDocument) (*api.ExternalAuth, error) {
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
	if err != nil && !errors.Is(err, docstore.ErrNotFound) {
		return err
	}
	ea, err := ver.DecodeExternalAuth(ri.body)
	if err != nil {
		return err
	}
	ea.ID = id
	if err := checkPutPreconditions(r, rd, doc); err != nil {
		return err
	}
	sd := requestSystemData(r)
	ea.SystemData = sd
	if err := s.checkClusterNotDeleting(r.Context(), cluster); err != nil {
		return err
	}
	if doc == nil {
		return s.createExternalAuth(w, r, cluster, ea)
	}
	return s.updateExternalAuth(w, r, cluster, rd, doc, ea, false)
}

func (s *Server) createExternalAuth(w http.ResponseWriter, r *http.Request, cluster *armdoc.ResourceDocument, ea *api.ExternalAuth) error {
	ea.ProvisioningState = armdoc.StateAccepted
	csID := newClusterServiceID()
	opID := newUUID()
	props, err := externalAuthModel(ea)
	if err != nil {
		return err
	}
	rd := &armdoc.ResourceDocument{ResourceID: ea.ID.String(), InternalID: csID, ProvisioningState: armdoc.StateAccepted, ActiveOperationID: opID, Properties: props}
	if ea.SystemData != nil {
		rd.SystemData, _ = json.Marshal(ea.SystemData)
	}
	etag, err := s.startCreate(r, &externalAuths, ea.ID, rd, []any{"clusterID", cluster.InternalID}, func() (string, error) {
		created, err := s.callCreateExternalAuth(r, ea, csID, cluster.InternalID)
		return created.GetId(), err
	})
	if err != nil {
		return err
	}
	s.setAsyncHeaders(w, r, ea.ID.SubscriptionID, opID, false)
	return s.respondExternalAuth(w, r, http.StatusCreated, ea, etag)
}

func (s *Server) callCreateExternalAuth(r *http.Request, ea *api.ExternalAuth, csID, clusterCSID string) (*csv1.ExternalAuth, error) {
	ctx, cancel := s.csContext(r.Context(), info(r))
	defer cancel()
	req := &csv1.CreateExternalAuthRequest{ExternalAuth: &csv1.ExternalAuth{
		Id: csID, ClusterId: clusterCSID, ArmResourceId: ea.ID.String(), Spec: externalAuthSpec(ea),
	}}
	created, err := s.cfg.ExternalAuths.CreateExternalAuth(ctx, req)
	return created, fieldViolations(info(r).version, req, err)
}

// updateExternalAuth writes next over an existing external auth, for a PUT (200) or a PATCH
// (202). Every property may change; a change becomes an UpdateExternalAuth call naming the
// parts it changes (all of them for a PUT), and an Update operation the backend ends once it is READY again.
func (s *Server) updateExternalAuth(w http.ResponseWriter, r *http.Request, cluster *armdoc.ResourceDocument, rd *armdoc.ResourceDocument, doc *docstore.Document,
	next *api.ExternalAuth, patch bool) error {
	ctx := r.Context()
	part := doc.PartitionKey
	stored, err := externalAuthFromDoc(rd)
	if err != nil {
		return err
	}
	op, err := s.pendingCreate(ctx, part, rd, next.ID, !patch && sameExternalAuth(stored, next))
	if err != nil {
		return err
	}
	if op != nil {
		// A retried create: drive Cluster Service again with the stored ID (idempotent).
		if _, err := s.callCreateExternalAuth(r, stored, rd.InternalID, cluster.InternalID); err != nil {
			return fmt.Errorf("retry create of external auth %s: %w", next.ID, err)
		}
		s.setAsyncHeaders(w, r, next.ID.SubscriptionID, op.ID, false)
		return s.respondExternalAuth(w, r, http.StatusCreated, stored, doc.ETag)
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
	// A PUT replaces the whole spec; a PATCH sends only the parts that differ from the document.
	u := csv1.FullExternalAuthUpdate(externalAuthSpec(next))
	if patch {
		u = csv1.ExternalAuthUpdateDiff(externalAuthSpec(stored), externalAuthSpec(next))
	}
	call := func(string) (updateStarted, error) {
		revision, err := s.callUpdateExternalAuth(r, rd.InternalID, next, u)
		return updateStarted{revision: revision}, err
	}
	return s.startUpdate(w, r, &externalAuths, next.ID, &nrd, doc, patch, call, func(etag string) error {
		next.ProvisioningState = armdoc.StateUpdating
		return s.respondExternalAuth(w, r, http.StatusOK, next, etag)
	})
}

// callUpdateExternalAuth sends the partial update, unconditionally as callUpdateNodePool does,
// and returns the spec_revision at which it took effect.
func (s *Server) callUpdateExternalAuth(r *http.Request, csID string, next *api.ExternalAuth, u *csv1.ExternalAuthUpdate) (int64, error) {
	ctx, cancel := s.csContext(r.Context(), info(r))
	defer cancel()
	req := &csv1.UpdateExternalAuthRequest{Id: csID, Update: u}
	updated, err := s.cfg.ExternalAuths.UpdateExternalAuth(ctx, req)
	if err != nil {
		return 0, fmt.Errorf("update external auth %s in cluster service: %w", next.ID, fieldViolations(info(r).version, req, err))
	}
	return updated.GetSpecRevision(), nil
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
	rd, doc, err := s.readForPatch(r, id, externalAuthNotFound)
	if err != nil {
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
	next.SystemData = requestSystemData(r)
	return s.updateExternalAuth(w, r, cluster, rd, doc, next, true)
}

func (s *Server) getExternalAuth(w http.ResponseWriter, r *http.Request) error {
	id, err := externalAuthID(r)
	if err != nil {
		return err
	}
	rd, doc, done, err := s.readForGet(w, r, id, externalAuthNotFound)
	if err != nil || done {
		return err
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

func (s *Server) deleteExternalAuth(w http.ResponseWriter, r *http.Request) error {
	id, err := externalAuthID(r)
	if err != nil {
		return err
	}
	return s.deleteResource(w, r, &externalAuths, id)
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

// listExternalAuths lists a cluster's external auths (zero or one), paged like every list.
func (s *Server) listExternalAuths(w http.ResponseWriter, r *http.Request) error {
	ver, err := externalAuthVersion(r)
	if err != nil {
		return err
	}
	return s.listChildren(w, r, &externalAuths, externalAuthsPath, func(rd *armdoc.ResourceDocument) (any, error) {
		ea, err := externalAuthFromDoc(rd)
		if err != nil {
			return nil, err
		}
		return ver.RenderExternalAuth(ea), nil
	})
}
