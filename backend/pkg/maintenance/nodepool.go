package maintenance

import (
	"context"
	"fmt"
	"strings"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	csv1 "github.com/openhcp/openhcp/cluster-service/api/v1"
	"github.com/openhcp/openhcp/cluster-service/pkg/model"
	"github.com/openhcp/openhcp/cluster-service/pkg/versions"
)

// TypeNodePoolZStreamUpgrade upgrades one node pool to a newer patch of the minor it runs. The
// task's Cluster is the pool's cluster, so the cluster's lock keeps it from running beside a
// control-plane upgrade of the same cluster.
const TypeNodePoolZStreamUpgrade = "nodepool-zstream-upgrade"

// Keys of Task.Params used by the node pool z-stream upgrade (its Data keys are the control-plane
// upgrade's: DataFrom, DataTarget, DataPolicy, DataOutcome).
const (
	// ParamNodePool is the Cluster Service ID of the node pool (required).
	ParamNodePool = "nodePool"
	// ParamToVersion is the version to upgrade to; empty: the recommended z-stream of the pool's
	// version in its channel group (RecommendedZStream).
	ParamToVersion = "toVersion"
)

// nodePoolChannelGroup is the channel group node pool np of cluster c upgrades along: its own,
// or its cluster's when it names none. The node pool task resolves its target in it, and a
// campaign over node pools selects pools by it.
func nodePoolChannelGroup(np *csv1.NodePool, c *csv1.Cluster) string {
	if g := np.GetSpec().GetChannelGroup(); g != "" {
		return g
	}
	return c.GetSpec().GetChannelGroup()
}

// sameMinor reports whether a and b ("4.19.16", "4.19.17") share major.minor.
func sameMinor(a, b string) bool {
	i, j := strings.LastIndex(a, "."), strings.LastIndex(b, ".")
	return i > 0 && j > 0 && a[:i] == b[:j]
}

// NodePoolZStreamUpgrade returns the node pool z-stream upgrade task type. Its steps:
//
//	check            the pool exists in the task's cluster; the target is a newer patch of the
//	                 minor it runs; the control plane already runs the target or later
//	request-upgrade  UpdateNodePool to the target, unless the pool's spec names it already
//	wait-for-upgrade wait until Cluster Service says the pool's policy COMPLETED (FAILED fails)
//	verify           the pool reports the target version and is READY
//
// Each step looks for its effect before making it, so it may run again after a crash. A node
// pool's version change carries no operation ID, so the pool's spec naming the target is how a
// run after a crash knows it asked already, and the policy is found by the pool and target.
func NodePoolZStreamUpgrade(cs ClusterService, cfg ZStreamConfig) TaskType {
	cfg.defaults()
	getPool := func(ctx context.Context, t *Task) (*csv1.NodePool, error) {
		id := t.Params[ParamNodePool]
		np, err := cs.GetNodePool(ctx, &csv1.GetNodePoolRequest{Id: id})
		switch {
		case status.Code(err) == codes.NotFound || status.Code(err) == codes.InvalidArgument:
			return nil, Permanent(fmt.Errorf("node pool %q: %w", id, err))
		case err != nil:
			return nil, fmt.Errorf("get node pool %s: %w", id, err)
		case np.GetClusterId() != t.Cluster:
			return nil, Permanent(fmt.Errorf("node pool %s belongs to cluster %s, not the task's cluster %s", id, np.GetClusterId(), t.Cluster))
		}
		return np, nil
	}
	return TaskType{Name: TypeNodePoolZStreamUpgrade, MaxAttempts: 5, Estimate: cfg.Estimate, Params: []Param{
		{Name: ParamNodePool, Required: true, Doc: "the Cluster Service ID of the node pool, of the task's cluster"},
		{Name: ParamToVersion, Doc: "the version to upgrade to, a later patch of the pool's minor (default: its recommended z-stream)"},
	}, Steps: []Step{
		{Name: "check", Run: func(ctx context.Context, t *Task) (StepResult, error) {
			if t.Data[DataTarget] != "" || t.Data[DataOutcome] != "" {
				return StepResult{}, nil
			}
			if t.Params[ParamNodePool] == "" {
				return StepResult{}, Permanent(fmt.Errorf("params.%s is required", ParamNodePool))
			}
			np, err := getPool(ctx, t)
			if err != nil {
				return StepResult{}, err
			}
			from := np.GetSpec().GetVersionId()
			c, err := cs.GetCluster(ctx, &csv1.GetClusterRequest{Id: t.Cluster})
			if err != nil {
				return StepResult{}, fmt.Errorf("get cluster %s: %w", t.Cluster, err)
			}
			target := t.Params[ParamToVersion]
			if target == "" {
				group := nodePoolChannelGroup(np, c)
				vs, err := cs.ListVersions(ctx, &csv1.ListVersionsRequest{ChannelGroup: group})
				if err != nil {
					return StepResult{}, fmt.Errorf("list versions of channel group %s: %w", group, err)
				}
				var ok bool
				if target, ok = RecommendedZStream(vs.GetVersions(), from, cfg.Now()); !ok {
					setData(t, DataFrom, from)
					setData(t, DataOutcome, "nothing-to-do")
					return StepResult{}, nil
				}
			}
			setData(t, DataFrom, from)
			if target == from {
				setData(t, DataOutcome, "nothing-to-do")
				return StepResult{}, nil
			}
			if cmp, err := versions.Compare(target, from); err != nil || cmp < 0 || !sameMinor(target, from) {
				return StepResult{}, Permanent(fmt.Errorf("%s is not a z-stream of the node pool's version %s: it must be a later patch of %s",
					target, from, from[:max(strings.LastIndex(from, "."), 0)]))
			}
			// A node pool never runs ahead of its control plane: Cluster Service's own measure
			// of the control plane (the older of what its spec names and what runs).
			cp := model.ControlPlaneVersion(model.Cluster{Spec: c.GetSpec(), Status: c.GetStatus()})
			if cmp, err := versions.Compare(target, cp); err != nil || cmp > 0 {
				if s, err := versions.Compare(c.GetSpec().GetVersionId(), target); err == nil && s >= 0 {
					// Its upgrade to the target or later is under way: wait for it, unless
					// Cluster Service says it failed (HyperShift may still get there, but
					// nothing says when; the task would hold the cluster and a slot meanwhile).
					if p := c.GetStatus().GetUpgrade(); p.GetState() == csv1.UpgradePolicyState_UPGRADE_POLICY_STATE_FAILED {
						return StepResult{}, Permanent(fmt.Errorf("the control plane of cluster %s runs %s and its upgrade to %s failed: %s; a node pool never runs ahead of its control plane",
							t.Cluster, cp, p.GetToVersion(), p.GetMessage()))
					}
					return StepResult{Wait: cfg.Poll, Message: fmt.Sprintf("the control plane runs %s and is upgrading to %s; waiting for it before upgrading the node pool to %s",
						cp, c.GetSpec().GetVersionId(), target)}, nil
				}
				return StepResult{}, Permanent(fmt.Errorf("the control plane of cluster %s runs %s, behind the target %s; a node pool never runs ahead of its control plane: upgrade the cluster first",
					t.Cluster, cp, target))
			}
			setData(t, DataTarget, target)
			return StepResult{}, nil
		}},
		{Name: "request-upgrade", Run: func(ctx context.Context, t *Task) (StepResult, error) {
			if t.Data[DataTarget] == "" {
				return StepResult{}, nil
			}
			np, err := getPool(ctx, t)
			if err != nil {
				return StepResult{}, err
			}
			if np.GetSpec().GetVersionId() == t.Data[DataTarget] {
				return StepResult{}, nil // asked before a crash (or by someone else); the next steps follow it
			}
			_, err = cs.UpdateNodePool(ctx, &csv1.UpdateNodePoolRequest{Id: np.GetId(), SpecRevision: np.GetSpecRevision(),
				Update: &csv1.NodePoolUpdate{VersionId: t.Data[DataTarget]}})
			switch status.Code(err) {
			case codes.OK:
				return StepResult{}, nil
			case codes.FailedPrecondition, codes.Aborted:
				// Another upgrade of the pool has not finished, or the pool changed meanwhile.
				return StepResult{Wait: cfg.Poll, Message: status.Convert(err).Message()}, nil
			case codes.InvalidArgument, codes.NotFound:
				return StepResult{}, Permanent(fmt.Errorf("upgrade node pool %s to %s: %w", np.GetId(), t.Data[DataTarget], err))
			}
			return StepResult{}, fmt.Errorf("upgrade node pool %s to %s: %w", np.GetId(), t.Data[DataTarget], err)
		}},
		{Name: "wait-for-upgrade", Run: func(ctx context.Context, t *Task) (StepResult, error) {
			if t.Data[DataTarget] == "" {
				return StepResult{}, nil
			}
			pool := t.Params[ParamNodePool]
			ps, err := cs.ListUpgradePolicies(ctx, &csv1.ListUpgradePoliciesRequest{ClusterId: t.Cluster, NodePoolId: pool})
			if err != nil {
				return StepResult{}, fmt.Errorf("list upgrade policies of node pool %s: %w", pool, err)
			}
			// Newest first; a pool is never downgraded, so one policy leads to the target.
			for _, p := range ps.GetUpgradePolicies() {
				if p.GetToVersion() != t.Data[DataTarget] {
					continue
				}
				setData(t, DataPolicy, p.GetId())
				switch p.GetState() {
				case csv1.UpgradePolicyState_UPGRADE_POLICY_STATE_COMPLETED:
					return StepResult{}, nil
				case csv1.UpgradePolicyState_UPGRADE_POLICY_STATE_FAILED:
					return StepResult{}, Permanent(fmt.Errorf("upgrade policy %s failed: %s", p.GetId(), p.GetMessage()))
				}
				return StepResult{Wait: cfg.Poll, Message: p.GetMessage()}, nil
			}
			return StepResult{Wait: cfg.Poll, Message: fmt.Sprintf("no upgrade policy of node pool %s to %s yet", pool, t.Data[DataTarget])}, nil
		}},
		{Name: "verify", Run: func(ctx context.Context, t *Task) (StepResult, error) {
			if t.Data[DataTarget] == "" {
				return StepResult{}, nil
			}
			np, err := getPool(ctx, t)
			if err != nil {
				return StepResult{}, err
			}
			st := np.GetStatus()
			if st.GetCurrentVersion() != t.Data[DataTarget] || st.GetState() != csv1.NodePoolState_NODE_POOL_STATE_READY {
				return StepResult{Wait: cfg.Poll, Message: fmt.Sprintf("the node pool reports %s, %s; waiting for %s and READY",
					st.GetCurrentVersion(), st.GetState(), t.Data[DataTarget])}, nil
			}
			setData(t, DataOutcome, "upgraded")
			return StepResult{}, nil
		}},
	}}
}
