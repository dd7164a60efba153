package server

import (
	"context"
	"errors"
	"net/http"
	"time"

	"github.com/openhcp/openhcp/admin/pkg/access"
	"github.com/openhcp/openhcp/admin/pkg/adminapi"
	"github.com/openhcp/openhcp/admin/pkg/approval"
	"github.com/openhcp/openhcp/admin/pkg/session"
	csv1 "github.com/openhcp/openhcp/cluster-service/api/v1"
	"github.com/openhcp/openhcp/internal/logattr"
)

// The two-person rule of admin break-glass (docs/sre.md#break-glass): an sre-admin's admin
// session is recorded and awaits; a different sre-admin approves it (POST
// /admin/v1/breakglass-approve/{id}), which issues its credential at Cluster Service under a
// statement naming both and activates the session. The credential stays with the session:
// neither SRE ever receives it.

// requestAdminBreakGlass opens the caller's admin session on cluster, awaiting an approval.
// Its ID is also the approval request's and, once approved, the credential's at Cluster Service.
func (s *Server) requestAdminBreakGlass(r *http.Request, cluster string, perm access.Permission, ttl time.Duration) (adminapi.BreakGlassSession, error) {
	id := identityFrom(r.Context())
	if !id.May(perm) {
		return adminapi.BreakGlassSession{}, errorf(http.StatusForbidden, adminapi.CodeForbidden, "access",
			"group %s may not open admin break-glass sessions (needs %s)", id.Group, perm)
	}
	if s.cfg.Approvals == nil || s.cfg.Sessions == nil {
		return adminapi.BreakGlassSession{}, errorf(http.StatusServiceUnavailable, "Unavailable", "", "this admin API has no break-glass approval or session store, so admin sessions cannot be opened")
	}
	ctx, cancel := context.WithTimeout(r.Context(), s.cfg.Timeout)
	defer cancel()
	cl, _, err := s.findCluster(ctx, cluster)
	if err != nil {
		return adminapi.BreakGlassSession{}, err
	}
	req, err := s.cfg.Approvals.Add(ctx, approval.Request{ID: newCredentialID(), Person: id.Person, Group: id.Group, ClusterID: cl.GetId(),
		TTLSeconds: int32(ttl / time.Second), Reason: auditReason(r), RequestID: requestIDFrom(r.Context())})
	if err != nil {
		return adminapi.BreakGlassSession{}, err
	}
	// The session can be approved as long as its request can; the approval restarts its clock.
	sess, err := s.cfg.Sessions.Open(ctx, session.Session{ID: req.ID, ClusterID: req.ClusterID, Person: req.Person, Group: req.Group,
		Access: session.AccessAdmin, Reason: req.Reason, TTLSeconds: req.TTLSeconds, Expires: req.Expires}, nil)
	if err != nil {
		return adminapi.BreakGlassSession{}, err
	}
	s.cfg.Logger.Info("admin break-glass session opened; awaiting a second sre-admin", "requestID", requestIDFrom(r.Context()),
		logattr.KeySessionID, sess.ID, "clusterID", sess.ClusterID, "person", sess.Person)
	return s.sessionView(sess, ""), nil
}

// pendingBreakGlass serves GET /admin/v1/breakglass-pending: the admin sessions waiting for an
// approval, oldest first.
func (s *Server) pendingBreakGlass(w http.ResponseWriter, r *http.Request) error {
	if err := knownParams(r); err != nil {
		return err
	}
	out := adminapi.BreakGlassSessions{Sessions: []adminapi.BreakGlassSession{}}
	if s.cfg.Approvals != nil && s.cfg.Sessions != nil {
		reqs, err := s.cfg.Approvals.Pending(r.Context(), s.cfg.Now())
		if err != nil {
			return err
		}
		// The sessions first, then their clusters checked together (once per cluster, within
		// one call timeout, as every other read), then read again only if that ended some.
		read := func() ([]session.Session, error) {
			var list []session.Session
			for _, req := range reqs {
				sess, err := s.cfg.Sessions.Get(r.Context(), req.ID)
				if errors.Is(err, session.ErrNotFound) {
					continue // a request of before sessions: nothing to approve into
				}
				if err != nil {
					return nil, err
				}
				list = append(list, sess)
			}
			return list, nil
		}
		list, err := read()
		if err == nil && s.endSessionsOfDeletedClusters(r.Context(), list...) {
			list, err = read()
		}
		if err != nil {
			return err
		}
		for _, sess := range list {
			if sess.StateAt(s.cfg.Now()) == session.AwaitingApproval {
				out.Sessions = append(out.Sessions, s.sessionView(sess, ""))
			}
		}
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

// approveBreakGlass serves POST /admin/v1/breakglass-approve/{id} {"reason"}: a second
// sre-admin approves another's admin session. Its credential is then issued at Cluster Service
// under a statement naming the requester and the approver, and the session becomes active
// (200); if the management cluster has not signed it within the call, 202, and the session
// becomes active when it is read next (GET /admin/v1/breakglass-sessions/{id}).
func (s *Server) approveBreakGlass(w http.ResponseWriter, r *http.Request) error {
	if err := knownParams(r); err != nil {
		return err
	}
	if s.cfg.Approvals == nil || s.cfg.Credentials == nil || s.cfg.Sessions == nil {
		return errorf(http.StatusServiceUnavailable, "Unavailable", "", "this admin API has no break-glass approval or session store or Cluster Service credentials client")
	}
	reqID := r.PathValue("id")
	if !csIDRE.MatchString(reqID) {
		return badRequest("id", "id must be a break-glass session ID (32 of [0-9a-v]), got %q", reqID)
	}
	if err := decodeReasonOnly(r); err != nil {
		return err
	}
	approver := identityFrom(r.Context())
	ctx, cancel := context.WithTimeout(r.Context(), s.cfg.Timeout)
	defer cancel()
	sess, err := s.getSession(ctx, reqID)
	switch {
	case errors.Is(err, session.ErrNotFound):
		return notFound(reqID, "no break-glass session %s", reqID)
	case err != nil:
		return err
	case sess.StateAt(s.cfg.Now()) != session.AwaitingApproval:
		return errorf(http.StatusConflict, "NotAwaitingApproval", reqID, "break-glass session %s is %s, not awaiting an approval", reqID, sess.StateAt(s.cfg.Now()))
	}
	req, err := s.cfg.Approvals.Approve(ctx, reqID, approval.Approval{Approver: approver.Person, Group: approver.Group, Reason: auditReason(r),
		RequestID: requestIDFrom(r.Context())}, s.cfg.Now())
	switch {
	case errors.Is(err, approval.ErrNotFound):
		return notFound(reqID, "no break-glass session %s", reqID)
	case errors.Is(err, approval.ErrSelfApproval):
		return errorf(http.StatusForbidden, adminapi.CodeForbidden, "id", "%s cannot approve their own break-glass session %s: a second sre-admin must", approver.Person, reqID)
	case errors.Is(err, approval.ErrAlreadyApproved):
		return errorf(http.StatusConflict, "AlreadyApproved", reqID, "break-glass session %s is already approved", reqID)
	case errors.Is(err, approval.ErrExpired):
		return errorf(http.StatusConflict, "Expired", reqID, "break-glass session %s waited more than %s for an approval; the requester opens a new one", reqID, approval.Window)
	case err != nil:
		return err
	}
	sre := adminSRECredential(req)
	statement := func() (*csv1.SignedSREStatement, error) {
		return s.statement(r.Context(), access.Identity{Person: req.Person, Group: req.Group}, req.ID, req.ClusterID, sre)
	}
	signed, err := statement()
	if err != nil {
		return err
	}
	cred, err := s.cfg.Credentials.RequestCredential(ctx, &csv1.RequestCredentialRequest{Id: req.ID, ClusterId: req.ClusterID, Sre: sre, SreStatement: signed})
	if err != nil {
		return upstream("request break-glass credential", req.ClusterID, err)
	}
	s.cfg.Logger.Info("admin break-glass session approved; credential requested", "requestID", requestIDFrom(r.Context()), logattr.KeySessionID, req.ID,
		"clusterID", req.ClusterID, "person", req.Person, "approver", approver.Person)
	cred, err = s.waitKubeconfig(ctx, cred, statement)
	var ae *apiError
	if errors.As(err, &ae) && ae.status == http.StatusGatewayTimeout {
		writeJSON(w, http.StatusAccepted, s.sessionView(sess, approver.Person))
		return nil
	}
	if err != nil {
		return err
	}
	sess, err = s.cfg.Sessions.Activate(ctx, req.ID, []byte(cred.GetKubeconfig()), cred.GetStatus().GetExpirationTime().AsTime())
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, s.sessionView(sess, approver.Person))
	return nil
}

// adminSRECredential is what an approved admin session's credential says to Cluster Service.
func adminSRECredential(req approval.Request) *csv1.SRECredential {
	return &csv1.SRECredential{Person: req.Person, Access: csv1.SREAccess_SRE_ACCESS_ADMIN, ValiditySeconds: req.TTLSeconds, Reason: req.Reason,
		Approver: req.Approval.Approver}
}

// getBreakGlass serves GET /admin/v1/breakglass-sessions/{id}: one session. An approved admin
// session whose credential was not signed during its approval is activated here once it is.
func (s *Server) getBreakGlass(w http.ResponseWriter, r *http.Request) error {
	if err := knownParams(r); err != nil {
		return err
	}
	if s.cfg.Sessions == nil {
		return errorf(http.StatusServiceUnavailable, "Unavailable", "", "this admin API has no break-glass session store")
	}
	id := r.PathValue("id")
	ctx, cancel := context.WithTimeout(r.Context(), s.cfg.Timeout)
	defer cancel()
	sess, err := s.getSession(ctx, id)
	if errors.Is(err, session.ErrNotFound) {
		return notFound(id, "no break-glass session %s", id)
	}
	if err != nil {
		return err
	}
	approver := ""
	if sess.Access == session.AccessAdmin && s.cfg.Approvals != nil {
		req, err := s.cfg.Approvals.Get(ctx, id)
		if err != nil && !errors.Is(err, approval.ErrNotFound) {
			return err
		}
		if req.Approval != nil {
			approver = req.Approval.Approver
			if sess.StateAt(s.cfg.Now()) == session.AwaitingApproval && s.cfg.Credentials != nil {
				sess, err = s.settle(ctx, r, sess, req)
				if err != nil {
					return err
				}
			}
		}
	}
	writeJSON(w, http.StatusOK, s.sessionView(sess, approver))
	return nil
}

// settle activates an approved admin session whose credential has been signed since.
func (s *Server) settle(ctx context.Context, r *http.Request, sess session.Session, req approval.Request) (session.Session, error) {
	signed, err := s.statement(r.Context(), access.Identity{Person: req.Person, Group: req.Group}, req.ID, req.ClusterID, adminSRECredential(req))
	if err != nil {
		return sess, err
	}
	cred, err := s.cfg.Credentials.GetCredential(ctx, &csv1.GetCredentialRequest{Id: req.ID, IncludeKubeconfig: true, SreStatement: signed})
	if err != nil {
		return sess, upstream("get break-glass credential", req.ID, err)
	}
	if cred.GetStatus().GetState() != csv1.CredentialState_CREDENTIAL_STATE_ISSUED || cred.GetKubeconfig() == "" {
		return sess, nil
	}
	return s.cfg.Sessions.Activate(ctx, sess.ID, []byte(cred.GetKubeconfig()), cred.GetStatus().GetExpirationTime().AsTime())
}
