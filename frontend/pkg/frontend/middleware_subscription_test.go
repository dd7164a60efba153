package frontend

import (
	"net/http"
	"testing"

	"github.com/openhcp/openhcp/internal/armdoc"
)

// TestAllowedInState is the lifecycle's table, and the reason a GET skips reading the
// registration: every state, an unknown one too, allows GET.
func TestAllowedInState(t *testing.T) {
	methods := []string{http.MethodGet, http.MethodPut, http.MethodPatch, http.MethodDelete, http.MethodPost}
	for _, tc := range []struct {
		state   armdoc.SubscriptionState
		allowed []string
	}{
		{armdoc.SubscriptionRegistered, methods},
		{armdoc.SubscriptionWarned, []string{http.MethodGet, http.MethodDelete}},
		{armdoc.SubscriptionSuspended, []string{http.MethodGet, http.MethodDelete}},
		{armdoc.SubscriptionUnregistered, []string{http.MethodGet}},
		{armdoc.SubscriptionDeleted, []string{http.MethodGet}},
		{"SomeFutureState", []string{http.MethodGet}},
	} {
		for _, m := range methods {
			want := false
			for _, a := range tc.allowed {
				want = want || a == m
			}
			if got := allowedInState(tc.state, m); got != want {
				t.Errorf("allowedInState(%s, %s) = %v, want %v", tc.state, m, got, want)
			}
		}
	}
}
