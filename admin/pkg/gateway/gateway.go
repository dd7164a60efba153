// Package gateway is the break-glass gateway: the only path of an SRE into a hosted cluster.
// It serves https://<gateway>/sessions/<id>/<kube path>, checks on every request that the
// caller's person certificate names the session's person, that the session is active and
// unexpired and the person not revoked, then proxies to the session's hosted kube-apiserver
// with the session's credential (which never leaves the gateway), impersonating the person.
// A request from a browser is refused (browser.go). Every request is audited (refusals at
// most at refusallimit's rate); a session that ends cuts its open watches and streams within
// seconds (Run).
package gateway

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/openhcp/openhcp/admin/pkg/access"
	"github.com/openhcp/openhcp/admin/pkg/adminapi"
	"github.com/openhcp/openhcp/admin/pkg/audit"
	"github.com/openhcp/openhcp/admin/pkg/refusallimit"
	"github.com/openhcp/openhcp/admin/pkg/session"
	"github.com/openhcp/openhcp/cluster-service/pkg/breakglass"
	"github.com/openhcp/openhcp/internal/hostedrbac"
	"github.com/openhcp/openhcp/internal/logattr"
)

// Sessions is what the gateway reads of the sessions (session.Store).
type Sessions interface {
	Credential(ctx context.Context, id string) (session.Session, []byte, error)
	States(ctx context.Context, ids []string) (map[string]session.Session, error)
	CountActive(ctx context.Context, now time.Time) (int, error)
}

// Revocations is the SRE revocation list (revocation.List).
type Revocations interface {
	Revoked(ctx context.Context, person string, notBefore time.Time) (bool, error)
}

// Auditor appends audit records (audit.Log).
type Auditor interface {
	Append(ctx context.Context, e audit.Entry) (audit.Entry, error)
}

// DefaultPoll is how often the gateway re-reads the states of the sessions it holds open
// requests for.
const DefaultPoll = time.Second

// Config is what a gateway needs; Sessions, Revocations and Audit are required.
type Config struct {
	Sessions    Sessions
	Revocations Revocations
	Audit       Auditor
	Logger      *slog.Logger
	// Poll is how often the states of sessions with open requests are re-read (DefaultPoll).
	Poll time.Duration
	// Now is the clock (time.Now).
	Now func() time.Time
	// RefusalAudit limits the audit records of refused requests, per source and in total
	// (zero: refusallimit.Default).
	RefusalAudit refusallimit.Rates
	// MaxOpenPerPerson bounds one person's requests open at once on this replica, watches and
	// streams included (DefaultMaxOpenPerPerson); one more is refused 429.
	MaxOpenPerPerson int
}

// DefaultMaxOpenPerPerson is one person's bound of open requests on a replica. The gateway
// speaks HTTP/1.1, so each open request holds one of the replica's connections
// (serverlimits.API's MaxConns, 1,024) for as long as it lives, a watch up to its session's
// expiry: unbounded, one person's watches took every connection and no other SRE was served.
// kubectl holds one or two at a time.
const DefaultMaxOpenPerPerson = 64

// Gateway serves the sessions' requests.
type Gateway struct {
	cfg     Config
	metrics *metrics
	// refusals limits the audit records of refused requests: the audit table is the admin
	// API's, and a full one stops every admin call.
	refusals *refusallimit.Limiter

	mu   sync.Mutex
	live map[string]*liveSession
	// open counts each person's requests in flight (MaxOpenPerPerson).
	open map[string]int
}

// liveSession is a session with requests in flight: their contexts derive from ctx, which Run
// cancels when the session ends.
type liveSession struct {
	ctx       context.Context
	cancel    context.CancelFunc
	requests  int
	transport *http.Transport
	// key is what the transport was built from: a changed credential builds a new one.
	key string
}

// New checks cfg and makes a gateway.
func New(cfg Config) (*Gateway, error) {
	if cfg.Sessions == nil || cfg.Revocations == nil || cfg.Audit == nil {
		return nil, errors.New("gateway: sessions, revocation list and audit log are required")
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Poll <= 0 {
		cfg.Poll = DefaultPoll
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.MaxOpenPerPerson <= 0 {
		cfg.MaxOpenPerPerson = DefaultMaxOpenPerPerson
	}
	refusals, err := refusallimit.New(cfg.RefusalAudit, cfg.Now)
	if err != nil {
		return nil, fmt.Errorf("gateway: RefusalAudit: %w", err)
	}
	return &Gateway{cfg: cfg, metrics: newMetrics(), refusals: refusals, live: map[string]*liveSession{}, open: map[string]int{}}, nil
}

// Handler serves /sessions/{id}/{kube path}.
func (g *Gateway) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("/sessions/{id}/{path...}", g.serve)
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		writeStatus(w, http.StatusNotFound, "NotFound", "the gateway serves https://<gateway>/sessions/<session ID>/<kube API path> only; `hcpctl breakglass open` writes a kubeconfig for it")
	})
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body := &bodyRead{ReadCloser: r.Body}
		r.Body = body
		if !isUpgrade(r) {
			// No keep-alive: a connection is held only while a request is open on it, which
			// MaxOpenPerPerson bounds per person. Kept alive, one person's quick requests on 1,024
			// connections left idle held every connection of the replica (HTTP/1.1) for the idle
			// timeout. A break-glass session makes few requests; each pays a handshake.
			w.Header().Set("Connection", "close")
		}
		mux.ServeHTTP(w, r)
		if r.ContentLength != 0 && !body.done.Load() {
			// Answered without reading the whole body (a refusal, an unknown path, an answer
			// before the upload's end): net/http would read up to 256 KiB of what is left before
			// it sends the answer, and the listener has no read timeout (streams live as long as
			// their session), so a body sent one byte at a time held the connection, and with
			// enough of them every connection of the replica, for ever. Its read ends now: the
			// answer goes out and the connection is closed.
			_ = http.NewResponseController(w).SetReadDeadline(time.Now())
		}
	})
}

// bodyRead records whether a request body was read to its end. done is atomic: the proxy's
// transport may still read the body after the handler returned (an upstream that answers before
// the upload's end).
type bodyRead struct {
	io.ReadCloser
	done atomic.Bool
}

func (b *bodyRead) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if err == io.EOF {
		b.done.Store(true)
	}
	return n, err
}

// request is what the gateway knows of one request as it goes.
type request struct {
	id           access.Identity
	subject      string
	sess         session.Session
	requestID    string
	corrID       string
	verb         string
	path         string
	start        time.Time
	audited      bool
	upstreamCode int
}

func (g *Gateway) serve(w http.ResponseWriter, r *http.Request) {
	rq := &request{requestID: newID(), start: time.Now(), path: "/" + r.PathValue("path")}
	rq.verb = verb(r, rq.path)
	rq.corrID = r.Header.Get(adminapi.HeaderCorrelationID)
	if rq.corrID == "" || len(rq.corrID) > 128 {
		rq.corrID = rq.requestID
	}
	w.Header().Set(adminapi.HeaderRequestID, rq.requestID)
	sessionID := r.PathValue("id")
	rq.sess.ID = sessionID
	log := g.cfg.Logger.With("requestID", rq.requestID, "correlationRequestID", rq.corrID, logattr.KeySessionID, sessionID)
	if r.TLS != nil && len(r.TLS.PeerCertificates) > 0 {
		rq.subject = r.TLS.PeerCertificates[0].Subject.String()
	}

	id, err := access.Identify(r.TLS)
	if err != nil {
		g.refuse(w, r, rq, log, http.StatusUnauthorized, "Unauthorized", "no-identity", err.Error())
		return
	}
	rq.id = id
	// Before the session is read: a page of another site learns nothing of it either.
	if why := fromBrowser(r); why != "" {
		g.refuse(w, r, rq, log, http.StatusForbidden, "Forbidden", "browser-request",
			"refused as a request from a browser ("+why+"): a page of any site could make a browser send it with your certificate. "+
				"The gateway serves kubectl and client-go only; use the kubeconfig `hcpctl breakglass open` writes")
		return
	}
	revoked, err := g.cfg.Revocations.Revoked(r.Context(), id.Person, r.TLS.VerifiedChains[0][0].NotBefore)
	if err != nil {
		log.Error("revocation list unreadable; refusing the request", "error", err)
		g.refuse(w, r, rq, log, http.StatusServiceUnavailable, "ServiceUnavailable", "unavailable", "the revocation list cannot be read; retry later")
		return
	}
	if revoked {
		g.refuse(w, r, rq, log, http.StatusForbidden, "Forbidden", "revoked-person",
			fmt.Sprintf("the certificate of %s was revoked; ask for a new one and open a new session", id.Person))
		return
	}
	if !g.enter(id.Person) {
		g.refuse(w, r, rq, log, http.StatusTooManyRequests, "TooManyRequests", "too-many-open",
			fmt.Sprintf("%s has %d requests open on this gateway replica, its most; end a watch or stream first", id.Person, g.cfg.MaxOpenPerPerson))
		return
	}
	defer g.leave(id.Person)
	sess, kubeconfig, err := g.cfg.Sessions.Credential(r.Context(), sessionID)
	switch {
	case errors.Is(err, session.ErrNotFound):
		g.refuse(w, r, rq, log, http.StatusNotFound, "NotFound", "unknown-session", fmt.Sprintf("no break-glass session %s", sessionID))
		return
	case err != nil:
		log.Error("session unreadable; refusing the request", "error", err)
		g.refuse(w, r, rq, log, http.StatusServiceUnavailable, "ServiceUnavailable", "unavailable", "the session cannot be read; retry later")
		return
	}
	rq.sess = sess
	if sess.Person != id.Person {
		// The same answer as for an unknown session would hide that the ID exists, but the
		// session's owner is no secret among SREs, and a clear answer helps the one who mixed up
		// kubeconfigs.
		g.refuse(w, r, rq, log, http.StatusForbidden, "Forbidden", "not-owner",
			fmt.Sprintf("break-glass session %s is %s's, not %s's: open your own with `hcpctl breakglass open`", sessionID, sess.Person, id.Person))
		return
	}
	if sess.Group != id.Group {
		// A session carries the access its opener's group allowed; a person moved to another
		// group by a new certificate carries none of it over.
		g.refuse(w, r, rq, log, http.StatusForbidden, "Forbidden", "not-group",
			fmt.Sprintf("break-glass session %s was opened as %s of %s; this certificate is of %s: open a new session with it (`hcpctl breakglass open`)", sessionID, sess.Person, sess.Group, id.Group))
		return
	}
	now := g.cfg.Now()
	if !sess.Live(now) {
		state := sess.StateAt(now)
		msg := fmt.Sprintf("break-glass session %s is %s", sessionID, state)
		switch state {
		case session.AwaitingApproval:
			msg += ": a second sre-admin must approve it first (`hcpctl breakglass approve " + sessionID + "`)"
		case session.Expired:
			msg += fmt.Sprintf(" since %s: open a new one with `hcpctl breakglass open`", sess.Expires.UTC().Format(time.RFC3339))
		case session.Closed, session.Revoked:
			msg += " (by " + sess.ClosedBy + "): open a new one with `hcpctl breakglass open`"
		}
		g.refuse(w, r, rq, log, http.StatusForbidden, "Forbidden", "session-"+state, msg)
		return
	}
	group, ok := impersonatedGroups[sess.Access]
	if !ok {
		g.refuse(w, r, rq, log, http.StatusForbidden, "Forbidden", "bad-access", fmt.Sprintf("break-glass session %s has an unknown access %q", sessionID, sess.Access))
		return
	}
	ls, target, err := g.acquire(sess, kubeconfig)
	if err != nil {
		log.Error("session credential unusable", "error", err)
		g.refuse(w, r, rq, log, http.StatusBadGateway, "BadGateway", "bad-credential", "the session's credential cannot be used; close it and open a new one")
		return
	}
	defer g.release(sess.ID, ls)

	ctx, cancel := context.WithDeadline(r.Context(), sess.Expires)
	defer cancel()
	stop := context.AfterFunc(ls.ctx, cancel)
	defer stop()
	stream := rq.verb == "watch" || isUpgrade(r)
	if stream {
		g.metrics.streams.Inc()
		defer g.metrics.streams.Dec()
	}
	proxy := &httputil.ReverseProxy{
		Transport:     ls.transport,
		FlushInterval: -1, // watches flush every event at once
		ErrorLog:      slog.NewLogLogger(log.Handler(), slog.LevelInfo),
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.Out.URL.Scheme, pr.Out.URL.Host = target.Scheme, target.Host
			pr.Out.URL.Path = strings.TrimSuffix(target.Path, "/") + rq.path
			pr.Out.URL.RawPath = ""
			pr.Out.Host = target.Host
			for k := range pr.Out.Header {
				if strings.HasPrefix(k, "Impersonate-") {
					pr.Out.Header.Del(k)
				}
			}
			pr.Out.Header.Del("Authorization")
			pr.Out.Header.Del("Cookie")
			pr.Out.Header.Set("Impersonate-User", hostedrbac.SREImpersonatedUser(sess.Person))
			pr.Out.Header.Set("Impersonate-Group", group)
		},
		ModifyResponse: func(resp *http.Response) error {
			// The record is written before a byte of the answer reaches the SRE.
			rq.upstreamCode = resp.StatusCode
			return g.record(resp.Request.Context(), rq, log, audit.Completed, resp.StatusCode, "")
		},
		ErrorHandler: func(w http.ResponseWriter, r *http.Request, err error) {
			code, msg := http.StatusBadGateway, "the hosted cluster's API server did not answer: "+err.Error()
			switch {
			case errors.Is(err, errAudit):
				code, msg = http.StatusServiceUnavailable, "the audit log cannot be written, so the answer is withheld; retry later"
			case ended(ls, sess, g.cfg.Now()):
				code, msg = http.StatusForbidden, fmt.Sprintf("break-glass session %s ended", sess.ID)
			}
			_ = g.record(r.Context(), rq, log, audit.Completed, code, "")
			writeStatus(w, code, http.StatusText(code), msg)
		},
	}
	// No record, no request: the request is recorded (Allowed) before it goes to the hosted
	// cluster, as the admin API records a call before its handler runs; the record of its
	// answer (Completed, with the status) follows. Recorded after the answer alone, a request
	// whose record failed, or whose caller went meanwhile, had acted with no record.
	if err := g.append(r.Context(), rq.entry(audit.Allowed, 0, "")); err != nil {
		log.Error("audit record not written; the request is not sent", "error", err)
		g.metrics.refusals.WithLabelValues("audit-unavailable").Inc()
		g.metrics.duration.Observe(time.Since(rq.start).Seconds())
		writeStatus(w, http.StatusServiceUnavailable, "ServiceUnavailable", "the audit log cannot be written, so the request is not sent; retry later")
		return
	}
	sw := &statusWriter{ResponseWriter: w, ctx: ctx}
	// Deferred: a stream cut by its session's end leaves the proxy by a panic
	// (http.ErrAbortHandler, which the server swallows), and is counted all the same.
	defer func() {
		code := sw.code
		if code == 0 {
			// An upgrade's 101 goes out on the hijacked connection, past the ResponseWriter.
			code = rq.upstreamCode
		}
		g.metrics.proxied.WithLabelValues(fmt.Sprint(code)).Inc()
		g.metrics.duration.Observe(time.Since(rq.start).Seconds())
		log.Info("proxied", "person", id.Person, "clusterID", sess.ClusterID, "verb", rq.verb, "path", rq.path, "code", code,
			"duration", time.Since(rq.start).Seconds(), "ended_by_session", ended(ls, sess, g.cfg.Now()))
	}()
	proxy.ServeHTTP(sw, r.WithContext(ctx))
}

// ended reports whether a request's session has ended (closed, revoked, expired) rather than
// its caller having gone.
func ended(ls *liveSession, sess session.Session, now time.Time) bool {
	return ls.ctx.Err() != nil || !now.Before(sess.Expires)
}

// impersonatedGroups is the kube group the gateway impersonates for each access.
var impersonatedGroups = map[string]string{
	session.AccessReadOnly: breakglass.SREImpersonatedGroupReadOnly,
	session.AccessAdmin:    breakglass.SREImpersonatedGroupAdmin,
}

// refuse answers a refused request and audits it, unless its source, or all sources
// together, are past their rate of recorded refusals (refusallimit): then it is counted in
// gateway_audit_refusals_dropped_total and neither recorded nor logged, so a revoked (leaked)
// certificate cannot fill the audit table or the log.
func (g *Gateway) refuse(w http.ResponseWriter, r *http.Request, rq *request, log *slog.Logger, code int, reason, metric, msg string) {
	g.metrics.refusals.WithLabelValues(metric).Inc()
	// A refused caller's connection ends with the answer (HTTP/2: GOAWAY), so it pays a
	// handshake per refused request: kept alive by one refusal every idle period, 1,024 of them
	// would hold every connection of the replica.
	w.Header().Set("Connection", "close")
	outcome := audit.Forbidden
	if code == http.StatusUnauthorized {
		outcome = audit.Unauthenticated
	}
	if g.refusals.AllowRefusal(r, rq.id.Person) {
		_ = g.record(r.Context(), rq, log, outcome, code, msg)
		log.Warn("refused", "person", rq.id.Person, "reason", metric, "code", code, "message", msg)
	} else {
		g.metrics.refusalsDropped.Inc()
	}
	g.metrics.duration.Observe(time.Since(rq.start).Seconds())
	writeStatus(w, code, reason, msg)
}

// record appends the request's audit record of its answer or refusal (once) and logs it; an
// error means the record is not written, and the answer is not delivered.
func (g *Gateway) record(ctx context.Context, rq *request, log *slog.Logger, outcome string, code int, msg string) error {
	if rq.audited {
		return nil
	}
	rq.audited = true
	if err := g.append(ctx, rq.entry(outcome, code, msg)); err != nil {
		log.Error("audit record not written; the answer is withheld", "error", err)
		return err
	}
	return nil
}

// entry is the request's audit record with the given outcome, status and message.
func (rq *request) entry(outcome string, code int, msg string) audit.Entry {
	return audit.Entry{RequestID: rq.requestID, CorrelationID: rq.corrID, Person: rq.id.Person, Group: rq.id.Group, Subject: rq.subject,
		Method: rq.verb, Route: Route(rq.sess.ClusterID), Path: cut(rq.path, 2048), Target: rq.sess.ID, Reason: cut(msg, 1024),
		Outcome: outcome, Status: code}
}

// appendTimeout bounds one audit append, which runs whether or not the caller is still there.
const appendTimeout = 10 * time.Second

// append writes e to the audit log under a context of its own (bounded, not cancelled by the
// caller's going, the session's end or its expiry): a request that reached the hosted cluster
// is recorded even if its caller is gone.
func (g *Gateway) append(ctx context.Context, e audit.Entry) error {
	actx, cancel := context.WithTimeout(context.WithoutCancel(ctx), appendTimeout)
	defer cancel()
	if _, err := g.cfg.Audit.Append(actx, e); err != nil {
		return fmt.Errorf("%w: %w", errAudit, err)
	}
	return nil
}

// errAudit wraps a failure to append a request's audit record.
var errAudit = errors.New("append the audit record")

// RoutePrefix starts the route of every gateway audit record, so `hcpctl audit --route gateway`
// lists them; Route adds the session's cluster.
const RoutePrefix = "gateway"

// Route is the audit route of a request on a cluster's session.
func Route(clusterID string) string { return RoutePrefix + " cluster/" + clusterID }

// acquire counts a request in for sess and returns its live session with a transport built
// from kubeconfig, and the API server's URL.
func (g *Gateway) acquire(sess session.Session, kubeconfig []byte) (*liveSession, *url.URL, error) {
	cfg, err := clientcmd.RESTConfigFromKubeConfig(kubeconfig)
	if err != nil {
		return nil, nil, fmt.Errorf("session %s: parse credential: %w", sess.ID, err)
	}
	target, err := url.Parse(cfg.Host)
	if err != nil || target.Scheme != "https" || target.Host == "" {
		return nil, nil, fmt.Errorf("session %s: credential's server %q is not an https URL", sess.ID, cfg.Host)
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	ls := g.live[sess.ID]
	if ls == nil || ls.key != string(kubeconfig) {
		tlsCfg, err := rest.TLSConfigFor(cfg)
		if err != nil {
			return nil, nil, fmt.Errorf("session %s: credential's TLS: %w", sess.ID, err)
		}
		if ls == nil {
			ls = &liveSession{}
			ls.ctx, ls.cancel = context.WithCancel(context.Background())
			g.live[sess.ID] = ls
		} else {
			ls.transport.CloseIdleConnections()
		}
		// HTTP/1.1 only (a custom TLS config without ForceAttemptHTTP2): upgrades to exec and
		// port-forward streams need it.
		ls.transport = &http.Transport{TLSClientConfig: tlsCfg, Proxy: nil, MaxIdleConnsPerHost: 16, IdleConnTimeout: 90 * time.Second,
			TLSHandshakeTimeout: 10 * time.Second, ResponseHeaderTimeout: 0}
		ls.key = string(kubeconfig)
	}
	ls.requests++
	return ls, target, nil
}

// enter counts a request of person in, unless the person has MaxOpenPerPerson open already.
func (g *Gateway) enter(person string) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.open[person] >= g.cfg.MaxOpenPerPerson {
		return false
	}
	g.open[person]++
	return true
}

// leave counts a request of person out.
func (g *Gateway) leave(person string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.open[person]--; g.open[person] <= 0 {
		delete(g.open, person)
	}
}

// release counts a request of ls out; the last one of a session drops its connections. A
// session that Run ended meanwhile is no longer in live (a later request of the same ID, if its
// state allowed one, has a new entry that this one must not count out).
func (g *Gateway) release(id string, ls *liveSession) {
	g.mu.Lock()
	defer g.mu.Unlock()
	ls.requests--
	if ls.requests > 0 {
		return
	}
	ls.cancel()
	ls.transport.CloseIdleConnections()
	if g.live[id] == ls {
		delete(g.live, id)
	}
}

// Run cancels the requests of every session that ended (closed, revoked, expired, gone)
// within one Poll of the end, whichever replica or API ended it, and keeps
// gateway_sessions_active current, until ctx ends.
func (g *Gateway) Run(ctx context.Context) error {
	t := time.NewTicker(g.cfg.Poll)
	defer t.Stop()
	for {
		g.check(ctx)
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}

// check is one round of Run.
func (g *Gateway) check(ctx context.Context) {
	g.mu.Lock()
	ids := make([]string, 0, len(g.live))
	for id := range g.live {
		ids = append(ids, id)
	}
	g.mu.Unlock()
	cctx, cancel := context.WithTimeout(ctx, max(g.cfg.Poll, 2*time.Second))
	defer cancel()
	now := g.cfg.Now()
	if n, err := g.cfg.Sessions.CountActive(cctx, now); err == nil {
		g.metrics.active.Set(float64(n))
	}
	if len(ids) == 0 {
		return
	}
	states, err := g.cfg.Sessions.States(cctx, ids)
	if err != nil {
		// Open requests keep their session's expiry as deadline; a close is seen at the next
		// round that can read the database.
		g.cfg.Logger.Warn("session states unreadable; open streams are checked again next round", "error", err)
		return
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	for _, id := range ids {
		ls := g.live[id]
		if ls == nil {
			continue
		}
		if s, ok := states[id]; !ok || !s.Live(now) {
			state := "gone"
			if ok {
				state = s.StateAt(now)
			}
			g.cfg.Logger.Info("session ended; closing its open requests", logattr.KeySessionID, id, "state", state, "requests", ls.requests)
			ls.cancel()
			ls.transport.CloseIdleConnections()
			delete(g.live, id)
		}
	}
}

// Ready reports whether the sessions can be read.
func (g *Gateway) Ready(ctx context.Context) error {
	_, err := g.cfg.Sessions.CountActive(ctx, g.cfg.Now())
	return err
}

// verb is the request's kube verb as far as method, kube path and query say: watch for a GET
// with watch=true or 1; connect for an upgrade (GET or POST) of a connect subresource (exec,
// attach, port-forward, proxy). An Upgrade header elsewhere is no connect: the kube-apiserver
// ignores it and does what the method says, so a DELETE sent with one was recorded as a connect.
func verb(r *http.Request, path string) string {
	if isUpgrade(r) && (r.Method == http.MethodGet || r.Method == http.MethodPost) && connectSubresource(path) {
		return "connect"
	}
	switch r.Method {
	case http.MethodGet:
		if w := r.URL.Query().Get("watch"); w == "true" || w == "1" {
			return "watch"
		}
		return "get"
	case http.MethodHead:
		return "get"
	case http.MethodPost:
		return "create"
	case http.MethodPut:
		return "update"
	case http.MethodPatch:
		return "patch"
	case http.MethodDelete:
		return "delete"
	}
	return cut(strings.ToLower(r.Method), maxVerb)
}

// connectSubresource reports whether a kube path names a subresource the kube-apiserver serves
// as a connect: a pod's exec, attach, portforward or proxy, a service's or a node's proxy (all
// in the core group).
func connectSubresource(path string) bool {
	s := strings.Split(strings.Trim(path, "/"), "/")
	if len(s) < 5 || s[0] != "api" || s[1] != "v1" {
		return false
	}
	switch {
	case s[2] == "nodes":
		return s[4] == "proxy"
	case s[2] == "namespaces" && len(s) >= 7 && s[4] == "pods":
		return s[6] == "exec" || s[6] == "attach" || s[6] == "portforward" || s[6] == "proxy"
	case s[2] == "namespaces" && len(s) >= 7 && s[4] == "services":
		return s[6] == "proxy"
	}
	return false
}

// maxVerb bounds the verb a request's own method becomes: a method is any token the caller
// sends, and it goes into the audit record and the log; HTTP's methods and its registered
// extensions are shorter, so they are kept whole.
const maxVerb = 32

func isUpgrade(r *http.Request) bool {
	return r.Header.Get("Upgrade") != "" && strings.Contains(strings.ToLower(r.Header.Get("Connection")), "upgrade")
}

// writeStatus answers as a kube-apiserver does, so kubectl shows the message:
// "Error from server (Forbidden): …".
func writeStatus(w http.ResponseWriter, code int, reason, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(map[string]any{"kind": "Status", "apiVersion": "v1", "metadata": map[string]any{},
		"status": "Failure", "message": msg, "reason": reason, "code": code})
}

// statusWriter records the status code; it passes Flush and Hijack through (watches,
// upgrades). A hijacked connection (an upgraded stream) is closed when ctx ends: the proxy
// closes its side to the apiserver then, but would only half-close the SRE's side and wait for
// the client to hang up.
type statusWriter struct {
	http.ResponseWriter
	ctx  context.Context
	code int
}

// Hijack hands the connection to the proxy's upgrade, and closes it when the request's
// context (its session's) ends.
func (s *statusWriter) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	conn, rw, err := http.NewResponseController(s.ResponseWriter).Hijack()
	if err != nil {
		return nil, nil, err
	}
	stop := context.AfterFunc(s.ctx, func() { conn.Close() })
	return &closeConn{Conn: conn, stop: stop}, rw, nil
}

// closeConn stops its context's close once the proxy closed it itself.
type closeConn struct {
	net.Conn
	stop func() bool
}

func (c *closeConn) Close() error {
	c.stop()
	return c.Conn.Close()
}

func (s *statusWriter) WriteHeader(code int) {
	if s.code == 0 {
		s.code = code
	}
	s.ResponseWriter.WriteHeader(code)
}

func (s *statusWriter) Write(b []byte) (int, error) {
	if s.code == 0 {
		s.code = http.StatusOK
	}
	return s.ResponseWriter.Write(b)
}

// Unwrap lets http.ResponseController reach Flush and Hijack.
func (s *statusWriter) Unwrap() http.ResponseWriter { return s.ResponseWriter }

func newID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

func cut(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n]
}
