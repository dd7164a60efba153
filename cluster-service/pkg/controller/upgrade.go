package controller

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	csv1 "github.com/openhcp/openhcp/cluster-service/api/v1"
	"github.com/openhcp/openhcp/cluster-service/pkg/model"
	"github.com/openhcp/openhcp/cluster-service/pkg/store"
)

const (
	statePending   = csv1.UpgradePolicyState_UPGRADE_POLICY_STATE_PENDING
	stateScheduled = csv1.UpgradePolicyState_UPGRADE_POLICY_STATE_SCHEDULED
	stateStarted   = csv1.UpgradePolicyState_UPGRADE_POLICY_STATE_STARTED
	stateCompleted = csv1.UpgradePolicyState_UPGRADE_POLICY_STATE_COMPLETED
	stateFailed    = csv1.UpgradePolicyState_UPGRADE_POLICY_STATE_FAILED
)

// ErrorCodeUpgradeFailed is the code of a failed upgrade, for the operation that asked for it.
const ErrorCodeUpgradeFailed = "UpgradeFailed"

// UpgradeStep is one transition of a control-plane upgrade policy: the policy in its new state,
// and for STARTED the spec to write with it.
type UpgradeStep struct {
	Policy *csv1.UpgradePolicy
	Spec   *csv1.ClusterSpec
}

// NextUpgradeStep decides what a control-plane upgrade policy does next, from the cluster as
// stored (its spec and the status just derived from feedback) and the clock. It is a pure
// function: ok is false when nothing changes now, and wait, when positive, is when to look
// again. check re-validates the edge (the catalogue may have changed since the request);
// nil skips that.
//
//	PENDING   → SCHEDULED  the cluster is READY (else it waits, saying why)
//	PENDING   → FAILED     the edge is no longer in the catalogue
//	SCHEDULED → STARTED    next_run has come; the spec gets the new version
//	STARTED   → COMPLETED  the version history reports the new version Completed
//	STARTED   → FAILED     HyperShift reports the rollout to the new version failing
func NextUpgradeStep(spec *csv1.ClusterSpec, st *csv1.ClusterStatus, p *csv1.UpgradePolicy, now time.Time,
	check func(group, from, to string) error) (step UpgradeStep, wait time.Duration, ok bool) {
	if p == nil || store.Terminal(p.GetState()) {
		return UpgradeStep{}, 0, false
	}
	next := proto.Clone(p).(*csv1.UpgradePolicy)
	set := func(s csv1.UpgradePolicyState, format string, args ...any) (UpgradeStep, time.Duration, bool) {
		next.State, next.Message = s, fmt.Sprintf(format, args...)
		if proto.Equal(next, p) {
			return UpgradeStep{}, 0, false
		}
		return UpgradeStep{Policy: next}, 0, true
	}
	from, to := p.GetFromVersion(), p.GetToVersion()
	switch p.GetState() {
	case statePending:
		// A paused cluster (an SRE's pause, in the spec) is not started on, whatever the last
		// status said: the status reaches Cluster Service through the management cluster's
		// feedback, so it can still say READY just after the pause was written.
		if until, paused := model.PausedAt(spec, now); paused {
			step, _, ok := set(statePending, "The upgrade from %s to %s waits for the cluster's reconciliation to be resumed (it is paused until %s).", from, to, spec.GetPausedUntil())
			if until.IsZero() {
				return step, 0, ok
			}
			return step, until.Sub(now), ok
		}
		if st.GetState() != csv1.ClusterState_CLUSTER_STATE_READY {
			return set(statePending, "The upgrade from %s to %s waits for the cluster to be ready (it is %s).", from, to, stateWord(st.GetState()))
		}
		if check != nil {
			if err := check(spec.GetChannelGroup(), from, to); err != nil {
				return set(stateFailed, "The upgrade from %s to %s is no longer allowed: %v", from, to, err)
			}
		}
		return set(stateScheduled, "The upgrade from %s to %s is scheduled for %s.", from, to, p.GetNextRun().AsTime().UTC().Format(time.RFC3339))
	case stateScheduled:
		if left := p.GetNextRun().AsTime().Sub(now); left > 0 {
			return UpgradeStep{}, left, false
		}
		s := proto.Clone(spec).(*csv1.ClusterSpec)
		s.VersionId = to
		step, _, _ := set(stateStarted, "The control plane is upgrading from %s to %s.", from, to)
		step.Spec = s
		return step, 0, true
	case stateStarted:
		if st.GetCurrentVersion() == to {
			return set(stateCompleted, "The control plane was upgraded from %s to %s.", from, to)
		}
		if msg, failed := upgradeFailure(st, to); failed {
			return set(stateFailed, "The upgrade from %s to %s failed: %s", from, to, msg)
		}
	}
	return UpgradeStep{}, 0, false
}

// upgradeFailure reports whether HyperShift says the rollout to version failed: the CVO's
// Failing (ClusterVersionFailing=True or ClusterVersionSucceeding=False) or a Degraded/ERROR
// cluster, while version is what it works towards.
func upgradeFailure(st *csv1.ClusterStatus, version string) (string, bool) {
	if st.GetState() == csv1.ClusterState_CLUSTER_STATE_ERROR {
		return st.GetMessage(), true
	}
	if st.GetCurrentVersion() == version {
		return "", false
	}
	for _, c := range st.GetConditions() {
		if (c.GetType() == "ClusterVersionFailing" && c.GetStatus() == "True") ||
			(c.GetType() == "ClusterVersionSucceeding" && c.GetStatus() == "False") {
			msg := c.GetMessage()
			if msg == "" {
				msg = c.GetType() + " is " + c.GetStatus() + ": " + c.GetReason()
			}
			return msg, true
		}
	}
	return "", false
}

func stateWord(s csv1.ClusterState) string {
	switch s {
	case csv1.ClusterState_CLUSTER_STATE_PENDING:
		return "pending"
	case csv1.ClusterState_CLUSTER_STATE_INSTALLING:
		return "installing"
	case csv1.ClusterState_CLUSTER_STATE_UPDATING:
		return "updating"
	case csv1.ClusterState_CLUSTER_STATE_ERROR:
		return "in error"
	case csv1.ClusterState_CLUSTER_STATE_UNINSTALLING:
		return "being deleted"
	}
	return "not ready"
}

// advanceUpgrade runs the cluster's upgrade policy through every step that is due now, writing
// each in its own revision. It returns the cluster as last written and when to look again.
func (c *Controller) advanceUpgrade(ctx context.Context, log *slog.Logger, cl *store.Cluster) (*store.Cluster, time.Duration, error) {
	var check func(group, from, to string) error
	if c.cfg.Versions != nil {
		check = func(group, from, to string) error {
			got, err := c.cfg.Versions.ResolveUpgrade(group, from, to, c.now())
			if err == nil && got != to {
				err = fmt.Errorf("the catalogue now leads from %s to %s instead", from, got)
			}
			return err
		}
	}
	for range 4 { // at most PENDING → SCHEDULED → STARTED in one pass, plus a spare
		p := cl.Status.GetUpgrade()
		step, wait, ok := NextUpgradeStep(cl.Spec, cl.Status, p, c.now(), check)
		if !ok {
			return cl, wait, nil
		}
		if step.Policy.NextRun == nil {
			step.Policy.NextRun = timestamppb.New(c.now())
		}
		out, err := c.st.AdvanceUpgrade(ctx, cl.ID, store.Precondition{Revision: cl.Revision}, p.GetState(), step.Policy, step.Spec)
		if err != nil {
			return cl, 0, fmt.Errorf("advance upgrade policy %s of cluster %s: %w", p.GetId(), cl.ID, err)
		}
		c.mu.Lock()
		c.written[cl.ID] = out.Revision
		c.mu.Unlock()
		log.Info("upgrade policy changed", "upgradePolicyID", p.GetId(), "from_state", p.GetState().String(),
			"state", step.Policy.GetState().String(), "to_version", p.GetToVersion(), "message", step.Policy.GetMessage(), "revision", out.Revision)
		cl = out
		if step.Spec != nil {
			// The new version must be built and sent: reconcile again right away.
			return cl, time.Millisecond, nil
		}
	}
	return cl, 0, nil
}

// NextNodePoolUpgradeStep is the rule that ends a node pool's upgrade policy (created STARTED
// by UpdateNodePool) from the pool's derived status: COMPLETED once READY at the new version,
// FAILED when the pool reports an error. ok is false while the policy stays as it is.
func NextNodePoolUpgradeStep(p *csv1.UpgradePolicy, st *csv1.NodePoolStatus) (next *csv1.UpgradePolicy, ok bool) {
	if p.GetState() != stateStarted {
		return nil, false
	}
	next = proto.Clone(p).(*csv1.UpgradePolicy)
	switch {
	case st.GetState() == csv1.NodePoolState_NODE_POOL_STATE_READY && st.GetCurrentVersion() == p.GetToVersion():
		next.State, next.Message = stateCompleted, fmt.Sprintf("The node pool was upgraded from %s to %s.", p.GetFromVersion(), p.GetToVersion())
	case st.GetState() == csv1.NodePoolState_NODE_POOL_STATE_ERROR:
		next.State, next.Message = stateFailed, fmt.Sprintf("The node pool upgrade from %s to %s failed: %s", p.GetFromVersion(), p.GetToVersion(), st.GetMessage())
	default:
		return nil, false
	}
	return next, true
}

// advanceNodePoolUpgrade writes the step NextNodePoolUpgradeStep decides for the pool's active
// policy, if any.
func (c *Controller) advanceNodePoolUpgrade(ctx context.Context, log *slog.Logger, npID string, st *csv1.NodePoolStatus) error {
	p, err := c.st.ActiveNodePoolUpgrade(ctx, npID)
	if err != nil || p == nil {
		return err
	}
	next, ok := NextNodePoolUpgradeStep(p, st)
	if !ok {
		return nil
	}
	if _, err := c.st.AdvanceNodePoolUpgrade(ctx, stateStarted, next); err != nil && !errors.Is(err, store.ErrConflict) {
		return fmt.Errorf("advance upgrade policy %s of node pool %s: %w", p.GetId(), npID, err)
	}
	log.Info("node pool upgrade policy changed", "upgradePolicyID", p.GetId(), "state", next.GetState().String(), "to_version", p.GetToVersion())
	return nil
}
