package armdoc

import (
	"testing"
	"time"
)

func TestStatusAt(t *testing.T) {
	start := time.Date(2026, 11, 23, 10, 0, 0, 0, time.FixedZone("x", 3600))
	end := start.Add(time.Minute)
	own := &CloudErrorBody{Code: "UpgradeFailed", Message: "no"}
	for _, tc := range []struct {
		name     string
		op       OperationDocument
		wantCode string
	}{
		{"running_has_no_error", OperationDocument{ID: "o", Status: StateUpdating, StartTime: start}, ""},
		{"succeeded_has_no_error", OperationDocument{ID: "o", Status: StateSucceeded, StartTime: start, EndTime: &end, Error: own}, ""},
		{"failed_keeps_its_error", OperationDocument{ID: "o", Status: StateFailed, StartTime: start, EndTime: &end, Error: own}, "UpgradeFailed"},
		{"failed_without_one_gets_internal", OperationDocument{ID: "o", Status: StateFailed, StartTime: start, EndTime: &end}, "InternalServerError"},
		{"canceled_without_one_gets_canceled", OperationDocument{ID: "o", Status: StateCanceled, StartTime: start, EndTime: &end}, "Canceled"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st := tc.op.StatusAt("/subscriptions/s/providers/P/locations/l/hcpOperationStatuses/o")
			if st.ID != "/subscriptions/s/providers/P/locations/l/hcpOperationStatuses/o" || st.Name != "o" || st.Status != tc.op.Status {
				t.Fatalf("status %+v", st)
			}
			if st.StartTime == nil || st.StartTime.Location() != time.UTC || !st.StartTime.Equal(start) {
				t.Fatalf("startTime %v, want %v in UTC", st.StartTime, start)
			}
			if (tc.op.EndTime != nil) != (st.EndTime != nil) || (st.EndTime != nil && st.EndTime.Location() != time.UTC) {
				t.Fatalf("endTime %v for %v", st.EndTime, tc.op.EndTime)
			}
			if got := ""; st.Error != nil {
				got = st.Error.Code
				if got != tc.wantCode || st.Error.Message == "" {
					t.Fatalf("error %+v, want code %q with a message", st.Error, tc.wantCode)
				}
			} else if tc.wantCode != "" {
				t.Fatalf("no error, want %q", tc.wantCode)
			}
		})
	}
}
