package server

import (
	"context"
	"crypto/rand"
	"encoding/base32"
	"errors"
	"fmt"
	"net/http"
	"regexp"
	"strings"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/openhcp/openhcp/admin/pkg/access"
	"github.com/openhcp/openhcp/admin/pkg/adminapi"
	"github.com/openhcp/openhcp/admin/pkg/session"
	csv1 "github.com/openhcp/openhcp/cluster-service/api/v1"
	"github.com/openhcp/openhcp/cluster-service/pkg/breakglass"
	"github.com/openhcp/openhcp/cluster-service/pkg/srestatement"
	"github.com/openhcp/openhcp/internal/logattr"
)

// BreakGlassTTL bounds the lifetime of an SRE's break-glass credential. DefaultBreakGlassTTL is
// the one owner of its defaults; the admin command's --breakglass-ttl-* flags override them.
// ReadOnlyMax bounds read-only credentials, which need no approval, more tightly.
type BreakGlassTTL struct {
	Min, Max, Default, ReadOnlyMax time.Duration
}

// DefaultBreakGlassTTL: at least 10 minutes (the least a Kubernetes CSR may ask for), at most
// one 8-hour shift for an approved admin credential and 1 hour for a read-only one, 1 hour
// unless asked.
func DefaultBreakGlassTTL() BreakGlassTTL {
	return BreakGlassTTL{Min: 10 * time.Minute, Max: 8 * time.Hour, Default: time.Hour, ReadOnlyMax: time.Hour}
}

// Validate checks the bounds themselves (a misconfiguration, reported at start).
func (b BreakGlassTTL) Validate() error {
	switch {
	case b.Min < 10*time.Minute:
		return fmt.Errorf("break-glass TTL minimum %s is below 10m, the least a Kubernetes CSR may ask for", b.Min)
	case b.Max < b.Min:
		return fmt.Errorf("break-glass TTL maximum %s is below the minimum %s", b.Max, b.Min)
	case b.Default < b.Min || b.Default > b.Max:
		return fmt.Errorf("break-glass TTL default %s is outside %s..%s", b.Default, b.Min, b.Max)
	case b.Max > 1<<31*time.Second:
		return fmt.Errorf("break-glass TTL maximum %s does not fit a CSR's expirationSeconds", b.Max)
	case b.ReadOnlyMax < b.Min || b.ReadOnlyMax > b.Max:
		return fmt.Errorf("break-glass read-only TTL maximum %s is outside %s..%s", b.ReadOnlyMax, b.Min, b.Max)
	}
	return nil
}

// API is the bounds as the admin API shows them.
func (b BreakGlassTTL) API() adminapi.BreakGlassTTL {
	return adminapi.BreakGlassTTL{Min: b.Min.String(), Max: b.Max.String(), Default: b.Default.String()}
}

// sreAccess maps the admin API's access names to Cluster Service's, and the permission each
// needs (docs/sre.md#break-glass).
var sreAccess = map[string]struct {
	cs   csv1.SREAccess
	perm access.Permission
}{
	session.AccessReadOnly: {csv1.SREAccess_SRE_ACCESS_READ_ONLY, access.RequestBreakGlass},
	session.AccessAdmin:    {csv1.SREAccess_SRE_ACCESS_ADMIN, access.RequestBreakGlassAdmin},
}

func accessName(a csv1.SREAccess) string {
	for name, v := range sreAccess {
		if v.cs == a {
			return name
		}
	}
	return a.String()
}

// parseBreakGlassRequest reads a request's body: access (default read-only) and ttl (default
// bounds.Default, within bounds). Errors name the field.
func parseBreakGlassRequest(r *http.Request, bounds BreakGlassTTL) (csv1.SREAccess, access.Permission, time.Duration, error) {
	var body adminapi.BreakGlassRequest
	if err := decodeStrict(r, &body); err != nil {
		return 0, "", 0, err
	}
	return breakGlassFields(body, bounds)
}

// breakGlassFields checks a request's access and ttl (from the JSON body or the portal's form).
func breakGlassFields(body adminapi.BreakGlassRequest, bounds BreakGlassTTL) (csv1.SREAccess, access.Permission, time.Duration, error) {
	if body.Access == "" {
		body.Access = adminapi.AccessReadOnly
	}
	acc, ok := sreAccess[body.Access]
	if !ok {
		return 0, "", 0, badRequest("access", "access must be %q or %q, got %q", adminapi.AccessReadOnly, adminapi.AccessAdmin, body.Access)
	}
	ttl, max := bounds.Default, bounds.Max
	if acc.cs == csv1.SREAccess_SRE_ACCESS_READ_ONLY {
		// Read-only needs no second SRE, so it is kept short.
		ttl, max = min(ttl, bounds.ReadOnlyMax), bounds.ReadOnlyMax
	}
	if body.TTL != "" {
		d, err := time.ParseDuration(body.TTL)
		if err != nil {
			return 0, "", 0, badRequest("ttl", "ttl must be a duration such as \"30m\" or \"2h\", got %q", body.TTL)
		}
		if d < bounds.Min || d > max {
			return 0, "", 0, badRequest("ttl", "ttl %s is outside the allowed %s to %s for %s access", d, bounds.Min, max, body.Access)
		}
		if d%time.Second != 0 {
			return 0, "", 0, badRequest("ttl", "ttl must be whole seconds, got %s", d)
		}
		ttl = d
	}
	return acc.cs, acc.perm, ttl, nil
}

// csIDRE is a Cluster Service ID (credential, revocation, cluster).
var csIDRE = regexp.MustCompile(`^[0-9a-v]{32}$`)

var credentialIDEncoding = base32.HexEncoding.WithPadding(base32.NoPadding)

// newCredentialID is a Cluster Service credential or revocation ID: 32 of [0-9a-v].
func newCredentialID() string {
	var b [20]byte
	_, _ = rand.Read(b[:])
	return strings.ToLower(credentialIDEncoding.EncodeToString(b[:]))
}

// issuePoll is how often a request looks whether its credential was issued.
const issuePoll = 200 * time.Millisecond

// requestBreakGlass serves POST /admin/v1/breakglass/{id...}: opens a break-glass session for
// the calling SRE on the cluster. Read-only: the credential is obtained from Cluster Service at
// once and kept, sealed, with the session (201, active). Admin: the session awaits a second
// sre-admin's approval (202, approvals.go). The answer never carries the credential: the SRE
// reaches the cluster through the gateway (docs/sre.md#break-glass).
func (s *Server) requestBreakGlass(w http.ResponseWriter, r *http.Request) error {
	if err := knownParams(r); err != nil {
		return err
	}
	if s.cfg.Credentials == nil || s.cfg.Sessions == nil {
		return errorf(http.StatusServiceUnavailable, "Unavailable", "", "this admin API has no Cluster Service credentials client or session store (--session-key-file)")
	}
	acc, perm, ttl, err := parseBreakGlassRequest(r, s.cfg.BreakGlassTTL)
	if err != nil {
		return err
	}
	var sess adminapi.BreakGlassSession
	code := http.StatusCreated
	if acc == csv1.SREAccess_SRE_ACCESS_ADMIN {
		sess, err = s.requestAdminBreakGlass(r, r.PathValue("id"), perm, ttl)
		code = http.StatusAccepted
	} else {
		sess, err = s.openReadOnlySession(r, r.PathValue("id"), acc, perm, ttl)
	}
	if err != nil {
		return err
	}
	writeJSON(w, code, sess)
	return nil
}

// openReadOnlySession asks Cluster Service for the caller's read-only credential on cluster,
// waits for it to be signed, and opens an active session holding it.
func (s *Server) openReadOnlySession(r *http.Request, cluster string, acc csv1.SREAccess, perm access.Permission, ttl time.Duration) (adminapi.BreakGlassSession, error) {
	id := identityFrom(r.Context())
	if !id.May(perm) {
		return adminapi.BreakGlassSession{}, errorf(http.StatusForbidden, adminapi.CodeForbidden, "access",
			"group %s may not open %s break-glass sessions (needs %s)", id.Group, accessName(acc), perm)
	}
	if acc != csv1.SREAccess_SRE_ACCESS_READ_ONLY {
		// Admin access is issued only through a second SRE's approval (approveBreakGlass).
		return adminapi.BreakGlassSession{}, fmt.Errorf("open %s break-glass session without approval: refused", accessName(acc))
	}
	ctx, cancel := context.WithTimeout(r.Context(), s.cfg.Timeout)
	defer cancel()
	cl, _, err := s.findCluster(ctx, cluster)
	if err != nil {
		return adminapi.BreakGlassSession{}, err
	}
	sre := &csv1.SRECredential{Person: id.Person, Access: acc, ValiditySeconds: int32(ttl / time.Second), Reason: auditReason(r)}
	credID := newCredentialID()
	statement := func() (*csv1.SignedSREStatement, error) { return s.statement(r.Context(), id, credID, cl.GetId(), sre) }
	signed, err := statement()
	if err != nil {
		return adminapi.BreakGlassSession{}, err
	}
	cred, err := s.cfg.Credentials.RequestCredential(ctx, &csv1.RequestCredentialRequest{Id: credID, ClusterId: cl.GetId(), Sre: sre, SreStatement: signed})
	if err != nil {
		return adminapi.BreakGlassSession{}, upstream("request break-glass credential", cl.GetId(), err)
	}
	cred, err = s.waitKubeconfig(ctx, cred, statement)
	if err != nil {
		return adminapi.BreakGlassSession{}, err
	}
	sess, err := s.cfg.Sessions.Open(r.Context(), session.Session{ID: credID, ClusterID: cl.GetId(), Person: id.Person, Group: id.Group,
		Access: session.AccessReadOnly, Reason: sre.GetReason(), TTLSeconds: sre.GetValiditySeconds(), Expires: cred.GetStatus().GetExpirationTime().AsTime()},
		[]byte(cred.GetKubeconfig()))
	if err != nil {
		return adminapi.BreakGlassSession{}, err
	}
	s.cfg.Logger.Info("break-glass session opened", "requestID", requestIDFrom(r.Context()), logattr.KeySessionID, sess.ID, "clusterID", sess.ClusterID,
		"person", sess.Person, "access", sess.Access)
	return s.sessionView(sess, ""), nil
}

// waitKubeconfig waits (within ctx) until the management cluster signed cred and returns it
// with its kubeconfig, which Cluster Service hands out only under a fresh signed statement. A
// credential not signed in time is a 504; one that failed, a 409.
func (s *Server) waitKubeconfig(ctx context.Context, cred *csv1.Credential, statement func() (*csv1.SignedSREStatement, error)) (*csv1.Credential, error) {
	for {
		switch cred.GetStatus().GetState() {
		case csv1.CredentialState_CREDENTIAL_STATE_ISSUED:
			if cred.GetKubeconfig() != "" {
				return cred, nil
			}
		case csv1.CredentialState_CREDENTIAL_STATE_PENDING:
		default:
			return nil, errorf(http.StatusConflict, "CredentialNotIssued", cred.GetId(), "the credential of session %s on cluster %s was not issued: %s %s",
				cred.GetId(), cred.GetClusterId(), stateName(cred.GetStatus().GetState().String()), cred.GetStatus().GetMessage())
		}
		select {
		case <-ctx.Done():
			return nil, errorf(http.StatusGatewayTimeout, "CredentialNotIssued", cred.GetId(),
				"the management cluster did not sign the credential of session %s within %s; open a new session", cred.GetId(), s.cfg.Timeout)
		case <-time.After(issuePoll):
		}
		signed, err := statement()
		if err != nil {
			return nil, err
		}
		got, err := s.cfg.Credentials.GetCredential(ctx, &csv1.GetCredentialRequest{Id: cred.GetId(), SreStatement: signed, IncludeKubeconfig: true})
		if status.Code(err) == codes.DeadlineExceeded || ctx.Err() != nil {
			continue
		}
		if err != nil {
			return nil, upstream("read break-glass credential", cred.GetId(), err)
		}
		cred = got
	}
}

// statement signs what the admin API vouches for: that person (of group) asked for the SRE
// credential credID on cluster, as sre says. Cluster Service takes the person from it only.
func (s *Server) statement(ctx context.Context, id access.Identity, credID, cluster string, sre *csv1.SRECredential) (*csv1.SignedSREStatement, error) {
	if s.cfg.StatementKey == nil {
		return nil, errorf(http.StatusServiceUnavailable, "Unavailable", "", "this admin API has no SRE statement key (--sre-statement-key), so Cluster Service would refuse the credential")
	}
	signed, err := srestatement.Sign(s.cfg.StatementKey, &csv1.SREStatement{Person: id.Person, Group: id.Group, ClusterId: cluster, CredentialId: credID,
		Access: sre.GetAccess(), ValiditySeconds: sre.GetValiditySeconds(), Reason: sre.GetReason(), Approver: sre.GetApprover(),
		RequestId: requestIDFrom(ctx)}, s.cfg.Now())
	if err != nil {
		return nil, fmt.Errorf("sign the SRE statement of credential %s: %w", credID, err)
	}
	return signed, nil
}

// sessionView is a session in the admin API's form; approver names an admin session's
// approver when known.
func (s *Server) sessionView(sess session.Session, approver string) adminapi.BreakGlassSession {
	now := s.cfg.Now()
	out := adminapi.BreakGlassSession{ID: sess.ID, ClusterID: sess.ClusterID, Person: sess.Person, Access: sess.Access, State: sess.StateAt(now),
		Approver: approver, TTLSeconds: sess.TTLSeconds, Reason: sess.Reason, CreateTime: sess.Created, CloseTime: sess.ClosedAt, ClosedBy: sess.ClosedBy,
		CloseReason: sess.CloseReason}
	if acc, ok := sreAccess[sess.Access]; ok {
		out.Group = breakglass.SREImpersonatedGroups[acc.cs]
	}
	exp := sess.Expires
	switch out.State {
	case session.AwaitingApproval:
		out.ApproveBefore = &exp
		out.Message = "A second sre-admin must approve it: hcpctl breakglass approve " + sess.ID
	default:
		out.ExpirationTime = &exp
	}
	if s.cfg.GatewayURL != "" {
		out.GatewayURL = strings.TrimRight(s.cfg.GatewayURL, "/") + "/sessions/" + sess.ID
	}
	return out
}

// listBreakGlass serves GET /admin/v1/breakglass?cluster=&person=&all=: break-glass sessions,
// live ones (awaiting approval, active) unless all=true, newest first.
func (s *Server) listBreakGlass(w http.ResponseWriter, r *http.Request) error {
	list, err := s.breakGlassSessions(r)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, list)
	return nil
}

func (s *Server) breakGlassSessions(r *http.Request) (adminapi.BreakGlassSessions, error) {
	out := adminapi.BreakGlassSessions{Sessions: []adminapi.BreakGlassSession{}}
	q, err := parseBreakGlassQuery(r)
	if err != nil {
		return out, err
	}
	if s.cfg.Sessions == nil {
		return out, errorf(http.StatusServiceUnavailable, "Unavailable", "", "this admin API has no break-glass session store (--session-key-file)")
	}
	ctx, cancel := context.WithTimeout(r.Context(), s.cfg.Timeout)
	defer cancel()
	clusterID := ""
	if c := q.cluster; c != "" {
		cl, _, err := s.findCluster(ctx, c)
		if err != nil {
			return out, err
		}
		clusterID = cl.GetId()
	}
	list, err := s.listSessions(ctx, session.Filter{ClusterID: clusterID, Person: q.person, All: q.all, Now: s.cfg.Now()})
	if err != nil {
		return out, err
	}
	for _, sess := range list {
		out.Sessions = append(out.Sessions, s.sessionView(sess, ""))
	}
	return out, nil
}

// breakGlassQuery is the break-glass list's query: a cluster (ARM or Cluster Service ID; found
// by the handler), a person, and whether ended credentials are listed too.
type breakGlassQuery struct {
	cluster, person string
	all             bool
}

// parseBreakGlassQuery reads the break-glass list's query; a refusal is a 400 naming the
// parameter.
func parseBreakGlassQuery(r *http.Request) (breakGlassQuery, error) {
	if err := knownParams(r, "cluster", "person", "all"); err != nil {
		return breakGlassQuery{}, err
	}
	v := r.URL.Query()
	q := breakGlassQuery{cluster: v.Get("cluster"), person: v.Get("person")}
	switch v.Get("all") {
	case "", "false":
	case "true":
		q.all = true
	default:
		return q, badRequest("all", "all must be true or false, got %q", v.Get("all"))
	}
	if q.person != "" {
		if err := checkPerson("person", q.person); err != nil {
			return q, err
		}
	}
	return q, nil
}

// parseBreakGlassRevoke reads a revoke body: exactly one of session and person.
func parseBreakGlassRevoke(r *http.Request) (adminapi.BreakGlassRevoke, error) {
	var body adminapi.BreakGlassRevoke
	if err := decodeStrict(r, &body); err != nil {
		return body, err
	}
	switch {
	case (body.Session == "") == (body.Person == ""):
		return body, badRequest("session", "send either \"session\" (a session ID) or \"person\" (every live session of that SRE), not both and not neither")
	case body.Session != "" && !csIDRE.MatchString(body.Session):
		return body, badRequest("session", "session must be a session ID (32 of [0-9a-v]), got %q", body.Session)
	case body.Person != "":
		return body, checkPerson("person", body.Person)
	}
	return body, nil
}

// revokeBreakGlass serves POST /admin/v1/breakglass-revoke {"session"|"person","reason"}: the
// sessions are revoked (the gateway refuses them and cuts their streams within seconds), and,
// because HyperShift's break-glass signer cannot revoke one certificate, Cluster Service rotates
// the SRE break-glass signer of each cluster concerned, which revokes every SRE credential of
// that cluster issued so far; the customer's credentials have their own signer and are
// untouched (docs/sre.md#break-glass). One rotation per cluster.
func (s *Server) revokeBreakGlass(w http.ResponseWriter, r *http.Request) error {
	if err := knownParams(r); err != nil {
		return err
	}
	if s.cfg.Credentials == nil || s.cfg.Sessions == nil {
		return errorf(http.StatusServiceUnavailable, "Unavailable", "", "this admin API has no Cluster Service credentials client or session store")
	}
	body, err := parseBreakGlassRevoke(r)
	if err != nil {
		return err
	}
	out, err := s.revokeBreakGlassSessions(r.Context(), body, identityFrom(r.Context()).Person)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

// revokeBreakGlassSessions revokes body's session, or every live one of body's person, by
// whom; then rotates the SRE signer of every cluster where one held a credential.
func (s *Server) revokeBreakGlassSessions(ctx context.Context, body adminapi.BreakGlassRevoke, by string) (adminapi.BreakGlassRevocations, error) {
	out := adminapi.BreakGlassRevocations{Revocations: []adminapi.BreakGlassRevocation{}}
	ctx, cancel := context.WithTimeout(ctx, s.cfg.Timeout)
	defer cancel()
	var list []session.Session
	if body.Session != "" {
		sess, err := s.getSession(ctx, body.Session)
		if errors.Is(err, session.ErrNotFound) {
			return out, notFound(body.Session, "no break-glass session %s", body.Session)
		}
		if err != nil {
			return out, err
		}
		list = append(list, sess)
	} else {
		var err error
		if list, err = s.listSessions(ctx, session.Filter{Person: body.Person, Now: s.cfg.Now()}); err != nil {
			return out, err
		}
	}
	byCluster := map[string]*adminapi.BreakGlassRevocation{}
	rotate := map[string]bool{}
	var order []string
	for _, sess := range list {
		_, err := s.cfg.Sessions.End(ctx, sess.ID, session.Revoked, by)
		if err != nil && !errors.Is(err, session.ErrEnded) {
			return out, err
		}
		if byCluster[sess.ClusterID] == nil {
			byCluster[sess.ClusterID] = &adminapi.BreakGlassRevocation{ClusterID: sess.ClusterID, Sessions: []string{}}
			order = append(order, sess.ClusterID)
		}
		byCluster[sess.ClusterID].Sessions = append(byCluster[sess.ClusterID].Sessions, sess.ID)
		// A deleted cluster's credentials were revoked with it: there is no signer to rotate.
		rotate[sess.ClusterID] = rotate[sess.ClusterID] || (sess.HasCredential && sess.ClosedBy != deletedClusterCloser)
	}
	for _, cluster := range order {
		v := byCluster[cluster]
		if rotate[cluster] {
			rev, err := s.cfg.Credentials.RevokeCredentials(ctx, &csv1.RevokeCredentialsRequest{Id: newCredentialID(), ClusterId: cluster, Sre: true})
			if err != nil {
				return out, upstream("revoke break-glass credentials", cluster, err)
			}
			v.RevocationID, v.State = rev.GetId(), stateName(rev.GetStatus().GetState().String())
		}
		out.Revocations = append(out.Revocations, *v)
	}
	return out, nil
}

// closeBreakGlass serves POST /admin/v1/breakglass-close/{id} {"reason"}: the caller's own
// session, or anyone's for a group that may revoke break-glass, is closed. The gateway refuses
// it from the next request and cuts its open streams within seconds. Its credential is not
// revoked at the cluster: only the gateway ever held it.
func (s *Server) closeBreakGlass(w http.ResponseWriter, r *http.Request) error {
	if err := knownParams(r); err != nil {
		return err
	}
	if s.cfg.Sessions == nil {
		return errorf(http.StatusServiceUnavailable, "Unavailable", "", "this admin API has no break-glass session store")
	}
	id := r.PathValue("id")
	if !csIDRE.MatchString(id) {
		return badRequest("id", "id must be a session ID (32 of [0-9a-v]), got %q", id)
	}
	var body struct {
		Reason string `json:"reason"`
	}
	if err := decodeStrict(r, &body); err != nil {
		return err
	}
	caller := identityFrom(r.Context())
	ctx, cancel := context.WithTimeout(r.Context(), s.cfg.Timeout)
	defer cancel()
	sess, err := s.getSession(ctx, id)
	if errors.Is(err, session.ErrNotFound) {
		return notFound(id, "no break-glass session %s", id)
	}
	if err != nil {
		return err
	}
	if sess.Person != caller.Person && !caller.May(access.RevokeBreakGlass) {
		return errorf(http.StatusForbidden, adminapi.CodeForbidden, "id", "session %s is %s's; group %s may close only its own (needs %s for another's)",
			id, sess.Person, caller.Group, access.RevokeBreakGlass)
	}
	sess, err = s.cfg.Sessions.End(ctx, id, session.Closed, caller.Person)
	if errors.Is(err, session.ErrEnded) {
		return errorf(http.StatusConflict, "SessionEnded", id, "break-glass session %s has already ended", id)
	}
	if err != nil {
		return err
	}
	s.cfg.Logger.Info("break-glass session closed", "requestID", requestIDFrom(r.Context()), logattr.KeySessionID, id, "clusterID", sess.ClusterID,
		"person", sess.Person, "closed_by", caller.Person)
	writeJSON(w, http.StatusOK, s.sessionView(sess, ""))
	return nil
}

// deletedClusterCloser is who ended a session whose cluster Cluster Service removed: the admin
// service itself (no person's name has a colon).
const deletedClusterCloser = "system:admin-service"

// endSessionsOfDeletedClusters is how a session learns that Cluster Service removed its
// cluster: at read time. Every read of sessions (list, one session, pending, the portal,
// revoke, close) first asks Cluster Service about the clusters of the sessions it read that are
// still live (one ListClusters call naming them, clustersGone); a cluster that is gone has all
// its live sessions revoked in one statement, by deletedClusterCloser with a reason naming the
// deletion, before the read is answered. It reports whether it ended any, so the caller reads
// again. A read-time check has no window (a sweep would show a deleted cluster's session live
// until its next pass) and needs no loop or leader; the store's transition trigger makes two
// racing reads harmless (the second updates nothing). Cluster Service unreachable leaves the
// sessions as stored, logged: the gateway refuses them anyway (the cluster's apiserver is gone
// and its credential was revoked with it).
func (s *Server) endSessionsOfDeletedClusters(ctx context.Context, list ...session.Session) bool {
	if s.cfg.Clusters == nil || s.cfg.Sessions == nil {
		return false
	}
	// Half the call timeout at most: the caller's own context has the same timeout, and what it
	// does after the check (a close's or a revoke's End, a list read again) must not find it
	// spent because Cluster Service hangs: ending a session may not depend on Cluster Service.
	ctx, cancel := context.WithTimeout(ctx, s.cfg.Timeout/2)
	defer cancel()
	now, seen := s.cfg.Now(), map[string]bool{}
	var live []string
	for _, sess := range list {
		if st := sess.StateAt(now); (st != session.Active && st != session.AwaitingApproval) || seen[sess.ClusterID] {
			continue
		}
		seen[sess.ClusterID] = true
		live = append(live, sess.ClusterID)
	}
	ended := false
	for _, id := range s.clustersGone(ctx, live) {
		n, err := s.cfg.Sessions.EndCluster(ctx, id, deletedClusterCloser, "cluster "+id+" was deleted at Cluster Service")
		if err != nil {
			s.cfg.Logger.Warn("could not end the break-glass sessions of a deleted cluster", "clusterID", id, "error", err)
			continue
		}
		if n > 0 {
			ended = true
			s.cfg.Logger.Info("break-glass sessions of a deleted cluster revoked", "clusterID", id, "sessions", n, "closed_by", deletedClusterCloser)
		}
	}
	return ended
}

// clustersAskedAtOnce is how many cluster IDs one ListClusters call of clustersGone names
// (Cluster Service's bound on ids).
const clustersAskedAtOnce = 1000

// clustersGone returns those of ids that Cluster Service no longer holds, asking with one
// ListClusters call per clustersAskedAtOnce IDs (an ID it does not hold is left out of the
// answer), however many sessions and clusters a read holds. A call that fails decides nothing:
// its clusters are not reported gone; one refused as invalid is asked again ID by ID, so only
// the ID Cluster Service refuses stays undecided.
func (s *Server) clustersGone(ctx context.Context, ids []string) []string {
	var gone []string
	for len(ids) > 0 {
		chunk := ids[:min(len(ids), clustersAskedAtOnce)]
		ids = ids[len(chunk):]
		held := map[string]bool{}
		req := &csv1.ListClustersRequest{Ids: chunk, PageSize: int32(len(chunk))}
		for {
			resp, err := s.cfg.Clusters.ListClusters(ctx, req)
			if status.Code(err) == codes.InvalidArgument && len(chunk) > 1 {
				// One ID Cluster Service refuses (a session row of another shape) must not keep
				// the others' sessions live: those IDs are asked one by one instead.
				for _, id := range chunk {
					gone = append(gone, s.clustersGone(ctx, []string{id})...)
				}
				held = nil
				break
			}
			if err != nil {
				s.cfg.Logger.Warn("could not learn whether break-glass sessions' clusters still exist", "clusters", len(chunk), "error", err)
				held = nil
				break
			}
			for _, c := range resp.GetClusters() {
				held[c.GetId()] = true
			}
			if resp.GetNextPageToken() == "" {
				break
			}
			req.PageToken = resp.GetNextPageToken()
		}
		if held == nil {
			continue
		}
		for _, id := range chunk {
			if !held[id] {
				gone = append(gone, id)
			}
		}
	}
	return gone
}

// getSession reads one session, ended first if its cluster was deleted.
func (s *Server) getSession(ctx context.Context, id string) (session.Session, error) {
	sess, err := s.cfg.Sessions.Get(ctx, id)
	if err != nil || !s.endSessionsOfDeletedClusters(ctx, sess) {
		return sess, err
	}
	return s.cfg.Sessions.Get(ctx, id)
}

// listSessions lists sessions, those of deleted clusters ended first.
func (s *Server) listSessions(ctx context.Context, f session.Filter) ([]session.Session, error) {
	list, err := s.cfg.Sessions.List(ctx, f)
	if err != nil || !s.endSessionsOfDeletedClusters(ctx, list...) {
		return list, err
	}
	return s.cfg.Sessions.List(ctx, f)
}
