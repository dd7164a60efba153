package frontend

import (
	"net/http"
	"strings"
	"unicode/utf8"

	"github.com/openhcp/openhcp/internal/arm"
)

// middlewareLowercasePath folds the path so routing is case-insensitive, as ARM paths are. The
// original path stays in the request info: resource IDs keep the caller's casing.
//
// A path holding a NUL or bytes that are not UTF-8 (…/resourceGroups/r%00g/…) is a 400 here:
// no resource has such an ID, and the store (PostgreSQL) refuses it in a key, so a lookup of it
// failed with a 500. ARM sends no such path; a caller reaching the frontend directly can.
//
// So is a path holding an encoded slash (%2F): no ARM name holds a slash, and the decoded path
// would route …/hcpOpenShiftClusters/c%2FnodePools%2Fp as node pool p of cluster c.
func (s *Server) middlewareLowercasePath(w http.ResponseWriter, r *http.Request, next http.HandlerFunc) {
	if !utf8.ValidString(r.URL.Path) || strings.IndexByte(r.URL.Path, 0) >= 0 {
		s.report(w, r, cloudError(http.StatusBadRequest, arm.CodeInvalidResourceName, "",
			"The resource ID %q is not valid: it holds a NUL character or bytes that are not UTF-8.", r.URL.Path))
		return
	}
	if esc := r.URL.EscapedPath(); strings.Contains(esc, "%2f") || strings.Contains(esc, "%2F") {
		s.report(w, r, cloudError(http.StatusBadRequest, arm.CodeInvalidResourceName, "",
			"The resource ID %q is not valid: a name holds an encoded slash (%%2F).", r.URL.EscapedPath()))
		return
	}
	info(r).originalPath = r.URL.Path
	u := *r.URL
	u.Path = strings.ToLower(u.Path)
	u.RawPath = ""
	r2 := r.WithContext(r.Context())
	r2.URL = &u
	next(w, r2)
}
