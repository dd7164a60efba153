package frontend

import (
	"net/http"
	"slices"
	"time"

	"github.com/openhcp/openhcp/internal/identity"
)

// middlewareClientCertificate admits only ARM: with Config.ClientSubjects set, a request must
// arrive over mutual TLS with a client certificate the listener verified (tls-client-ca) whose
// subject common name is in the list, and whose chain is still within its validity (the
// connection may be older than the certificate). GET (and HEAD) /healthz stays open for probes; any
// other method there is refused as any request is, before its body is read. Without the list every
// client the CA verifies is admitted (or, without TLS, the listener is loopback only).
func (s *Server) middlewareClientCertificate(w http.ResponseWriter, r *http.Request, next http.HandlerFunc) {
	if len(s.cfg.ClientSubjects) == 0 || (r.URL.Path == "/healthz" && (r.Method == http.MethodGet || r.Method == http.MethodHead)) {
		next(w, r)
		return
	}
	if r.TLS == nil || len(r.TLS.VerifiedChains) == 0 || len(r.TLS.VerifiedChains[0]) == 0 {
		s.report(w, r, cloudError(http.StatusUnauthorized, "Unauthorized", "",
			"The request has no verified client certificate; this resource provider is called by Azure Resource Manager only."))
		return
	}
	// The handshake verified the chain once; ARM keeps its connections alive, so the chain must
	// still be valid at this request.
	if err := identity.CheckValidAt(r.TLS.VerifiedChains, time.Now()); err != nil {
		info(r).logger().Warn("client certificate no longer valid", "error", err)
		s.report(w, r, cloudError(http.StatusUnauthorized, "Unauthorized", "",
			"The request's client certificate is no longer valid; this resource provider is called by Azure Resource Manager only."))
		return
	}
	cn := r.TLS.VerifiedChains[0][0].Subject.CommonName
	if !slices.Contains(s.cfg.ClientSubjects, cn) {
		info(r).logger().Warn("client certificate subject not allowed", "subjectCN", cn)
		s.report(w, r, cloudError(http.StatusForbidden, "Forbidden", "",
			"The client certificate subject '%s' is not allowed to call this resource provider.", cn))
		return
	}
	next(w, r)
}
