package server

import (
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/openhcp/openhcp/admin/pkg/adminapi"
	csv1 "github.com/openhcp/openhcp/cluster-service/api/v1"
)

// The portal's break-glass page: the live sessions, a form to open one and a revoke form per
// session, over the same code as the JSON routes (breakglass.go). No page ever shows a
// cluster credential: sessions are used through the gateway.

type breakGlassPage struct {
	page
	Sessions []adminapi.BreakGlassSession
	TTL      adminapi.BreakGlassTTL
	Access   []string
	// Opened is the session a form just opened.
	Opened *adminapi.BreakGlassSession
}

func (s *Server) renderBreakGlass(w http.ResponseWriter, r *http.Request, status int, msg, errMsg string, opened *adminapi.BreakGlassSession) error {
	p := breakGlassPage{page: page{Title: "Break-glass sessions", Who: identityFrom(r.Context()), Message: msg, Error: errMsg},
		TTL: s.cfg.BreakGlassTTL.API(), Access: []string{adminapi.AccessReadOnly, adminapi.AccessAdmin}, Opened: opened}
	// The list is read without the request's query (a form post has none the list takes).
	lr := r.Clone(r.Context())
	lr.URL.RawQuery = ""
	if r.Method == http.MethodGet {
		lr.URL.RawQuery = r.URL.RawQuery
	}
	list, err := s.breakGlassSessions(lr)
	var ae *apiError
	switch {
	case errors.As(err, &ae) && r.Method == http.MethodGet:
		return err
	case err != nil && p.Error == "":
		p.Error = err.Error()
	}
	p.Sessions = list.Sessions
	return s.render(w, status, "breakglass.html", &p)
}

// portalBreakGlass serves GET /portal/breakglass (filters as GET /admin/v1/breakglass).
func (s *Server) portalBreakGlass(w http.ResponseWriter, r *http.Request) error {
	return s.renderBreakGlass(w, r, http.StatusOK, "", "", nil)
}

// portalRequestBreakGlass serves the open form: fields cluster, access, ttl, reason.
func (s *Server) portalRequestBreakGlass(w http.ResponseWriter, r *http.Request) error {
	if s.cfg.Credentials == nil || s.cfg.Sessions == nil {
		return errorf(http.StatusServiceUnavailable, "Unavailable", "", "this admin API has no Cluster Service credentials client or session store")
	}
	f := r.PostForm
	acc, perm, ttl, err := breakGlassFields(adminapi.BreakGlassRequest{Access: f.Get("access"), TTL: f.Get("ttl")}, s.cfg.BreakGlassTTL)
	var sess adminapi.BreakGlassSession
	code, msg := http.StatusCreated, ""
	if err == nil && acc == csv1.SREAccess_SRE_ACCESS_ADMIN {
		// Admin access waits for a second sre-admin's approval, as through the API.
		sess, err = s.requestAdminBreakGlass(r, f.Get("cluster"), perm, ttl)
		code = http.StatusAccepted
		msg = fmt.Sprintf("Admin session %s on cluster %s awaits a second sre-admin's approval (hcpctl breakglass approve %s); the gateway refuses it until then.",
			sess.ID, sess.ClusterID, sess.ID)
	} else if err == nil {
		sess, err = s.openReadOnlySession(r, f.Get("cluster"), acc, perm, ttl)
		msg = fmt.Sprintf("Session %s on cluster %s is active until %s.", sess.ID, sess.ClusterID, fmtTime(sess.ExpirationTime))
	}
	var ae *apiError
	if errors.As(err, &ae) {
		return s.renderBreakGlass(w, r, ae.status, "", ae.body.Message, nil)
	}
	if err != nil {
		return err
	}
	return s.renderBreakGlass(w, r, code, msg, "", &sess)
}

// portalRevokeBreakGlass serves a session's revoke form: fields session, reason.
func (s *Server) portalRevokeBreakGlass(w http.ResponseWriter, r *http.Request) error {
	if s.cfg.Credentials == nil || s.cfg.Sessions == nil {
		return errorf(http.StatusServiceUnavailable, "Unavailable", "", "this admin API has no Cluster Service credentials client or session store")
	}
	id := r.PostForm.Get("session")
	var out adminapi.BreakGlassRevocations
	err := error(badRequest("session", "session must be a session ID (32 of [0-9a-v]), got %q", id))
	if csIDRE.MatchString(id) {
		out, err = s.revokeBreakGlassSessions(r.Context(), adminapi.BreakGlassRevoke{Session: id}, identityFrom(r.Context()).Person)
	}
	var ae *apiError
	if errors.As(err, &ae) {
		return s.renderBreakGlass(w, r, ae.status, "", ae.body.Message, nil)
	}
	if err != nil {
		return err
	}
	msg := "Nothing to revoke."
	if len(out.Revocations) > 0 {
		v := out.Revocations[0]
		msg = fmt.Sprintf("Session %s is revoked; the gateway cuts its streams within seconds.", id)
		if v.RevocationID != "" {
			msg += fmt.Sprintf(" Revocation %s of cluster %s is %s: every SRE break-glass credential of the cluster stops working (the customer's have their own signer and keep working).", v.RevocationID, v.ClusterID, v.State)
		}
	}
	return s.renderBreakGlass(w, r, http.StatusOK, msg, "", nil)
}

// fmtTime is a time as the portal shows it, "-" when unknown.
func fmtTime(t *time.Time) string {
	if t == nil {
		return "-"
	}
	return t.UTC().Format(time.RFC3339)
}
