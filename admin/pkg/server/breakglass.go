package server

import (
	"context"
	"crypto/rand"
	"encoding/base32"
	"fmt"
	"net/http"
	"regexp"
	"strings"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/openhcp/openhcp/admin/pkg/access"
	"github.com/openhcp/openhcp/admin/pkg/adminapi"
	csv1 "github.com/openhcp/openhcp/cluster-service/api/v1"
	"github.com/openhcp/openhcp/cluster-service/pkg/breakglass"
	"github.com/openhcp/openhcp/cluster-service/pkg/srestatement"
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
	adminapi.AccessReadOnly: {csv1.SREAccess_SRE_ACCESS_READ_ONLY, access.RequestBreakGlass},
	adminapi.AccessAdmin:    {csv1.SREAccess_SRE_ACCESS_ADMIN, access.RequestBreakGlassAdmin},
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

// requestBreakGlass serves POST /admin/v1/breakglass/{id...}: a credential for the calling SRE
// on the cluster. It waits (up to the call timeout) for the management cluster to sign it and
// answers 201 with the kubeconfig; if it is not signed by then, 202 with the credential (state
// PENDING) and no kubeconfig.
func (s *Server) requestBreakGlass(w http.ResponseWriter, r *http.Request) error {
	if err := knownParams(r); err != nil {
		return err
	}
	if s.cfg.Credentials == nil {
		return errorf(http.StatusServiceUnavailable, "Unavailable", "", "this admin API has no Cluster Service credentials client")
	}
	acc, perm, ttl, err := parseBreakGlassRequest(r, s.cfg.BreakGlassTTL)
	if err != nil {
		return err
	}
	// Admin access waits for a second sre-admin (approvals.go); read-only is issued at once.
	if acc == csv1.SREAccess_SRE_ACCESS_ADMIN {
		req, err := s.requestAdminBreakGlass(r, r.PathValue("id"), perm, ttl)
		if err != nil {
			return err
		}
		writeJSON(w, http.StatusAccepted, req)
		return nil
	}
	cred, issued, err := s.issueBreakGlass(r, r.PathValue("id"), acc, perm, ttl)
	if err != nil {
		return err
	}
	code := http.StatusCreated
	if !issued {
		code = http.StatusAccepted
	}
	writeJSON(w, code, cred)
	return nil
}

// issueBreakGlass asks Cluster Service for the caller's credential on cluster and waits for it
// to be signed; issued is false when it was not signed within the call timeout.
func (s *Server) issueBreakGlass(r *http.Request, cluster string, acc csv1.SREAccess, perm access.Permission, ttl time.Duration) (_ adminapi.BreakGlassCredential, issued bool, _ error) {
	id := identityFrom(r.Context())
	if !id.May(perm) {
		return adminapi.BreakGlassCredential{}, false, errorf(http.StatusForbidden, adminapi.CodeForbidden, "access",
			"group %s may not request %s break-glass credentials (needs %s)", id.Group, accessName(acc), perm)
	}
	if acc != csv1.SREAccess_SRE_ACCESS_READ_ONLY {
		// Admin access is issued only through a second SRE's approval (approveBreakGlass).
		return adminapi.BreakGlassCredential{}, false, fmt.Errorf("issue %s break-glass without approval: refused", accessName(acc))
	}
	ctx, cancel := context.WithTimeout(r.Context(), s.cfg.Timeout)
	defer cancel()
	cl, _, err := s.findCluster(ctx, cluster)
	if err != nil {
		return adminapi.BreakGlassCredential{}, false, err
	}
	sre := &csv1.SRECredential{Person: id.Person, Access: acc, ValiditySeconds: int32(ttl / time.Second), Reason: auditReason(r)}
	credID := newCredentialID()
	statement, err := s.statement(r.Context(), id, credID, cl.GetId(), sre)
	if err != nil {
		return adminapi.BreakGlassCredential{}, false, err
	}
	cred, err := s.cfg.Credentials.RequestCredential(ctx, &csv1.RequestCredentialRequest{Id: credID, ClusterId: cl.GetId(), Sre: sre, SreStatement: statement})
	if err != nil {
		return adminapi.BreakGlassCredential{}, false, upstream("request break-glass credential", cl.GetId(), err)
	}
	return s.waitIssued(ctx, cred, func() (*csv1.SignedSREStatement, error) { return s.statement(r.Context(), id, credID, cl.GetId(), sre) })
}

// waitIssued polls cred until the management cluster signed it; issued is false when it was not
// signed within ctx. With statement (a fresh signed statement for the credential, which Cluster
// Service demands for an SRE's kubeconfig) the answer carries the kubeconfig.
func (s *Server) waitIssued(ctx context.Context, cred *csv1.Credential, statement func() (*csv1.SignedSREStatement, error)) (_ adminapi.BreakGlassCredential, issued bool, _ error) {
	for cred.GetStatus().GetState() == csv1.CredentialState_CREDENTIAL_STATE_PENDING {
		select {
		case <-ctx.Done():
			return breakGlassView(cred), false, nil
		case <-time.After(issuePoll):
		}
		get := &csv1.GetCredentialRequest{Id: cred.GetId()}
		if statement != nil {
			signed, err := statement()
			if err != nil {
				return adminapi.BreakGlassCredential{}, false, err
			}
			get.SreStatement, get.IncludeKubeconfig = signed, true
		}
		got, err := s.cfg.Credentials.GetCredential(ctx, get)
		if status.Code(err) == codes.DeadlineExceeded || ctx.Err() != nil {
			return breakGlassView(cred), false, nil
		}
		if err != nil {
			return adminapi.BreakGlassCredential{}, false, upstream("read break-glass credential", cred.GetId(), err)
		}
		cred = got
	}
	if cred.GetStatus().GetState() != csv1.CredentialState_CREDENTIAL_STATE_ISSUED {
		return adminapi.BreakGlassCredential{}, false, errorf(http.StatusConflict, "CredentialNotIssued", cred.GetId(), "credential %s on cluster %s was not issued: %s %s",
			cred.GetId(), cred.GetClusterId(), stateName(cred.GetStatus().GetState().String()), cred.GetStatus().GetMessage())
	}
	return breakGlassView(cred), true, nil
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

// breakGlassView is the admin API's form of an SRE credential.
func breakGlassView(c *csv1.Credential) adminapi.BreakGlassCredential {
	st := c.GetStatus()
	out := adminapi.BreakGlassCredential{ID: c.GetId(), ClusterID: c.GetClusterId(), Person: c.GetSre().GetPerson(),
		Access: accessName(c.GetSre().GetAccess()), Username: st.GetUsername(), State: stateName(st.GetState().String()),
		Message: st.GetMessage(), TTLSeconds: c.GetSre().GetValiditySeconds(), Reason: c.GetSre().GetReason(), Approver: c.GetSre().GetApprover(),
		CreateTime: c.GetCreateTime().AsTime(), Kubeconfig: c.GetKubeconfig()}
	out.Group = breakglass.SREGroups[c.GetSre().GetAccess()]
	if st.GetExpirationTime() != nil {
		t := st.GetExpirationTime().AsTime()
		out.ExpirationTime = &t
	}
	return out
}

// active reports whether a credential can still reach, or may soon reach, its cluster.
func active(state csv1.CredentialState) bool {
	return state == csv1.CredentialState_CREDENTIAL_STATE_PENDING || state == csv1.CredentialState_CREDENTIAL_STATE_ISSUED
}

// listBreakGlass serves GET /admin/v1/breakglass?cluster=&person=&all=: SRE credentials, active
// ones (PENDING, ISSUED) unless all=true.
func (s *Server) listBreakGlass(w http.ResponseWriter, r *http.Request) error {
	list, err := s.breakGlassCredentials(r)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, list)
	return nil
}

func (s *Server) breakGlassCredentials(r *http.Request) (adminapi.BreakGlassList, error) {
	out := adminapi.BreakGlassList{Credentials: []adminapi.BreakGlassCredential{}}
	q, err := parseBreakGlassQuery(r)
	if err != nil {
		return out, err
	}
	if s.cfg.Credentials == nil {
		return out, errorf(http.StatusServiceUnavailable, "Unavailable", "", "this admin API has no Cluster Service credentials client")
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
	resp, err := s.cfg.Credentials.ListCredentials(ctx, &csv1.ListCredentialsRequest{ClusterId: clusterID, SreOnly: true, Person: q.person})
	if err != nil {
		return out, upstream("list break-glass credentials", clusterID, err)
	}
	for _, c := range resp.GetCredentials() {
		if q.all || active(c.GetStatus().GetState()) {
			out.Credentials = append(out.Credentials, breakGlassView(c))
		}
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
	if q.person != "" && !personRE.MatchString(q.person) {
		return q, badRequest("person", "person must be an SRE certificate's common name, got %q", q.person)
	}
	return q, nil
}

// parseBreakGlassRevoke reads a revoke body: exactly one of credential and person.
func parseBreakGlassRevoke(r *http.Request) (adminapi.BreakGlassRevoke, error) {
	var body adminapi.BreakGlassRevoke
	if err := decodeStrict(r, &body); err != nil {
		return body, err
	}
	switch {
	case (body.Credential == "") == (body.Person == ""):
		return body, badRequest("credential", "send either \"credential\" (a credential ID) or \"person\" (every active credential of that SRE), not both and not neither")
	case body.Person != "" && !personRE.MatchString(body.Person):
		return body, badRequest("person", "person must be an SRE certificate's common name, got %q", body.Person)
	case body.Credential != "" && !csIDRE.MatchString(body.Credential):
		return body, badRequest("credential", "credential must be a credential ID (32 of [0-9a-v]), got %q", body.Credential)
	}
	return body, nil
}

// revokeBreakGlass serves POST /admin/v1/breakglass-revoke {"credential"|"person","reason"}.
// HyperShift's break-glass signer cannot revoke one certificate: Cluster Service rotates the
// cluster's SRE break-glass signer, which revokes every SRE credential of that cluster issued so
// far; the customer's credentials have their own signer and are untouched
// (docs/sre.md#break-glass). One revocation per cluster.
func (s *Server) revokeBreakGlass(w http.ResponseWriter, r *http.Request) error {
	if err := knownParams(r); err != nil {
		return err
	}
	if s.cfg.Credentials == nil {
		return errorf(http.StatusServiceUnavailable, "Unavailable", "", "this admin API has no Cluster Service credentials client")
	}
	body, err := parseBreakGlassRevoke(r)
	if err != nil {
		return err
	}
	out, err := s.revokeBreakGlassCredentials(r.Context(), body)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

// revokeBreakGlassCredentials revokes body's credential, or every active one of body's person:
// one revocation per cluster.
func (s *Server) revokeBreakGlassCredentials(ctx context.Context, body adminapi.BreakGlassRevoke) (adminapi.BreakGlassRevocations, error) {
	out := adminapi.BreakGlassRevocations{Revocations: []adminapi.BreakGlassRevocation{}}
	ctx, cancel := context.WithTimeout(ctx, s.cfg.Timeout)
	defer cancel()
	var creds []*csv1.Credential
	if body.Credential != "" {
		c, err := s.cfg.Credentials.GetCredential(ctx, &csv1.GetCredentialRequest{Id: body.Credential})
		if err != nil {
			return out, upstream("get break-glass credential", body.Credential, err)
		}
		if c.GetSre() == nil {
			return out, notFound(body.Credential, "no SRE break-glass credential %s (a customer's credential is revoked through ARM's revokeCredentials)", body.Credential)
		}
		creds = append(creds, c)
	} else {
		resp, err := s.cfg.Credentials.ListCredentials(ctx, &csv1.ListCredentialsRequest{SreOnly: true, Person: body.Person})
		if err != nil {
			return out, upstream("list break-glass credentials", body.Person, err)
		}
		for _, c := range resp.GetCredentials() {
			if active(c.GetStatus().GetState()) {
				creds = append(creds, c)
			}
		}
	}
	byCluster := map[string][]string{}
	var order []string
	for _, c := range creds {
		if _, seen := byCluster[c.GetClusterId()]; !seen {
			order = append(order, c.GetClusterId())
		}
		byCluster[c.GetClusterId()] = append(byCluster[c.GetClusterId()], c.GetId())
	}
	for _, cluster := range order {
		rev, err := s.cfg.Credentials.RevokeCredentials(ctx, &csv1.RevokeCredentialsRequest{Id: newCredentialID(), ClusterId: cluster, Sre: true})
		if err != nil {
			return out, upstream("revoke break-glass credentials", cluster, err)
		}
		out.Revocations = append(out.Revocations, adminapi.BreakGlassRevocation{ClusterID: cluster, RevocationID: rev.GetId(),
			State: stateName(rev.GetStatus().GetState().String()), Credentials: byCluster[cluster]})
	}
	return out, nil
}
