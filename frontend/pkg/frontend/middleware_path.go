package frontend

import (
	"net/http"
	"strings"
)

// middlewareLowercasePath folds the path so routing is case-insensitive, as ARM paths are. The
// original path stays in the request info: resource IDs keep the caller's casing.
func middlewareLowercasePath(w http.ResponseWriter, r *http.Request, next http.HandlerFunc) {
	info(r).originalPath = r.URL.Path
	u := *r.URL
	u.Path = strings.ToLower(u.Path)
	u.RawPath = ""
	r2 := r.WithContext(r.Context())
	r2.URL = &u
	next(w, r2)
}
