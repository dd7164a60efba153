package frontend

import (
	"net/http"
	"time"

	"github.com/openhcp/openhcp/internal/arm"
)

// middlewareRequestID gives every request its x-ms-request-id (returned on every response) and
// a logger carrying it and ARM's client and correlation request IDs, each replaced by a fresh
// GUID when it is unusable (requestIDHeader), so only bounded IDs go further.
func (s *Server) middlewareRequestID(w http.ResponseWriter, r *http.Request, next http.HandlerFunc) {
	ri := &requestInfo{start: time.Now(), requestID: newUUID(), originalPath: r.URL.Path}
	clientID, clientLen := requestIDHeader(r, arm.HeaderClientRequestID)
	corrID, corrLen := requestIDHeader(r, arm.HeaderCorrelationRequestID)
	ri.clientRequestID, ri.correlationID = clientID, corrID
	ri.base = s.log
	if clientLen > 0 || corrLen > 0 {
		logReplacedRequestID(ri.logger(), arm.HeaderClientRequestID, clientLen)
		logReplacedRequestID(ri.logger(), arm.HeaderCorrelationRequestID, corrLen)
	}
	w.Header().Set(arm.HeaderRequestID, ri.requestID)
	if ri.clientRequestID != "" {
		w.Header().Set(arm.HeaderClientRequestID, ri.clientRequestID)
	}
	if ri.correlationID != "" {
		w.Header().Set(arm.HeaderCorrelationRequestID, ri.correlationID)
	}
	next(w, r.WithContext(withInfo(r.Context(), ri)))
}
