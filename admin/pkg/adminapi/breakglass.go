package adminapi

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// Break-glass access levels (BreakGlassRequest.Access, BreakGlassCredential.Access).
const (
	AccessReadOnly = "read-only"
	AccessAdmin    = "admin"
)

// Session states (BreakGlassSession.State).
const (
	// StateAwaitingApproval: an admin session until a second sre-admin approves it (POST
	// /admin/v1/breakglass-approve/{id}); the gateway refuses it.
	StateAwaitingApproval = "awaiting-approval"
	StateActive           = "active"
	StateClosed           = "closed"
	StateExpired          = "expired"
	StateRevoked          = "revoked"
)

// BreakGlassRequest is the body of POST /admin/v1/breakglass/{id...}: a break-glass session
// for the calling SRE on a hosted cluster. Access is "read-only" (default) or "admin"; TTL is a
// Go duration ("30m", "2h") within the admin API's bounds (BreakGlassTTL), default its default.
type BreakGlassRequest struct {
	Access string `json:"access,omitempty"`
	TTL    string `json:"ttl,omitempty"`
	Reason string `json:"reason"`
}

// BreakGlassTTL is the range of credential lifetimes the admin API grants.
type BreakGlassTTL struct {
	Min     string `json:"min"`
	Max     string `json:"max"`
	Default string `json:"default"`
}

// BreakGlassSession is an SRE's break-glass session: the one way into a hosted cluster, through
// the gateway at GatewayURL. Its credential stays in the admin database, sealed, and with the
// gateway: no answer carries it. The SRE's kubeconfig names GatewayURL as its server and the
// SRE's own person certificate (hcpctl breakglass open writes it).
type BreakGlassSession struct {
	ID        string `json:"id"`
	ClusterID string `json:"clusterId"`
	Person    string `json:"person"`
	Access    string `json:"access"`
	// Group is the kube group the gateway impersonates with the person: what the hosted
	// cluster's audit log and RBAC see.
	Group string `json:"group"`
	// State is awaiting-approval, active, closed, expired or revoked.
	State   string `json:"state"`
	Message string `json:"message,omitempty"`
	// Approver is the second sre-admin who approved an admin session.
	Approver string `json:"approver,omitempty"`
	// ApproveBefore is when an awaiting session can no longer be approved.
	ApproveBefore  *time.Time `json:"approveBefore,omitempty"`
	TTLSeconds     int32      `json:"ttlSeconds"`
	Reason         string     `json:"reason,omitempty"`
	CreateTime     time.Time  `json:"createTime"`
	ExpirationTime *time.Time `json:"expirationTime,omitempty"`
	CloseTime      *time.Time `json:"closeTime,omitempty"`
	ClosedBy       string     `json:"closedBy,omitempty"`
	// CloseReason says why a session ended when the admin service ended it itself (its
	// cluster was deleted); a person's close or revoke has its reason in the audit log.
	CloseReason string `json:"closeReason,omitempty"`
	// GatewayURL is https://<gateway>/sessions/<id>: a kubeconfig's server.
	GatewayURL string `json:"gatewayUrl,omitempty"`
}

// BreakGlassSessions is the answer of GET /admin/v1/breakglass and
// GET /admin/v1/breakglass-pending.
type BreakGlassSessions struct {
	Sessions []BreakGlassSession `json:"sessions"`
}

// BreakGlassRevoke is the body of POST /admin/v1/breakglass-revoke: exactly one of Session
// (a session ID) and Person (every live session of that SRE). Reason is required.
type BreakGlassRevoke struct {
	Session string `json:"session,omitempty"`
	Person  string `json:"person,omitempty"`
	Reason  string `json:"reason"`
}

// BreakGlassRevocation is one cluster's revocation: its sessions are revoked, and Cluster
// Service rotates the cluster's SRE break-glass signer, which revokes every SRE credential of
// that cluster issued so far.
type BreakGlassRevocation struct {
	ClusterID    string `json:"clusterId"`
	RevocationID string `json:"revocationId,omitempty"`
	State        string `json:"state,omitempty"`
	// Sessions are the sessions the call revoked on this cluster.
	Sessions []string `json:"sessions"`
}

// BreakGlassRevocations is the answer of POST /admin/v1/breakglass-revoke.
type BreakGlassRevocations struct {
	Revocations []BreakGlassRevocation `json:"revocations"`
}

// OpenBreakGlass opens a break-glass session for the caller on a cluster (Cluster Service ID or
// ARM resource ID): active at once for read-only, awaiting a second sre-admin for admin.
func (c *Client) OpenBreakGlass(ctx context.Context, cluster string, req BreakGlassRequest) (BreakGlassSession, error) {
	var out BreakGlassSession
	return out, c.do(ctx, http.MethodPost, "/admin/v1/breakglass/"+strings.TrimPrefix(cluster, "/"), nil, nil, req, &out)
}

// ApproveBreakGlass approves another SRE's admin session (its ID); the session becomes active.
func (c *Client) ApproveBreakGlass(ctx context.Context, id, reason string) (BreakGlassSession, error) {
	var out BreakGlassSession
	return out, c.do(ctx, http.MethodPost, "/admin/v1/breakglass-approve/"+id, nil, nil, map[string]string{"reason": reason}, &out)
}

// PendingBreakGlass lists the admin sessions that wait for an approval.
func (c *Client) PendingBreakGlass(ctx context.Context) (BreakGlassSessions, error) {
	var out BreakGlassSessions
	return out, c.do(ctx, http.MethodGet, "/admin/v1/breakglass-pending", nil, nil, nil, &out)
}

// GetBreakGlass reads one session.
func (c *Client) GetBreakGlass(ctx context.Context, id string) (BreakGlassSession, error) {
	var out BreakGlassSession
	return out, c.do(ctx, http.MethodGet, "/admin/v1/breakglass-sessions/"+id, nil, nil, nil, &out)
}

// CloseBreakGlass closes a session (the caller's own; an sre-admin may close anyone's): the
// gateway refuses it from then on and cuts its open streams.
func (c *Client) CloseBreakGlass(ctx context.Context, id, reason string) (BreakGlassSession, error) {
	var out BreakGlassSession
	return out, c.do(ctx, http.MethodPost, "/admin/v1/breakglass-close/"+id, nil, nil, map[string]string{"reason": reason}, &out)
}

// BreakGlassFilter narrows ListBreakGlass: one cluster, one SRE, and inactive ones too.
type BreakGlassFilter struct {
	Cluster, Person string
	All             bool
}

// ListBreakGlass lists break-glass sessions (live ones unless f.All).
func (c *Client) ListBreakGlass(ctx context.Context, f BreakGlassFilter) (BreakGlassSessions, error) {
	q := url.Values{}
	set(q, "cluster", f.Cluster)
	set(q, "person", f.Person)
	if f.All {
		q.Set("all", "true")
	}
	var out BreakGlassSessions
	return out, c.do(ctx, http.MethodGet, "/admin/v1/breakglass", q, nil, nil, &out)
}

// RevokeBreakGlass revokes one session or every live one of a person (see BreakGlassRevoke).
func (c *Client) RevokeBreakGlass(ctx context.Context, req BreakGlassRevoke) (BreakGlassRevocations, error) {
	var out BreakGlassRevocations
	return out, c.do(ctx, http.MethodPost, "/admin/v1/breakglass-revoke", nil, nil, req, &out)
}
