package server

import (
	"context"
	"fmt"
	"net/http"
	"strings"

	"github.com/openhcp/openhcp/admin/pkg/adminapi"
)

// writeRefusal answers a refused or failed call: the API's JSON error body, or, for a portal
// page, the same error as a page a person in a browser can read (status code unchanged, so
// the refusal is what it is for any client).
func (s *Server) writeRefusal(ctx context.Context, w http.ResponseWriter, r *http.Request, status int, body adminapi.Error) {
	if !strings.HasPrefix(r.URL.Path, "/portal/") {
		writeJSON(w, status, body)
		return
	}
	hint := map[int]string{
		http.StatusUnauthorized: "The portal admits SREs only: your browser (or hcpctl portal) must present an SRE client certificate of this region (docs/sre.md, Identities and groups).",
		http.StatusForbidden:    "Your group may not do this. Ask an SRE whose group has the permission, or request that group's certificate (docs/sre.md).",
	}[status]
	if strings.HasPrefix(body.Message, forgedPrefix) {
		// Not the group's permission: the request did not come from the portal's own page.
		hint = "The portal takes a change only from a form of its own page, posted by the browser that loaded it: reload the page and submit the form again (docs/sre.md)."
	}
	err := s.render(w, status, "error.html", &struct {
		page
		Status       int
		Code, Target string
		Hint         string
	}{page{Title: http.StatusText(status), Who: identityFrom(ctx), Error: body.Message}, status, body.Code, body.Target, hint})
	if err != nil {
		// The template is embedded and fixed; failing to render it is a bug, answered as JSON.
		s.cfg.Logger.Error("render the portal's error page", "error", err)
		writeJSON(w, status, adminapi.Error{Code: body.Code, Message: fmt.Sprintf("%s (and the error page failed: %v)", body.Message, err), Target: body.Target})
	}
}
