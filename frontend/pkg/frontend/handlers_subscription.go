package frontend

import (
	"encoding/json"
	"errors"
	"net/http"
	"strings"

	"github.com/openhcp/openhcp/frontend/pkg/api"
	"github.com/openhcp/openhcp/internal/arm"
	"github.com/openhcp/openhcp/internal/armdoc"
	"github.com/openhcp/openhcp/internal/docstore"
)

// subscriptionBody is what ARM PUTs to /subscriptions/{id}?api-version=2.0.
type subscriptionBody struct {
	State            armdoc.SubscriptionState `json:"state"`
	RegistrationDate string                   `json:"registrationDate,omitempty"`
	Properties       json.RawMessage          `json:"properties,omitempty"`
}

type subscriptionResponse struct {
	ID string `json:"id"`
	subscriptionBody
}

func validSubscriptionState(s armdoc.SubscriptionState) bool {
	switch s {
	case armdoc.SubscriptionRegistered, armdoc.SubscriptionWarned, armdoc.SubscriptionSuspended,
		armdoc.SubscriptionUnregistered, armdoc.SubscriptionDeleted:
		return true
	}
	return false
}

// putSubscription records ARM's subscription lifecycle notification. Deleted cascades: every
// cluster of the subscription is deleted.
func (s *Server) putSubscription(w http.ResponseWriter, r *http.Request) error {
	subID := r.PathValue("subscriptionId")
	var body subscriptionBody
	if err := api.DecodeStrict(info(r).body, &body); err != nil {
		return err
	}
	if !validSubscriptionState(body.State) {
		return cloudError(http.StatusBadRequest, arm.CodeInvalidRequestContent, "state",
			"Invalid value '%s' for field 'state' (must be one of: Registered, Warned, Suspended, Unregistered, Deleted).", body.State)
	}
	sub := &armdoc.SubscriptionDocument{ID: subID, State: body.State, RegistrationDate: body.RegistrationDate, Properties: body.Properties}
	ctx := r.Context()
	// This process's GETs read the new state at once; other replicas within subscriptionCacheTTL.
	defer s.subscriptions.forget(partitionKey(subID))
	// Create, or replace what is there; one retry covers a concurrent notification.
	var err error
	for attempt := 0; attempt < 2; attempt++ {
		var cur *docstore.Document
		_, cur, err = s.getSubscriptionDoc(ctx, subID)
		switch {
		case errors.Is(err, docstore.ErrNotFound):
			var d *docstore.Document
			if d, err = newDoc(partitionKey(subID), subscriptionDocID(subID), docstore.TypeSubscription, subscriptionDocID(subID), sub, 0); err != nil {
				return err
			}
			_, err = s.store.Create(ctx, d)
		case err == nil:
			var d *docstore.Document
			if d, err = withBody(cur, sub); err != nil {
				return err
			}
			_, err = s.store.Replace(ctx, d, cur.ETag)
		}
		if !errors.Is(err, docstore.ErrAlreadyExists) && !errors.Is(err, docstore.ErrPreconditionFailed) {
			break
		}
	}
	if err != nil {
		return err
	}
	info(r).logger().Info("subscription state recorded", "subscriptionID", subID, "state", body.State)
	if body.State == armdoc.SubscriptionDeleted {
		s.deleteSubscriptionClusters(r, subID)
	}
	return writeSubscription(w, subID, sub)
}

func (s *Server) getSubscription(w http.ResponseWriter, r *http.Request) error {
	subID := r.PathValue("subscriptionId")
	sub, _, err := s.getSubscriptionDoc(r.Context(), subID)
	if errors.Is(err, docstore.ErrNotFound) {
		return cloudError(http.StatusNotFound, arm.CodeSubscriptionNotFound, "", "The subscription '%s' is not registered with this resource provider.", subID)
	}
	if err != nil {
		return err
	}
	return writeSubscription(w, subID, sub)
}

func writeSubscription(w http.ResponseWriter, subID string, sub *armdoc.SubscriptionDocument) error {
	b, err := json.Marshal(subscriptionResponse{ID: "/subscriptions/" + subID, subscriptionBody: subscriptionBody{
		State: sub.State, RegistrationDate: sub.RegistrationDate, Properties: sub.Properties,
	}})
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, b)
	return nil
}

// deleteSubscriptionClusters starts the deletion of every cluster of a deleted subscription.
// Failures are logged, not returned: ARM's notification was recorded, and a repeated
// notification tries again.
func (s *Server) deleteSubscriptionClusters(r *http.Request, subID string) {
	ctx := r.Context()
	q := docstore.Query{Partition: partitionKey(subID), Type: docstore.TypeResource, ResourceIDPrefix: "/subscriptions/" + subID + "/"}
	for {
		page, err := s.store.Query(ctx, q)
		if err != nil {
			info(r).logger().Error("list clusters of deleted subscription", "subscriptionID", subID, "error", err)
			return
		}
		for _, d := range page.Documents {
			var rd armdoc.ResourceDocument
			if err := json.Unmarshal(d.Body, &rd); err != nil {
				info(r).logger().Error("decode resource of deleted subscription", "id", d.ID, "error", err)
				continue
			}
			id, err := arm.ParseResourceID(rd.ResourceID)
			if err != nil || !strings.EqualFold(id.ResourceType(), api.ClusterResourceType) {
				continue
			}
			if _, err := s.startDelete(r, &clusters, &rd, d); err != nil {
				info(r).logger().Error("delete cluster of deleted subscription", "resourceID", id.String(), "error", err)
			}
		}
		if page.Continuation == "" {
			return
		}
		q.Continuation = page.Continuation
	}
}
