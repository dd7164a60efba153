package controller

import (
	"context"
	"fmt"
	"time"
)

// Both republish rules, the lag rule (republish.go) and the stale-status rule (stalestatus.go),
// follow one episode per work: the first sight of a key starts a clock; a new key restarts it
// and keeps the episode's backoff; a key unchanged past its wait is republished, and its wait
// doubles (republishDelay). They differ in their key (the work generation the status is behind
// on, or a digest of the status) and in when an episode ends, which each decides before it asks
// decideEpisode.

// episode is what the controller remembers of one work's episode.
type episode[K comparable] struct {
	key      K         // what was last seen: a work generation, a status digest
	since    time.Time // when that key was first seen
	attempts int       // republishes so far in this episode
}

// episodeDecision says what to do about the work: republish it now, look again after recheck
// (0: no need), and what to remember (keep false: forget it, the episode is over).
type episodeDecision[K comparable] struct {
	republish bool
	recheck   time.Duration
	next      episode[K]
	keep      bool
}

// decideEpisode is the episode rule without side effects: prev (known says whether there is
// one) is what was remembered, key what the work shows now, and base the wait before a first
// republish.
func decideEpisode[K comparable](prev episode[K], known bool, key K, now time.Time, base time.Duration) episodeDecision[K] {
	if !known {
		return episodeDecision[K]{recheck: base, next: episode[K]{key: key, since: now}, keep: true}
	}
	if prev.key != key {
		// A new key (the object progresses, a new spec, or our own republish): its clock starts
		// now; the backoff of the episode carries on.
		next := episode[K]{key: key, since: now, attempts: prev.attempts}
		return episodeDecision[K]{recheck: republishDelay(base, next.attempts), next: next, keep: true}
	}
	due := prev.since.Add(republishDelay(base, prev.attempts))
	if now.Before(due) {
		return episodeDecision[K]{recheck: due.Sub(now), next: prev, keep: true}
	}
	next := episode[K]{key: key, since: now, attempts: prev.attempts + 1}
	return episodeDecision[K]{republish: true, recheck: republishDelay(base, next.attempts), next: next, keep: true}
}

// record keeps d's episode of key in episodes, or forgets it once the episode is over; c.mu is
// held.
func record[K comparable](episodes map[string]episode[K], key string, d episodeDecision[K]) {
	if d.keep {
		episodes[key] = d.next
	} else {
		delete(episodes, key)
	}
}

// republishInEpisode sends the work again as a new generation (WorkClient.Republish). When
// Maestro does not take it, the episode of key goes back to prev, so that the next reconcile
// (the error's backoff) tries again at once.
func republishInEpisode[K comparable](ctx context.Context, c *Controller, episodes map[string]episode[K], key, shard, work string, prev episode[K]) error {
	from, err := c.works.Republish(ctx, shard, work)
	if err != nil {
		c.mu.Lock()
		episodes[key] = prev
		c.mu.Unlock()
		return fmt.Errorf("republish work %s on %s: %w", work, shard, err)
	}
	c.noteSent(key, from+1)
	return nil
}
