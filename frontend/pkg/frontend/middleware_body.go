package frontend

import (
	"errors"
	"io"
	"mime"
	"net/http"
)

// MaxBodyBytes is the largest request body accepted.
const MaxBodyBytes = 4 << 20

// middlewareBody reads the body of requests that carry one: JSON only (415 otherwise), at most
// MaxBodyBytes (413). Handlers find it in the request info.
func (s *Server) middlewareBody(w http.ResponseWriter, r *http.Request, next http.HandlerFunc) {
	if r.Method != http.MethodPut && r.Method != http.MethodPatch && r.Method != http.MethodPost {
		next(w, r)
		return
	}
	if r.ContentLength > MaxBodyBytes {
		s.report(w, r, cloudError(http.StatusRequestEntityTooLarge, "RequestEntityTooLarge", "",
			"The request content is %d bytes; at most %d are accepted.", r.ContentLength, MaxBodyBytes))
		return
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, MaxBodyBytes))
	if err != nil {
		var tooLarge *http.MaxBytesError
		if errors.As(err, &tooLarge) {
			s.report(w, r, cloudError(http.StatusRequestEntityTooLarge, "RequestEntityTooLarge", "",
				"The request content exceeds %d bytes.", MaxBodyBytes))
			return
		}
		s.report(w, r, cloudError(http.StatusBadRequest, "InvalidRequestContent", "", "The request content could not be read: %v", err))
		return
	}
	if len(body) > 0 {
		mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
		if err != nil || mt != "application/json" {
			s.report(w, r, cloudError(http.StatusUnsupportedMediaType, "UnsupportedMediaType", "",
				"The content type %q is not supported; use application/json.", r.Header.Get("Content-Type")))
			return
		}
	}
	info(r).body = body
	next(w, r)
}
