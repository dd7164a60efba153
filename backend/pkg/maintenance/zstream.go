package maintenance

import (
	"context"
	"fmt"
	"strings"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	csv1 "github.com/openhcp/openhcp/cluster-service/api/v1"
	"github.com/openhcp/openhcp/cluster-service/pkg/versions"
)

// TypeZStreamUpgrade upgrades a cluster's control plane to the recommended z-stream of its
// channel group: the newest enabled, not end-of-life version of the same minor that an upgrade
// edge of the catalogue leads to from the version it runs.
const TypeZStreamUpgrade = "zstream-upgrade"

// ClusterService is what the maintenance actuator and campaigns call on Cluster Service.
type ClusterService interface {
	GetCluster(ctx context.Context, in *csv1.GetClusterRequest, opts ...grpc.CallOption) (*csv1.Cluster, error)
	ListClusters(ctx context.Context, in *csv1.ListClustersRequest, opts ...grpc.CallOption) (*csv1.ListClustersResponse, error)
	ListVersions(ctx context.Context, in *csv1.ListVersionsRequest, opts ...grpc.CallOption) (*csv1.ListVersionsResponse, error)
	UpdateCluster(ctx context.Context, in *csv1.UpdateClusterRequest, opts ...grpc.CallOption) (*csv1.Cluster, error)
	GetUpgradePolicy(ctx context.Context, in *csv1.GetUpgradePolicyRequest, opts ...grpc.CallOption) (*csv1.UpgradePolicy, error)
	// The node pool z-stream upgrade's calls.
	GetNodePool(ctx context.Context, in *csv1.GetNodePoolRequest, opts ...grpc.CallOption) (*csv1.NodePool, error)
	UpdateNodePool(ctx context.Context, in *csv1.UpdateNodePoolRequest, opts ...grpc.CallOption) (*csv1.NodePool, error)
	ListUpgradePolicies(ctx context.Context, in *csv1.ListUpgradePoliciesRequest, opts ...grpc.CallOption) (*csv1.ListUpgradePoliciesResponse, error)
	// A campaign over node pools selects them with it.
	ListNodePools(ctx context.Context, in *csv1.ListNodePoolsRequest, opts ...grpc.CallOption) (*csv1.ListNodePoolsResponse, error)
	// The break-glass signer rotation's calls (signerrotation.go).
	signerRotation
}

// Keys of Task.Params and Task.Data used by the z-stream upgrade.
const (
	// ParamFromVersion, when set, is the version the cluster must run for the upgrade to be
	// wanted (a campaign's selector): a cluster found on another version is left alone.
	ParamFromVersion = "fromVersion"
	DataFrom         = "from"
	DataTarget       = "target"
	DataPolicy       = "upgradePolicyID"
	// DataOutcome is "upgraded" or "nothing-to-do".
	DataOutcome = "outcome"
)

// RecommendedZStream is the version a cluster running from in group should move to for a
// z-stream upgrade: among the catalogue's upgrade edges of from, the newest usable version of the
// same major.minor. ok is false when there is none.
func RecommendedZStream(vs []*csv1.Version, from string, now time.Time) (string, bool) {
	byID := map[string]*csv1.Version{}
	for _, v := range vs {
		byID[v.GetId()] = v
	}
	cur, ok := byID[from]
	if !ok {
		return "", false
	}
	minor := from[:strings.LastIndex(from, ".")+1]
	var best string
	for _, e := range cur.GetAvailableUpgrades() {
		v, ok := byID[e]
		if !ok || !v.GetEnabled() || !strings.HasPrefix(e, minor) {
			continue
		}
		if eol := v.GetEndOfLife(); eol != nil && !now.Before(eol.AsTime()) {
			continue
		}
		if best == "" {
			best = e
		} else if c, err := versions.Compare(e, best); err == nil && c > 0 {
			best = e
		}
	}
	return best, best != ""
}

// ZStreamConfig tunes the z-stream upgrade task type.
type ZStreamConfig struct {
	// Poll is how often a running upgrade is looked at (default 5s).
	Poll time.Duration
	// Estimate is how long an upgrade is expected to take, for maintenance windows (default 1h).
	Estimate time.Duration
	Now      func() time.Time
}

// defaults fills in the documented defaults; both upgrade task types use them.
func (cfg *ZStreamConfig) defaults() {
	if cfg.Poll <= 0 {
		cfg.Poll = 5 * time.Second
	}
	if cfg.Estimate <= 0 {
		cfg.Estimate = time.Hour
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
}

// ZStreamUpgrade returns the z-stream control-plane upgrade task type. Its steps:
//
//	resolve-target   read the cluster and the catalogue; record from and target versions
//	request-upgrade  UpdateCluster to the target (operation ID maintenance-<task>) unless asked before
//	wait-for-upgrade wait until Cluster Service says the policy COMPLETED (FAILED fails the task)
//	verify           the cluster reports the target version and is READY
//
// Each step looks for its effect before making it, so it may run again after a crash.
func ZStreamUpgrade(cs ClusterService, cfg ZStreamConfig) TaskType {
	cfg.defaults()
	opID := func(t *Task) string { return "maintenance-" + t.ID }
	return TaskType{Name: TypeZStreamUpgrade, MaxAttempts: 5, Estimate: cfg.Estimate, Params: []Param{
		{Name: ParamFromVersion, Doc: "upgrade only if the cluster's spec runs this version (default: whatever it runs)"},
	}, Steps: []Step{
		{Name: "resolve-target", Run: func(ctx context.Context, t *Task) (StepResult, error) {
			if t.Data[DataTarget] != "" || t.Data[DataOutcome] != "" {
				return StepResult{}, nil
			}
			c, err := cs.GetCluster(ctx, &csv1.GetClusterRequest{Id: t.Cluster})
			if err != nil {
				return StepResult{}, fmt.Errorf("get cluster %s: %w", t.Cluster, err)
			}
			from, group := c.GetSpec().GetVersionId(), c.GetSpec().GetChannelGroup()
			if want := t.Params[ParamFromVersion]; want != "" && from != want {
				setData(t, DataOutcome, "nothing-to-do")
				setData(t, DataFrom, from)
				return StepResult{}, nil
			}
			vs, err := cs.ListVersions(ctx, &csv1.ListVersionsRequest{ChannelGroup: group})
			if err != nil {
				return StepResult{}, fmt.Errorf("list versions of channel group %s: %w", group, err)
			}
			target, ok := RecommendedZStream(vs.GetVersions(), from, cfg.Now())
			setData(t, DataFrom, from)
			if !ok {
				setData(t, DataOutcome, "nothing-to-do")
				return StepResult{}, nil
			}
			setData(t, DataTarget, target)
			return StepResult{}, nil
		}},
		{Name: "request-upgrade", Run: func(ctx context.Context, t *Task) (StepResult, error) {
			if t.Data[DataTarget] == "" || t.Data[DataPolicy] != "" {
				return StepResult{}, nil
			}
			c, err := cs.GetCluster(ctx, &csv1.GetClusterRequest{Id: t.Cluster})
			if err != nil {
				return StepResult{}, fmt.Errorf("get cluster %s: %w", t.Cluster, err)
			}
			if p := c.GetStatus().GetUpgrade(); p.GetOperationId() == opID(t) {
				setData(t, DataPolicy, p.GetId()) // made before a crash
				return StepResult{}, nil
			}
			if c.GetSpec().GetVersionId() == t.Data[DataTarget] {
				return StepResult{}, nil // someone else already asked for it; verify follows it
			}
			// The upgrade is asked for the way Cluster Service's authz table allows callers
			// to: an UpdateCluster of the version, conditional on the spec this step read,
			// which starts the upgrade policy carrying the operation ID.
			out, err := cs.UpdateCluster(ctx, &csv1.UpdateClusterRequest{Id: t.Cluster, Update: &csv1.ClusterUpdate{VersionId: t.Data[DataTarget]},
				SpecRevision: c.GetSpecRevision(), OperationId: opID(t)})
			switch status.Code(err) {
			case codes.OK:
				if p := out.GetStatus().GetUpgrade(); p.GetOperationId() == opID(t) {
					setData(t, DataPolicy, p.GetId())
				}
				return StepResult{}, nil
			case codes.FailedPrecondition, codes.Aborted:
				// Another upgrade of the cluster has not finished, or the cluster changed
				// meanwhile: look again.
				return StepResult{Wait: cfg.Poll, Message: status.Convert(err).Message()}, nil
			case codes.InvalidArgument, codes.NotFound:
				return StepResult{}, Permanent(fmt.Errorf("upgrade cluster %s to %s: %w", t.Cluster, t.Data[DataTarget], err))
			}
			return StepResult{}, fmt.Errorf("upgrade cluster %s to %s: %w", t.Cluster, t.Data[DataTarget], err)
		}},
		{Name: "wait-for-upgrade", Run: func(ctx context.Context, t *Task) (StepResult, error) {
			if t.Data[DataPolicy] == "" {
				return StepResult{}, nil
			}
			p, err := cs.GetUpgradePolicy(ctx, &csv1.GetUpgradePolicyRequest{Id: t.Data[DataPolicy]})
			if err != nil {
				return StepResult{}, fmt.Errorf("get upgrade policy %s: %w", t.Data[DataPolicy], err)
			}
			switch p.GetState() {
			case csv1.UpgradePolicyState_UPGRADE_POLICY_STATE_COMPLETED:
				return StepResult{}, nil
			case csv1.UpgradePolicyState_UPGRADE_POLICY_STATE_FAILED:
				return StepResult{}, Permanent(fmt.Errorf("upgrade policy %s failed: %s", p.GetId(), p.GetMessage()))
			}
			return StepResult{Wait: cfg.Poll, Message: p.GetMessage()}, nil
		}},
		{Name: "verify", Run: func(ctx context.Context, t *Task) (StepResult, error) {
			if t.Data[DataTarget] == "" {
				return StepResult{}, nil
			}
			c, err := cs.GetCluster(ctx, &csv1.GetClusterRequest{Id: t.Cluster})
			if err != nil {
				return StepResult{}, fmt.Errorf("get cluster %s: %w", t.Cluster, err)
			}
			st := c.GetStatus()
			if st.GetCurrentVersion() != t.Data[DataTarget] || st.GetState() != csv1.ClusterState_CLUSTER_STATE_READY {
				return StepResult{Wait: cfg.Poll, Message: fmt.Sprintf("the cluster reports %s, %s; waiting for %s and READY",
					st.GetCurrentVersion(), st.GetState(), t.Data[DataTarget])}, nil
			}
			setData(t, DataOutcome, "upgraded")
			return StepResult{}, nil
		}},
	}}
}

// setData records what a step found out in t.Data.
func setData(t *Task, k, v string) {
	if t.Data == nil {
		t.Data = map[string]string{}
	}
	t.Data[k] = v
}

// clients joins the Cluster Service gRPC clients the maintenance code calls.
type clients struct {
	csv1.ClustersClient
	csv1.NodePoolsClient
	csv1.VersionsClient
	csv1.UpgradePoliciesClient
	csv1.CredentialsClient
}

// NewClusterService returns the Cluster Service client of conn.
func NewClusterService(conn grpc.ClientConnInterface) ClusterService {
	return clients{csv1.NewClustersClient(conn), csv1.NewNodePoolsClient(conn), csv1.NewVersionsClient(conn), csv1.NewUpgradePoliciesClient(conn),
		csv1.NewCredentialsClient(conn)}
}
