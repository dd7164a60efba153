package arm

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"unicode/utf8"

	"github.com/openhcp/openhcp/internal/armdoc"
)

// Error codes used by ARM resource providers (PascalCase, as ARM clients match on them).
const (
	CodeInvalidParameter         = "InvalidParameter"
	CodeInvalidRequestContent    = "InvalidRequestContent"
	CodeInvalidResourceType      = "InvalidResourceType"
	CodeInvalidResourceName      = "InvalidResourceName"
	CodeInvalidSubscriptionState = "InvalidSubscriptionState"
	CodeSubscriptionNotFound     = "SubscriptionNotFound"
	CodeUnsupportedMediaType     = "UnsupportedMediaType"
	CodeRequestTooLarge          = "RequestEntityTooLarge"
	CodeMultipleErrorsOccurred   = "MultipleErrorsOccurred"
	CodeResourceNotFound         = "ResourceNotFound"
	CodeNotFound                 = "NotFound"
	CodeConflict                 = "Conflict"
	CodePreconditionFailed       = "PreconditionFailed"
	CodeInternalServerError      = "InternalServerError"
	CodeServiceUnavailable       = "ServiceUnavailable"
	CodeMethodNotAllowed         = "MethodNotAllowed"
	CodeCanceled                 = "Canceled"
	CodeInvalidOperationID       = "InvalidOperationId"
	CodeOperationNotFound        = "OperationNotFound"
)

// CloudError is an error with the HTTP status and ARM body it should be reported as.
type CloudError struct {
	StatusCode int
	armdoc.CloudErrorBody
	// RetryAfter, when positive, is sent as Retry-After (whole seconds).
	RetryAfter int
}

func (e *CloudError) Error() string {
	if e.Target != "" {
		return fmt.Sprintf("%d %s (%s): %s", e.StatusCode, e.Code, e.Target, e.Message)
	}
	return fmt.Sprintf("%d %s: %s", e.StatusCode, e.Code, e.Message)
}

// MaxErrorTextLen is the most bytes of a message or a target NewCloudError keeps. Both may
// repeat what the caller sent (a value, a map key), which is bounded only by the body's size:
// the rest is cut, so a refusal is never larger than what it refuses, in the answer or in the
// log line that records it.
const MaxErrorTextLen = 1024

// NewCloudError builds a CloudError with a formatted message, its message and target clipped to
// MaxErrorTextLen.
func NewCloudError(status int, code, target, format string, args ...any) *CloudError {
	return &CloudError{StatusCode: status, CloudErrorBody: armdoc.CloudErrorBody{
		Code: code, Message: Clip(fmt.Sprintf(format, args...)), Target: Clip(target),
	}}
}

// Clip is s, or its first MaxErrorTextLen bytes (on a character boundary) and how much was cut:
// the form of an error's message or target that may repeat what a caller sent.
func Clip(s string) string {
	if len(s) <= MaxErrorTextLen {
		return s
	}
	n := MaxErrorTextLen
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return fmt.Sprintf("%s… (%d characters cut)", s[:n], utf8.RuneCountInString(s[n:]))
}

// Multiple folds several field errors into one 400 MultipleErrorsOccurred, or returns the only
// one as it is. It returns a nil error (not a typed nil) for none.
func Multiple(errs []*CloudError) error {
	switch len(errs) {
	case 0:
		return nil
	case 1:
		return errs[0]
	}
	e := NewCloudError(http.StatusBadRequest, CodeMultipleErrorsOccurred, "", "Content validation failed on multiple fields")
	for _, d := range errs {
		e.Details = append(e.Details, d.CloudErrorBody)
	}
	return e
}

// AsCloudError finds a CloudError in err's chain.
func AsCloudError(err error) (*CloudError, bool) {
	var ce *CloudError
	ok := errors.As(err, &ce)
	return ce, ok
}

// WriteCloudError writes e as {"error":{...}} with its status and x-ms-error-code.
func WriteCloudError(w http.ResponseWriter, e *CloudError) {
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set(HeaderErrorCode, e.Code)
	if e.RetryAfter > 0 {
		h.Set(HeaderRetryAfter, strconv.Itoa(e.RetryAfter))
	}
	w.WriteHeader(e.StatusCode)
	b, _ := json.Marshal(struct {
		Error armdoc.CloudErrorBody `json:"error"`
	}{e.CloudErrorBody})
	w.Write(append(b, '\n'))
}
