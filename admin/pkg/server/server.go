// Package server is the admin API: the SRE routes (routes.go), and the one middleware every
// route goes through, which identifies the caller, authorizes it by its group, and appends an
// audit record before anything takes effect.
package server

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
	"unicode/utf16"
	"unicode/utf8"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/openhcp/openhcp/admin/pkg/access"
	"github.com/openhcp/openhcp/admin/pkg/adminapi"
	"github.com/openhcp/openhcp/admin/pkg/approval"
	"github.com/openhcp/openhcp/admin/pkg/audit"
	"github.com/openhcp/openhcp/admin/pkg/refusallimit"
	"github.com/openhcp/openhcp/admin/pkg/revocation"
	"github.com/openhcp/openhcp/admin/pkg/session"
	csv1 "github.com/openhcp/openhcp/cluster-service/api/v1"
	"github.com/openhcp/openhcp/internal/docstore"
	"github.com/openhcp/openhcp/internal/httplabel"
)

// AuditLog is where every call is recorded (audit.Log).
type AuditLog interface {
	Append(ctx context.Context, e audit.Entry) (audit.Entry, error)
	Query(ctx context.Context, f audit.Filter) ([]audit.Entry, string, error)
}

// Bundles reads Maestro's resource bundles by ManifestWork name.
type Bundles interface {
	BundlesNamed(ctx context.Context, names []string) ([]adminapi.Bundle, error)
}

// Revocations is the SRE revocation list (revocation.List).
type Revocations interface {
	Revoke(ctx context.Context, person, by, reason string) (revocation.Revocation, error)
	Revoked(ctx context.Context, person string, notBefore time.Time) (bool, error)
	All(ctx context.Context) ([]revocation.Revocation, error)
}

// Config wires the server. Store is the ARM document store: read, and written only to record an
// SRE's day-2 change in the customer's resource document (dayops.go).
type Config struct {
	Audit AuditLog
	// Revocations may be nil only in tests that do not need it: then no SRE is ever revoked.
	Revocations Revocations
	Store       docstore.Store
	Clusters    csv1.ClustersClient
	NodePools   csv1.NodePoolsClient
	Shards      csv1.ProvisionShardsClient
	// ExternalAuths and UpgradePolicies may be nil: must-gather then leaves them out.
	ExternalAuths   csv1.ExternalAuthsClient
	UpgradePolicies csv1.UpgradePoliciesClient
	// LogDir, when set, is the directory of the region's service logs (*.log), which
	// must-gather searches for a cluster's IDs (the local region; in Azure, Kusto).
	LogDir string
	// Credentials may be nil: the break-glass routes then answer 503.
	Credentials csv1.CredentialsClient
	// StatementKey signs the statements that tell Cluster Service which SRE asked for a
	// break-glass credential (srestatement), and the SRE maintenance requests the maintenance
	// service carries out; without it the break-glass and maintenance writes answer 503.
	StatementKey ed25519.PrivateKey
	// Approvals holds admin break-glass requests until a second sre-admin approves them; nil:
	// admin break-glass requests answer 503.
	Approvals Approvals
	// Sessions holds break-glass sessions and their sealed credentials (session.Store); nil:
	// the break-glass routes answer 503.
	Sessions Sessions
	// GatewayURL is the break-glass gateway's public URL (https://host:port): sessions are
	// reached at GatewayURL/sessions/<id>.
	GatewayURL string
	// BreakGlassTTL bounds SRE break-glass credentials (zero: DefaultBreakGlassTTL).
	BreakGlassTTL BreakGlassTTL
	// Maestro may be nil: describe then says the bundles are unavailable.
	Maestro Bundles
	// ManagementClusters may be nil: shards' health is then "unknown" and must-gather leaves
	// out the objects on the management cluster.
	ManagementClusters ManagementClusters
	Logger             *slog.Logger
	// Timeout bounds each call to another service (default 30s).
	Timeout time.Duration
	// PortalPageSize is how many clusters one fleet page lists (default DefaultPortalPageSize).
	PortalPageSize int
	// Now is the clock (default time.Now).
	Now func() time.Time
	// FormKey is the region's key of the portal's form tokens (audit.Log.PortalFormKey), the
	// same on every replica; empty: a random key of this process.
	FormKey []byte
	// RefusalAudit limits the audit records of refused calls, per source and in total (zero:
	// refusallimit.Default).
	RefusalAudit refusallimit.Rates
	// URLs are the admin API's own URLs (https://host[:port]) as SREs reach it (the admin
	// command's --url, by default its --listen address): their origins are the only ones a
	// mutating request's Origin, and a portal form's, may name. Never the request's Host, which
	// a page whose name was made to resolve to this address (DNS rebinding) sets to its own.
	// Empty: no origin is the admin API's own, so every portal form and every call with an
	// Origin is refused.
	URLs []string
}

// Approvals is the two-person rule's store (approval.Store).
type Approvals interface {
	Add(ctx context.Context, r approval.Request) (approval.Request, error)
	Get(ctx context.Context, id string) (approval.Request, error)
	Pending(ctx context.Context, now time.Time) ([]approval.Request, error)
	Approve(ctx context.Context, id string, a approval.Approval, now time.Time) (approval.Request, error)
}

// Sessions is the break-glass session store (session.Store).
type Sessions interface {
	Open(ctx context.Context, s session.Session, kubeconfig []byte) (session.Session, error)
	Activate(ctx context.Context, id string, kubeconfig []byte, expires time.Time) (session.Session, error)
	End(ctx context.Context, id, state, by string) (session.Session, error)
	EndCluster(ctx context.Context, clusterID, by, reason string) (int64, error)
	Get(ctx context.Context, id string) (session.Session, error)
	List(ctx context.Context, f session.Filter) ([]session.Session, error)
}

// Server serves the admin API.
type Server struct {
	cfg     Config
	mux     *http.ServeMux
	metrics *metrics
	// forms issues and checks the portal's form tokens (middleware_forgery.go).
	forms *formTokens
	// origins are the admin API's own origins (Config.URLs; middleware_forgery.go).
	origins origins
	// refusals limits the audit records of refused calls (middleware_auditflood.go).
	refusals *refusallimit.Limiter
}

// New builds the server and its routes.
func New(cfg Config) (*Server, error) {
	if cfg.Audit == nil || cfg.Store == nil || cfg.Clusters == nil || cfg.NodePools == nil || cfg.Shards == nil {
		return nil, errors.New("admin server: Audit, Store, Clusters, NodePools and Shards are required")
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = 30 * time.Second
	}
	if cfg.PortalPageSize <= 0 {
		cfg.PortalPageSize = DefaultPortalPageSize
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	refusals, err := refusallimit.New(cfg.RefusalAudit, cfg.Now)
	if err != nil {
		return nil, fmt.Errorf("admin server: RefusalAudit: %w", err)
	}
	if cfg.BreakGlassTTL == (BreakGlassTTL{}) {
		cfg.BreakGlassTTL = DefaultBreakGlassTTL()
	}
	if cfg.BreakGlassTTL.ReadOnlyMax == 0 {
		cfg.BreakGlassTTL.ReadOnlyMax = min(DefaultBreakGlassTTL().ReadOnlyMax, cfg.BreakGlassTTL.Max)
	}
	if err := cfg.BreakGlassTTL.Validate(); err != nil {
		return nil, fmt.Errorf("admin server: %w", err)
	}
	origins, err := ownOrigins(cfg.URLs)
	if err != nil {
		return nil, fmt.Errorf("admin server: URLs: %w", err)
	}
	s := &Server{cfg: cfg, mux: http.NewServeMux(), metrics: newMetrics(), forms: newFormTokens(cfg.FormKey, cfg.Now),
		refusals: refusals, origins: origins}
	for _, rt := range s.routes() {
		s.mux.HandleFunc(rt.pattern, s.serve(rt))
	}
	return s, nil
}

// Handler is the admin listener's handler. /healthz answers without identity or audit (a
// probe's call changes nothing and reveals nothing). Every answer carries the security headers
// (adminapi.SetSecurityHeaders): the portal's pages their own policy, the rest the base one.
func (s *Server) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) { w.Write([]byte("ok\n")) })
	mux.Handle("/", s.mux)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		csp := adminapi.BaseCSP
		if strings.HasPrefix(r.URL.Path, "/portal/") {
			csp = portalCSP
		}
		adminapi.SetSecurityHeaders(w.Header(), csp)
		mux.ServeHTTP(w, r)
	})
}

// route is one admin route: what it needs, what it is about, and what it does.
type route struct {
	pattern string
	// perm is the permission the route needs; "" admits any SRE (the not-found route).
	perm access.Permission
	// target names what the call is about, for the audit record ("" when nothing in particular).
	target func(r *http.Request) string
	// bodyTarget names the target from a mutating route's body (read and checked for its
	// reason by then; a portal form is in r.PostForm) when the path does not name it.
	bodyTarget func(r *http.Request, body []byte) string
	// mutates routes take a JSON body with a required "reason".
	mutates bool
	handle  func(w http.ResponseWriter, r *http.Request) error
}

// apiError is an error with its HTTP status and body.
type apiError struct {
	status int
	body   adminapi.Error
}

func (e *apiError) Error() string { return e.body.Error() }

func errorf(status int, code, target, format string, args ...any) *apiError {
	return &apiError{status: status, body: adminapi.Error{Code: code, Message: fmt.Sprintf(format, args...), Target: target}}
}

func badRequest(target, format string, args ...any) *apiError {
	return errorf(http.StatusBadRequest, adminapi.CodeInvalidRequest, target, format, args...)
}

func notFound(target, format string, args ...any) *apiError {
	return errorf(http.StatusNotFound, adminapi.CodeNotFound, target, format, args...)
}

// upstream turns another service's error into ours; what, which names the call, goes into
// the message (and the log), target keeps the ID a NotFound is about.
func upstream(what, target string, err error) *apiError {
	target = cut(target, maxTarget) // the caller's value, repeated in the answer
	var ae *apiError
	if errors.As(err, &ae) {
		return ae
	}
	switch st, _ := status.FromError(err); st.Code() {
	case codes.NotFound:
		return notFound(target, "%s: %s not found", what, target)
	case codes.InvalidArgument:
		return badRequest(target, "%s: %s", what, st.Message())
	case codes.FailedPrecondition, codes.Aborted:
		return errorf(http.StatusPreconditionFailed, adminapi.CodeConflict, target, "%s: %s", what, st.Message())
	case codes.Unavailable, codes.DeadlineExceeded:
		return errorf(http.StatusServiceUnavailable, adminapi.CodeUpstream, "", "%s: %s", what, st.Message())
	}
	return errorf(http.StatusBadGateway, adminapi.CodeUpstream, "", "%s: %v", what, err)
}

// writeJSON answers v with status.
func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	_ = enc.Encode(v)
}

func (s *Server) writeError(w http.ResponseWriter, r *http.Request, err error) {
	var ae *apiError
	if !errors.As(err, &ae) {
		s.cfg.Logger.Error("admin call failed", "path", r.URL.Path, "requestID", w.Header().Get(adminapi.HeaderRequestID), "error", err)
		ae = errorf(http.StatusInternalServerError, adminapi.CodeInternal, "", "internal error; request %s", w.Header().Get(adminapi.HeaderRequestID))
	}
	s.writeRefusal(r.Context(), w, r, ae.status, ae.body)
}

// statusRecorder remembers the status a handler answered.
type statusRecorder struct {
	http.ResponseWriter
	status int
}

func (s *statusRecorder) WriteHeader(code int) {
	if s.status == 0 {
		s.status = code
	}
	s.ResponseWriter.WriteHeader(code)
}

func (s *statusRecorder) Write(b []byte) (int, error) {
	if s.status == 0 {
		s.status = http.StatusOK
	}
	return s.ResponseWriter.Write(b)
}

// code is the status answered: 200 when the handler wrote nothing.
func (s *statusRecorder) code() int {
	if s.status == 0 {
		return http.StatusOK
	}
	return s.status
}

// maxBody bounds a mutating route's body.
const maxBody = 64 << 10

// maxTarget bounds an audit record's target taken from a body, and a caller's value an error
// message repeats.
const maxTarget = 256

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n]
}

// serve is the middleware of every route: identify, authorize, audit, then act. The audit
// record of a call is appended before the call has any effect, refused calls included; if it
// cannot be appended the call is refused with 503 and does nothing.
func (s *Server) serve(rt route) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		requestID := newID()
		correlationID := r.Header.Get(adminapi.HeaderCorrelationID)
		if correlationID == "" || len(correlationID) > 128 {
			correlationID = requestID
		}
		w.Header().Set(adminapi.HeaderRequestID, requestID)
		w.Header().Set(adminapi.HeaderCorrelationID, correlationID)
		start, outcome := time.Now(), ""
		sr := &statusRecorder{ResponseWriter: w}
		w = sr
		defer func() {
			s.metrics.observe(rt.pattern, httplabel.Method(r.Method), sr.code(), outcome, time.Since(start))
		}()
		log := s.cfg.Logger.With("requestID", requestID, "correlationRequestID", correlationID, "route", rt.pattern)

		e := audit.Entry{RequestID: requestID, CorrelationID: correlationID, Method: cut(r.Method, maxMethod), Route: rt.pattern, Path: cut(r.URL.Path, maxPath),
			Reason: strings.TrimSpace(r.Header.Get(adminapi.HeaderReason))}
		reasonTooLong := len(e.Reason) > maxReason
		e.Reason = cut(e.Reason, maxReason)
		if r.TLS != nil && len(r.TLS.PeerCertificates) > 0 {
			e.Subject = r.TLS.PeerCertificates[0].Subject.String()
		}
		if rt.target != nil {
			// From the path: bounded as the path is.
			e.Target = cut(rt.target(r), maxPath)
		}
		var refusal *apiError
		id, err := access.Identify(r.TLS)
		if err == nil && s.cfg.Revocations != nil {
			revoked, rerr := s.cfg.Revocations.Revoked(r.Context(), id.Person, r.TLS.VerifiedChains[0][0].NotBefore)
			switch {
			case rerr != nil:
				// Who is calling cannot be verified: refused like an unknown identity, but with
				// 503 (retry later), and recorded below like every refusal — if the audit log can
				// be written at all.
				log.Error("revocation list unreadable; refusing the call", "error", rerr)
				e.Person, e.Group = id.Person, id.Group
				e.Outcome, e.Status = audit.Unauthenticated, http.StatusServiceUnavailable
				refusal = errorf(http.StatusServiceUnavailable, adminapi.CodeAuditUnavailable, "",
					"the revocation list cannot be read, so no admin call is served; retry later")
			case revoked:
				e.Person, e.Group = id.Person, id.Group
				err = fmt.Errorf("%w: the certificate of %q was revoked; ask for a new one", access.ErrNoIdentity, id.Person)
			}
		}
		switch {
		case refusal != nil:
		case err != nil:
			e.Outcome = audit.Unauthenticated
			e.Status = http.StatusUnauthorized
			refusal = errorf(http.StatusUnauthorized, adminapi.CodeUnauthenticated, "", "%v; the admin API admits SREs only (docs/sre.md)", err)
		case rt.perm != "" && !id.May(rt.perm):
			e.Person, e.Group = id.Person, id.Group
			e.Outcome = audit.Forbidden
			e.Status = http.StatusForbidden
			refusal = errorf(http.StatusForbidden, adminapi.CodeForbidden, "", "group %q may not %s (permission %s)", id.Group, rt.pattern, rt.perm)
		default:
			e.Person, e.Group = id.Person, id.Group
			e.Outcome = audit.Allowed
		}
		if refusal == nil && reasonTooLong {
			refusal = badRequest(adminapi.HeaderReason, "%s is longer than %d bytes", adminapi.HeaderReason, maxReason)
			e.Outcome, e.Status = audit.Completed, refusal.status
		}
		if refusal == nil {
			if refusal = textRefusal(rt.pattern, r); refusal != nil {
				e.Outcome, e.Status = audit.Completed, refusal.status
			}
		}
		if refusal == nil && mutating(r.Method) {
			if refusal = forgeryCheck(r, s.origins); refusal != nil {
				e.Outcome, e.Status = audit.Forbidden, refusal.status
			}
		} else if refusal == nil {
			if refusal = crossSiteRead(r); refusal != nil {
				e.Outcome, e.Status = audit.Forbidden, refusal.status
			}
		}
		if refusal == nil && rt.mutates {
			reason, body, err := readReason(r)
			if err != nil && err.status == http.StatusRequestEntityTooLarge {
				// Before the form token's check, which would read a truncated form (no token, or
				// one cut short) and call it a forgery: too large is the answer, and nothing acts.
				refusal = err
				e.Outcome, e.Status = audit.Completed, err.status
			} else if strings.HasPrefix(r.URL.Path, "/portal/") && !s.forms.valid(id.Person, r.PostForm.Get("csrf")) {
				// Before the form's own errors: a forged form learns nothing of its fields.
				refusal = forged("csrf", "the form has no valid token of your portal page; reload the page and post it again")
				e.Outcome, e.Status = audit.Forbidden, refusal.status
			} else if err != nil {
				refusal = err
				e.Outcome, e.Status = audit.Completed, err.status
			} else {
				e.Reason = reason
				if rt.bodyTarget != nil {
					e.Target = truncate(rt.bodyTarget(r, body), maxTarget)
				}
				r.Body = io.NopCloser(bytes.NewReader(body))
			}
		}
		if refusal != nil && e.Person == "" {
			// A caller without an identity (the listener takes connections without a
			// certificate) gets its answer and the end of its connection (HTTP/2: GOAWAY): one
			// refusal every idle period would otherwise keep it, and enough of them every
			// connection of the process.
			w.Header().Set("Connection", "close")
		}
		if refusal != nil && !s.refusals.AllowRefusal(r, e.Person) {
			// A source, or all sources together, past the rate of refused calls: answered and
			// counted, not recorded, so no caller can fill the audit table (refusallimit).
			s.metrics.refusalsDropped.Inc()
			outcome = string(e.Outcome)
			s.writeRefusal(withIdentity(r.Context(), id), w, r, refusal.status, refusal.body)
			return
		}
		// Refused calls are audited under their request's context; an allowed call's record
		// must be durable before it acts, so it gets its own bounded context too.
		actx, cancel := context.WithTimeout(context.WithoutCancel(r.Context()), 10*time.Second)
		rec, err := s.cfg.Audit.Append(actx, e)
		cancel()
		outcome = string(e.Outcome)
		if err != nil {
			s.metrics.auditFailures.WithLabelValues("before").Inc()
			outcome = "audit_unavailable"
			log.Error("audit append failed; refusing the call", "error", err)
			writeJSON(w, http.StatusServiceUnavailable, adminapi.Error{Code: adminapi.CodeAuditUnavailable,
				Message: "the audit log cannot be written, so no admin call is served; retry later"})
			return
		}
		if refusal != nil {
			log.Warn("admin call refused", "person", e.Person, "group", e.Group, "subject", e.Subject, "status", refusal.status, "message", refusal.body.Message)
			s.writeRefusal(withIdentity(r.Context(), id), w, r, refusal.status, refusal.body)
			return
		}
		log.Info("admin call", "person", id.Person, "group", id.Group, "target", e.Target, "reason", e.Reason, "auditId", rec.ID)
		if err := rt.handle(sr, r.WithContext(withRequestID(withReason(withIdentity(r.Context(), id), e.Reason), requestID))); err != nil {
			s.writeError(sr, r.WithContext(withIdentity(r.Context(), id)), err)
		}
		done := e
		done.Outcome, done.Status = audit.Completed, sr.status
		actx, cancel = context.WithTimeout(context.WithoutCancel(r.Context()), 10*time.Second)
		defer cancel()
		if _, err := s.cfg.Audit.Append(actx, done); err != nil {
			// The call is recorded (its Allowed record); only its answer is missing.
			s.metrics.auditFailures.WithLabelValues("after").Inc()
			log.Error("audit append of the outcome failed", "error", err, "status", sr.status)
		}
	}
}

// notUTF8 is the refusal of a JSON body that does not decode to the text it spells
// (decodesAsSent), naming the first of its properties (in the body's order) whose value holds
// such bytes or escapes.
func notUTF8(body []byte) *apiError {
	dec := json.NewDecoder(bytes.NewReader(body))
	if t, err := dec.Token(); err == nil && t == json.Delim('{') {
		for dec.More() {
			start := dec.InputOffset()
			k, err := dec.Token()
			if err != nil {
				break
			}
			var v json.RawMessage
			if err := dec.Decode(&v); err != nil {
				break
			}
			if name, _ := k.(string); !decodesAsSent(body[start:dec.InputOffset()]) {
				return badRequest(name, "%q holds bytes that are not UTF-8 or half of a UTF-16 surrogate pair", name)
			}
		}
	}
	return badRequest("", "the body holds bytes that are not UTF-8 or half of a UTF-16 surrogate pair")
}

// decodesAsSent reports whether Go's JSON decoder reads the JSON text b as the characters it
// spells: b is UTF-8, and each \u escape of a UTF-16 surrogate is one half of a pair whose other
// half follows. The decoder takes a byte that is not UTF-8, and half a pair ("\ud800"), for
// U+FFFD and goes on.
func decodesAsSent(b []byte) bool {
	if !utf8.Valid(b) {
		return false
	}
	for i := 0; i+1 < len(b); i++ {
		if b[i] != '\\' {
			continue
		}
		if b[i+1] != 'u' {
			i++ // an escaped character, perhaps a backslash: not the start of another escape
			continue
		}
		r1, ok := escapedRune(b[i:])
		if !ok {
			return false
		}
		if !utf16.IsSurrogate(r1) {
			i += 5
			continue
		}
		r2, ok := escapedRune(b[i+6:])
		if !ok || utf16.DecodeRune(r1, r2) == utf8.RuneError {
			return false
		}
		i += 11
	}
	return true
}

// escapedRune is the code unit of the \uXXXX escape b begins with.
func escapedRune(b []byte) (rune, bool) {
	if len(b) < 6 || b[0] != '\\' || b[1] != 'u' {
		return 0, false
	}
	n, err := strconv.ParseUint(string(b[2:6]), 16, 16)
	return rune(n), err == nil
}

// readReason reads a mutating route's body and its required "reason": a JSON object, or a
// portal form (application/x-www-form-urlencoded), whose fields it leaves in r.PostForm. That
// the call comes from the admin API's own client or page is forgeryCheck's and the form
// token's to decide, before.
func readReason(r *http.Request) (string, []byte, *apiError) {
	body, err := io.ReadAll(io.LimitReader(r.Body, maxBody+1))
	if err != nil {
		return "", nil, badRequest("", "read the body: %v", err)
	}
	if len(body) > maxBody {
		what := "body"
		if mediaType(r) == "application/x-www-form-urlencoded" {
			what = "form"
		}
		return "", nil, tooLarge(what)
	}
	var reason *string
	if ct, _, _ := strings.Cut(r.Header.Get("Content-Type"), ";"); strings.TrimSpace(ct) == "application/x-www-form-urlencoded" {
		form, err := url.ParseQuery(string(body))
		if err != nil {
			return "", nil, badRequest("", "the form does not parse: %v", err)
		}
		r.PostForm = form
		if form.Has("reason") {
			v := form.Get("reason")
			reason = &v
		}
	} else {
		var b struct {
			Reason *string `json:"reason"`
		}
		if len(bytes.TrimSpace(body)) == 0 {
			return "", nil, badRequest("reason", "a JSON body with a \"reason\" is required")
		}
		if err := json.Unmarshal(body, &b); err != nil {
			return "", nil, badRequest("", "the body is not a JSON object: %v", err)
		}
		if !decodesAsSent(body) {
			// Go's decoder would take each such byte, or half a surrogate pair, for U+FFFD and
			// go on: the call would act on, and the audit log keep, a value other than the one
			// sent.
			return "", nil, notUTF8(body)
		}
		reason = b.Reason
	}
	if reason == nil || strings.TrimSpace(*reason) == "" {
		return "", nil, badRequest("reason", "\"reason\" is required: say why (it is kept in the audit log)")
	}
	if len(*reason) > maxReason {
		return "", nil, badRequest("reason", "\"reason\" is longer than %d bytes", maxReason)
	}
	if !isText(*reason) {
		return "", nil, badRequest("reason", "\"reason\" holds a NUL character or bytes that are not UTF-8")
	}
	return strings.TrimSpace(*reason), body, nil
}

// tooLarge refuses a body (what: "body" or "form") larger than maxBody: 413.
func tooLarge(what string) *apiError {
	return errorf(http.StatusRequestEntityTooLarge, "RequestTooLarge", "", "the %s is too large: the admin API reads at most %d bytes (64 KiB) of it", what, maxBody)
}

func newID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// The caller's identity and the reason the middleware recorded, for handlers.
type identityKey struct{}

type reasonKey struct{}

func withReason(ctx context.Context, reason string) context.Context {
	return context.WithValue(ctx, reasonKey{}, reason)
}

// auditReason is the reason the middleware recorded for the call.
func auditReason(r *http.Request) string {
	s, _ := r.Context().Value(reasonKey{}).(string)
	return s
}

type requestIDKey struct{}

func withRequestID(ctx context.Context, requestID string) context.Context {
	return context.WithValue(ctx, requestIDKey{}, requestID)
}

// requestIDFrom is the request ID the middleware gave the call (X-Request-Id).
func requestIDFrom(ctx context.Context) string {
	s, _ := ctx.Value(requestIDKey{}).(string)
	return s
}

func withIdentity(ctx context.Context, id access.Identity) context.Context {
	return context.WithValue(ctx, identityKey{}, id)
}

func identityFrom(ctx context.Context) access.Identity {
	id, _ := ctx.Value(identityKey{}).(access.Identity)
	return id
}
