// Package armdoc holds OpenHCP's internal ARM model: the documents the frontend writes and the
// backend completes. Versioned external types convert to and from these.
package armdoc

import (
	"encoding/json"
	"time"
)

// ProvisioningState is the ARM provisioning state of a resource or the status of an operation.
type ProvisioningState string

const (
	StateAccepted     ProvisioningState = "Accepted"
	StateProvisioning ProvisioningState = "Provisioning"
	StateUpdating     ProvisioningState = "Updating"
	StateDeleting     ProvisioningState = "Deleting"
	StateSucceeded    ProvisioningState = "Succeeded"
	StateFailed       ProvisioningState = "Failed"
	StateCanceled     ProvisioningState = "Canceled"
)

// Terminal reports whether no further change will happen.
func (s ProvisioningState) Terminal() bool {
	return s == StateSucceeded || s == StateFailed || s == StateCanceled
}

// OperationRequest is what an operation does.
type OperationRequest string

const (
	OperationCreate OperationRequest = "Create"
	OperationUpdate OperationRequest = "Update"
	OperationDelete OperationRequest = "Delete"
)

// NotFoundGrace is how long the backend lets an operation's object be unknown to Cluster
// Service, or an update's Cluster Service answer go unrecorded, before it acts on it (fails a
// create or update, sends a delete again): the frontend writes the operation just before its
// Cluster Service call. So one call of the frontend's must end well within it (the frontend's
// --cluster-service-timeout is refused at or above it).
const NotFoundGrace = 2 * time.Minute

// CloudErrorBody is the ARM error shape: {"code","message","target","details"}.
type CloudErrorBody struct {
	Code    string           `json:"code"`
	Message string           `json:"message"`
	Target  string           `json:"target,omitempty"`
	Details []CloudErrorBody `json:"details,omitempty"`
}

// OperationDocument is an async ARM operation (store.TypeOperation). Its ID is the operation
// name that appears in the Azure-AsyncOperation and Location URLs.
type OperationDocument struct {
	ID      string           `json:"id"`
	Request OperationRequest `json:"request"`
	// ExternalID is the ARM resource ID as the caller spelled it.
	ExternalID string `json:"externalId"`
	// InternalID is the Cluster Service ID of the resource (a cluster's or a node pool's).
	InternalID string `json:"internalId"`
	// InternalRevision, on an update, is the Cluster Service revision at which the update took
	// effect: the backend ends the operation only on a state at or after it.
	InternalRevision int64 `json:"internalRevision,omitempty"`
	// SentUpdate is the update (ClusterUpdate, NodePoolUpdate, ExternalAuthUpdate) the frontend
	// sends Cluster Service (protojson), written with the operation before the call. A cluster's
	// is the difference from the spec the resource document held before, which is gone once the
	// document holds the new one, so a retry of the request (after a 503) re-sends this
	// (joinUpdate); for every kind, a write after the operation ended UpdateNotRecorded sends
	// only the fields this or the write names (unconfirmedUpdate).
	SentUpdate json.RawMessage `json:"sentUpdate,omitempty"`
	// Conditions are the If-Match and If-None-Match headers of the request that started the
	// operation, as sent. A client's retry of a conditional write sends them again, after its
	// own first attempt changed what they are checked against; they tell that retry from
	// another request.
	Conditions string `json:"conditions,omitempty"`
	// AfterCreate, on a delete that canceled a running create, is that create's start. The
	// create's Cluster Service call may still land until NotFoundGrace after it, and a client's
	// retry of the create calls again until the delete starts, so until NotFoundGrace after the
	// later of the two starts Cluster Service not knowing the object does not mean the delete is
	// done: the backend waits, and a create that lands is then deleted (its delete sent again).
	AfterCreate *time.Time        `json:"afterCreate,omitempty"`
	Location    string            `json:"location"`
	Status      ProvisioningState `json:"status"`
	Error       *CloudErrorBody   `json:"error,omitempty"`
	StartTime   time.Time         `json:"startTime"`
	// LastTransitionTime is when Status last changed; EndTime is set once Status is terminal.
	LastTransitionTime time.Time  `json:"lastTransitionTime"`
	EndTime            *time.Time `json:"endTime,omitempty"`
	// TenantID and ClientID identify the caller; only they may read the operation.
	TenantID        string `json:"tenantId,omitempty"`
	ClientID        string `json:"clientId,omitempty"`
	NotificationURI string `json:"notificationUri,omitempty"`
	CorrelationID   string `json:"correlationId,omitempty"`
}

// AfterCreateOf is the AfterCreate of a delete that cancels running (nil when nothing ran): the
// start of running if it is a create, whose Cluster Service call may still be on its way.
func AfterCreateOf(running *OperationDocument) *time.Time {
	if running == nil || running.Request != OperationCreate {
		return nil
	}
	start := running.StartTime
	return &start
}

// ResourceDocument is an ARM resource (store.TypeResource).
type ResourceDocument struct {
	// ResourceID is the ARM resource ID as the caller first spelled it.
	ResourceID string `json:"resourceId"`
	// InternalID is the Cluster Service ID, generated by the frontend before it calls CS.
	InternalID        string            `json:"internalId"`
	ProvisioningState ProvisioningState `json:"provisioningState"`
	// InternalRevision is the Cluster Service revision of that object the backend last saw when
	// it wrote ProvisioningState (0: never): a reader that shows Cluster Service's status beside
	// this document (the frontend's status cache) shows none older than it.
	InternalRevision int64 `json:"internalRevision,omitempty"`
	// ActiveOperationID is the operation running on the resource, if any.
	ActiveOperationID string `json:"activeOperationId,omitempty"`
	// UpdateOperationID is the last Update operation the frontend started on the resource. Unlike
	// ActiveOperationID it stays once the operation ends, so a write after an update that ended
	// Failed UpdateNotRecorded finds that failure (the frontend then compares the request with
	// what Cluster Service holds, not with this document).
	UpdateOperationID string            `json:"updateOperationId,omitempty"`
	Location          string            `json:"location"`
	Tags              map[string]string `json:"tags,omitempty"`
	SystemData        json.RawMessage   `json:"systemData,omitempty"`
	// Properties is the resource's properties as the frontend stores them, as JSON: a cluster's or
	// child's spec in its ARM form (api.Cluster.MarshalJSON, api.NodePool.MarshalJSON).
	Properties json.RawMessage `json:"properties,omitempty"`
}

// CodeUpdateNotRecorded is the ARM error code of an update whose Cluster Service call was never
// recorded in its operation: the frontend stopped, or lost Cluster Service's answer, between
// writing the operation and recording what Cluster Service accepted. The backend fails such an
// operation with it; the frontend reads it to know that the resource document's spec is not
// confirmed by Cluster Service.
const CodeUpdateNotRecorded = "UpdateNotRecorded"

// SubscriptionState is the ARM subscription lifecycle state.
type SubscriptionState string

const (
	SubscriptionRegistered   SubscriptionState = "Registered"
	SubscriptionWarned       SubscriptionState = "Warned"
	SubscriptionSuspended    SubscriptionState = "Suspended"
	SubscriptionUnregistered SubscriptionState = "Unregistered"
	SubscriptionDeleted      SubscriptionState = "Deleted"
)

// SubscriptionDocument is what ARM told us of a subscription (store.TypeSubscription).
type SubscriptionDocument struct {
	ID               string            `json:"id"`
	State            SubscriptionState `json:"state"`
	RegistrationDate string            `json:"registrationDate,omitempty"`
	Properties       json.RawMessage   `json:"properties,omitempty"`
}
