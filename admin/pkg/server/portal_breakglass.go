package server

import (
	"errors"
	"fmt"
	"net/http"

	"github.com/openhcp/openhcp/admin/pkg/adminapi"
	csv1 "github.com/openhcp/openhcp/cluster-service/api/v1"
)

// The portal's break-glass page: the active SRE credentials, a request form and a revoke form
// per credential, over the same code as the JSON routes (breakglass.go).

type breakGlassPage struct {
	page
	Credentials []adminapi.BreakGlassCredential
	TTL         adminapi.BreakGlassTTL
	Access      []string
	// Issued is the credential a request just issued, with its kubeconfig (shown once).
	Issued *adminapi.BreakGlassCredential
}

func (s *Server) renderBreakGlass(w http.ResponseWriter, r *http.Request, status int, msg, errMsg string, issued *adminapi.BreakGlassCredential) error {
	p := breakGlassPage{page: page{Title: "Break-glass credentials", Who: identityFrom(r.Context()), Message: msg, Error: errMsg},
		TTL: s.cfg.BreakGlassTTL.API(), Access: []string{adminapi.AccessReadOnly, adminapi.AccessAdmin}, Issued: issued}
	// The list is read without the request's query (a form post has none the list takes).
	lr := r.Clone(r.Context())
	lr.URL.RawQuery = ""
	if r.Method == http.MethodGet {
		lr.URL.RawQuery = r.URL.RawQuery
	}
	list, err := s.breakGlassCredentials(lr)
	var ae *apiError
	switch {
	case errors.As(err, &ae) && r.Method == http.MethodGet:
		return err
	case err != nil && p.Error == "":
		p.Error = err.Error()
	}
	p.Credentials = list.Credentials
	return s.render(w, status, "breakglass.html", &p)
}

// portalBreakGlass serves GET /portal/breakglass (filters as GET /admin/v1/breakglass).
func (s *Server) portalBreakGlass(w http.ResponseWriter, r *http.Request) error {
	return s.renderBreakGlass(w, r, http.StatusOK, "", "", nil)
}

// portalRequestBreakGlass serves the request form: fields cluster, access, ttl, reason.
func (s *Server) portalRequestBreakGlass(w http.ResponseWriter, r *http.Request) error {
	if s.cfg.Credentials == nil {
		return errorf(http.StatusServiceUnavailable, "Unavailable", "", "this admin API has no Cluster Service credentials client")
	}
	f := r.PostForm
	acc, perm, ttl, err := breakGlassFields(adminapi.BreakGlassRequest{Access: f.Get("access"), TTL: f.Get("ttl")}, s.cfg.BreakGlassTTL)
	var cred adminapi.BreakGlassCredential
	issued := false
	if err == nil && acc == csv1.SREAccess_SRE_ACCESS_ADMIN {
		// Admin access waits for a second sre-admin's approval, as through the API.
		req, err := s.requestAdminBreakGlass(r, f.Get("cluster"), perm, ttl)
		var ae *apiError
		if errors.As(err, &ae) {
			return s.renderBreakGlass(w, r, ae.status, "", ae.body.Message, nil)
		}
		if err != nil {
			return err
		}
		return s.renderBreakGlass(w, r, http.StatusAccepted, fmt.Sprintf("Request %s for admin access to cluster %s awaits a second sre-admin's approval (hcpctl breakglass approve %s); then collect it with hcpctl breakglass kubeconfig %s.",
			req.ID, req.ClusterID, req.ID, req.ID), "", nil)
	}
	if err == nil {
		cred, issued, err = s.issueBreakGlass(r, f.Get("cluster"), acc, perm, ttl)
	}
	var ae *apiError
	if errors.As(err, &ae) {
		return s.renderBreakGlass(w, r, ae.status, "", ae.body.Message, nil)
	}
	if err != nil {
		return err
	}
	if !issued {
		return s.renderBreakGlass(w, r, http.StatusAccepted, fmt.Sprintf("Credential %s is %s: the management cluster has not signed it yet. Ask again if it fails.", cred.ID, cred.State), "", nil)
	}
	return s.renderBreakGlass(w, r, http.StatusCreated, fmt.Sprintf("Credential %s issued on cluster %s. Save the kubeconfig below now: it is shown once.", cred.ID, cred.ClusterID), "", &cred)
}

// portalRevokeBreakGlass serves a credential's revoke form: fields credential, reason.
func (s *Server) portalRevokeBreakGlass(w http.ResponseWriter, r *http.Request) error {
	if s.cfg.Credentials == nil {
		return errorf(http.StatusServiceUnavailable, "Unavailable", "", "this admin API has no Cluster Service credentials client")
	}
	id := r.PostForm.Get("credential")
	var out adminapi.BreakGlassRevocations
	err := error(badRequest("credential", "credential must be a credential ID (32 of [0-9a-v]), got %q", id))
	if csIDRE.MatchString(id) {
		out, err = s.revokeBreakGlassCredentials(r.Context(), adminapi.BreakGlassRevoke{Credential: id})
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
		msg = fmt.Sprintf("Revocation %s of cluster %s is %s: every SRE break-glass credential of the cluster stops working (the customer's have their own signer and keep working).", v.RevocationID, v.ClusterID, v.State)
	}
	return s.renderBreakGlass(w, r, http.StatusOK, msg, "", nil)
}
