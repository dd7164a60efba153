// Package httplabel holds the label values the services' HTTP metrics take from a request, bounded
// so that a caller, with or without a credential, cannot add series to them.
package httplabel

import "net/http"

// Other is the method label of a request whose method is not one of HTTP's own.
const Other = "other"

// Method is the method label of a request: its method when it is one HTTP defines (RFC 9110, and
// PATCH), else Other. A request's method is any token the client sends, so a label taken from it
// as sent would grow a metric by a series per distinct method, requests refused before
// authentication included.
func Method(m string) string {
	switch m {
	case http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodPatch,
		http.MethodDelete, http.MethodConnect, http.MethodOptions, http.MethodTrace:
		return m
	}
	return Other
}
