package server

import (
	"context"
	"errors"
	"net/http"
	"time"

	"github.com/openhcp/openhcp/admin/pkg/access"
	"github.com/openhcp/openhcp/admin/pkg/adminapi"
	"github.com/openhcp/openhcp/admin/pkg/approval"
	csv1 "github.com/openhcp/openhcp/cluster-service/api/v1"
	"github.com/openhcp/openhcp/cluster-service/pkg/breakglass"
)

// The two-person rule of admin break-glass (docs/sre.md#break-glass): an sre-admin's request for
// a system:masters credential is recorded and waits; a different sre-admin approves it
// (POST /admin/v1/breakglass-approve/{id}), which issues it at Cluster Service under a statement
// naming both; the requester alone collects the kubeconfig (GET
// /admin/v1/breakglass-kubeconfig/{id}).

// requestAdminBreakGlass records the caller's request for an admin credential on cluster. Its
// ID is the credential's ID at Cluster Service once approved.
func (s *Server) requestAdminBreakGlass(r *http.Request, cluster string, perm access.Permission, ttl time.Duration) (adminapi.BreakGlassCredential, error) {
	id := identityFrom(r.Context())
	if !id.May(perm) {
		return adminapi.BreakGlassCredential{}, errorf(http.StatusForbidden, adminapi.CodeForbidden, "access",
			"group %s may not request admin break-glass credentials (needs %s)", id.Group, perm)
	}
	if s.cfg.Approvals == nil {
		return adminapi.BreakGlassCredential{}, errorf(http.StatusServiceUnavailable, "Unavailable", "", "this admin API has no break-glass approval store, so admin credentials cannot be asked for")
	}
	ctx, cancel := context.WithTimeout(r.Context(), s.cfg.Timeout)
	defer cancel()
	cl, _, err := s.findCluster(ctx, cluster)
	if err != nil {
		return adminapi.BreakGlassCredential{}, err
	}
	req, err := s.cfg.Approvals.Add(ctx, approval.Request{ID: newCredentialID(), Person: id.Person, Group: id.Group, ClusterID: cl.GetId(),
		TTLSeconds: int32(ttl / time.Second), Reason: auditReason(r), RequestID: requestIDFrom(r.Context())})
	if err != nil {
		return adminapi.BreakGlassCredential{}, err
	}
	s.cfg.Logger.Info("admin break-glass requested; awaiting a second sre-admin", "requestId", requestIDFrom(r.Context()),
		"credential_id", req.ID, "cluster_id", req.ClusterID, "person", req.Person)
	return requestView(req), nil
}

// requestView is an awaiting request in the admin API's credential form.
func requestView(req approval.Request) adminapi.BreakGlassCredential {
	exp := req.Expires
	return adminapi.BreakGlassCredential{ID: req.ID, ClusterID: req.ClusterID, Person: req.Person, Access: adminapi.AccessAdmin,
		Username: breakglass.SREUserPrefix + req.Person, Group: breakglass.SREGroups[csv1.SREAccess_SRE_ACCESS_ADMIN], State: adminapi.StateAwaitingApproval,
		Message: "A second sre-admin must approve it: POST /admin/v1/breakglass-approve/" + req.ID, TTLSeconds: req.TTLSeconds,
		Reason: req.Reason, CreateTime: req.At, ApproveBefore: &exp}
}

// pendingBreakGlass serves GET /admin/v1/breakglass-pending: the admin requests waiting for an
// approval, oldest first.
func (s *Server) pendingBreakGlass(w http.ResponseWriter, r *http.Request) error {
	if err := knownParams(r); err != nil {
		return err
	}
	out := adminapi.BreakGlassList{Credentials: []adminapi.BreakGlassCredential{}}
	if s.cfg.Approvals != nil {
		reqs, err := s.cfg.Approvals.Pending(r.Context(), s.cfg.Now())
		if err != nil {
			return err
		}
		for _, req := range reqs {
			out.Credentials = append(out.Credentials, requestView(req))
		}
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

// approveBreakGlass serves POST /admin/v1/breakglass-approve/{id} {"reason"}: a second
// sre-admin approves another's admin request, which is then issued at Cluster Service under a
// statement naming the requester and the approver. The answer carries no kubeconfig: it is the
// requester's.
func (s *Server) approveBreakGlass(w http.ResponseWriter, r *http.Request) error {
	if err := knownParams(r); err != nil {
		return err
	}
	if s.cfg.Approvals == nil || s.cfg.Credentials == nil {
		return errorf(http.StatusServiceUnavailable, "Unavailable", "", "this admin API has no break-glass approval store or Cluster Service credentials client")
	}
	reqID := r.PathValue("id")
	if !csIDRE.MatchString(reqID) {
		return badRequest("id", "id must be a break-glass request ID (32 of [0-9a-v]), got %q", reqID)
	}
	approver := identityFrom(r.Context())
	ctx, cancel := context.WithTimeout(r.Context(), s.cfg.Timeout)
	defer cancel()
	req, err := s.cfg.Approvals.Approve(ctx, reqID, approval.Approval{Approver: approver.Person, Group: approver.Group, Reason: auditReason(r),
		RequestID: requestIDFrom(r.Context())}, s.cfg.Now())
	switch {
	case errors.Is(err, approval.ErrNotFound):
		return notFound(reqID, "no break-glass request %s", reqID)
	case errors.Is(err, approval.ErrSelfApproval):
		return errorf(http.StatusForbidden, adminapi.CodeForbidden, "id", "%s cannot approve their own break-glass request %s: a second sre-admin must", approver.Person, reqID)
	case errors.Is(err, approval.ErrAlreadyApproved):
		return errorf(http.StatusConflict, "AlreadyApproved", reqID, "break-glass request %s is already approved", reqID)
	case errors.Is(err, approval.ErrExpired):
		return errorf(http.StatusConflict, "Expired", reqID, "break-glass request %s waited more than %s for an approval; the requester asks again", reqID, approval.Window)
	case err != nil:
		return err
	}
	sre := &csv1.SRECredential{Person: req.Person, Access: csv1.SREAccess_SRE_ACCESS_ADMIN, ValiditySeconds: req.TTLSeconds, Reason: req.Reason,
		Approver: approver.Person}
	statement, err := s.statement(r.Context(), access.Identity{Person: req.Person, Group: req.Group}, req.ID, req.ClusterID, sre)
	if err != nil {
		return err
	}
	cred, err := s.cfg.Credentials.RequestCredential(ctx, &csv1.RequestCredentialRequest{Id: req.ID, ClusterId: req.ClusterID, Sre: sre, SreStatement: statement})
	if err != nil {
		return upstream("request break-glass credential", req.ClusterID, err)
	}
	s.cfg.Logger.Info("admin break-glass approved and requested", "requestId", requestIDFrom(r.Context()), "credential_id", req.ID,
		"cluster_id", req.ClusterID, "person", req.Person, "approver", approver.Person)
	view, issued, err := s.waitIssued(ctx, cred, nil)
	if err != nil {
		return err
	}
	code := http.StatusOK
	if !issued {
		code = http.StatusAccepted
	}
	writeJSON(w, code, view)
	return nil
}

// collectBreakGlass serves GET /admin/v1/breakglass-kubeconfig/{id}: the requester's approved
// admin credential with its kubeconfig. Anyone else's request is 404, as an unknown one.
func (s *Server) collectBreakGlass(w http.ResponseWriter, r *http.Request) error {
	if err := knownParams(r); err != nil {
		return err
	}
	if s.cfg.Approvals == nil || s.cfg.Credentials == nil {
		return errorf(http.StatusServiceUnavailable, "Unavailable", "", "this admin API has no break-glass approval store or Cluster Service credentials client")
	}
	reqID := r.PathValue("id")
	ctx, cancel := context.WithTimeout(r.Context(), s.cfg.Timeout)
	defer cancel()
	req, err := s.cfg.Approvals.Get(ctx, reqID)
	if errors.Is(err, approval.ErrNotFound) || (err == nil && req.Person != identityFrom(r.Context()).Person) {
		return notFound(reqID, "no break-glass request %s of yours", reqID)
	}
	if err != nil {
		return err
	}
	if req.Approval == nil {
		writeJSON(w, http.StatusAccepted, requestView(req))
		return nil
	}
	sre := &csv1.SRECredential{Person: req.Person, Access: csv1.SREAccess_SRE_ACCESS_ADMIN, ValiditySeconds: req.TTLSeconds, Reason: req.Reason,
		Approver: req.Approval.Approver}
	statement, err := s.statement(r.Context(), access.Identity{Person: req.Person, Group: req.Group}, req.ID, req.ClusterID, sre)
	if err != nil {
		return err
	}
	cred, err := s.cfg.Credentials.GetCredential(ctx, &csv1.GetCredentialRequest{Id: req.ID, IncludeKubeconfig: true, SreStatement: statement})
	if err != nil {
		return upstream("get break-glass credential", req.ID, err)
	}
	code := http.StatusOK
	if cred.GetKubeconfig() == "" {
		code = http.StatusAccepted
	}
	writeJSON(w, code, breakGlassView(cred))
	return nil
}
