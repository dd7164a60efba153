package frontend

import (
	"encoding/json"
	"errors"
	"net/http"
	"net/url"
	"strings"

	"github.com/openhcp/openhcp/internal/arm"
	"github.com/openhcp/openhcp/internal/armdoc"
	"github.com/openhcp/openhcp/internal/docstore"
	"github.com/openhcp/openhcp/internal/opkind"
)

// operation loads the operation of the request. Operations of another region, or started by
// another caller (when ARM names the caller), are not found.
func (s *Server) operation(r *http.Request) (*armdoc.OperationDocument, error) {
	opID := r.PathValue("operationId")
	notFound := cloudError(http.StatusNotFound, arm.CodeNotFound, "", "The operation '%s' was not found.", opID)
	if normalizeLocation(r.PathValue("location")) != s.cfg.Location {
		return nil, notFound
	}
	op, _, err := s.getOperationDoc(r.Context(), partitionKey(r.PathValue("subscriptionId")), opID)
	if errors.Is(err, docstore.ErrNotFound) {
		return nil, notFound
	}
	if err != nil {
		return nil, err
	}
	if !startedBy(r, op) {
		return nil, notFound
	}
	return op, nil
}

// startedBy reports whether r comes from the caller that started op, as far as ARM names
// callers (a header ARM did not send, or an operation that recorded none, does not tell them
// apart). Only that caller reads op, and only it may join op with a repeated request.
func startedBy(r *http.Request, op *armdoc.OperationDocument) bool {
	if h := r.Header.Get(arm.HeaderClientObjectID); h != "" && op.ClientID != "" && !strings.EqualFold(h, op.ClientID) {
		return false
	}
	if h := r.Header.Get(arm.HeaderHomeTenantID); h != "" && op.TenantID != "" && !strings.EqualFold(h, op.TenantID) {
		return false
	}
	return true
}

func (s *Server) getOperationStatus(w http.ResponseWriter, r *http.Request) error {
	op, err := s.operation(r)
	if err != nil {
		return err
	}
	st := op.StatusAt(info(r).originalPath)
	b, err := json.Marshal(st)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, b)
	return nil
}

// getOperationResult answers 202 while the operation runs and, once it ends, what the
// synchronous call would have: 204 for a delete, the resource for a create or update, the
// error for a failure (409 for canceled, 500 for internal failures, 400 otherwise).
func (s *Server) getOperationResult(w http.ResponseWriter, r *http.Request) error {
	op, err := s.operation(r)
	if err != nil {
		return err
	}
	if !op.Status.Terminal() {
		q := url.Values{"api-version": {info(r).apiVersion}}
		w.Header().Set(arm.HeaderLocation, externalBase(r)+info(r).originalPath+"?"+q.Encode())
		w.Header().Set(arm.HeaderRetryAfter, itoa(s.retryAfterSeconds()))
		w.WriteHeader(http.StatusAccepted)
		return nil
	}
	if op.Status != armdoc.StateSucceeded {
		e := op.TerminalError()
		code := http.StatusBadRequest
		switch {
		case op.Status == armdoc.StateCanceled:
			code = http.StatusConflict
		case e.Code == arm.CodeInternalServerError || e.Code == "OperationTimedOut":
			code = http.StatusInternalServerError
		}
		return &arm.CloudError{StatusCode: code, CloudErrorBody: *e}
	}
	if op.Request == armdoc.OperationDelete {
		w.WriteHeader(http.StatusNoContent)
		return nil
	}
	if opkind.IsAction(op.Request) {
		return s.respondActionResult(w, r, op)
	}
	id, err := arm.ParseResourceID(op.ExternalID)
	if err != nil {
		return err
	}
	return s.respondResult(w, r, id)
}
