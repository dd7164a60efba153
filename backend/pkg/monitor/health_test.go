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
		{"own_feedback_older_than_the_limit_is_stale", Observation{Phase: PhaseReady, Conditions: []*csv1.Condition{cond("Available", "True", "")}, LastFeedback: now.Add(-36 * time.Minute)}, Stale},
		{"own_feedback_within_the_limit_is_not_stale", Observation{Phase: PhaseReady, Conditions: []*csv1.Condition{cond("Available", "True", "")}, LastFeedback: now.Add(-34 * time.Minute)}, Healthy},
		{"a_failed_cluster_is_not_judged_on_its_own_feedback", Observation{Phase: PhaseError, LastFeedback: now.Add(-time.Hour)}, Unhealthy},
		{"a_change_is_judged_by_its_slo_not_its_feedback", Observation{Phase: PhaseChanging, Since: now.Add(-61 * time.Minute), LastFeedback: now.Add(-2 * time.Hour)}, Stuck},
		{"a_pending_cluster_has_no_feedback_to_go_stale", Observation{Phase: PhasePending, Since: now, LastFeedback: now.Add(-time.Hour)}, Progressing},
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

func TestDecideFeedbackStaleReason(t *testing.T) {
	now := time.Date(2026, 11, 27, 2, 0, 0, 0, time.UTC)
	v := Decide(Observation{Phase: PhaseReady, LastFeedback: now.Add(-4 * time.Minute)}, now, Limits{FeedbackStaleAfter: 3 * time.Minute})
	if want := "feedback-stale: last feedback 4m0s ago"; v.Health != Stale || v.Reason != want {
		t.Errorf("Decide = %s %q, want stale %q", v.Health, v.Reason, want)
	}
	// The shard's failed probe is the older, wider finding and keeps its own reason.
	v = Decide(Observation{Phase: PhaseReady, FeedbackAge: 5 * time.Minute, LastFeedback: now.Add(-time.Hour)}, now, Limits{})
	if v.Health != Stale || v.Reason != "no feedback from its management cluster for 5m0s" {
		t.Errorf("Decide = %s %q, want the shard's stale reason", v.Health, v.Reason)
	}
}
