package controller

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"google.golang.org/protobuf/types/known/timestamppb"
	workv1 "open-cluster-management.io/api/work/v1"

	csv1 "github.com/openhcp/openhcp/cluster-service/api/v1"
	"github.com/openhcp/openhcp/cluster-service/pkg/maestro"
)

// A steady cluster's work gets no status from the Maestro agent: the agent patches a status
// only when it changes. So whether the feedback path of one cluster (broker, Maestro server,
// agent, its work) still works cannot be read from its status alone. The feedback heartbeat
// makes it observable: a settled cluster (READY or ERROR) whose last feedback is older than
// Config.FeedbackHeartbeat has its work republished unchanged as a new generation
// (WorkClient.Republish, as the lag and stale-status rules do). The agent applies it, which
// changes nothing on the management cluster, and reports a status for the new generation; the
// first such status Cluster Service sees is the cluster's new last feedback, stored with its
// status (ClusterStatus.feedback_time and feedback_generation), so ListClusters returns it and
// a restart keeps it. The Monitor judges a cluster whose feedback is too old stale
// (docs/monitor.md).
//
// A status for an older generation is not feedback on the current spec, so only a status of
// the work's current generation moves the feedback time. An agent that does not answer a
// heartbeat leaves the work behind its generation, which is the lag rule's case (republish.go):
// it republishes with its own backoff, and the heartbeat stays out of it. One heartbeat ack
// costs one status write per cluster per period.

// DefaultFeedbackHeartbeat is the --feedback-heartbeat flag's default.
const DefaultFeedbackHeartbeat = 10 * time.Minute

// recordFeedback sets st's last feedback from got, the work as Maestro has it, at now: when
// st is settled (READY or ERROR), the agent has reported on got's current generation and st's
// feedback is not already for that generation, the feedback is now. It reports whether it
// changed st.
//
// Only a settled status records it. A cluster that is installing or updating has its work
// republished by the stale-status rule (1, 2, 4, … minutes) while it is not settled; a feedback
// time recorded from each answer would be a status write each time, moving the status's
// update_time, which is what the Monitor measures a stuck install or update by, so a stuck
// cluster would never be called stuck.
func recordFeedback(st *csv1.ClusterStatus, got *workv1.ManifestWork, now time.Time) bool {
	if !settledState(st.GetState()) || got == nil || got.Generation == 0 || maestro.StatusGeneration(got) != got.Generation {
		return false
	}
	if st.GetFeedbackTime() != nil && st.GetFeedbackGeneration() == got.Generation {
		return false
	}
	st.FeedbackTime, st.FeedbackGeneration = timestamppb.New(now), got.Generation
	return true
}

// settledState says whether a cluster in state is settled: READY or ERROR.
func settledState(state csv1.ClusterState) bool {
	return state == csv1.ClusterState_CLUSTER_STATE_READY || state == csv1.ClusterState_CLUSTER_STATE_ERROR
}

// carryFeedback keeps prev's last feedback in st, a status derived afresh (which has none).
func carryFeedback(st, prev *csv1.ClusterStatus) {
	if st.GetFeedbackTime() == nil {
		st.FeedbackTime, st.FeedbackGeneration = prev.GetFeedbackTime(), prev.GetFeedbackGeneration()
	}
}

// decideHeartbeat is the heartbeat rule without side effects: period is
// Config.FeedbackHeartbeat (0: none), settled whether the cluster is READY or ERROR,
// caughtUp whether the agent has reported on the work's current generation, lastFeedback the
// cluster's last feedback time (zero: none yet), and republished whether another rule sent the
// work again in this reconcile, or the lag rule's read before a republish found the work
// changed since the reconcile read it (repairWork). It returns whether to republish now and when to look again (0:
// no need).
func decideHeartbeat(period time.Duration, settled, caughtUp bool, lastFeedback time.Time, republished bool, now time.Time) (beat bool, recheck time.Duration) {
	if period <= 0 || !settled || !caughtUp || republished || lastFeedback.IsZero() {
		return false, 0
	}
	if due := lastFeedback.Add(period); now.Before(due) {
		return false, due.Sub(now)
	}
	return true, 0
}

// feedbackHeartbeat applies the heartbeat rule to the work got of cluster id on shard, whose
// stored status (with its last feedback) is st, and returns when to look again (0: no need).
func (c *Controller) feedbackHeartbeat(ctx context.Context, log *slog.Logger, id, shard string, got *workv1.ManifestWork, st *csv1.ClusterStatus, settled, republished bool) (time.Duration, error) {
	if got == nil || !got.DeletionTimestamp.IsZero() {
		return 0, nil
	}
	var last time.Time
	if st.GetFeedbackTime() != nil {
		last = st.GetFeedbackTime().AsTime()
	}
	caughtUp := got.Generation > 0 && maestro.StatusGeneration(got) == got.Generation
	now := c.now()
	beat, recheck := decideHeartbeat(c.cfg.FeedbackHeartbeat, settled, caughtUp, last, republished, now)
	if !beat {
		return recheck, nil
	}
	gen, err := c.works.Republish(ctx, shard, got.Name)
	if err != nil {
		return 0, fmt.Errorf("feedback heartbeat of cluster %s: republish work %s on %s: %w", id, got.Name, shard, err)
	}
	c.heartbeats.Inc()
	c.noteSent(id, gen+1)
	log.Debug("feedback heartbeat: work republished", "work", got.Name, "generation", gen, "last_feedback_age", now.Sub(last).Round(time.Second).String())
	// The agent's answer arrives as a status event; if it does not, the next reconcile finds
	// the work behind its generation and the lag rule takes over.
	return c.cfg.RepublishAfter, nil
}
