package monitor

import (
	"strings"
	"testing"
	"time"

	csv1 "github.com/openhcp/openhcp/cluster-service/api/v1"
)

func TestDecide(t *testing.T) {
	now := time.Date(2026, 11, 26, 8, 0, 0, 0, time.UTC)
	cond := func(typ, status, reason string) *csv1.Condition {
		return &csv1.Condition{Type: typ, Status: status, Reason: reason}
	}
	for _, tc := range []struct {
		name string
		o    Observation
		want Health
	}{
		{"ready_and_available_is_healthy", Observation{Phase: PhaseReady, Conditions: []*csv1.Condition{cond("Available", "True", "AsExpected")}, Since: now.Add(-48 * time.Hour)}, Healthy},
		{"ready_but_degraded_is_degraded", Observation{Phase: PhaseReady, Conditions: []*csv1.Condition{cond("Available", "True", ""), cond("Degraded", "True", "EtcdQuorumLost")}}, Degraded},
		{"ready_but_not_available_is_unhealthy", Observation{Phase: PhaseReady, Conditions: []*csv1.Condition{cond("Available", "False", "KASDown")}}, Unhealthy},
		{"error_is_unhealthy", Observation{Phase: PhaseError}, Unhealthy},
		{"install_within_its_slo_is_progressing", Observation{Phase: PhaseChanging, Since: now.Add(-59 * time.Minute)}, Progressing},
		{"install_without_progress_past_its_slo_is_stuck", Observation{Phase: PhaseChanging, Since: now.Add(-61 * time.Minute)}, Stuck},
		{"pending_past_its_slo_is_stuck", Observation{Phase: PhasePending, Since: now.Add(-11 * time.Minute)}, Stuck},
		{"stale_feedback_wins_over_a_ready_status", Observation{Phase: PhaseReady, FeedbackAge: 4 * time.Minute}, Stale},
		{"feedback_within_the_limit_is_not_stale", Observation{Phase: PhaseReady, FeedbackAge: 2 * time.Minute}, Healthy},
		{"unknown_state_is_unhealthy", Observation{Phase: PhaseUnknown}, Unhealthy},
		{"ready_but_its_hosted_apiserver_unreachable_is_unhealthy", Observation{Phase: PhaseReady, Conditions: []*csv1.Condition{cond("Available", "True", "")}, HostedAPIServerErr: "connection refused"}, Unhealthy},
		{"stale_feedback_wins_over_an_unreachable_hosted_apiserver", Observation{Phase: PhaseReady, FeedbackAge: 4 * time.Minute, HostedAPIServerErr: "connection refused"}, Stale},
		{"a_change_whose_hosted_apiserver_unreachable_is_unhealthy", Observation{Phase: PhaseChanging, Since: now, HostedAPIServerErr: "connection refused"}, Unhealthy},
		{"an_error_stays_unhealthy_with_its_own_reason", Observation{Phase: PhaseError}, Unhealthy},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v := Decide(tc.o, now, Limits{})
			if v.Health != tc.want {
				t.Fatalf("Decide = %s (%s), want %s", v.Health, v.Reason, tc.want)
			}
			if v.Reason == "" {
				t.Fatal("verdict without a reason")
			}
			if tc.want == Unhealthy && tc.o.HostedAPIServerErr != "" && !strings.HasPrefix(v.Reason, ReasonHostedAPIServerUnreachable) {
				t.Fatalf("reason %q, want it to start with %s", v.Reason, ReasonHostedAPIServerUnreachable)
			}
		})
	}
}

func TestBucketOfIsStableAndInRange(t *testing.T) {
	seen := map[int]bool{}
	for i := 0; i < 200; i++ {
		id := string(rune('a'+i%26)) + string(rune('a'+i/26))
		b := BucketOf(id, 8)
		if b < 0 || b >= 8 || b != BucketOf(id, 8) {
			t.Fatalf("BucketOf(%q) = %d", id, b)
		}
		seen[b] = true
	}
	if len(seen) != 8 {
		t.Fatalf("200 names fell into %d of 8 buckets", len(seen))
	}
}
