// Package adminapi is the admin API's wire contract: the JSON bodies its routes answer and a
// client for them. The server (admin/pkg/server) and hcpctl (tooling/cmd/hcpctl) both use it,
// so the two cannot drift.
package adminapi

import (
	"encoding/json"
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
	CodeUnauthenticated  = "Unauthenticated"
	CodeForbidden        = "Forbidden"
	CodeNotFound         = "NotFound"
	CodeInvalidRequest   = "InvalidRequest"
	CodeConflict         = "PreconditionFailed"
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
	Health     string    `json:"health"`
	Message    string    `json:"message,omitempty"`
	Revision   int64     `json:"revision"`
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
	// Unavailable names the parts that could not be read, and why.
	Unavailable []string `json:"unavailable,omitempty"`
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
	// WaitingOn says what the operation waits for, from Cluster Service's state of the
	// resource (empty once the operation is terminal or the state is unknown).
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
)
