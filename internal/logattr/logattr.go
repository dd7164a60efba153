// Package logattr owns the names of the log attributes that more than one service writes: the
// IDs that tie a request together (correlation, client and service request IDs) and the IDs of
// what it acts on (ARM resource, subscription, Cluster Service objects, operation). Logs of
// every service are searched by these names (hcpctl must-gather, docs/sre.md), so each has one
// spelling, defined here; CheckFile reports a slog call that spells one another way.
package logattr

import "log/slog"

// The attribute names. A service-local attribute (a loop's name, a shard) keeps its own name.
const (
	// KeyCorrelationRequestID is ARM's x-ms-correlation-request-id (the admin API's
	// X-Correlation-Id on SRE calls): the ID every service logs for one caller's request.
	KeyCorrelationRequestID = "correlationRequestID"
	// KeyClientRequestID is ARM's x-ms-client-request-id.
	KeyClientRequestID = "clientRequestID"
	// KeyRequestID is the ID the receiving service gave the request (x-ms-request-id,
	// the admin API's X-Request-Id).
	KeyRequestID = "requestID"
	// KeyResourceID is an ARM resource ID.
	KeyResourceID = "resourceID"
	// KeySubscriptionID is an ARM subscription ID.
	KeySubscriptionID = "subscriptionID"
	// KeyOperationID is an async ARM operation's ID (the operation document's).
	KeyOperationID = "operationID"
	// KeyClusterID and the keys after it are Cluster Service object IDs.
	KeyClusterID       = "clusterID"
	KeyNodePoolID      = "nodePoolID"
	KeyExternalAuthID  = "externalAuthID"
	KeyCredentialID    = "credentialID"
	KeyRevocationID    = "revocationID"
	KeyUpgradePolicyID = "upgradePolicyID"
	// KeySessionID is an SRE break-glass session's ID (the admin API's and the gateway's).
	KeySessionID = "sessionID"
	// KeyPerson is the SRE a request or a credential is for (a person's certificate's name),
	// KeyApprover the SRE who approved an admin session, KeyAccess the access it grants
	// (read-only or admin): the admin API and Cluster Service both log them.
	KeyPerson   = "person"
	KeyApprover = "approver"
	KeyAccess   = "access"
)

// CorrelationRequestID is the attribute of ARM's correlation request ID.
func CorrelationRequestID(id string) slog.Attr { return slog.String(KeyCorrelationRequestID, id) }

// ClientRequestID is the attribute of ARM's client request ID.
func ClientRequestID(id string) slog.Attr { return slog.String(KeyClientRequestID, id) }

// RequestID is the attribute of the ID the receiving service gave the request.
func RequestID(id string) slog.Attr { return slog.String(KeyRequestID, id) }

// ResourceID is the attribute of an ARM resource ID.
func ResourceID(id string) slog.Attr { return slog.String(KeyResourceID, id) }

// SubscriptionID is the attribute of an ARM subscription ID.
func SubscriptionID(id string) slog.Attr { return slog.String(KeySubscriptionID, id) }

// OperationID is the attribute of an async ARM operation's ID.
func OperationID(id string) slog.Attr { return slog.String(KeyOperationID, id) }

// ClusterID is the attribute of a Cluster Service cluster ID.
func ClusterID(id string) slog.Attr { return slog.String(KeyClusterID, id) }

// NodePoolID is the attribute of a Cluster Service node pool ID.
func NodePoolID(id string) slog.Attr { return slog.String(KeyNodePoolID, id) }

// ExternalAuthID is the attribute of a Cluster Service external auth ID.
func ExternalAuthID(id string) slog.Attr { return slog.String(KeyExternalAuthID, id) }

// CredentialID is the attribute of a Cluster Service break-glass credential ID.
func CredentialID(id string) slog.Attr { return slog.String(KeyCredentialID, id) }

// RevocationID is the attribute of a Cluster Service credential revocation ID.
func RevocationID(id string) slog.Attr { return slog.String(KeyRevocationID, id) }

// UpgradePolicyID is the attribute of a Cluster Service upgrade policy ID.
func UpgradePolicyID(id string) slog.Attr { return slog.String(KeyUpgradePolicyID, id) }
