package controller

import (
	"errors"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/types/known/timestamppb"

	csv1 "github.com/openhcp/openhcp/cluster-service/api/v1"
)

func TestNextUpgradeStep(t *testing.T) {
	now := time.Date(2026, 11, 21, 10, 0, 0, 0, time.UTC)
	spec := &csv1.ClusterSpec{VersionId: "4.19.17", ChannelGroup: "stable"}
	policy := func(s csv1.UpgradePolicyState, nextRun time.Time) *csv1.UpgradePolicy {
		return &csv1.UpgradePolicy{Id: "p", FromVersion: "4.19.17", ToVersion: "4.20.3", State: s, NextRun: timestamppb.New(nextRun)}
	}
	ready := &csv1.ClusterStatus{State: csv1.ClusterState_CLUSTER_STATE_READY, CurrentVersion: "4.19.17"}
	allowed := func(_, _, _ string) error { return nil }
	for _, tc := range []struct {
		name     string
		st       *csv1.ClusterStatus
		p        *csv1.UpgradePolicy
		check    func(group, from, to string) error
		want     csv1.UpgradePolicyState // UNSPECIFIED: no step
		wantMsg  string
		wantSpec string
		wantWait time.Duration
	}{
		{"no_policy_no_step", ready, nil, allowed, 0, "", "", 0},
		{"pending_on_a_ready_cluster_is_scheduled", ready, policy(statePending, now), allowed, stateScheduled, "scheduled for 2026-11-21T10:00:00Z", "", 0},
		{"pending_waits_for_an_installing_cluster", &csv1.ClusterStatus{State: csv1.ClusterState_CLUSTER_STATE_INSTALLING}, policy(statePending, now), allowed,
			statePending, "waits for the cluster to be ready (it is installing)", "", 0},
		{"pending_whose_edge_left_the_catalogue_fails", ready, policy(statePending, now), func(_, _, _ string) error { return errors.New("no upgrade edge") },
			stateFailed, "no longer allowed: no upgrade edge", "", 0},
		{"scheduled_in_the_future_waits", ready, policy(stateScheduled, now.Add(time.Hour)), allowed, 0, "", "", time.Hour},
		{"scheduled_and_due_starts_and_writes_the_version", ready, policy(stateScheduled, now), allowed, stateStarted, "upgrading from 4.19.17 to 4.20.3", "4.20.3", 0},
		{"started_and_still_rolling_out_no_step", &csv1.ClusterStatus{State: csv1.ClusterState_CLUSTER_STATE_UPDATING, CurrentVersion: "4.19.17"},
			policy(stateStarted, now), allowed, 0, "", "", 0},
		{"started_and_completed_in_history_completes", &csv1.ClusterStatus{State: csv1.ClusterState_CLUSTER_STATE_READY, CurrentVersion: "4.20.3"},
			policy(stateStarted, now), allowed, stateCompleted, "upgraded from 4.19.17 to 4.20.3", "", 0},
		{"started_with_cvo_failing_fails", &csv1.ClusterStatus{State: csv1.ClusterState_CLUSTER_STATE_UPDATING, CurrentVersion: "4.19.17",
			Conditions: []*csv1.Condition{{Type: "ClusterVersionFailing", Status: "True", Message: "Cluster operator etcd is degraded"}}},
			policy(stateStarted, now), allowed, stateFailed, "failed: Cluster operator etcd is degraded", "", 0},
		{"started_with_cvo_not_succeeding_fails", &csv1.ClusterStatus{State: csv1.ClusterState_CLUSTER_STATE_UPDATING, CurrentVersion: "4.19.17",
			Conditions: []*csv1.Condition{{Type: "ClusterVersionSucceeding", Status: "False", Reason: "ClusterOperatorDegraded"}}},
			policy(stateStarted, now), allowed, stateFailed, "ClusterVersionSucceeding is False: ClusterOperatorDegraded", "", 0},
		{"started_on_an_error_cluster_fails", &csv1.ClusterStatus{State: csv1.ClusterState_CLUSTER_STATE_ERROR, Message: "degraded"},
			policy(stateStarted, now), allowed, stateFailed, "failed: degraded", "", 0},
		{"completed_is_terminal", ready, policy(stateCompleted, now), allowed, 0, "", "", 0},
		{"failed_is_terminal", ready, policy(stateFailed, now), allowed, 0, "", "", 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			step, wait, ok := NextUpgradeStep(spec, tc.st, tc.p, now, tc.check)
			if wait != tc.wantWait {
				t.Fatalf("wait %v, want %v", wait, tc.wantWait)
			}
			if tc.want == 0 {
				if ok {
					t.Fatalf("step to %v (%q); want none", step.Policy.GetState(), step.Policy.GetMessage())
				}
				return
			}
			if !ok || step.Policy.GetState() != tc.want || !strings.Contains(step.Policy.GetMessage(), tc.wantMsg) {
				t.Fatalf("step %v %q (ok %v); want %v containing %q", step.Policy.GetState(), step.Policy.GetMessage(), ok, tc.want, tc.wantMsg)
			}
			if got := step.Spec.GetVersionId(); got != tc.wantSpec {
				t.Fatalf("spec version %q, want %q", got, tc.wantSpec)
			}
			if tc.p.GetState() == tc.want && tc.p.GetMessage() == step.Policy.GetMessage() {
				t.Fatal("a step that changes nothing")
			}
		})
	}
	// A pending policy that already says why it waits is not rewritten.
	p := policy(statePending, now)
	step, _, _ := NextUpgradeStep(spec, &csv1.ClusterStatus{State: csv1.ClusterState_CLUSTER_STATE_INSTALLING}, p, now, allowed)
	if _, _, ok := NextUpgradeStep(spec, &csv1.ClusterStatus{State: csv1.ClusterState_CLUSTER_STATE_INSTALLING}, step.Policy, now, allowed); ok {
		t.Fatal("the same waiting message is written again")
	}
}

func TestNextNodePoolUpgradeStep(t *testing.T) {
	started := &csv1.UpgradePolicy{Id: "p", Type: csv1.UpgradeType_UPGRADE_TYPE_NODE_POOL, FromVersion: "4.19.16", ToVersion: "4.19.17",
		State: csv1.UpgradePolicyState_UPGRADE_POLICY_STATE_STARTED}
	completed := &csv1.UpgradePolicy{Id: "p", State: csv1.UpgradePolicyState_UPGRADE_POLICY_STATE_COMPLETED, ToVersion: "4.19.17"}
	for _, tc := range []struct {
		name      string
		policy    *csv1.UpgradePolicy
		status    *csv1.NodePoolStatus
		wantOK    bool
		wantState csv1.UpgradePolicyState
		wantMsg   string
	}{
		{"ready_at_the_target_completes", started, &csv1.NodePoolStatus{State: csv1.NodePoolState_NODE_POOL_STATE_READY, CurrentVersion: "4.19.17"},
			true, csv1.UpgradePolicyState_UPGRADE_POLICY_STATE_COMPLETED, "upgraded from 4.19.16 to 4.19.17"},
		{"ready_at_the_old_version_waits", started, &csv1.NodePoolStatus{State: csv1.NodePoolState_NODE_POOL_STATE_READY, CurrentVersion: "4.19.16"},
			false, 0, ""},
		{"updating_at_the_target_waits", started, &csv1.NodePoolStatus{State: csv1.NodePoolState_NODE_POOL_STATE_UPDATING, CurrentVersion: "4.19.17"},
			false, 0, ""},
		{"an_error_fails_with_the_pools_message", started, &csv1.NodePoolStatus{State: csv1.NodePoolState_NODE_POOL_STATE_ERROR, Message: "no capacity"},
			true, csv1.UpgradePolicyState_UPGRADE_POLICY_STATE_FAILED, "failed: no capacity"},
		{"a_finished_policy_stays", completed, &csv1.NodePoolStatus{State: csv1.NodePoolState_NODE_POOL_STATE_ERROR}, false, 0, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			next, ok := NextNodePoolUpgradeStep(tc.policy, tc.status)
			if ok != tc.wantOK || (ok && (next.GetState() != tc.wantState || !strings.Contains(next.GetMessage(), tc.wantMsg))) {
				t.Fatalf("NextNodePoolUpgradeStep = %v, %v; want ok %v, %v with %q", next, ok, tc.wantOK, tc.wantState, tc.wantMsg)
			}
			if ok && tc.policy.GetState() != csv1.UpgradePolicyState_UPGRADE_POLICY_STATE_STARTED {
				t.Fatalf("the policy passed in changed: %v", tc.policy)
			}
		})
	}
}

// TestNextUpgradeStepWaitsWhilePaused: a pending upgrade of a paused cluster waits, whatever the
// last status says (it can still say READY just after the pause: the end-to-end hcpctl day-two
// test saw an upgrade started on a cluster paused a moment before), and looks again when a timed
// pause ends; a pause already past holds nothing.
func TestNextUpgradeStepWaitsWhilePaused(t *testing.T) {
	now := time.Date(2026, 11, 21, 10, 0, 0, 0, time.UTC)
	ready := &csv1.ClusterStatus{State: csv1.ClusterState_CLUSTER_STATE_READY, CurrentVersion: "4.19.17"}
	pending := &csv1.UpgradePolicy{Id: "p", FromVersion: "4.19.17", ToVersion: "4.20.3", State: statePending, NextRun: timestamppb.New(now)}
	for _, tc := range []struct {
		name, pausedUntil string
		want              csv1.UpgradePolicyState
		wantWait          time.Duration
	}{
		{"paused_until_resumed", "true", statePending, 0},
		{"paused_for_an_hour", now.Add(time.Hour).Format(time.RFC3339), statePending, time.Hour},
		{"pause_already_past", now.Add(-time.Minute).Format(time.RFC3339), stateScheduled, 0},
		{"not_paused", "", stateScheduled, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			spec := &csv1.ClusterSpec{VersionId: "4.19.17", ChannelGroup: "stable", PausedUntil: tc.pausedUntil}
			step, wait, ok := NextUpgradeStep(spec, ready, pending, now, nil)
			if !ok || step.Policy.GetState() != tc.want || wait != tc.wantWait {
				t.Fatalf("step %v (ok %v), wait %v; want state %s, wait %v", step.Policy, ok, wait, tc.want, tc.wantWait)
			}
			if tc.want == statePending && !strings.Contains(step.Policy.GetMessage(), "paused") {
				t.Errorf("message %q does not say the cluster is paused", step.Policy.GetMessage())
			}
		})
	}
}
