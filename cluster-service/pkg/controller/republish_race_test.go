package controller

import (
	"context"
	"log/slog"
	"sync"
	"testing"
	"time"

	workv1 "open-cluster-management.io/api/work/v1"

	csv1 "github.com/openhcp/openhcp/cluster-service/api/v1"
)

// catchingUpWorks is a fake WorkClient (no Maestro here) whose Get returns the work as Maestro
// has it now, which a test sets: the agent's catch-up then lands between the lag rule's
// decision, made on the work read early in the reconcile, and its republish. It counts
// republishes. Only Get and Republish are called.
type catchingUpWorks struct {
	WorkClient
	mu          sync.Mutex
	now         *workv1.ManifestWork
	republished int
}

func (w *catchingUpWorks) Get(context.Context, string, string) (*workv1.ManifestWork, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.now.DeepCopy(), nil
}

func (w *catchingUpWorks) Republish(context.Context, string, string) (int64, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.republished++
	return w.now.Generation, nil
}

// TestLagRuleReadsAgainBeforeRepublishing: the reconcile read a work behind its generation past
// the lag rule's wait; by the time the rule would republish, the agent has reported. No
// republish goes out and the episode ends. A work still behind at that moment is republished.
func TestLagRuleReadsAgainBeforeRepublishing(t *testing.T) {
	const after = 15 * time.Second
	t0 := time.Date(2026, 11, 27, 5, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name            string
		now             *workv1.ManifestWork // the work when the rule is about to republish
		wantRepublished int
		wantOutcome     lagOutcome
		wantEpisode     bool
	}{
		{name: "caught_up_in_between_is_not_republished", now: workAt(5, 5), wantRepublished: 0, wantOutcome: lagMoved, wantEpisode: false},
		{name: "a_newer_generation_in_between_is_not_republished", now: workAt(6, 4), wantRepublished: 0, wantOutcome: lagMoved, wantEpisode: true},
		{name: "still_behind_is_republished", now: workAt(5, 4), wantRepublished: 1, wantOutcome: lagRepublished, wantEpisode: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clock := t0
			works := &catchingUpWorks{now: workAt(5, 4)}
			c := New(nil, works, Config{RepublishAfter: after, FixedRepublishWait: true, Now: func() time.Time { return clock }}, slog.New(slog.DiscardHandler))
			ctx := context.Background()
			log := slog.New(slog.DiscardHandler)
			// First sight of generation 5 unreported: the episode starts, nothing is sent.
			if _, lag, err := c.repairLostUpdate(ctx, log, "cluster", "c1", "shard-1", workAt(5, 4)); err != nil || lag != lagNone {
				t.Fatalf("first sight: %v, %v", lag, err)
			}
			// Past the wait, the reconcile reads the work still behind; the agent reports
			// before the rule acts on that read.
			clock = t0.Add(after + time.Second)
			read := workAt(5, 4)
			works.mu.Lock()
			works.now = tc.now
			works.mu.Unlock()
			_, outcome, err := c.repairLostUpdate(ctx, log, "cluster", "c1", "shard-1", read)
			if err != nil {
				t.Fatal(err)
			}
			c.mu.Lock()
			_, episode := c.lag["c1"]
			c.mu.Unlock()
			if works.republished != tc.wantRepublished || outcome != tc.wantOutcome || episode != tc.wantEpisode {
				t.Fatalf("republished %d (outcome %v), episode kept %v; want %d (outcome %v), episode %v",
					works.republished, outcome, episode, tc.wantRepublished, tc.wantOutcome, tc.wantEpisode)
			}
		})
	}
}

// TestLaterRulesSkipAWorkTheLagRuleFoundMoved: a new cluster, INSTALLING at generation 1 and
// never reported on, starts the lag and the stale-status episodes in the same reconcile, and
// both waits end together (here a minute each). When they do, the reconcile has read the work
// still unreported, but the agent reports generation 1 before the lag rule's read again: the
// lag rule sends nothing, and neither may the stale-status rule, deciding on the early read.
// (The heartbeat cannot act on such a read: it needs the agent caught up, and the lag rule
// reads again only a work that is not.) Seen failing, with 1 republish, in the fixed-wait case
// while repairWork still ran the stale rule after lagMoved. With the adaptive wait the report
// the lag rule records (61 s) lengthens the stale rule's wait for a never-reported work, which
// hid the race in that case.
func TestLaterRulesSkipAWorkTheLagRuleFoundMoved(t *testing.T) {
	t0 := time.Date(2026, 11, 27, 5, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name string
		cfg  Config
	}{
		{name: "fixed_wait", cfg: Config{RepublishAfter: time.Minute, FixedRepublishWait: true}},
		{name: "adaptive_wait", cfg: Config{RepublishAfter: 15 * time.Second}}, // 4 × for a never-reported work
	} {
		t.Run(tc.name, func(t *testing.T) {
			clock := t0
			works := &catchingUpWorks{now: workAt(1, 0)}
			cfg := tc.cfg
			cfg.StaleStatusAfter, cfg.FeedbackHeartbeat = time.Minute, time.Minute
			cfg.Now = func() time.Time { return clock }
			c := New(nil, works, cfg, slog.New(slog.DiscardHandler))
			ctx := context.Background()
			log := slog.New(slog.DiscardHandler)
			st := &csv1.ClusterStatus{State: csv1.ClusterState_CLUSTER_STATE_INSTALLING}
			if _, err := c.repairClusterWork(ctx, log, "c1", "shard-1", workAt(1, 0), st, false); err != nil {
				t.Fatal(err)
			}
			if works.republished != 0 {
				t.Fatalf("first sight: %d republishes, want 0", works.republished)
			}
			clock = t0.Add(time.Minute + time.Second)
			works.mu.Lock()
			works.now = workAt(1, 1)
			works.mu.Unlock()
			recheck, err := c.repairClusterWork(ctx, log, "c1", "shard-1", workAt(1, 0), st, false)
			if err != nil {
				t.Fatal(err)
			}
			if works.republished != 0 {
				t.Fatalf("%d republishes after the agent caught up, want 0", works.republished)
			}
			if recheck <= 0 || recheck > c.cfg.RepublishAfter {
				t.Fatalf("recheck %v, want within %v", recheck, c.cfg.RepublishAfter)
			}
		})
	}
}
