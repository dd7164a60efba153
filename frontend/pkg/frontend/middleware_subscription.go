package frontend

import (
	"errors"
	"net/http"

	"github.com/openhcp/openhcp/internal/armdoc"
	"github.com/openhcp/openhcp/internal/docstore"
)

// allowedInState is the subscription lifecycle's rule: Registered allows everything; Warned and
// Suspended allow GET and DELETE; Unregistered, Deleted and unknown subscriptions allow GET only.
func allowedInState(state armdoc.SubscriptionState, method string) bool {
	switch state {
	case armdoc.SubscriptionRegistered:
		return true
	case armdoc.SubscriptionWarned, armdoc.SubscriptionSuspended:
		return method == http.MethodGet || method == http.MethodDelete
	default:
		return method == http.MethodGet
	}
}

// middlewareSubscriptionState enforces allowedInState; what it refuses is 409
// InvalidSubscriptionState. Every state allows a GET, and no GET uses the registration (a create
// takes the tenant from it), so a GET does not read it: that read was 14 % of the frontend's CPU
// for a GET of a cluster (docs/performance.md, "P1 with the management clusters paused").
func (s *Server) middlewareSubscriptionState(w http.ResponseWriter, r *http.Request, next http.HandlerFunc) {
	if r.Method == http.MethodGet {
		next(w, r)
		return
	}
	subID := r.PathValue("subscriptionId")
	sub, _, err := s.getSubscriptionDoc(r.Context(), subID)
	if err != nil && !errors.Is(err, docstore.ErrNotFound) {
		s.report(w, r, err)
		return
	}
	state := armdoc.SubscriptionUnregistered
	if sub != nil {
		state = sub.State
		info(r).subscription = sub
	}
	if !allowedInState(state, r.Method) {
		s.report(w, r, cloudError(http.StatusConflict, "InvalidSubscriptionState", "",
			"Request is not allowed in subscription '%s' in state '%s'.", subID, state))
		return
	}
	next(w, r)
}
