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

// StateAwaitingApproval is the state of an admin credential's request until a second
// sre-admin approves it (POST /admin/v1/breakglass-approve/{id}); Cluster Service has no
// credential yet.
const StateAwaitingApproval = "awaiting-approval"

// BreakGlassRequest is the body of POST /admin/v1/breakglass/{id...}: a credential for the
// calling SRE on a hosted cluster. Access is "read-only" (default) or "admin"; TTL is a Go
// duration ("30m", "2h") within the admin API's bounds (BreakGlassTTL), default its default.
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

// BreakGlassCredential is an SRE's break-glass credential. Kubeconfig is set only in the answer
// to the request that issued it: it is never listed.
type BreakGlassCredential struct {
	ID        string `json:"id"`
	ClusterID string `json:"clusterId"`
	Person    string `json:"person"`
	Access    string `json:"access"`
	// Username and Group are the certificate's subject common name and organisation: what the
	// hosted cluster's audit log records.
	Username string `json:"username"`
	Group    string `json:"group"`
	// State is Cluster Service's: PENDING, ISSUED, EXPIRED, REVOKING, REVOKED, FAILED.
	State   string `json:"state"`
	Message string `json:"message,omitempty"`
	// Approver is the second sre-admin who approved an admin credential.
	Approver string `json:"approver,omitempty"`
	// ApproveBefore is when an awaiting request can no longer be approved.
	ApproveBefore  *time.Time `json:"approveBefore,omitempty"`
	TTLSeconds     int32      `json:"ttlSeconds"`
	Reason         string     `json:"reason,omitempty"`
	CreateTime     time.Time  `json:"createTime"`
	ExpirationTime *time.Time `json:"expirationTime,omitempty"`
	Kubeconfig     string     `json:"kubeconfig,omitempty"`
}

// BreakGlassList is the answer of GET /admin/v1/breakglass.
type BreakGlassList struct {
	Credentials []BreakGlassCredential `json:"credentials"`
}

// BreakGlassRevoke is the body of POST /admin/v1/breakglass-revoke: exactly one of Credential
// (a credential ID) and Person (every active credential of that SRE). Reason is required.
type BreakGlassRevoke struct {
	Credential string `json:"credential,omitempty"`
	Person     string `json:"person,omitempty"`
	Reason     string `json:"reason"`
}

// BreakGlassRevocation is one cluster's revocation: Cluster Service rotates the cluster's
// break-glass signer, which revokes every break-glass credential of that cluster issued so far.
type BreakGlassRevocation struct {
	ClusterID    string `json:"clusterId"`
	RevocationID string `json:"revocationId"`
	State        string `json:"state"`
	// Credentials are the SRE credentials the call meant to revoke on this cluster.
	Credentials []string `json:"credentials"`
}

// BreakGlassRevocations is the answer of POST /admin/v1/breakglass-revoke.
type BreakGlassRevocations struct {
	Revocations []BreakGlassRevocation `json:"revocations"`
}

// RequestBreakGlass asks for a break-glass credential for the caller on a cluster (Cluster
// Service ID or ARM resource ID). Kubeconfig is set when the answer is issued.
func (c *Client) RequestBreakGlass(ctx context.Context, cluster string, req BreakGlassRequest) (BreakGlassCredential, error) {
	var out BreakGlassCredential
	return out, c.do(ctx, http.MethodPost, "/admin/v1/breakglass/"+strings.TrimPrefix(cluster, "/"), nil, nil, req, &out)
}

// ApproveBreakGlass approves another SRE's admin break-glass request (its ID, as the request's
// answer gave it); the answer is the issued credential, without its kubeconfig, which only the
// requester collects (BreakGlassKubeconfig).
func (c *Client) ApproveBreakGlass(ctx context.Context, id, reason string) (BreakGlassCredential, error) {
	var out BreakGlassCredential
	return out, c.do(ctx, http.MethodPost, "/admin/v1/breakglass-approve/"+id, nil, nil, map[string]string{"reason": reason}, &out)
}

// PendingBreakGlass lists the admin requests that wait for an approval.
func (c *Client) PendingBreakGlass(ctx context.Context) (BreakGlassList, error) {
	var out BreakGlassList
	return out, c.do(ctx, http.MethodGet, "/admin/v1/breakglass-pending", nil, nil, nil, &out)
}

// BreakGlassKubeconfig returns the caller's own approved admin credential with its kubeconfig.
func (c *Client) BreakGlassKubeconfig(ctx context.Context, id string) (BreakGlassCredential, error) {
	var out BreakGlassCredential
	return out, c.do(ctx, http.MethodGet, "/admin/v1/breakglass-kubeconfig/"+id, nil, nil, nil, &out)
}

// BreakGlassFilter narrows ListBreakGlass: one cluster, one SRE, and inactive ones too.
type BreakGlassFilter struct {
	Cluster, Person string
	All             bool
}

// ListBreakGlass lists SRE break-glass credentials (active ones unless f.All).
func (c *Client) ListBreakGlass(ctx context.Context, f BreakGlassFilter) (BreakGlassList, error) {
	q := url.Values{}
	set(q, "cluster", f.Cluster)
	set(q, "person", f.Person)
	if f.All {
		q.Set("all", "true")
	}
	var out BreakGlassList
	return out, c.do(ctx, http.MethodGet, "/admin/v1/breakglass", q, nil, nil, &out)
}

// RevokeBreakGlass revokes one credential or every active one of a person (see
// BreakGlassRevoke).
func (c *Client) RevokeBreakGlass(ctx context.Context, req BreakGlassRevoke) (BreakGlassRevocations, error) {
	var out BreakGlassRevocations
	return out, c.do(ctx, http.MethodPost, "/admin/v1/breakglass-revoke", nil, nil, req, &out)
}
