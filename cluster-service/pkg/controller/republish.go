package controller

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	workv1 "open-cluster-management.io/api/work/v1"

	"github.com/openhcp/openhcp/cluster-service/pkg/maestro"
	"github.com/openhcp/openhcp/internal/backoff"
)

// The pinned Maestro agent can lose a spec update that arrives while it writes the previous
// status (docs/maestro.md, "A spec update the agent loses"): it keeps the older spec and never
// applies the new one by itself. Maestro keeps only a status the agent wrote for the work's
// current generation (maestro.StatusGeneration), so a status generation that stays behind the
// work's generation is the symptom. The controller then sends the work again as a new
// generation (WorkClient.Republish), which the agent does receive and apply.
//
// The rule watches the agent, not HyperShift: the agent writes a status within a second of
// applying any generation, however long the HostedCluster or NodePool then takes to become
// ready, so a slow transition never triggers it. The wait doubles with every republish of the
// same episode (RepublishAfter, 2×, 4×, … up to maxRepublishDelay) and resets once the agent
// has caught up, so an agent that is down costs one generation per work every few minutes,
// never a loop. The one exception is decideAgain: an agent seen answering later generations of
// its shard while a republished work stays behind has lost the republish too, and gets it again
// after RepublishAfter instead of the doubled wait (at most twice per episode).
//
// A republish of a work the agent is merely slow on is not free: Maestro then discards every
// status the agent sends for the older generation as stale, and the agent must apply and report
// once more, which slows it further (measured in docs/performance.md: under load, 49
// republishes for 50 creates, 37 % of the agents' statuses discarded). So, unless
// Config.FixedRepublishWait asks for the plain rule, the wait adapts in two ways:
//   - a work the agent has never reported on (status generation 0) waits neverReportedFactor
//     times longer: the race needs a status write of an earlier generation in flight, so such a
//     work cannot have lost an update to it; the longer wait still repairs a work lost some
//     other way;
//   - per shard, the controller keeps how long the agent took to report on the last
//     reportWindow generations it caught up on by itself, and waits at least
//     slowReportFactor times the slowest of them (never more than maxAdaptedWait): an agent
//     that takes 30 s under load is given 60 s, one that takes a second keeps RepublishAfter.

// DefaultRepublishAfter is Config.RepublishAfter's default: the agent reports on a new
// generation within about a second here (docs/maestro.md), and a needless republish costs it one
// apply that changes nothing.
const DefaultRepublishAfter = 15 * time.Second

// maxRepublishDelay caps the wait between two republishes of the same work.
const maxRepublishDelay = 10 * time.Minute

// The adaptive wait (see above).
const (
	neverReportedFactor = 4
	slowReportFactor    = 2
	reportWindow        = 32
	maxAdaptedWait      = 2 * time.Minute
)

// quickRepublishes bounds the republishes of an episode that the answered rule may hasten: after
// the first and the second, a work is sent again RepublishAfter after its last republish once the
// shard's agent has answered a later generation (decideAgain); from the third on only the doubled
// wait applies.
const quickRepublishes = 3

// lagState is the lag episode of a work whose status is behind its spec, keyed by the work
// generation last seen behind.
type lagState = episode[int64]

// republishDelay is how long a generation may stay unreported after attempts republishes.
func republishDelay(base time.Duration, attempts int) time.Duration {
	return backoff.Policy{Initial: base, Max: maxRepublishDelay}.Nominal(attempts + 1)
}

// decideLag is the republish rule, without side effects: prev (known says whether there is
// one) is what was remembered, generation and statusGeneration what Maestro reports now, base
// the wait before a first republish (republishWait's, for the work's shard), and adaptive
// whether a never-reported work waits neverReportedFactor times longer. A status caught up
// with its generation ends the episode; reported, when not 0, is then how long the agent took
// to report on a generation it caught up on without a republish.
func decideLag(prev lagState, known bool, generation, statusGeneration int64, now time.Time, base time.Duration, adaptive bool) (d episodeDecision[int64], reported time.Duration) {
	if statusGeneration >= generation {
		if known && prev.attempts == 0 && statusGeneration >= prev.key {
			return d, max(now.Sub(prev.since), time.Nanosecond)
		}
		return d, 0
	}
	if adaptive && statusGeneration == 0 {
		base *= neverReportedFactor
	}
	return decideEpisode(prev, known, generation, now, base), 0
}

// decideAgain hastens the episode decision d of a work already republished: the agent that lost
// a spec update can lose the republish too, the same way (docs/maestro.md, "A republish that did
// not repair"), and the doubled wait then outlasts the operation. generation and statusGeneration
// are what Maestro reports now; answered is the latest time at which a generation of another work
// of the same shard, which its agent has since reported on, was first seen behind (zero: none).
// A generation first seen behind after this work's republish and answered shows the agent is
// connected and reporting on what is sent to it, so this work's republish reached it and was lost
// again, not delayed: it is sent again after (RepublishAfter) instead of the doubled wait. Until
// such an answer comes, the work is looked at again every after, to see it in time. Only the
// first quickRepublishes-1 republishes of an episode are hastened.
func decideAgain(d episodeDecision[int64], generation, statusGeneration int64, now, answered time.Time, after, base time.Duration) episodeDecision[int64] {
	ep := d.next
	if d.republish || !d.keep || statusGeneration >= generation || ep.key != generation ||
		ep.attempts < 1 || ep.attempts >= quickRepublishes {
		return d
	}
	if answered.Before(ep.since) {
		d.recheck = sooner(d.recheck, after)
		return d
	}
	if due := ep.since.Add(after); now.Before(due) {
		d.recheck = due.Sub(now)
		return d
	}
	next := lagState{key: generation, since: now, attempts: ep.attempts + 1}
	return episodeDecision[int64]{republish: true, recheck: republishDelay(base, next.attempts), next: next, keep: true}
}

// lagOutcome is what repairLostUpdate did.
type lagOutcome int

const (
	lagNone        lagOutcome = iota // nothing: got stands
	lagRepublished                   // it sent the work again
	// lagMoved: about to republish, it read the work again and found it changed since got
	// (the agent reported, or a new generation went out), so it sent nothing. got is then
	// out of date, and the rules after it must not decide on it.
	lagMoved
)

// repairLostUpdate applies the rule to the work of key (kind is the metric label) on shard:
// it republishes a work whose status has stayed behind its generation for too long, and
// returns when to look again (0: no need) and what it did.
func (c *Controller) repairLostUpdate(ctx context.Context, log *slog.Logger, kind, key, shard string, got *workv1.ManifestWork) (time.Duration, lagOutcome, error) {
	if got == nil || !got.DeletionTimestamp.IsZero() {
		c.mu.Lock()
		delete(c.lag, key)
		c.mu.Unlock()
		return 0, lagNone, nil
	}
	prev, _, d := c.lagDecision(key, shard, got)
	if !d.republish {
		return d.recheck, lagNone, nil
	}
	// got was read early in the reconcile, and a status write and the other rules came since:
	// the agent may have reported in between. Decide again, from prev, on the work as Maestro
	// has it now, so that an agent that has just caught up is not sent a needless generation.
	fresh, err := c.works.Get(ctx, shard, got.Name)
	c.mu.Lock()
	c.lag[key] = prev
	c.mu.Unlock()
	if apierrors.IsNotFound(err) {
		return 0, lagMoved, nil // the next reconcile applies it again
	}
	if err != nil {
		return 0, lagNone, fmt.Errorf("read work %s on %s again before a republish: %w", got.Name, shard, err)
	}
	prev, base, d := c.lagDecision(key, shard, fresh)
	if !d.republish {
		log.Debug("the agent reported before the republish went out; none sent", "work", got.Name,
			"generation", fresh.Generation, "status_generation", maestro.StatusGeneration(fresh))
		return d.recheck, lagMoved, nil
	}
	got = fresh
	log.Warn("the management cluster's agent has not reported on the work's current spec; republishing it",
		"work", got.Name, "generation", got.Generation, "status_generation", maestro.StatusGeneration(got),
		"behind_for", d.next.since.Sub(prev.since).Round(time.Millisecond).String(), "shard_wait", base.String(), "attempt", d.next.attempts)
	if err := republishInEpisode(ctx, c, c.lag, key, shard, got.Name, prev); err != nil {
		return 0, lagNone, err
	}
	c.republishes.WithLabelValues(kind).Inc()
	return d.recheck, lagRepublished, nil
}

// repairWork applies the lag rule and then the stale-status rule to the work got of key (kind
// is the metric label) on shard, whose object's state is settled or not. It returns when to
// look again (0: no need) and whether got may no longer be acted on in this reconcile: a rule
// sent the work again, or the lag rule's read before a republish found it changed.
//
// In that last case the stale-status rule is skipped: on got, read early in the reconcile, a
// new work whose agent has just reported still looks never reported on, and the stale rule,
// whose wait ends at the same time as the lag rule's for such a work, would send the needless
// generation the lag rule has just held back. The change brings a status event, hence another
// reconcile that decides on it; the recheck (RepublishAfter at the latest) covers a lost event.
func (c *Controller) repairWork(ctx context.Context, log *slog.Logger, kind, key, shard string, got *workv1.ManifestWork, settled bool) (time.Duration, bool, error) {
	recheck, lag, err := c.repairLostUpdate(ctx, log, kind, key, shard, got)
	if err != nil {
		return 0, false, err
	}
	if lag == lagMoved {
		return sooner(recheck, c.cfg.RepublishAfter), true, nil
	}
	staleRecheck, err := c.repairLostStatus(ctx, log, kind, key, shard, got, settled, lag == lagRepublished)
	if err != nil {
		return 0, false, err
	}
	return sooner(recheck, staleRecheck), lag == lagRepublished, nil
}

// lagDecision applies decideLag to the work got of key on shard and records the decision and
// any report time. It returns what was remembered before, the shard's wait and the decision.
func (c *Controller) lagDecision(key, shard string, got *workv1.ManifestWork) (prev lagState, base time.Duration, d episodeDecision[int64]) {
	c.mu.Lock()
	defer c.mu.Unlock()
	prev, known := c.lag[key]
	base = c.republishWait(shard)
	generation, statusGeneration, now := got.Generation, maestro.StatusGeneration(got), c.now()
	d, reported := decideLag(prev, known, generation, statusGeneration, now, base, !c.cfg.FixedRepublishWait)
	r := c.reports[shard]
	if !c.cfg.FixedRepublishWait {
		d = decideAgain(d, generation, statusGeneration, now, r.answeredAt(), c.cfg.RepublishAfter, base)
	}
	record(c.lag, key, d)
	answered := known && statusGeneration >= generation && statusGeneration >= prev.key
	if reported > 0 || answered {
		if r == nil {
			r = &reportTimes{}
			c.reports[shard] = r
		}
		if answered && prev.since.After(r.answered) {
			r.answered = prev.since
		}
	}
	if reported > 0 {
		r.add(reported)
		c.waits.WithLabelValues(shard).Set(c.republishWait(shard).Seconds())
	}
	return prev, base, d
}

// noteSent starts the lag episode of key at generation, which the controller has just sent (a
// republish by another rule), unless one is known already: an agent that answers within
// milliseconds is never seen behind by a reconcile, and its answer would otherwise prove nothing
// to decideAgain.
func (c *Controller) noteSent(key string, generation int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, known := c.lag[key]; !known {
		c.lag[key] = lagState{key: generation, since: c.now()}
	}
}

// reportTimes holds how long an agent took to report on its last reportWindow generations, and
// when the latest generation it has reported on was first seen behind (decideAgain).
type reportTimes struct {
	times    []time.Duration
	next     int
	answered time.Time
}

// answeredAt is r's answered (zero when r is nil).
func (r *reportTimes) answeredAt() time.Time {
	if r == nil {
		return time.Time{}
	}
	return r.answered
}

// add records d, dropping the oldest once the window is full.
func (r *reportTimes) add(d time.Duration) {
	if len(r.times) < reportWindow {
		r.times = append(r.times, d)
		return
	}
	r.times[r.next] = d
	r.next = (r.next + 1) % reportWindow
}

// slowest is the longest time in the window (0 when empty or nil).
func (r *reportTimes) slowest() time.Duration {
	if r == nil {
		return 0
	}
	var m time.Duration
	for _, d := range r.times {
		m = max(m, d)
	}
	return m
}

// adaptedWait is the wait before a first republish on a shard whose agent reported in times:
// base, or slowReportFactor times its slowest recent report, capped at maxAdaptedWait (but
// never below base).
func adaptedWait(base time.Duration, times *reportTimes) time.Duration {
	return max(base, min(slowReportFactor*times.slowest(), maxAdaptedWait))
}

// republishWait is the wait before a first republish of a work on shard; c.mu is held.
func (c *Controller) republishWait(shard string) time.Duration {
	if c.cfg.FixedRepublishWait {
		return c.cfg.RepublishAfter
	}
	return adaptedWait(c.cfg.RepublishAfter, c.reports[shard])
}

// sooner is the earlier of two requeue delays, where 0 means none.
func sooner(a, b time.Duration) time.Duration {
	switch {
	case a == 0:
		return b
	case b == 0:
		return a
	}
	return min(a, b)
}
