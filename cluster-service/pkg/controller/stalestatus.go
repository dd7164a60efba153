package controller

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"log/slog"
	"strconv"
	"time"

	workv1 "open-cluster-management.io/api/work/v1"

	"github.com/openhcp/openhcp/cluster-service/pkg/maestro"
)

// The pinned Maestro server can lose an agent's status (docs/reliability.md, defect 2): a
// status the agent sends while the server is away, or while the server cannot write its
// database, is dropped, and neither side sends it again. The agent re-sends a status only when
// it changes, so a work whose HostedCluster became Available meanwhile keeps, in Maestro, the
// status of before, and the cluster stays INSTALLING for ever although the agent has reported
// it ready. The lag rule (republish.go) does not see it: the status is for the current
// generation, only an old one. The same happens to a work the server published just before it
// went away: the agent applied it and reported, the server never stored the status, and Maestro
// shows the work as never reported on, which the lag rule leaves for 4 × its wait (up to 8
// minutes on a shard whose agent is slow).
//
// The controller cannot tell a lost status from a slow HostedCluster, so it acts on time: an
// object whose state is not settled (READY or ERROR) while Maestro's status of its work has not
// changed for StaleStatusAfter has its work republished (WorkClient.Republish). The agent then
// applies the new generation, which changes nothing, and reports a fresh status with the
// current feedback. The wait doubles with each republish of the episode (up to
// maxRepublishDelay), and the episode ends once the object settles, so a HostedCluster that
// really takes half an hour to install costs one needless apply at 1, 2, 4, 8, 10, 10, …
// minutes.
//
// The rule covers a work caught up with its generation and a work never reported on (status
// generation 0), for which it waits at least the lag rule's wait for the shard (republishWait,
// without the never-reported factor), so an agent that is merely slow to report a new work is
// not sent it twice. A work reported on for an older generation is the lag rule's alone. The
// digest includes the work's generation, so any republish, by either rule, or a new spec
// restarts the clock.

// DefaultStaleStatusAfter is Config.StaleStatusAfter's default.
const DefaultStaleStatusAfter = time.Minute

// staleState is the stale-status episode of an unsettled object's work, keyed by the digest
// of its status as Maestro last had it (statusDigest).
type staleState = episode[[sha256.Size]byte]

// decideStale is the stale-status rule without side effects: prev (known says whether there
// is one) is what was remembered, status the digest of the work's status now, settled whether
// the object's state is settled (which ends the episode), lagRepublished whether the lag rule
// sent the work again in the same reconcile, and after the wait before a first republish.
//
// A work the lag rule has just sent again is not sent a second time: the status read is for a
// generation that is no longer the work's, and a second generation a few milliseconds after the
// first only makes Maestro discard the agent's report on the first. For a never-reported work
// both rules wait the same minute by default, so without this every such work was republished
// twice in one reconcile (docs/reliability.md, "Management kube-apiserver outage"). The clock
// starts over instead, with the episode's backoff kept.
func decideStale(prev staleState, known bool, status [sha256.Size]byte, settled, lagRepublished bool, now time.Time, after time.Duration) episodeDecision[[sha256.Size]byte] {
	if settled {
		return episodeDecision[[sha256.Size]byte]{}
	}
	if lagRepublished && known {
		next := staleState{key: status, since: now, attempts: prev.attempts}
		return episodeDecision[[sha256.Size]byte]{recheck: republishDelay(after, next.attempts), next: next, keep: true}
	}
	return decideEpisode(prev, known, status, now, after)
}

// statusDigest identifies the status Maestro holds for got: its conditions, feedback and the
// generation it was written for, and the work's own generation.
func statusDigest(got *workv1.ManifestWork) ([sha256.Size]byte, error) {
	b, err := json.Marshal(got.Status)
	if err != nil {
		return [sha256.Size]byte{}, fmt.Errorf("digest status of work %s: %w", got.Name, err)
	}
	b = strconv.AppendInt(b, maestro.StatusGeneration(got), 10)
	b = append(b, '/')
	b = strconv.AppendInt(b, got.Generation, 10)
	return sha256.Sum256(b), nil
}

// repairLostStatus applies the stale-status rule to the work of key (kind is the metric label)
// on shard, whose object's state is settled or not, and returns when to look again (0: no
// need). It leaves a work reported on for an older generation to repairLostUpdate, and does not
// send again a work that repairLostUpdate has just sent (lagRepublished).
func (c *Controller) repairLostStatus(ctx context.Context, log *slog.Logger, kind, key, shard string, got *workv1.ManifestWork, settled, lagRepublished bool) (time.Duration, error) {
	reported := maestro.StatusGeneration(got)
	if got == nil || !got.DeletionTimestamp.IsZero() || (reported > 0 && reported < got.Generation) {
		c.mu.Lock()
		delete(c.stale, key)
		c.mu.Unlock()
		return 0, nil
	}
	digest, err := statusDigest(got)
	if err != nil {
		return 0, err
	}
	c.mu.Lock()
	after := c.cfg.StaleStatusAfter
	if reported == 0 {
		after = max(after, c.republishWait(shard))
	}
	prev, known := c.stale[key]
	d := decideStale(prev, known, digest, settled, lagRepublished, c.now(), after)
	record(c.stale, key, d)
	c.mu.Unlock()
	if !d.republish {
		return d.recheck, nil
	}
	log.Warn("the work's status has not changed for too long while the object is not settled; republishing it so that the agent reports afresh",
		"work", got.Name, "generation", got.Generation, "unchanged_for", c.now().Sub(prev.since).Round(time.Second).String(), "attempt", d.next.attempts)
	if err := republishInEpisode(ctx, c, c.stale, key, shard, got.Name, prev); err != nil {
		return 0, err
	}
	c.staleRepublishes.WithLabelValues(kind).Inc()
	return d.recheck, nil
}
