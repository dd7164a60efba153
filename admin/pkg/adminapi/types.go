// Package adminapi is the admin API's wire contract: the JSON bodies its routes answer and a
// client for them. The server (admin/pkg/server) and hcpctl (tooling/cmd/hcpctl) both use it,
// so the two cannot drift.
package adminapi

import (
	"encoding/json"
	"net/http"
	"time"
)

// Error is every error body: a PascalCase code, a message for a person, and the field or ID
// at fault when there is one.
type Error struct {
	Code    string `json:"code"`
	Message string `json:"message"`
	Target  string `json:"target,omitempty"`
	// Status is the HTTP status the error came with (set by the client, not sent).
	Status int `json:"-"`
}

func (e *Error) Error() string {
	s := e.Code + ": " + e.Message
	if e.Target != "" {
		s += " (" + e.Target + ")"
	}
	return s
}

// Error codes.
const (
	CodeUnauthenticated = "Unauthenticated"
	CodeForbidden       = "Forbidden"
	CodeNotFound        = "NotFound"
	CodeInvalidRequest  = "InvalidRequest"
	CodeConflict        = "PreconditionFailed"
	// CodeBusy (409): something else is changing the resource now (a customer's operation, or a
	// change at the same time without If-Match); retry once it is done.
	CodeBusy = "Conflict"
	// CodeNotCancelable (409): the upgrade cannot be canceled — a node pool's (it starts at
	// once) or one that has started; retrying will not help, a pause stops the rollout.
	CodeNotCancelable    = "NotCancelable"
	CodeAuditUnavailable = "AuditUnavailable"
	CodeUpstream         = "UpstreamError"
	CodeInternal         = "InternalError"
)

// ClusterSummary is one row of the fleet-wide cluster list.
type ClusterSummary struct {
	ID             string `json:"id"`
	ARMResourceID  string `json:"armResourceId"`
	Subscription   string `json:"subscription"`
	Shard          string `json:"shard"`
	State          string `json:"state"`
	Version        string `json:"version"`
	CurrentVersion string `json:"currentVersion,omitempty"`
	Applied        bool   `json:"applied"`
	// Health is what the HostedCluster last reported: healthy (Available=True, not Degraded),
	// degraded (Available=False or Degraded=True) or unknown (no conditions yet).
	Health   string `json:"health"`
	Message  string `json:"message,omitempty"`
	Revision int64  `json:"revision"`
	// ETag is what a conditional day-2 change of the cluster sends as If-Match: Cluster
	// Service's spec revision, which status writes do not move.
	ETag       string    `json:"etag"`
	CreateTime time.Time `json:"createTime"`
}

// ClusterList is a page of clusters. A page may hold fewer than pageSize clusters (filters
// apply within each page of Cluster Service's list); follow NextPageToken until it is empty.
type ClusterList struct {
	Clusters      []ClusterSummary `json:"clusters"`
	NextPageToken string           `json:"nextPageToken,omitempty"`
}

// ClusterDescription joins every view of one cluster along the request path, so an on-call
// engineer sees where it is stuck: ARM's documents, Cluster Service's model, the Maestro
// resource bundles, and the HostedCluster/NodePool conditions as last reported (in Cluster
// Service's status, from Maestro status feedback).
type ClusterDescription struct {
	Summary ClusterSummary `json:"summary"`
	// Diagnosis is one line per stage of the path, in order (ARM, Cluster Service, Maestro,
	// HyperShift).
	Diagnosis []string `json:"diagnosis"`
	ARM       *ARMView `json:"arm,omitempty"`
	// ClusterService is Cluster Service's cluster, as its API returns it (protojson).
	ClusterService json.RawMessage   `json:"clusterService,omitempty"`
	NodePools      []json.RawMessage `json:"nodePools,omitempty"`
	Maestro        []Bundle          `json:"maestro,omitempty"`
	// Monitor is the fleet Monitor's latest verdict on the cluster and its node pools
	// (docs/monitor.md); absent until a Monitor replica has checked it. Summary.Health is what
	// HyperShift last reported; this is the Monitor's judgement, which also weighs stale
	// feedback and changes stuck past their SLO.
	Monitor *MonitorHealth `json:"monitor,omitempty"`
	// Unavailable names the parts that could not be read, and why.
	Unavailable []string `json:"unavailable,omitempty"`
}

// MonitorHealth is the Monitor's verdict: Health is healthy, progressing, stuck, degraded,
// unhealthy or stale; Since is when the Monitor first saw it, CheckedAt its latest check.
type MonitorHealth struct {
	Health    string           `json:"health"`
	Reason    string           `json:"reason"`
	Since     time.Time        `json:"since"`
	CheckedAt time.Time        `json:"checkedAt"`
	Replica   string           `json:"replica"`
	NodePools []NodePoolHealth `json:"nodePools,omitempty"`
}

// NodePoolHealth is the Monitor's verdict on one node pool.
type NodePoolHealth struct {
	ID     string `json:"id"`
	Health string `json:"health"`
	Reason string `json:"reason"`
}

// ARMView is the cluster's ARM resource document and its most recent operations.
type ARMView struct {
	Resource   json.RawMessage `json:"resource"`
	Operations []Operation     `json:"operations"`
}

// Bundle is a Maestro resource bundle (ManifestWork) as the Maestro server reports it.
type Bundle struct {
	ID        string          `json:"id"`
	Name      string          `json:"name"`
	Consumer  string          `json:"consumer"`
	Version   int             `json:"version"`
	DeletedAt *time.Time      `json:"deletedAt,omitempty"`
	Status    json.RawMessage `json:"status,omitempty"`
}

// Operation is an ARM async operation.
type Operation struct {
	ID            string     `json:"id"`
	Subscription  string     `json:"subscription"`
	Request       string     `json:"request"`
	ResourceID    string     `json:"resourceId"`
	InternalID    string     `json:"internalId,omitempty"`
	Status        string     `json:"status"`
	StartTime     time.Time  `json:"startTime"`
	EndTime       *time.Time `json:"endTime,omitempty"`
	AgeSeconds    int64      `json:"ageSeconds"`
	CorrelationID string     `json:"correlationId,omitempty"`
	// WaitingOn names the stage the operation waits on (Cluster Service, Maestro or
	// HyperShift) and what that stage reports (empty once the operation is terminal).
	WaitingOn string `json:"waitingOn,omitempty"`
	Error     string `json:"error,omitempty"`
}

// OperationList is a page of operations.
type OperationList struct {
	Operations    []Operation `json:"operations"`
	NextPageToken string      `json:"nextPageToken,omitempty"`
}

// Shard is a provision shard (management cluster) with its load.
type Shard struct {
	Name         string `json:"name"`
	Status       string `json:"status"`
	MaxClusters  int32  `json:"maxClusters"`
	ClusterCount int32  `json:"clusterCount"`
	// Load is ClusterCount/MaxClusters (0 for a shard with no capacity).
	Load   float64           `json:"load"`
	Labels map[string]string `json:"labels,omitempty"`
	// ETag is the shard's status as an entity tag: send it as If-Match to change the status
	// only if nobody changed it since.
	ETag string `json:"etag"`
	// Health (in the shard list) is the management cluster's own: healthy, unhealthy or unreachable (its
	// kube-apiserver's /readyz), or unknown (the admin API cannot reach it); HealthMessage
	// says what was seen.
	Health        string `json:"health,omitempty"`
	HealthMessage string `json:"healthMessage,omitempty"`
}

// ShardList is every provision shard.
type ShardList struct {
	Shards []Shard `json:"shards"`
}

// ShardChange is the body of a shard status change. Reason is required and lands in the
// audit log; Status is required on PUT …/status only (cordon and uncordon imply it).
type ShardChange struct {
	Status string `json:"status,omitempty"`
	Reason string `json:"reason"`
}

// AuditEntry is one audit record (admin/pkg/audit.Entry on the wire).
type AuditEntry struct {
	ID            int64     `json:"id"`
	Time          time.Time `json:"time"`
	RequestID     string    `json:"requestId"`
	CorrelationID string    `json:"correlationId"`
	Person        string    `json:"person"`
	Group         string    `json:"group"`
	Subject       string    `json:"subject,omitempty"`
	Method        string    `json:"method"`
	Route         string    `json:"route"`
	Path          string    `json:"path"`
	Target        string    `json:"target,omitempty"`
	Reason        string    `json:"reason,omitempty"`
	Outcome       string    `json:"outcome"`
	Status        int       `json:"status,omitempty"`
}

// AuditList is a page of audit records, newest first.
type AuditList struct {
	Entries       []AuditEntry `json:"entries"`
	NextPageToken string       `json:"nextPageToken,omitempty"`
}

// Headers.
const (
	// HeaderCorrelationID carries a caller's correlation ID (one is made when absent); the
	// answer echoes it and the audit record keeps it.
	HeaderCorrelationID = "X-Correlation-Id"
	// HeaderRequestID is the ID the admin API gave the call.
	HeaderRequestID = "X-Request-Id"
	// HeaderReason is why an SRE makes a call; mutating routes take it from the body instead
	// (ShardChange.Reason) and require it.
	HeaderReason = "X-Admin-Reason"
	// HeaderClient must be on every mutating call of an API client (any non-empty value;
	// hcpctl sends its name). A page of another site cannot send it without a CORS preflight,
	// which the admin API never grants, so its presence shows the call is no cross-site
	// request forgery. Portal forms carry a token instead (docs/security.md).
	HeaderClient = "X-Admin-Client"
)

// NodePoolScale is the body of POST /admin/v1/scale/{id...}: either Replicas (a fixed node
// count) or Autoscaling (min and max), not both. Reason is required.
type NodePoolScale struct {
	Replicas    *int32               `json:"replicas,omitempty"`
	Autoscaling *NodePoolAutoscaling `json:"autoscaling,omitempty"`
	Reason      string               `json:"reason"`
}

// NodePoolAutoscaling is a node pool's autoscaling range.
type NodePoolAutoscaling struct {
	Min int32 `json:"min"`
	Max int32 `json:"max"`
}

// Upgrade is the body of POST /admin/v1/upgrade/{id...}: the OpenShift version ("4.20" or
// "4.20.3") a cluster's control plane or a node pool upgrades to. Reason is required.
type Upgrade struct {
	Version string `json:"version"`
	Reason  string `json:"reason"`
}

// Change kinds (Change.Kind).
const (
	KindCluster  = "cluster"
	KindNodePool = "nodePool"
)

// ARM document outcomes (Change.ARMDocument).
const (
	// ARMUpdated: the customer's ARM resource document now shows the change.
	ARMUpdated = "updated"
	// ARMNone: the resource has no ARM document (a cluster made through Cluster Service only).
	ARMNone = "none"
	// ARMUnchanged: the change is not part of the customer's ARM resource (a pause).
	ARMUnchanged = "unchanged"
)

// Change is the answer of a scale or an upgrade: the cluster or node pool as Cluster Service
// holds it after the change.
type Change struct {
	Kind          string `json:"kind"`
	ID            string `json:"id"`
	ARMResourceID string `json:"armResourceId"`
	State         string `json:"state"`
	// Revision is Cluster Service's revision after the change (status writes move it too); ETag
	// is its spec_revision as an entity tag (only spec changes move it), to send as If-Match
	// with the next change.
	Revision       int64                `json:"revision"`
	ETag           string               `json:"etag"`
	Replicas       int32                `json:"replicas,omitempty"`
	Autoscaling    *NodePoolAutoscaling `json:"autoscaling,omitempty"`
	Version        string               `json:"version"`
	CurrentVersion string               `json:"currentVersion,omitempty"`
	// Upgrade is the control-plane upgrade policy a cluster upgrade started (its state and
	// target version).
	Upgrade *UpgradeState `json:"upgrade,omitempty"`
	// PausedUntil is the cluster's pause of HyperShift's reconciliation ("true" or an RFC 3339
	// time; empty: reconciling).
	PausedUntil string `json:"pausedUntil,omitempty"`
	ARMDocument string `json:"armDocument"`
}

// Pause is the body of POST /admin/v1/pause/{id...}: Until is an RFC 3339 time, or empty to
// pause until resumed. Reason is required. POST /admin/v1/resume/{id...} takes the reason only.
type Pause struct {
	Until  string `json:"until,omitempty"`
	Reason string `json:"reason"`
}

// UpgradeState is an upgrade policy as the admin API shows it.
type UpgradeState struct {
	ID          string `json:"id"`
	State       string `json:"state"`
	FromVersion string `json:"fromVersion,omitempty"`
	ToVersion   string `json:"toVersion"`
	Message     string `json:"message,omitempty"`
}

// DrainStatus is GET /admin/v1/shards/{name}/drain-status: the clusters that remain on a
// shard, their states, and the ARM operations still active on them. Drained is true when no
// cluster remains.
type DrainStatus struct {
	Shard    Shard          `json:"shard"`
	Drained  bool           `json:"drained"`
	Clusters []DrainCluster `json:"clusters"`
}

// DrainCluster is one cluster that remains on a shard.
type DrainCluster struct {
	ClusterSummary
	ActiveOperations []Operation `json:"activeOperations"`
}

// BaseCSP is the Content-Security-Policy of every admin answer that is no portal page (the
// portal's pages add their own stylesheet and form target): nothing may load, nothing may
// frame it.
const BaseCSP = "default-src 'none'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

// SetSecurityHeaders sets the headers every answer of the admin API, of its portal and of
// hcpctl's portal proxy carries: no framing (clickjacking), no content sniffing, no Referer
// (paths name clusters), and csp.
func SetSecurityHeaders(h http.Header, csp string) {
	h.Set("Content-Security-Policy", csp)
	h.Set("X-Frame-Options", "DENY")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "no-referrer")
}
