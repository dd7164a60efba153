package server

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	"github.com/openhcp/openhcp/admin/pkg/adminapi"
	"github.com/openhcp/openhcp/admin/pkg/revocation"
	"github.com/openhcp/openhcp/internal/identity"
)

// checkPerson refuses, as a 400 naming field, a person that no SRE certificate can name:
// access.Identify admits exactly the names identity.ValidPerson allows, so every route that
// names a person takes those and no others.
func checkPerson(field, person string) error {
	if err := identity.ValidPerson(person); err != nil {
		return badRequest(field, "%s must be an SRE certificate's common name: %v", field, err)
	}
	return nil
}

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
	if err := checkPerson("person", person); err != nil {
		return err
	}
	if err := decodeReasonOnly(r); err != nil {
		return err
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
	out := personRevocation{Revocation: rev}
	// A revoked SRE's break-glass sessions are revoked too (the gateway checks the revocation
	// list as well), and their clusters' SRE signers rotated: the person first (no new call of
	// theirs is served), then these.
	if s.cfg.Credentials != nil && s.cfg.Sessions != nil {
		bg, err := s.revokeBreakGlassSessions(ctx, adminapi.BreakGlassRevoke{Person: person}, identityFrom(r.Context()).Person)
		if err != nil {
			const msg = "%s is revoked, but revoking their break-glass credentials failed (repeat with POST /admin/v1/breakglass-revoke {\"person\"}): %s"
			if ae := (*apiError)(nil); errors.As(err, &ae) {
				return errorf(ae.status, ae.body.Code, person, msg, person, ae.body.Message)
			}
			return fmt.Errorf(msg, person, err)
		}
		out.BreakGlass = &bg
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

// personRevocation answers a person's revocation: the list entry, and the break-glass
// revocations it started.
type personRevocation struct {
	revocation.Revocation
	BreakGlass *adminapi.BreakGlassRevocations `json:"breakGlass,omitempty"`
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
