package controller

import (
	"log/slog"
	"strconv"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	workv1 "open-cluster-management.io/api/work/v1"

	"github.com/openhcp/openhcp/cluster-service/pkg/maestro"
)

// lagWork is a work of generation gen whose status Maestro has for statusGen.
func lagWork(name string, gen, statusGen int64) *workv1.ManifestWork {
	return &workv1.ManifestWork{ObjectMeta: metav1.ObjectMeta{Name: name, Generation: gen,
		Annotations: map[string]string{maestro.AnnotationStatusGeneration: strconv.FormatInt(statusGen, 10)}}}
}

// TestLagRuleRepublishesAgainOnceTheAgentAnsweredALaterGeneration replays the chaos run in
// docs/maestro.md ("A republish that did not repair"): the agent lost a node pool's generation 2,
// the republish (generation 3) a second time, and went on reporting generation 1; meanwhile it
// reported at once on the cluster's work, sent after that republish. The node pool's work is
// sent again RepublishAfter after its republish once another work of the shard, first seen
// behind after it, has been reported on; without that answer the doubled wait stands.
func TestLagRuleRepublishesAgainOnceTheAgentAnsweredALaterGeneration(t *testing.T) {
	const after = 15 * time.Second
	t0 := time.Date(2026, 11, 28, 17, 26, 22, 0, time.UTC)
	type step struct {
		at             time.Duration // since t0
		key, name      string
		gen, statusGen int64
		wantRepublish  bool
		sent           bool // the controller sent gen itself (a heartbeat or stale-status republish): noteSent
	}
	// The node pool's episode up to its first republish, 2 min after (the shard's agent was slow
	// in the outage before: one report took a minute, so the adapted wait is 2 min).
	first := []step{
		{at: 0, key: "np", name: "pool", gen: 2, statusGen: 1},
		{at: 2 * time.Minute, key: "np", name: "pool", gen: 2, statusGen: 1, wantRepublish: true},
		{at: 2*time.Minute + time.Second, key: "np", name: "pool", gen: 3, statusGen: 1},
	}
	for _, tc := range []struct {
		name  string
		steps []step
	}{
		{"a_later_generation_answered_sends_it_again_after_the_plain_wait", []step{
			{at: 2*time.Minute + 40*time.Second, key: "cl", name: "cluster", gen: 5, statusGen: 4},
			{at: 2*time.Minute + 41*time.Second, key: "cl", name: "cluster", gen: 5, statusGen: 5},
			{at: 2*time.Minute + 41*time.Second, key: "np", name: "pool", gen: 3, statusGen: 1, wantRepublish: true},
		}},
		{"an_answer_to_a_generation_the_controller_sent_counts_though_never_seen_behind", []step{
			{at: 2*time.Minute + 40*time.Second, key: "cl", name: "cluster", gen: 5, sent: true},
			{at: 2*time.Minute + 41*time.Second, key: "cl", name: "cluster", gen: 5, statusGen: 5},
			{at: 2*time.Minute + 41*time.Second, key: "np", name: "pool", gen: 3, statusGen: 1, wantRepublish: true},
		}},
		{"not_before_the_plain_wait_after_the_republish", []step{
			{at: 2*time.Minute + 2*time.Second, key: "cl", name: "cluster", gen: 5, statusGen: 4},
			{at: 2*time.Minute + 3*time.Second, key: "cl", name: "cluster", gen: 5, statusGen: 5},
			{at: 2*time.Minute + 3*time.Second, key: "np", name: "pool", gen: 3, statusGen: 1},
			{at: 2*time.Minute + 16*time.Second, key: "np", name: "pool", gen: 3, statusGen: 1, wantRepublish: true},
		}},
		{"no_answer_keeps_the_doubled_wait", []step{
			{at: 2*time.Minute + 41*time.Second, key: "np", name: "pool", gen: 3, statusGen: 1},
			{at: 5*time.Minute + 59*time.Second, key: "np", name: "pool", gen: 3, statusGen: 1},
			{at: 6*time.Minute + time.Second, key: "np", name: "pool", gen: 3, statusGen: 1, wantRepublish: true},
		}},
		{"an_answer_on_a_generation_seen_before_the_republish_proves_nothing", []step{
			{at: 110 * time.Second, key: "cl", name: "cluster", gen: 5, statusGen: 4},
			{at: 2*time.Minute + 41*time.Second, key: "cl", name: "cluster", gen: 5, statusGen: 5},
			{at: 2*time.Minute + 41*time.Second, key: "np", name: "pool", gen: 3, statusGen: 1},
		}},
		{"an_answer_on_another_shard_proves_nothing", []step{
			{at: 2*time.Minute + 40*time.Second, key: "other", name: "other-shard", gen: 5, statusGen: 4},
			{at: 2*time.Minute + 41*time.Second, key: "other", name: "other-shard", gen: 5, statusGen: 5},
			{at: 2*time.Minute + 41*time.Second, key: "np", name: "pool", gen: 3, statusGen: 1},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clock := t0
			c := New(nil, nil, Config{RepublishAfter: after, Now: func() time.Time { return clock }}, slog.New(slog.DiscardHandler))
			c.reports["mgmt-1"] = &reportTimes{}
			c.reports["mgmt-1"].add(time.Minute)
			for i, s := range append(append([]step{}, first...), tc.steps...) {
				clock = t0.Add(s.at)
				shard := "mgmt-1"
				if s.name == "other-shard" {
					shard = "mgmt-2"
				}
				if s.sent {
					c.noteSent(s.key, s.gen)
					continue
				}
				_, _, d := c.lagDecision(s.key, shard, lagWork(s.name, s.gen, s.statusGen))
				if d.republish != s.wantRepublish {
					t.Errorf("step %d (%s at +%s, generation %d, status %d): republish %t, want %t (decision %+v)",
						i, s.name, s.at, s.gen, s.statusGen, d.republish, s.wantRepublish, d)
				}
				if s.key == "np" && s.gen == 3 && !d.republish && d.keep && d.recheck > after { // after the republish
					t.Errorf("step %d: looks again after %s, want at most %s, to see an answer in time", i, d.recheck, after)
				}
			}
		})
	}
}
