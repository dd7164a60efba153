// Package oprecord is the operation document as the backend reads and writes it: the shared
// model (internal/armdoc) plus the backend's own delivery record of the operation's ARM async
// notification. Other writers that decode into armdoc.OperationDocument ignore the extra field.
package oprecord

import (
	"time"

	"github.com/openhcp/openhcp/internal/armdoc"
)

// Record is an operation document with its notification record.
type Record struct {
	armdoc.OperationDocument
	Notification *Notification `json:"notification,omitempty"`
}

// Delivery states of an operation's ARM async notification.
const (
	NotifyPending   = "Pending"
	NotifyDelivered = "Delivered"
	NotifyAbandoned = "Abandoned"
)

// Notification records, in the operation document, the delivery of the notification posted to
// the operation's NotificationURI once it ended (package notify).
type Notification struct {
	State       string     `json:"state"`
	Attempts    int        `json:"attempts,omitempty"`
	NextAttempt *time.Time `json:"nextAttempt,omitempty"`
	LastError   string     `json:"lastError,omitempty"`
	DeliveredAt *time.Time `json:"deliveredAt,omitempty"`
}

// NeedsNotification reports whether the operation has ended and its notification is still to
// be sent. An operation ended by someone else (the frontend cancels operations) has no record
// yet.
func (r *Record) NeedsNotification() bool {
	return r.Status.Terminal() && r.NotificationURI != "" &&
		(r.Notification == nil || r.Notification.State == NotifyPending)
}

// PendNotification gives an operation that just ended its pending notification, if it asked
// for one and has none yet; the caller writes it with the terminal status.
func (r *Record) PendNotification() {
	if r.NotificationURI != "" && r.Notification == nil {
		r.Notification = &Notification{State: NotifyPending}
	}
}
