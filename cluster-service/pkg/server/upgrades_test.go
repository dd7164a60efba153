package server

import (
	"context"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/timestamppb"

	csv1 "github.com/openhcp/openhcp/cluster-service/api/v1"
)

func (e *env) clusterAt(t *testing.T, n int, name, version string) *csv1.Cluster {
	t.Helper()
	in := validCluster(n, name)
	in.Spec.VersionId = version
	c, err := e.clusters.CreateCluster(context.Background(), &csv1.CreateClusterRequest{Cluster: in})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestUpdateClusterValidatesUpgradeEdges(t *testing.T) {
	e := start(t)
	ctx := context.Background()
	e.register(t, "mc-1", 50)
	for i, tc := range []struct {
		name, from, to string
		code           codes.Code
		field, msg     string
		wantTo         string // the policy's target when the update is accepted
	}{
		{"minor_upgrade_along_an_edge_starts_a_pending_policy", "4.19.16", "4.20", codes.OK, "", "", "4.20.3"},
		{"patch_upgrade_along_an_edge", "4.19.16", "4.19.17", codes.OK, "", "", "4.19.17"},
		{"downgrade_is_invalid_argument", "4.19.17", "4.18", codes.InvalidArgument, "update.version_id", "cannot downgrade from 4.19.17 to 4.18", ""},
		{"skipping_a_minor_is_invalid_argument", "4.18.27", "4.20", codes.InvalidArgument, "update.version_id", "skips minor version 4.19; upgrade to 4.19 first", ""},
		{"version_outside_the_group_is_invalid_argument", "4.19.17", "4.21", codes.InvalidArgument, "update.version_id", "not available in channel group stable", ""},
		{"garbage_version_is_invalid_argument", "4.19.17", "latest", codes.InvalidArgument, "update.version_id", "must look like", ""},
		{"same_minor_changes_nothing", "4.19.16", "4.19", codes.OK, "", "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cl := e.clusterAt(t, 100+i, "edge"+string(rune('a'+i)), tc.from)
			got, err := e.clusters.UpdateCluster(ctx, &csv1.UpdateClusterRequest{Id: cl.GetId(), Update: &csv1.ClusterUpdate{VersionId: tc.to}, OperationId: "op-" + tc.name})
			if status.Code(err) != tc.code {
				t.Fatalf("UpdateCluster(%s → %s) = %v; want %v", tc.from, tc.to, err, tc.code)
			}
			if tc.code != codes.OK {
				if !fieldViolations(err)[tc.field] || !strings.Contains(status.Convert(err).Message(), tc.msg) {
					t.Fatalf("error %q; want field %s and message containing %q", status.Convert(err).Message(), tc.field, tc.msg)
				}
				return
			}
			if got.GetSpec().GetVersionId() != tc.from {
				t.Fatalf("spec version changed to %s before the upgrade started", got.GetSpec().GetVersionId())
			}
			p := got.GetStatus().GetUpgrade()
			if tc.wantTo == "" {
				if p != nil {
					t.Fatalf("no-change update started upgrade policy %v", p)
				}
				if got.GetRevision() != cl.GetRevision() {
					t.Fatalf("no-change update wrote revision %d (was %d)", got.GetRevision(), cl.GetRevision())
				}
				return
			}
			if p.GetState() != csv1.UpgradePolicyState_UPGRADE_POLICY_STATE_PENDING || p.GetToVersion() != tc.wantTo ||
				p.GetFromVersion() != tc.from || p.GetOperationId() != "op-"+tc.name || p.GetType() != csv1.UpgradeType_UPGRADE_TYPE_CONTROL_PLANE {
				t.Fatalf("upgrade policy %v; want PENDING control plane %s → %s for op-%s", p, tc.from, tc.wantTo, tc.name)
			}
			if got.GetRevision() <= cl.GetRevision() {
				t.Fatalf("revision %d not after %d", got.GetRevision(), cl.GetRevision())
			}
			stored, err := e.upgrades.GetUpgradePolicy(ctx, &csv1.GetUpgradePolicyRequest{Id: p.GetId()})
			if err != nil || stored.GetToVersion() != tc.wantTo {
				t.Fatalf("GetUpgradePolicy = %v, %v", stored, err)
			}
		})
	}
}

func TestUpdateClusterErrors(t *testing.T) {
	e := start(t)
	ctx := context.Background()
	e.register(t, "mc-1", 50)
	cl := e.clusterAt(t, 1, "busy", "4.19.16")
	if _, err := e.clusters.UpdateCluster(ctx, &csv1.UpdateClusterRequest{Id: cl.GetId(), Update: &csv1.ClusterUpdate{VersionId: "4.20"}}); err != nil {
		t.Fatal(err)
	}
	other := e.clusterAt(t, 2, "other", "4.19.16")
	for _, tc := range []struct {
		name  string
		req   *csv1.UpdateClusterRequest
		code  codes.Code
		field string
		msg   string
	}{
		{"second_upgrade_while_one_is_pending", &csv1.UpdateClusterRequest{Id: cl.GetId(), Update: &csv1.ClusterUpdate{VersionId: "4.19.17"}},
			codes.FailedPrecondition, "", "already pending"},
		{"unknown_cluster", &csv1.UpdateClusterRequest{Id: id(99), Update: &csv1.ClusterUpdate{VersionId: "4.20"}}, codes.NotFound, "", ""},
		{"bad_id", &csv1.UpdateClusterRequest{Id: "x", Update: &csv1.ClusterUpdate{VersionId: "4.20"}}, codes.InvalidArgument, "id", ""},
		{"nothing_to_change", &csv1.UpdateClusterRequest{Id: other.GetId(), Update: &csv1.ClusterUpdate{}}, codes.InvalidArgument, "update", "set the version, the channel group or a configuration field"},
		{"unknown_channel_group", &csv1.UpdateClusterRequest{Id: other.GetId(), Update: &csv1.ClusterUpdate{ChannelGroup: "beta"}}, codes.InvalidArgument, "update.channel_group", "must be one of"},
		{"channel_group_without_the_version", &csv1.UpdateClusterRequest{Id: other.GetId(), Update: &csv1.ClusterUpdate{ChannelGroup: "candidate"}},
			codes.InvalidArgument, "update.channel_group", "the cluster runs 4.19.16, which channel group candidate does not offer"},
		{"stale_revision", &csv1.UpdateClusterRequest{Id: other.GetId(), Revision: 1, Update: &csv1.ClusterUpdate{VersionId: "4.20"}}, codes.Aborted, "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := e.clusters.UpdateCluster(ctx, tc.req)
			if status.Code(err) != tc.code {
				t.Fatalf("UpdateCluster = %v; want %v", err, tc.code)
			}
			if tc.field != "" && !fieldViolations(err)[tc.field] {
				t.Fatalf("error %v has no violation on %s", err, tc.field)
			}
			if !strings.Contains(status.Convert(err).Message(), tc.msg) {
				t.Fatalf("error %q does not say %q", status.Convert(err).Message(), tc.msg)
			}
		})
	}

	t.Run("node_pool_too_far_behind_blocks_the_control_plane_upgrade", func(t *testing.T) {
		c := e.clusterAt(t, 3, "withpool", "4.19.17")
		pool := validPool(4, c.GetId(), "withpool", "old")
		pool.Spec.VersionId = "4.17.44"
		if _, err := e.pools.CreateNodePool(ctx, &csv1.CreateNodePoolRequest{NodePool: pool}); err != nil {
			t.Fatal(err)
		}
		_, err := e.clusters.UpdateCluster(ctx, &csv1.UpdateClusterRequest{Id: c.GetId(), Update: &csv1.ClusterUpdate{VersionId: "4.20"}})
		if status.Code(err) != codes.InvalidArgument || !strings.Contains(status.Convert(err).Message(), "node pool "+id(4)+" runs 4.17.44") {
			t.Fatalf("UpdateCluster = %v; want InvalidArgument naming the node pool", err)
		}
	})

	t.Run("scheduled_policy_keeps_next_run_and_is_listed", func(t *testing.T) {
		at := time.Now().Add(time.Hour).Truncate(time.Second)
		p, err := e.upgrades.CreateUpgradePolicy(ctx, &csv1.CreateUpgradePolicyRequest{ClusterId: other.GetId(), VersionId: "4.20", NextRun: timestamppb.New(at), OperationId: "sre-1"})
		if err != nil {
			t.Fatal(err)
		}
		if !p.GetNextRun().AsTime().Equal(at) || p.GetState() != csv1.UpgradePolicyState_UPGRADE_POLICY_STATE_PENDING || p.GetToVersion() != "4.20.3" {
			t.Fatalf("policy %v; want PENDING to 4.20.3 at %s", p, at)
		}
		list, err := e.upgrades.ListUpgradePolicies(ctx, &csv1.ListUpgradePoliciesRequest{ClusterId: other.GetId()})
		if err != nil || len(list.GetUpgradePolicies()) != 1 || list.GetUpgradePolicies()[0].GetId() != p.GetId() {
			t.Fatalf("ListUpgradePolicies = %v, %v", list, err)
		}
		if _, err := e.upgrades.CreateUpgradePolicy(ctx, &csv1.CreateUpgradePolicyRequest{ClusterId: other.GetId(), VersionId: "4.20"}); status.Code(err) != codes.FailedPrecondition {
			t.Fatalf("second CreateUpgradePolicy = %v; want FailedPrecondition", err)
		}
	})
}

func TestNodePoolUpdatesHonourUpgradeEdges(t *testing.T) {
	e := start(t)
	ctx := context.Background()
	e.register(t, "mc-1", 10)
	cl := e.clusterAt(t, 1, "np", "4.19.17")
	pool := validPool(2, cl.GetId(), "np", "work")
	pool.Spec.VersionId = "4.18.26"
	np, err := e.pools.CreateNodePool(ctx, &csv1.CreateNodePoolRequest{NodePool: pool})
	if err != nil {
		t.Fatal(err)
	}
	update := func(version string) (*csv1.NodePool, error) {
		spec := np.GetSpec()
		spec.VersionId = version
		return e.pools.UpdateNodePool(ctx, &csv1.UpdateNodePoolRequest{Id: np.GetId(), Update: csv1.FullNodePoolUpdate(spec)})
	}
	for _, tc := range []struct {
		name, to, msg string
	}{
		{"downgrade", "4.17.44", "cannot downgrade from 4.18.26 to 4.17.44"},
		{"ahead_of_the_control_plane", "4.20", "skips minor version 4.19"},
		{"no_edge", "4.18.27.1", "must look like"},
	} {
		t.Run(tc.name+"_is_refused", func(t *testing.T) {
			_, err := update(tc.to)
			if status.Code(err) != codes.InvalidArgument || !fieldViolations(err)["update.version_id"] || !strings.Contains(status.Convert(err).Message(), tc.msg) {
				t.Fatalf("UpdateNodePool(%s) = %v; want InvalidArgument on spec.version_id saying %q", tc.to, err, tc.msg)
			}
		})
	}
	t.Run("upgrade_along_an_edge_starts_a_node_pool_policy", func(t *testing.T) {
		got, err := update("4.19.16")
		if err != nil {
			t.Fatal(err)
		}
		if got.GetSpec().GetVersionId() != "4.19.16" {
			t.Fatalf("spec version %s, want 4.19.16", got.GetSpec().GetVersionId())
		}
		list, err := e.upgrades.ListUpgradePolicies(ctx, &csv1.ListUpgradePoliciesRequest{ClusterId: cl.GetId(), NodePoolId: np.GetId()})
		if err != nil || len(list.GetUpgradePolicies()) != 1 {
			t.Fatalf("ListUpgradePolicies = %v, %v", list, err)
		}
		p := list.GetUpgradePolicies()[0]
		if p.GetType() != csv1.UpgradeType_UPGRADE_TYPE_NODE_POOL || p.GetState() != csv1.UpgradePolicyState_UPGRADE_POLICY_STATE_STARTED ||
			p.GetFromVersion() != "4.18.26" || p.GetToVersion() != "4.19.16" {
			t.Fatalf("policy %v; want a STARTED node pool upgrade 4.18.26 → 4.19.16", p)
		}
		if _, err := update("4.19.17"); status.Code(err) != codes.FailedPrecondition {
			t.Fatalf("second upgrade while one runs = %v; want FailedPrecondition", err)
		}
	})
}

func TestVersions(t *testing.T) {
	e := start(t)
	ctx := context.Background()
	all, err := e.versions.ListVersions(ctx, &csv1.ListVersionsRequest{})
	if err != nil {
		t.Fatal(err)
	}
	groups := map[string]int{}
	for _, v := range all.GetVersions() {
		groups[v.GetChannelGroup()]++
		if v.GetEndOfLife() == nil {
			t.Fatalf("version %s has no end of life", v.GetId())
		}
	}
	if groups["stable"] == 0 || groups["candidate"] == 0 {
		t.Fatalf("ListVersions() groups %v; want stable and candidate", groups)
	}
	stable, err := e.versions.ListVersions(ctx, &csv1.ListVersionsRequest{ChannelGroup: "stable"})
	if err != nil || len(stable.GetVersions()) != groups["stable"] {
		t.Fatalf("ListVersions(stable) = %v, %v", stable, err)
	}
	v, err := e.versions.GetVersion(ctx, &csv1.GetVersionRequest{Id: "4.19.17"})
	if err != nil || v.GetChannelGroup() != "stable" || !v.GetEnabled() || strings.Join(v.GetAvailableUpgrades(), ",") != "4.20.3" {
		t.Fatalf("GetVersion(4.19.17) = %v, %v; want stable, enabled, upgrades to 4.20.3", v, err)
	}
	for _, tc := range []struct {
		name string
		call func() error
		code codes.Code
	}{
		{"unknown_group", func() error {
			_, err := e.versions.ListVersions(ctx, &csv1.ListVersionsRequest{ChannelGroup: "beta"})
			return err
		}, codes.InvalidArgument},
		{"unknown_version", func() error { _, err := e.versions.GetVersion(ctx, &csv1.GetVersionRequest{Id: "4.1.1"}); return err }, codes.NotFound},
		{"version_of_another_group", func() error {
			_, err := e.versions.GetVersion(ctx, &csv1.GetVersionRequest{Id: "4.21.0", ChannelGroup: "stable"})
			return err
		}, codes.NotFound},
		{"missing_id", func() error { _, err := e.versions.GetVersion(ctx, &csv1.GetVersionRequest{}); return err }, codes.InvalidArgument},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := tc.call(); status.Code(err) != tc.code {
				t.Fatalf("got %v; want %v", err, tc.code)
			}
		})
	}
}

func TestCancelUpgradePolicy(t *testing.T) {
	e := start(t)
	ctx := context.Background()
	e.register(t, "mc-1", 10)
	cl := e.clusterAt(t, 1, "cancel", "4.19.17")
	got, err := e.clusters.UpdateCluster(ctx, &csv1.UpdateClusterRequest{Id: cl.GetId(), Update: &csv1.ClusterUpdate{VersionId: "4.20"}})
	if err != nil {
		t.Fatal(err)
	}
	policy := got.GetStatus().GetUpgrade().GetId()
	pool := validPool(2, cl.GetId(), "cancel", "work")
	pool.Spec.VersionId = "4.18.26"
	np, err := e.pools.CreateNodePool(ctx, &csv1.CreateNodePoolRequest{NodePool: pool})
	if err != nil {
		t.Fatal(err)
	}
	spec := np.GetSpec()
	spec.VersionId = "4.19.16"
	if _, err := e.pools.UpdateNodePool(ctx, &csv1.UpdateNodePoolRequest{Id: np.GetId(), Update: csv1.FullNodePoolUpdate(spec)}); err != nil {
		t.Fatal(err)
	}
	list, err := e.upgrades.ListUpgradePolicies(ctx, &csv1.ListUpgradePoliciesRequest{ClusterId: cl.GetId(), NodePoolId: np.GetId()})
	if err != nil || len(list.GetUpgradePolicies()) != 1 {
		t.Fatalf("node pool policies %v %v", list, err)
	}
	for _, tc := range []struct {
		name, id, reason string
		code             codes.Code
		field            string
	}{
		{"a_reason_is_required", policy, " ", codes.InvalidArgument, "reason"},
		{"unknown_policy", id(99), "r", codes.NotFound, ""},
		{"a_node_pool_upgrade_cannot_be_canceled", list.GetUpgradePolicies()[0].GetId(), "r", codes.FailedPrecondition, ""},
		{"a_pending_upgrade_is_canceled", policy, "CHG-1 postponed", codes.OK, ""},
		{"a_finished_upgrade_cannot_be_canceled", policy, "r", codes.FailedPrecondition, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, err := e.upgrades.CancelUpgradePolicy(ctx, &csv1.CancelUpgradePolicyRequest{Id: tc.id, Reason: tc.reason})
			if status.Code(err) != tc.code || (tc.field != "" && !fieldViolations(err)[tc.field]) {
				t.Fatalf("CancelUpgradePolicy = %v; want %s %s", err, tc.code, tc.field)
			}
			if tc.code != codes.OK {
				return
			}
			if p.GetState() != csv1.UpgradePolicyState_UPGRADE_POLICY_STATE_FAILED || !strings.Contains(p.GetMessage(), "was canceled: CHG-1 postponed") {
				t.Fatalf("policy %v", p)
			}
			c, err := e.clusters.GetCluster(ctx, &csv1.GetClusterRequest{Id: cl.GetId()})
			if err != nil || c.GetSpec().GetVersionId() != "4.19.17" || c.GetStatus().GetUpgrade().GetState() != csv1.UpgradePolicyState_UPGRADE_POLICY_STATE_FAILED {
				t.Fatalf("cluster after the cancel: %v %v", c, err)
			}
		})
	}
	t.Run("a_new_upgrade_may_follow", func(t *testing.T) {
		if _, err := e.clusters.UpdateCluster(ctx, &csv1.UpdateClusterRequest{Id: cl.GetId(), Update: &csv1.ClusterUpdate{VersionId: "4.20"}}); err != nil {
			t.Fatal(err)
		}
	})
}

// TestUpgradeSentAgainUnderItsOperationStartsNothingMore: the frontend sends a version change
// again, under the same operation, when Cluster Service's answer to the first was lost. That
// repeat must answer as the first did and start no second upgrade; another operation asking
// for an upgrade meanwhile is still refused.
func TestUpgradeSentAgainUnderItsOperationStartsNothingMore(t *testing.T) {
	e := start(t)
	ctx := context.Background()
	e.register(t, "mc-1", 50)
	cl := e.clusterAt(t, 1, "again", "4.19.16")
	req := &csv1.UpdateClusterRequest{Id: cl.GetId(), Update: &csv1.ClusterUpdate{VersionId: "4.20"}, OperationId: "op-1"}
	first, err := e.clusters.UpdateCluster(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	p := first.GetStatus().GetUpgrade()
	if p.GetState() != csv1.UpgradePolicyState_UPGRADE_POLICY_STATE_PENDING {
		t.Fatalf("first update: policy %v; want PENDING", p)
	}
	drain := first.GetSpec().GetNodeDrainTimeoutMinutes()
	for _, tc := range []struct {
		name string
		req  *csv1.UpdateClusterRequest
		code codes.Code
	}{
		{"same_operation_again", req, codes.OK},
		{"same_operation_with_a_configuration_change_already_made", &csv1.UpdateClusterRequest{Id: cl.GetId(),
			Update: &csv1.ClusterUpdate{VersionId: "4.20", NodeDrainTimeoutMinutes: &drain}, OperationId: "op-1"}, codes.OK},
		{"another_operation", &csv1.UpdateClusterRequest{Id: cl.GetId(), Update: &csv1.ClusterUpdate{VersionId: "4.20"}, OperationId: "op-2"}, codes.FailedPrecondition},
		{"no_operation", &csv1.UpdateClusterRequest{Id: cl.GetId(), Update: &csv1.ClusterUpdate{VersionId: "4.20"}}, codes.FailedPrecondition},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := e.clusters.UpdateCluster(ctx, tc.req)
			if status.Code(err) != tc.code {
				t.Fatalf("UpdateCluster = %v; want %v", err, tc.code)
			}
			if err != nil {
				return
			}
			if got.GetStatus().GetUpgrade().GetId() != p.GetId() || got.GetRevision() != first.GetRevision() {
				t.Fatalf("repeat answered policy %s at revision %d; want %s at %d, unchanged",
					got.GetStatus().GetUpgrade().GetId(), got.GetRevision(), p.GetId(), first.GetRevision())
			}
		})
	}
	list, err := e.upgrades.ListUpgradePolicies(ctx, &csv1.ListUpgradePoliciesRequest{ClusterId: cl.GetId()})
	if err != nil || len(list.GetUpgradePolicies()) != 1 {
		t.Fatalf("ListUpgradePolicies = %v, %v; want the one policy", list, err)
	}
}
