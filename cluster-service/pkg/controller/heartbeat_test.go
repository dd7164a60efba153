package controller

import (
	"context"
	"log/slog"
	"strconv"
	"testing"
	"time"

	"google.golang.org/protobuf/types/known/timestamppb"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	workv1 "open-cluster-management.io/api/work/v1"

	csv1 "github.com/openhcp/openhcp/cluster-service/api/v1"
	"github.com/openhcp/openhcp/cluster-service/pkg/maestro"
)

func TestDecideHeartbeat(t *testing.T) {
	period := 10 * time.Minute
	t0 := time.Date(2026, 11, 27, 2, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name                           string
		period                         time.Duration
		settled, caughtUp, republished bool
		last, now                      time.Time
		wantBeat                       bool
		wantRecheck                    time.Duration
	}{
		{name: "due_settled_caught_up_beats", period: period, settled: true, caughtUp: true, last: t0, now: t0.Add(period), wantBeat: true},
		{name: "not_due_rechecks_when_due", period: period, settled: true, caughtUp: true, last: t0, now: t0.Add(4 * time.Minute), wantRecheck: 6 * time.Minute},
		{name: "disabled", period: 0, settled: true, caughtUp: true, last: t0, now: t0.Add(time.Hour)},
		{name: "unsettled_is_the_stale_status_rules", period: period, caughtUp: true, last: t0, now: t0.Add(time.Hour)},
		{name: "behind_its_generation_is_the_lag_rules", period: period, settled: true, last: t0, now: t0.Add(time.Hour)},
		{name: "one_republish_per_reconcile", period: period, settled: true, caughtUp: true, republished: true, last: t0, now: t0.Add(time.Hour)},
		{name: "no_feedback_yet", period: period, settled: true, caughtUp: true, now: t0.Add(time.Hour)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			beat, recheck := decideHeartbeat(tc.period, tc.settled, tc.caughtUp, tc.last, tc.republished, tc.now)
			if beat != tc.wantBeat || recheck != tc.wantRecheck {
				t.Errorf("decideHeartbeat = %v, %s; want %v, %s", beat, recheck, tc.wantBeat, tc.wantRecheck)
			}
		})
	}
}

func workAt(generation, statusGeneration int64) *workv1.ManifestWork {
	w := &workv1.ManifestWork{ObjectMeta: metav1.ObjectMeta{Name: "w", Generation: generation, Annotations: map[string]string{}}}
	if statusGeneration > 0 {
		w.Annotations[maestro.AnnotationStatusGeneration] = strconv.FormatInt(statusGeneration, 10)
	}
	return w
}

func TestRecordFeedback(t *testing.T) {
	t0 := time.Date(2026, 11, 27, 2, 0, 0, 0, time.UTC)
	now := t0.Add(time.Minute)
	fedAt := func(gen int64) *csv1.ClusterStatus {
		return &csv1.ClusterStatus{State: csv1.ClusterState_CLUSTER_STATE_READY, FeedbackTime: timestamppb.New(t0), FeedbackGeneration: gen}
	}
	inState := func(state csv1.ClusterState, st *csv1.ClusterStatus) *csv1.ClusterStatus {
		st.State = state
		return st
	}
	for _, tc := range []struct {
		name     string
		st       *csv1.ClusterStatus
		work     *workv1.ManifestWork
		wantSet  bool
		wantTime time.Time
		wantGen  int64
	}{
		{name: "first_status_of_the_current_generation_is_feedback", st: fedAt(3), work: workAt(4, 4), wantSet: true, wantTime: now, wantGen: 4},
		{name: "first_feedback_ever", st: &csv1.ClusterStatus{State: csv1.ClusterState_CLUSTER_STATE_READY}, work: workAt(1, 1), wantSet: true, wantTime: now, wantGen: 1},
		{name: "a_failed_cluster_records_it_too", st: inState(csv1.ClusterState_CLUSTER_STATE_ERROR, fedAt(3)), work: workAt(4, 4), wantSet: true, wantTime: now, wantGen: 4},
		{name: "an_installing_cluster_records_none", st: inState(csv1.ClusterState_CLUSTER_STATE_INSTALLING, fedAt(3)), work: workAt(4, 4), wantTime: t0, wantGen: 3},
		{name: "an_updating_cluster_records_none", st: inState(csv1.ClusterState_CLUSTER_STATE_UPDATING, fedAt(3)), work: workAt(4, 4), wantTime: t0, wantGen: 3},
		{name: "same_generation_again_keeps_the_first_sight", st: fedAt(4), work: workAt(4, 4), wantTime: t0, wantGen: 4},
		{name: "status_of_an_older_generation_is_not_feedback", st: fedAt(3), work: workAt(4, 3), wantTime: t0, wantGen: 3},
		{name: "never_reported_is_not_feedback", st: fedAt(3), work: workAt(4, 0), wantTime: t0, wantGen: 3},
		{name: "no_work", st: fedAt(3), wantTime: t0, wantGen: 3},
		{name: "recreated_work_with_a_lower_generation", st: fedAt(7), work: workAt(1, 1), wantSet: true, wantTime: now, wantGen: 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			set := recordFeedback(tc.st, tc.work, now)
			var got time.Time
			if tc.st.GetFeedbackTime() != nil {
				got = tc.st.GetFeedbackTime().AsTime()
			}
			if set != tc.wantSet || !got.Equal(tc.wantTime) || tc.st.GetFeedbackGeneration() != tc.wantGen {
				t.Errorf("recordFeedback = %v, time %s gen %d; want %v, %s gen %d", set, got, tc.st.GetFeedbackGeneration(), tc.wantSet, tc.wantTime, tc.wantGen)
			}
		})
	}
}

func TestCarryFeedbackKeepsTheStoredOne(t *testing.T) {
	prev := &csv1.ClusterStatus{FeedbackTime: timestamppb.New(time.Unix(100, 0)), FeedbackGeneration: 5}
	st := &csv1.ClusterStatus{State: csv1.ClusterState_CLUSTER_STATE_READY}
	carryFeedback(st, prev)
	if st.GetFeedbackGeneration() != 5 || !st.GetFeedbackTime().AsTime().Equal(time.Unix(100, 0)) {
		t.Errorf("carried %v gen %d; want the stored feedback", st.GetFeedbackTime(), st.GetFeedbackGeneration())
	}
}

// TestFeedbackHeartbeatRepublishes drives the heartbeat through the controller, with a fake
// WorkClient counting republishes (no Maestro here): a settled cluster whose agent has reported
// on the current generation has its work sent again once its last feedback is a period old,
// and not before; an unsettled cluster, a work behind its generation, a reconcile that
// republished already, and a heartbeat of 0 send none.
func TestFeedbackHeartbeatRepublishes(t *testing.T) {
	const period = 10 * time.Minute
	t0 := time.Date(2026, 11, 27, 5, 0, 0, 0, time.UTC)
	fedAt := func(state csv1.ClusterState) *csv1.ClusterStatus {
		return &csv1.ClusterStatus{State: state, FeedbackTime: timestamppb.New(t0), FeedbackGeneration: 4}
	}
	ready, updating := csv1.ClusterState_CLUSTER_STATE_READY, csv1.ClusterState_CLUSTER_STATE_UPDATING
	for _, tc := range []struct {
		name        string
		period      time.Duration
		st          *csv1.ClusterStatus
		work        *workv1.ManifestWork
		republished bool // another rule republished in this reconcile
		at          time.Duration
		wantSent    int
		wantRecheck time.Duration
	}{
		{name: "settled_after_the_period_is_sent_again", period: period, st: fedAt(ready), work: workAt(4, 4), at: period, wantSent: 1, wantRecheck: DefaultRepublishAfter},
		{name: "settled_before_the_period_looks_again_when_due", period: period, st: fedAt(ready), work: workAt(4, 4), at: period - time.Minute, wantRecheck: time.Minute},
		{name: "an_error_cluster_is_settled_too", period: period, st: fedAt(csv1.ClusterState_CLUSTER_STATE_ERROR), work: workAt(4, 4), at: 2 * period, wantSent: 1, wantRecheck: DefaultRepublishAfter},
		{name: "unsettled_is_never_sent", period: period, st: fedAt(updating), work: workAt(4, 4), at: 3 * period},
		{name: "behind_its_generation_is_left_to_the_lag_rule", period: period, st: fedAt(ready), work: workAt(5, 4), at: 3 * period},
		{name: "one_republish_per_reconcile", period: period, st: fedAt(ready), work: workAt(4, 4), republished: true, at: 3 * period},
		{name: "no_heartbeat_configured", period: 0, st: fedAt(ready), work: workAt(4, 4), at: 3 * period},
	} {
		t.Run(tc.name, func(t *testing.T) {
			works := &catchingUpWorks{now: tc.work}
			now := t0.Add(tc.at)
			c := New(nil, works, Config{FeedbackHeartbeat: tc.period, Now: func() time.Time { return now }}, slog.New(slog.DiscardHandler))
			settled := settledState(tc.st.GetState())
			recheck, err := c.feedbackHeartbeat(context.Background(), slog.New(slog.DiscardHandler), "c1", "shard-1", tc.work, tc.st, settled, tc.republished)
			if err != nil {
				t.Fatal(err)
			}
			if works.republished != tc.wantSent || recheck != tc.wantRecheck {
				t.Fatalf("sent %d, recheck %s; want %d, %s", works.republished, recheck, tc.wantSent, tc.wantRecheck)
			}
		})
	}
}
