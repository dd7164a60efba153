package frontend

import (
	"errors"
	"net/http"

	"github.com/openhcp/openhcp/internal/armdoc"
	"github.com/openhcp/openhcp/internal/docstore"
)

// middlewareSubscriptionState enforces the subscription lifecycle: Registered allows
// everything; Warned and Suspended allow GET and DELETE; Unregistered, Deleted and unknown
// subscriptions allow GET only. Anything else is 409 InvalidSubscriptionState.
func (s *Server) middlewareSubscriptionState(w http.ResponseWriter, r *http.Request, next http.HandlerFunc) {
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
	allowed := false
	switch state {
	case armdoc.SubscriptionRegistered:
		allowed = true
	case armdoc.SubscriptionWarned, armdoc.SubscriptionSuspended:
		allowed = r.Method == http.MethodGet || r.Method == http.MethodDelete
	default:
		allowed = r.Method == http.MethodGet
	}
	if !allowed {
		s.report(w, r, cloudError(http.StatusConflict, "InvalidSubscriptionState", "",
			"Request is not allowed in subscription '%s' in state '%s'.", subID, state))
		return
	}
	next(w, r)
}
