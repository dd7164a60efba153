package frontend

import (
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/openhcp/openhcp/internal/arm"
)

// externalBase is the scheme and host clients reach us by. ARM sends the URL it was called with
// as Referer; async URLs must point at ARM, not at the RP's own address.
func externalBase(r *http.Request) string {
	if ref, err := url.Parse(r.Referer()); err == nil && ref.Scheme != "" && ref.Host != "" {
		return ref.Scheme + "://" + ref.Host
	}
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	return scheme + "://" + r.Host
}

func (s *Server) operationPath(subID, kind, opID string) string {
	return "/subscriptions/" + subID + "/providers/Microsoft.RedHatOpenShift/locations/" + s.cfg.Location + "/" + kind + "/" + opID
}

func (s *Server) operationURL(r *http.Request, subID, kind, opID string) string {
	q := url.Values{"api-version": {info(r).apiVersion}}
	return externalBase(r) + s.operationPath(subID, kind, opID) + "?" + q.Encode()
}

// setAsyncHeaders points the client at the operation: Azure-AsyncOperation (status) always,
// Location (result) when asked.
func (s *Server) setAsyncHeaders(w http.ResponseWriter, r *http.Request, subID, opID string, location bool) {
	h := w.Header()
	h.Set(arm.HeaderAsyncOperation, s.operationURL(r, subID, "hcpOperationStatuses", opID))
	if location {
		h.Set(arm.HeaderLocation, s.operationURL(r, subID, "hcpOperationResults", opID))
	}
	h.Set(arm.HeaderRetryAfter, strconv.Itoa(s.retryAfterSeconds()))
}

// quoteETag and matchETag implement If-Match / If-None-Match on the store's ETags.
func quoteETag(etag string) string { return `"` + etag + `"` }

// etagMatches reports whether the header value (a list of ETags or "*") matches current ("" when
// the resource does not exist).
func etagMatches(header, current string) bool {
	for _, t := range strings.Split(header, ",") {
		t = strings.TrimSpace(t)
		if t == "*" {
			return current != ""
		}
		t = strings.TrimPrefix(t, "W/")
		t = strings.Trim(t, `"`)
		if current != "" && t == current {
			return true
		}
	}
	return false
}

// checkPreconditions applies If-Match and If-None-Match to a write; current is the stored ETag,
// "" if the resource does not exist.
func checkPreconditions(r *http.Request, current string) error {
	if h := r.Header.Get(arm.HeaderIfMatch); h != "" && !etagMatches(h, current) {
		return cloudError(http.StatusPreconditionFailed, arm.CodePreconditionFailed, "If-Match",
			"The resource's ETag does not match the If-Match header.")
	}
	if h := r.Header.Get(arm.HeaderIfNoneMatch); h != "" && etagMatches(h, current) {
		return cloudError(http.StatusPreconditionFailed, arm.CodePreconditionFailed, "If-None-Match",
			"The resource exists and matches the If-None-Match header.")
	}
	return nil
}

func writeJSON(w http.ResponseWriter, statusCode int, body []byte) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(statusCode)
	w.Write(body)
}
