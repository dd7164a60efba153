package controller

import (
	"context"
	"log/slog"
	"sync"
	"testing"
	"time"

	workv1 "open-cluster-management.io/api/work/v1"
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
		wantEpisode     bool
	}{
		{name: "caught_up_in_between_is_not_republished", now: workAt(5, 5), wantRepublished: 0, wantEpisode: false},
		{name: "a_newer_generation_in_between_is_not_republished", now: workAt(6, 4), wantRepublished: 0, wantEpisode: true},
		{name: "still_behind_is_republished", now: workAt(5, 4), wantRepublished: 1, wantEpisode: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clock := t0
			works := &catchingUpWorks{now: workAt(5, 4)}
			c := New(nil, works, Config{RepublishAfter: after, FixedRepublishWait: true, Now: func() time.Time { return clock }}, slog.New(slog.DiscardHandler))
			ctx := context.Background()
			log := slog.New(slog.DiscardHandler)
			// First sight of generation 5 unreported: the episode starts, nothing is sent.
			if _, republished, err := c.repairLostUpdate(ctx, log, "cluster", "c1", "shard-1", workAt(5, 4)); err != nil || republished {
				t.Fatalf("first sight: republished %v, %v", republished, err)
			}
			// Past the wait, the reconcile reads the work still behind; the agent reports
			// before the rule acts on that read.
			clock = t0.Add(after + time.Second)
			read := workAt(5, 4)
			works.mu.Lock()
			works.now = tc.now
			works.mu.Unlock()
			_, republished, err := c.repairLostUpdate(ctx, log, "cluster", "c1", "shard-1", read)
			if err != nil {
				t.Fatal(err)
			}
			c.mu.Lock()
			_, episode := c.lag["c1"]
			c.mu.Unlock()
			if works.republished != tc.wantRepublished || republished != (tc.wantRepublished > 0) || episode != tc.wantEpisode {
				t.Fatalf("republished %d (reported %v), episode kept %v; want %d, episode %v",
					works.republished, republished, episode, tc.wantRepublished, tc.wantEpisode)
			}
		})
	}
}
