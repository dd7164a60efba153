package frontend

import (
	"errors"
	"net/http"

	"github.com/openhcp/openhcp/internal/arm"
	"github.com/openhcp/openhcp/internal/armdoc"
	"github.com/openhcp/openhcp/internal/docstore"
)

// subscriptionStateError is the subscription lifecycle's table, as ARO HCP's frontend answers
// it (docs/api.md, "Subscription states"): Registered allows everything; Warned and Suspended
// allow GET and DELETE and answer anything else 409; Unregistered, Deleted and unknown
// subscriptions (sub == nil) allow nothing and answer 400. All refusals are
// InvalidSubscriptionState. A state this code does not know is a 500: refusing is the safe side
// of a registration written by a newer version.
func subscriptionStateError(subID string, sub *armdoc.SubscriptionDocument, method string) error {
	if sub == nil {
		return cloudError(http.StatusBadRequest, arm.CodeInvalidSubscriptionState, "",
			"Request is not allowed in unregistered subscription '%s'.", subID)
	}
	switch sub.State {
	case armdoc.SubscriptionRegistered:
		return nil
	case armdoc.SubscriptionWarned, armdoc.SubscriptionSuspended:
		if method == http.MethodGet || method == http.MethodDelete {
			return nil
		}
		return cloudError(http.StatusConflict, arm.CodeInvalidSubscriptionState, "",
			"Request is not allowed in subscription '%s' in state '%s'.", subID, sub.State)
	case armdoc.SubscriptionUnregistered:
		return cloudError(http.StatusBadRequest, arm.CodeInvalidSubscriptionState, "",
			"Request is not allowed in unregistered subscription '%s'.", subID)
	case armdoc.SubscriptionDeleted:
		return cloudError(http.StatusBadRequest, arm.CodeInvalidSubscriptionState, "",
			"Request is not allowed in subscription '%s' in state '%s'.", subID, sub.State)
	default:
		return errUnknownSubscriptionState{subID: subID, state: sub.State}
	}
}

// errUnknownSubscriptionState is reported as a 500 whose detail goes to the log only.
type errUnknownSubscriptionState struct {
	subID string
	state armdoc.SubscriptionState
}

func (e errUnknownSubscriptionState) Error() string {
	return "subscription " + e.subID + " is in state " + string(e.state) + ", which this frontend does not know"
}

// middlewareSubscriptionState enforces subscriptionStateError on every route under a
// subscription except the subscription's own (ARM's lifecycle calls). It also checks the format
// of x-ms-home-tenant-id (checkHomeTenant). A write reads the registration from the store; a GET
// may use what this process read at most subscriptionCacheTTL ago (subscription_cache.go), because
// that read is a large share of a GET's CPU (docs/performance.md).
func (s *Server) middlewareSubscriptionState(w http.ResponseWriter, r *http.Request, next http.HandlerFunc) {
	subID := r.PathValue("subscriptionId")
	sub, err := s.subscriptionFor(r, subID)
	if err != nil {
		s.report(w, r, err)
		return
	}
	if err := subscriptionStateError(subID, sub, r.Method); err != nil {
		s.report(w, r, err)
		return
	}
	if err := checkHomeTenant(r, sub); err != nil {
		s.report(w, r, err)
		return
	}
	info(r).subscription = sub
	next(w, r)
}

// subscriptionFor returns the subscription's registration, nil if there is none.
func (s *Server) subscriptionFor(r *http.Request, subID string) (*armdoc.SubscriptionDocument, error) {
	key := partitionKey(subID)
	if r.Method == http.MethodGet {
		if sub, ok := s.subscriptions.get(key); ok {
			return sub, nil
		}
	}
	sub, _, err := s.getSubscriptionDoc(r.Context(), subID)
	if errors.Is(err, docstore.ErrNotFound) {
		sub, err = nil, nil
	}
	if err != nil {
		return nil, err
	}
	s.subscriptions.put(key, sub)
	return sub, nil
}
