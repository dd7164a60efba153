package armdoc

import "time"

// OperationStatus is the body of an ARM operation status (…/hcpOperationStatuses/{id}, docs/api.md): what the frontend answers to a GET and what the backend posts as the operation's async
// notification, both rendered by StatusAt.
type OperationStatus struct {
	ID        string            `json:"id"`
	Name      string            `json:"name"`
	Status    ProvisioningState `json:"status"`
	StartTime *time.Time        `json:"startTime,omitempty"`
	EndTime   *time.Time        `json:"endTime,omitempty"`
	Error     *CloudErrorBody   `json:"error,omitempty"`
}

// StatusAt is op as ARM shows it at id (the operation status URL's path): times in UTC, and a
// failed or canceled operation always with an error (TerminalError).
func (op *OperationDocument) StatusAt(id string) OperationStatus {
	st := OperationStatus{ID: id, Name: op.ID, Status: op.Status}
	if !op.StartTime.IsZero() {
		t := op.StartTime.UTC()
		st.StartTime = &t
	}
	if op.EndTime != nil {
		t := op.EndTime.UTC()
		st.EndTime = &t
	}
	if op.Status == StateFailed || op.Status == StateCanceled {
		st.Error = op.TerminalError()
	}
	return st
}

// TerminalError is the error of a failed or canceled operation: its own, else a generic one of
// its status (codes as internal/arm's CodeCanceled and CodeInternalServerError).
func (op *OperationDocument) TerminalError() *CloudErrorBody {
	if op.Error != nil {
		return op.Error
	}
	if op.Status == StateCanceled {
		return &CloudErrorBody{Code: "Canceled", Message: "The operation was canceled."}
	}
	return &CloudErrorBody{Code: "InternalServerError", Message: "The operation failed."}
}
