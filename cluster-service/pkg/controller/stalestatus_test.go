package controller

import (
	"crypto/sha256"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	workv1 "open-cluster-management.io/api/work/v1"

	"github.com/openhcp/openhcp/cluster-service/pkg/maestro"
)

func TestDecideStale(t *testing.T) {
	after := time.Minute
	t0 := time.Date(2026, 11, 26, 10, 0, 0, 0, time.UTC)
	a, b := sha256.Sum256([]byte("a")), sha256.Sum256([]byte("b"))
	for _, tc := range []struct {
		name           string
		prev           staleState
		known          bool
		status         [sha256.Size]byte
		settled        bool
		lagRepublished bool // the lag rule sent the work again in the same reconcile
		now            time.Time
		wantRepublish  bool
		wantRecheck    time.Duration
		wantKeep       bool
		wantAttempts   int
	}{
		{name: "settled_object_is_forgotten", prev: staleState{key: a, since: t0}, known: true, status: a, settled: true, now: t0.Add(time.Hour)},
		{name: "first_sight_starts_the_clock", status: a, now: t0, wantRecheck: after, wantKeep: true},
		{name: "unchanged_before_the_wait_rechecks_at_its_end", prev: staleState{key: a, since: t0}, known: true, status: a,
			now: t0.Add(20 * time.Second), wantRecheck: 40 * time.Second, wantKeep: true},
		{name: "unchanged_for_the_wait_is_republished", prev: staleState{key: a, since: t0}, known: true, status: a,
			now: t0.Add(after), wantRepublish: true, wantRecheck: 2 * after, wantKeep: true, wantAttempts: 1},
		{name: "a_new_status_restarts_the_clock_and_keeps_the_backoff", prev: staleState{key: a, since: t0, attempts: 2}, known: true, status: b,
			now: t0.Add(time.Hour), wantRecheck: 4 * after, wantKeep: true, wantAttempts: 2},
		{name: "second_republish_waits_twice_as_long", prev: staleState{key: a, since: t0, attempts: 1}, known: true, status: a,
			now: t0.Add(after), wantRecheck: after, wantKeep: true, wantAttempts: 1},
		{name: "a_work_the_lag_rule_just_republished_is_not_sent_a_second_time", prev: staleState{key: a, since: t0}, known: true, status: a,
			lagRepublished: true, now: t0.Add(after), wantRecheck: after, wantKeep: true},
		{name: "after_the_lag_rules_republish_the_backoff_carries_on", prev: staleState{key: a, since: t0, attempts: 1}, known: true, status: a,
			lagRepublished: true, now: t0.Add(2 * after), wantRecheck: 2 * after, wantKeep: true, wantAttempts: 1},
		{name: "wait_is_capped", prev: staleState{key: a, since: t0, attempts: 40}, known: true, status: a,
			now: t0.Add(maxRepublishDelay), wantRepublish: true, wantRecheck: maxRepublishDelay, wantKeep: true, wantAttempts: 41},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := decideStale(tc.prev, tc.known, tc.status, tc.settled, tc.lagRepublished, tc.now, after)
			if d.republish != tc.wantRepublish || d.recheck != tc.wantRecheck || d.keep != tc.wantKeep || d.next.attempts != tc.wantAttempts {
				t.Errorf("decideStale = republish %v recheck %s keep %v attempts %d; want %v %s %v %d",
					d.republish, d.recheck, d.keep, d.next.attempts, tc.wantRepublish, tc.wantRecheck, tc.wantKeep, tc.wantAttempts)
			}
		})
	}
}

func TestStatusDigestSeesFeedbackAndGenerations(t *testing.T) {
	base := &workv1.ManifestWork{ObjectMeta: metav1.ObjectMeta{Name: "w", Generation: 2,
		Annotations: map[string]string{maestro.AnnotationStatusGeneration: "2"}}}
	base.Status.Conditions = []metav1.Condition{{Type: "Applied", Status: metav1.ConditionTrue}}
	feedback := base.DeepCopy()
	feedback.Status.ResourceStatus.Manifests = []workv1.ManifestCondition{{StatusFeedbacks: workv1.StatusFeedbackResult{
		Values: []workv1.FeedbackValue{{Name: "Available", Value: workv1.FieldValue{Type: workv1.String, String: ptr.To("True")}}}}}}
	regen := base.DeepCopy()
	regen.Annotations[maestro.AnnotationStatusGeneration] = "3"
	republished := base.DeepCopy()
	republished.Generation = 3
	d0 := mustDigest(t, base)
	if d0 != mustDigest(t, base.DeepCopy()) {
		t.Error("the same status digests differently")
	}
	if d0 == mustDigest(t, feedback) {
		t.Error("new feedback does not change the digest")
	}
	if d0 == mustDigest(t, regen) {
		t.Error("a status for another generation does not change the digest")
	}
	if d0 == mustDigest(t, republished) {
		t.Error("a new generation of the work (a republish or a new spec) does not change the digest")
	}
}

func mustDigest(t *testing.T, w *workv1.ManifestWork) [sha256.Size]byte {
	t.Helper()
	d, err := statusDigest(w)
	if err != nil {
		t.Fatal(err)
	}
	return d
}
