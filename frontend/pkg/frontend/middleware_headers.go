package frontend

import (
	"encoding/json"
	"log/slog"
	"net/http"
	"strings"

	"github.com/openhcp/openhcp/internal/arm"
	"github.com/openhcp/openhcp/internal/armdoc"
)

// maxRequestIDLength bounds a kept x-ms-correlation-request-id or x-ms-client-request-id. ARM
// sends GUIDs (36 characters); the bound leaves room for other callers' tokens and keeps what
// reaches logs, operation documents, Cluster Service's metadata and response headers small.
const maxRequestIDLength = 128

// usableRequestID reports whether an ID header's value may be carried as it is: a GUID, or up to
// maxRequestIDLength characters of letters, digits and - _ . : { }. Anything else (spaces,
// quotes, non-ASCII, which gRPC metadata would also refuse) is replaced.
func usableRequestID(v string) bool {
	if len(v) > maxRequestIDLength {
		return false
	}
	for i := 0; i < len(v); i++ {
		c := v[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' ||
			c == '-' || c == '_' || c == '.' || c == ':' || c == '{' || c == '}') {
			return false
		}
	}
	return true
}

// requestIDHeader returns the header's value, or a fresh GUID when the value is unusable, with
// the unusable value's length (0 when kept). ARO HCP carries these headers unchecked; replacing
// rather than refusing keeps ARM's call working, since neither ID changes what the call does.
func requestIDHeader(r *http.Request, name string) (id string, replacedLen int) {
	v := r.Header.Get(name)
	if v == "" || usableRequestID(v) {
		return v, 0
	}
	return newUUID(), len(v)
}

// logReplacedRequestID logs a replacement with the header's name and the value's length, never
// the value; log already carries the replacement.
func logReplacedRequestID(log *slog.Logger, name string, replacedLen int) {
	if replacedLen > 0 {
		log.Warn("request ID header unusable; replaced", "header", name, "length", replacedLen)
	}
}

// isGUID reports whether s is a GUID in its 36-character form (any case, no braces).
func isGUID(s string) bool {
	if len(s) != 36 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch i {
		case 8, 13, 18, 23:
			if c != '-' {
				return false
			}
		default:
			if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F') {
				return false
			}
		}
	}
	return true
}

// registeredTenant is the tenant in the subscription's registration, "" if none.
func registeredTenant(sub *armdoc.SubscriptionDocument) string {
	if sub == nil || len(sub.Properties) == 0 {
		return ""
	}
	var p struct {
		TenantID string `json:"tenantId"`
	}
	if err := json.Unmarshal(sub.Properties, &p); err != nil {
		return ""
	}
	return p.TenantID
}

// checkHomeTenant refuses an x-ms-home-tenant-id that is not a GUID (400 InvalidParameter,
// without echoing the value). One that differs from the registration's tenant is served and
// logged: ARO HCP does not compare the two either, ARM (authenticated by its certificate) is the
// authority for the header, and a subscription moved to another tenant carries the new tenant
// in ARM's requests before ARM's lifecycle call updates the registration (docs/api.md).
func checkHomeTenant(r *http.Request, sub *armdoc.SubscriptionDocument) error {
	h := r.Header.Get(arm.HeaderHomeTenantID)
	if h == "" {
		return nil
	}
	if !isGUID(h) {
		return cloudError(http.StatusBadRequest, arm.CodeInvalidParameter, "",
			"The value of the x-ms-home-tenant-id header is not a GUID.")
	}
	if t := registeredTenant(sub); t != "" && !strings.EqualFold(t, h) {
		info(r).logger().Info("x-ms-home-tenant-id differs from the subscription's registered tenant; served",
			"homeTenantID", h, "registeredTenantID", t)
	}
	return nil
}
