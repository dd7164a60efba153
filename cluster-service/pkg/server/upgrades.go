package server

import (
	"context"
	"crypto/rand"
	"encoding/base32"
	"errors"
	"fmt"
	"strings"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	csv1 "github.com/openhcp/openhcp/cluster-service/api/v1"
	"github.com/openhcp/openhcp/cluster-service/pkg/manifests"
	"github.com/openhcp/openhcp/cluster-service/pkg/model"
	"github.com/openhcp/openhcp/cluster-service/pkg/store"
	"github.com/openhcp/openhcp/cluster-service/pkg/versions"
)

var policyIDEncoding = base32.HexEncoding.WithPadding(base32.NoPadding)

// newPolicyID returns an upgrade policy ID in the format of cluster IDs: 32 characters of
// lowercase base32hex.
func newPolicyID() string {
	var b [20]byte
	rand.Read(b[:])
	return strings.ToLower(policyIDEncoding.EncodeToString(b[:]))
}

const maxOperationIDLength = 128

// UpdateCluster implements csv1.ClustersServer.
func (s *Server) UpdateCluster(ctx context.Context, req *csv1.UpdateClusterRequest) (*csv1.Cluster, error) {
	var v violations
	validateClusterID(&v, "id", req.GetId())
	if req.GetRevision() < 0 {
		v.add("revision", "must not be negative")
	}
	if req.GetSpecRevision() < 0 {
		v.add("spec_revision", "must not be negative")
	}
	if len(req.GetOperationId()) > maxOperationIDLength {
		v.add("operation_id", "must be at most %d characters", maxOperationIDLength)
	}
	u := req.GetUpdate()
	if u.GetVersionId() == "" && u.GetChannelGroup() == "" && !model.HasConfigUpdate(u) {
		v.add("update", "names nothing to change: set the version, the channel group or a configuration field")
	}
	oneOf(&v, "update.channel_group", u.GetChannelGroup(), model.ChannelGroups()...)
	model.ValidateConfigUpdate(v.model(), u)
	if err := v.err(); err != nil {
		return nil, err
	}
	pre := store.Precondition{Revision: req.GetRevision(), SpecRevision: req.GetSpecRevision()}
	return s.updateCluster(ctx, "update cluster", req.GetId(), pre, u, req.GetOperationId(), s.cfg.Now())
}

// CreateUpgradePolicy implements csv1.UpgradePoliciesServer.
func (s *Server) CreateUpgradePolicy(ctx context.Context, req *csv1.CreateUpgradePolicyRequest) (*csv1.UpgradePolicy, error) {
	var v violations
	validateClusterID(&v, "cluster_id", req.GetClusterId())
	if req.GetVersionId() == "" {
		v.add("version_id", "is required")
	}
	if len(req.GetOperationId()) > maxOperationIDLength {
		v.add("operation_id", "must be at most %d characters", maxOperationIDLength)
	}
	next := s.cfg.Now()
	if req.GetNextRun() != nil {
		if err := req.GetNextRun().CheckValid(); err != nil {
			v.add("next_run", "%v", err)
		} else if t := req.GetNextRun().AsTime(); t.After(next) {
			next = t
		}
	}
	if err := v.err(); err != nil {
		return nil, err
	}
	c, err := s.updateCluster(ctx, "create upgrade policy", req.GetClusterId(), store.Precondition{},
		&csv1.ClusterUpdate{VersionId: req.GetVersionId()}, req.GetOperationId(), next)
	if err != nil {
		return nil, err
	}
	p := c.GetStatus().GetUpgrade()
	if p == nil || p.GetOperationId() != req.GetOperationId() || store.Terminal(p.GetState()) {
		return nil, status.Errorf(codes.FailedPrecondition, "cluster %s already runs %s: there is nothing to upgrade", c.GetId(), c.GetSpec().GetVersionId())
	}
	return p, nil
}

// updateCluster applies u to the cluster under the store's write lock; a version change
// starts a control-plane upgrade policy that may start at nextRun.
func (s *Server) updateCluster(ctx context.Context, op, id string, pre store.Precondition, u *csv1.ClusterUpdate, operationID string, nextRun time.Time) (*csv1.Cluster, error) {
	now := s.cfg.Now()
	// decide runs in the update's transaction, with the node pools and external auth read there:
	// no write of them lands between these checks and the update's commit.
	c, err := s.st.UpdateCluster(ctx, id, pre, func(c *store.Cluster, active *csv1.UpgradePolicy, children store.ClusterChildren) (store.ClusterChange, error) {
		ch, err := decideUpdate(s.cfg.Versions, c, active, children.NodePools, u, operationID, now, nextRun)
		if err != nil || ch.Spec == nil {
			return ch, err
		}
		var ea *manifests.ExternalAuth
		if e := children.ExternalAuth; e != nil {
			ea = &manifests.ExternalAuth{ARMResourceID: e.ARMResourceID, Spec: e.Spec}
		}
		// The new spec's work, with the cluster's external auth, must fit (worksize.go).
		var specV, v violations
		s.clusterWorkFits(&specV, "spec", ch.Spec, c, ch.Spec, ea, &storedClusterWork{spec: c.Spec, ea: ea})
		for _, f := range specV {
			v.add(updateField(u.ProtoReflect().Descriptor(), f.Field), "%s", f.Description)
		}
		return ch, v.err()
	})
	if errors.Is(err, store.ErrUpgradeInProgress) {
		return nil, status.Errorf(codes.FailedPrecondition, "%s: cluster %s: %v", op, id, err)
	}
	if err != nil {
		return nil, s.toStatus(ctx, op, err)
	}
	log := LoggerFrom(ctx).With("clusterID", c.ID, "revision", c.Revision)
	if p := c.Status.GetUpgrade(); p != nil && p.GetOperationId() == operationID && p.GetState() == csv1.UpgradePolicyState_UPGRADE_POLICY_STATE_PENDING {
		log.Info("control plane upgrade requested", "upgradePolicyID", p.GetId(), "from", p.GetFromVersion(), "to", p.GetToVersion(),
			"next_run", p.GetNextRun().AsTime(), "operationID", operationID)
	} else {
		log.Info("cluster updated", "channel_group", c.Spec.GetChannelGroup(), "version_id", c.Spec.GetVersionId(),
			"configuration_changed", model.HasConfigUpdate(u), "state", c.Status.GetState().String())
	}
	return toProto(c), nil
}

// decideUpdate is the validation of a cluster update against the current cluster, its running
// upgrade and its node pools (those not being deleted), all read under the write lock in the
// update's transaction, so it sees every write committed before the update's.
func decideUpdate(catalogue *versions.Catalogue, c *store.Cluster, active *csv1.UpgradePolicy, pools []*store.NodePool,
	u *csv1.ClusterUpdate, operationID string, now, nextRun time.Time) (store.ClusterChange, error) {
	var v violations
	var ch store.ClusterChange
	spec := proto.Clone(c.Spec).(*csv1.ClusterSpec)
	if g := u.GetChannelGroup(); g != "" && g != spec.GetChannelGroup() {
		if _, ok := catalogue.Get(g, spec.GetVersionId()); !ok {
			v.add("update.channel_group", "the cluster runs %s, which channel group %s does not offer", spec.GetVersionId(), g)
		}
		spec.ChannelGroup = g
		ch.Spec = spec
	}
	if model.HasConfigUpdate(u) {
		next := model.ApplyConfigUpdate(v.model(), spec, u)
		if !proto.Equal(next, spec) {
			spec = next
			ch.Spec = spec
			// UPDATING in the same revision as the spec: the controller keeps it so until
			// HyperShift reports the new configuration applied, so a READY read from feedback
			// older than this change never ends the caller's wait.
			if st := c.Status.GetState(); st == csv1.ClusterState_CLUSTER_STATE_READY || st == csv1.ClusterState_CLUSTER_STATE_UPDATING {
				ch.Status = proto.Clone(c.Status).(*csv1.ClusterStatus)
				ch.Status.State = csv1.ClusterState_CLUSTER_STATE_UPDATING
				ch.Status.Message = "The cluster configuration is being applied."
			}
		}
	}
	if want := u.GetVersionId(); want != "" && !startedBy(c, operationID) {
		target, err := catalogue.ResolveUpgrade(spec.GetChannelGroup(), c.Spec.GetVersionId(), want, now)
		switch {
		case err != nil:
			v.add("update.version_id", "%v", err)
		case target != c.Spec.GetVersionId():
			for _, np := range pools {
				if n, ok := versions.MinorsBehind(np.Spec.GetVersionId(), target); !ok || n > model.MaxMinorsBehind {
					v.add("update.version_id", "node pool %s runs %s, which would be more than %d minor versions behind %s; upgrade the node pool first",
						np.ID, np.Spec.GetVersionId(), model.MaxMinorsBehind, target)
				}
			}
			if active != nil {
				return ch, status.Errorf(codes.FailedPrecondition, "an upgrade of cluster %s to %s is already %s (upgrade policy %s); wait for it to finish",
					c.ID, active.GetToVersion(), policyStateWord(active.GetState()), active.GetId())
			}
			ch.Upgrade = &csv1.UpgradePolicy{
				Id: newPolicyID(), ClusterId: c.ID, Type: csv1.UpgradeType_UPGRADE_TYPE_CONTROL_PLANE,
				FromVersion: c.Spec.GetVersionId(), ToVersion: target, NextRun: timestamppb.New(nextRun),
				State:       csv1.UpgradePolicyState_UPGRADE_POLICY_STATE_PENDING,
				Message:     fmt.Sprintf("The upgrade from %s to %s is waiting to be scheduled.", c.Spec.GetVersionId(), target),
				OperationId: operationID,
			}
		}
	}
	return ch, v.err()
}

// startedBy says whether the cluster's latest upgrade policy was started by the operation
// operationID: a version change sent again under the operation that asked for it (the frontend
// sends an update again when Cluster Service's first answer was lost, with the same operation,
// docs/architecture.md "Crash safety"). Its upgrade already exists, pending, running or done, so
// the request asks for nothing more: refusing it as a second upgrade would fail the operation
// the first call started, and resolving the version again could name a newer patch release.
func startedBy(c *store.Cluster, operationID string) bool {
	return operationID != "" && c.Status.GetUpgrade().GetOperationId() == operationID
}

func policyStateWord(s csv1.UpgradePolicyState) string {
	switch s {
	case csv1.UpgradePolicyState_UPGRADE_POLICY_STATE_PENDING:
		return "pending"
	case csv1.UpgradePolicyState_UPGRADE_POLICY_STATE_SCHEDULED:
		return "scheduled"
	case csv1.UpgradePolicyState_UPGRADE_POLICY_STATE_STARTED:
		return "running"
	case csv1.UpgradePolicyState_UPGRADE_POLICY_STATE_COMPLETED:
		return "completed"
	case csv1.UpgradePolicyState_UPGRADE_POLICY_STATE_FAILED:
		return "failed"
	}
	return "unknown"
}

// GetUpgradePolicy implements csv1.UpgradePoliciesServer.
func (s *Server) GetUpgradePolicy(ctx context.Context, req *csv1.GetUpgradePolicyRequest) (*csv1.UpgradePolicy, error) {
	var v violations
	validateClusterID(&v, "id", req.GetId())
	if err := v.err(); err != nil {
		return nil, err
	}
	p, err := s.st.GetUpgradePolicy(ctx, req.GetId())
	if err != nil {
		return nil, s.toStatus(ctx, "get upgrade policy", err)
	}
	return p, nil
}

// CancelUpgradePolicy implements csv1.UpgradePoliciesServer: a control-plane upgrade that has
// not started ends FAILED, saying it was canceled and why. The cluster's spec still has the old
// version (STARTED is what writes the new one), so nothing else changes.
func (s *Server) CancelUpgradePolicy(ctx context.Context, req *csv1.CancelUpgradePolicyRequest) (*csv1.UpgradePolicy, error) {
	var v violations
	validateClusterID(&v, "id", req.GetId())
	if strings.TrimSpace(req.GetReason()) == "" {
		v.add("reason", "say why the upgrade is canceled")
	}
	if err := v.err(); err != nil {
		return nil, err
	}
	const op = "cancel upgrade policy"
	// The policy's state (as read) is the write's guard: the cluster's revision is not, as
	// the controller's status writes move it all the time and a cancel must not lose to them.
	// When the controller moves the policy on between the read and the write (PENDING →
	// SCHEDULED → STARTED), the cancel reads it again and decides on its new state: a retry
	// by the caller could never succeed on a started upgrade, and a scheduled one is still
	// cancellable. The states only move forward, so this ends within a few rounds.
	for range maxCancelRounds {
		p, out, err := s.cancelUpgradeOnce(ctx, op, req)
		if errors.Is(err, store.ErrConflict) {
			continue
		}
		if err != nil {
			return nil, err
		}
		LoggerFrom(ctx).Info("control plane upgrade canceled", "clusterID", p.GetClusterId(), "upgradePolicyID", p.GetId(), "reason", req.GetReason())
		return out, nil
	}
	return nil, status.Errorf(codes.Aborted, "%s: the upgrade policy %s changed %d times during the cancel; retry", op, req.GetId(), maxCancelRounds)
}

// maxCancelRounds bounds CancelUpgradePolicy's reads again of a policy the controller moved on.
const maxCancelRounds = 3

// cancelUpgradeOnce reads the policy of req and moves it, if still PENDING or SCHEDULED, to
// FAILED. It returns the policy as read and as written, a gRPC status error, or
// store.ErrConflict when the policy left the state it was read in before the write.
func (s *Server) cancelUpgradeOnce(ctx context.Context, op string, req *csv1.CancelUpgradePolicyRequest) (read, written *csv1.UpgradePolicy, err error) {
	p, err := s.st.GetUpgradePolicy(ctx, req.GetId())
	if err != nil {
		return nil, nil, s.toStatus(ctx, op, err)
	}
	if p.GetType() != csv1.UpgradeType_UPGRADE_TYPE_CONTROL_PLANE {
		return nil, nil, status.Errorf(codes.FailedPrecondition, "%s: %s is a node pool upgrade, which starts at once: there is nothing to cancel", op, p.GetId())
	}
	from := p.GetState()
	if from != csv1.UpgradePolicyState_UPGRADE_POLICY_STATE_PENDING && from != csv1.UpgradePolicyState_UPGRADE_POLICY_STATE_SCHEDULED {
		return nil, nil, status.Errorf(codes.FailedPrecondition, "%s: the upgrade from %s to %s is %s; only a pending or scheduled upgrade can be canceled",
			op, p.GetFromVersion(), p.GetToVersion(), strings.ToLower(strings.TrimPrefix(from.String(), "UPGRADE_POLICY_STATE_")))
	}
	next := proto.Clone(p).(*csv1.UpgradePolicy)
	next.State = csv1.UpgradePolicyState_UPGRADE_POLICY_STATE_FAILED
	next.Message = fmt.Sprintf("The upgrade from %s to %s was canceled: %s", p.GetFromVersion(), p.GetToVersion(), strings.TrimSpace(req.GetReason()))
	out, err := s.st.AdvanceUpgrade(ctx, p.GetClusterId(), store.Precondition{}, from, next, nil)
	if errors.Is(err, store.ErrConflict) {
		return nil, nil, err
	}
	if err != nil {
		return nil, nil, s.toStatus(ctx, op, err)
	}
	return p, out.Status.GetUpgrade(), nil
}

// ListUpgradePolicies implements csv1.UpgradePoliciesServer.
func (s *Server) ListUpgradePolicies(ctx context.Context, req *csv1.ListUpgradePoliciesRequest) (*csv1.ListUpgradePoliciesResponse, error) {
	var v violations
	validateClusterID(&v, "cluster_id", req.GetClusterId())
	if id := req.GetNodePoolId(); id != "" {
		validateClusterID(&v, "node_pool_id", id)
	}
	if err := v.err(); err != nil {
		return nil, err
	}
	if _, err := s.st.GetCluster(ctx, req.GetClusterId()); err != nil {
		return nil, s.toStatus(ctx, "list upgrade policies", err)
	}
	ps, err := s.st.ListUpgradePolicies(ctx, req.GetClusterId(), req.GetNodePoolId())
	if err != nil {
		return nil, s.toStatus(ctx, "list upgrade policies", err)
	}
	return &csv1.ListUpgradePoliciesResponse{UpgradePolicies: ps}, nil
}
