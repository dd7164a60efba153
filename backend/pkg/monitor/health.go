// Package monitor is the fleet's Monitor: replicas share the hosted clusters and management
// clusters (shards) through bucket leases in the document store, check each continuously from
// what Cluster Service has observed and from active probes, and export bounded-cardinality
// health metrics. It owns the rules that turn observations into a health verdict (health.go).
package monitor

import (
	"time"

	csv1 "github.com/openhcp/openhcp/cluster-service/api/v1"
)

// Health is the Monitor's verdict on a cluster, a node pool or a shard.
type Health string

const (
	// Healthy: ready, and nothing observed says otherwise.
	Healthy Health = "healthy"
	// Progressing: a create, change or delete is rolling out within its SLO.
	Progressing Health = "progressing"
	// Stuck: a create, change or delete has made no observed progress for longer than its SLO.
	Stuck Health = "stuck"
	// Degraded: ready, but a condition says part of it does not work (Degraded=True).
	Degraded Health = "degraded"
	// Unhealthy: failed (ERROR), or ready yet no longer Available.
	Unhealthy Health = "unhealthy"
	// Stale: the feedback path from its management cluster has not been seen working for longer
	// than the staleness limit, so whatever Cluster Service last stored may no longer be true.
	Stale Health = "stale"
)

// AllHealth lists every verdict, in the order the metrics and views show them.
var AllHealth = []Health{Healthy, Progressing, Stuck, Degraded, Unhealthy, Stale}

// Limits are the thresholds of the verdicts. Zero values take the defaults.
type Limits struct {
	// StaleAfter: a shard whose feedback path has failed for longer than this makes the verdict
	// of its clusters and node pools Stale (default 3m).
	StaleAfter time.Duration
	// FeedbackStaleAfter: a cluster whose own last feedback (ClusterStatus.feedback_time) is
	// older than this is Stale (default DefaultFeedbackStaleAfter).
	FeedbackStaleAfter time.Duration
	// PendingSLO: how long a cluster or node pool may wait to be placed and sent (default 10m).
	PendingSLO time.Duration
	// ChangeSLO: how long an install, update or uninstall may go without an observed status
	// change (default 60m, the backend's create deadline).
	ChangeSLO time.Duration
}

// WithDefaults returns l with zero fields set to their defaults.
func (l Limits) WithDefaults() Limits {
	if l.StaleAfter <= 0 {
		l.StaleAfter = 3 * time.Minute
	}
	if l.FeedbackStaleAfter <= 0 {
		l.FeedbackStaleAfter = DefaultFeedbackStaleAfter
	}
	if l.PendingSLO <= 0 {
		l.PendingSLO = 10 * time.Minute
	}
	if l.ChangeSLO <= 0 {
		l.ChangeSLO = 60 * time.Minute
	}
	return l
}

// DefaultFeedbackStaleAfter is Limits.FeedbackStaleAfter's default: three of Cluster Service's
// default feedback heartbeats (10m) and 5m of slack, so that one lost heartbeat and the lag
// rule's first republishes do not make a cluster stale.
const DefaultFeedbackStaleAfter = 35 * time.Minute

// ReasonFeedbackStale starts the reason of a cluster judged stale because its own last feedback
// is too old.
const ReasonFeedbackStale = "feedback-stale"

// Verdict is a health decision and the reason for it, shown to SREs.
type Verdict struct {
	Health Health `json:"health"`
	Reason string `json:"reason"`
}

// Observation is what the Monitor knows of one cluster or node pool at a check.
type Observation struct {
	// State is the Cluster Service state, as a transitional or terminal phase.
	Phase Phase
	// Conditions are the HyperShift conditions Cluster Service stored from the feedback.
	Conditions []*csv1.Condition
	// Since is when Cluster Service last changed the status (update_time).
	Since time.Time
	// FeedbackAge is how long the feedback path of its shard has not been seen working; 0 when
	// it works now (or the object is on no shard yet).
	FeedbackAge time.Duration
	// LastFeedback is the cluster's last feedback as Cluster Service stored it (feedback_time);
	// zero when it has none recorded, for a node pool, or for a cluster on no shard yet.
	LastFeedback time.Time
	// HostedAPIServerErr is why the cluster's hosted kube-apiserver (status.api_url) did not
	// answer this pass's probe; empty when it answered or was not probed (the Checker probes
	// only where one should answer: hostedAPIServerExpected).
	HostedAPIServerErr string
}

// ReasonHostedAPIServerUnreachable starts the reason of a cluster judged unhealthy because its
// hosted kube-apiserver did not answer.
const ReasonHostedAPIServerUnreachable = "hosted-apiserver-unreachable"

// Phase is a Cluster Service state reduced to what the verdict needs.
type Phase int

const (
	PhaseUnknown Phase = iota
	PhasePending
	PhaseChanging // installing, updating or uninstalling
	PhaseReady
	PhaseError
)

// ClusterPhase maps a cluster state.
func ClusterPhase(s csv1.ClusterState) Phase {
	switch s {
	case csv1.ClusterState_CLUSTER_STATE_PENDING:
		return PhasePending
	case csv1.ClusterState_CLUSTER_STATE_INSTALLING, csv1.ClusterState_CLUSTER_STATE_UPDATING, csv1.ClusterState_CLUSTER_STATE_UNINSTALLING:
		return PhaseChanging
	case csv1.ClusterState_CLUSTER_STATE_READY:
		return PhaseReady
	case csv1.ClusterState_CLUSTER_STATE_ERROR:
		return PhaseError
	}
	return PhaseUnknown
}

// NodePoolPhase maps a node pool state.
func NodePoolPhase(s csv1.NodePoolState) Phase {
	switch s {
	case csv1.NodePoolState_NODE_POOL_STATE_PENDING:
		return PhasePending
	case csv1.NodePoolState_NODE_POOL_STATE_INSTALLING, csv1.NodePoolState_NODE_POOL_STATE_UPDATING, csv1.NodePoolState_NODE_POOL_STATE_UNINSTALLING:
		return PhaseChanging
	case csv1.NodePoolState_NODE_POOL_STATE_READY:
		return PhaseReady
	case csv1.NodePoolState_NODE_POOL_STATE_ERROR:
		return PhaseError
	}
	return PhaseUnknown
}

// Decide is the one rule that turns an observation into a verdict. Stale feedback comes first:
// a status nobody can refresh is not evidence of health, whether its shard's feedback path
// failed its probe or, for a ready cluster, its own feedback (Cluster Service's heartbeat) has
// not come back for too long (a failed cluster may have no work to answer: Cluster Service
// sets ERROR itself when it cannot build one); a change in flight is judged by its SLO,
// as Cluster Service republishes its work anyway while it is not settled. Then a hosted kube-apiserver that did
// not answer (of a ready or changing object), then failure, then the conditions of a ready
// object, then the age of a change in flight.
func Decide(o Observation, now time.Time, l Limits) Verdict {
	l = l.WithDefaults()
	if o.FeedbackAge > l.StaleAfter {
		return Verdict{Stale, "no feedback from its management cluster for " + o.FeedbackAge.Round(time.Second).String()}
	}
	if age := now.Sub(o.LastFeedback); !o.LastFeedback.IsZero() && o.Phase == PhaseReady && age > l.FeedbackStaleAfter {
		return Verdict{Stale, ReasonFeedbackStale + ": last feedback " + age.Round(time.Second).String() + " ago"}
	}
	// What the customer reaches decides before what HyperShift last reported: an installed
	// cluster that lost its API server is unhealthy, not an install in progress.
	if o.HostedAPIServerErr != "" && (o.Phase == PhaseReady || o.Phase == PhaseChanging) {
		return Verdict{Unhealthy, ReasonHostedAPIServerUnreachable + ": " + o.HostedAPIServerErr}
	}
	switch o.Phase {
	case PhaseError:
		return Verdict{Unhealthy, "Cluster Service reports ERROR"}
	case PhaseReady:
		for _, c := range o.Conditions {
			if c.GetType() == "Available" && c.GetStatus() == "False" {
				return Verdict{Unhealthy, "Available=False: " + c.GetReason()}
			}
		}
		for _, c := range o.Conditions {
			if c.GetType() == "Degraded" && c.GetStatus() == "True" {
				return Verdict{Degraded, "Degraded=True: " + c.GetReason()}
			}
		}
		return Verdict{Healthy, "ready"}
	case PhasePending, PhaseChanging:
		slo := l.ChangeSLO
		what := "change"
		if o.Phase == PhasePending {
			slo, what = l.PendingSLO, "pending"
		}
		age := now.Sub(o.Since)
		if !o.Since.IsZero() && age > slo {
			return Verdict{Stuck, what + " without progress for " + age.Round(time.Second).String() + " (SLO " + slo.String() + ")"}
		}
		return Verdict{Progressing, what + " in progress"}
	}
	return Verdict{Unhealthy, "unknown state"}
}
