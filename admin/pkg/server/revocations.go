package server

import (
	"context"
	"net/http"
	"regexp"

	"github.com/openhcp/openhcp/admin/pkg/revocation"
)

// personRE is what an SRE certificate's common name may be, for the revocation route.
var personRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._@-]{0,127}$`)

// revoke serves POST /admin/v1/revocations/{person} {"reason"}: every certificate of person
// issued before now is refused from the next call on.
func (s *Server) revoke(w http.ResponseWriter, r *http.Request) error {
	if err := knownParams(r); err != nil {
		return err
	}
	if s.cfg.Revocations == nil {
		return errorf(http.StatusServiceUnavailable, "Unavailable", "", "this admin API has no revocation list")
	}
	person := r.PathValue("person")
	if !personRE.MatchString(person) {
		return badRequest("person", "person must be an SRE certificate's common name, got %q", person)
	}
	var by string
	if id := identityFrom(r.Context()); id.Person != "" {
		by = id.Person + " (" + id.Group + ")"
	}
	ctx, cancel := context.WithTimeout(r.Context(), s.cfg.Timeout)
	defer cancel()
	rev, err := s.cfg.Revocations.Revoke(ctx, person, by, auditReason(r))
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, rev)
	return nil
}

// listRevocations serves GET /admin/v1/revocations.
func (s *Server) listRevocations(w http.ResponseWriter, r *http.Request) error {
	if err := knownParams(r); err != nil {
		return err
	}
	out := []revocation.Revocation{}
	if s.cfg.Revocations != nil {
		all, err := s.cfg.Revocations.All(r.Context())
		if err != nil {
			return err
		}
		out = append(out, all...)
	}
	writeJSON(w, http.StatusOK, map[string]any{"revocations": out})
	return nil
}
