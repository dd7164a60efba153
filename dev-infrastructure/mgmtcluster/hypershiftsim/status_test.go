package hypershiftsim

import (
	"strconv"
	"testing"
	"time"

	configv1 "github.com/openshift/api/config/v1"
	hyperv1 "github.com/openshift/hypershift/api/hypershift/v1beta1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// These tests drive the pure status computations with a fixed clock; sim_test.go covers the same
// behaviour end to end against a real apiserver.

var t0 = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

const image = "quay.io/openshift-release-dev/ocp-release:4.19.7-multi"

func hcAt(t *testing.T, hc *hyperv1.HostedCluster, o Options, now time.Time) time.Duration {
	t.Helper()
	next := computeHostedClusterStatus(hc, o, now)
	// Level-triggered: a second pass at the same moment changes nothing.
	again := hc.DeepCopy()
	if computeHostedClusterStatus(again, o, now) != next || !equality.Semantic.DeepEqual(again.Status, hc.Status) {
		t.Fatalf("second reconcile at %s changed the status or the requeue", now)
	}
	return next
}

func condOf(hc *hyperv1.HostedCluster, typ hyperv1.ConditionType) metav1.Condition {
	if c := meta.FindStatusCondition(hc.Status.Conditions, string(typ)); c != nil {
		return *c
	}
	return metav1.Condition{}
}

func TestComputeHostedClusterStatus_rolloutTimeline(t *testing.T) {
	o := Options{AvailableDelay: 10 * time.Second}
	hc := ExampleHostedCluster("ns", "hc", image)
	hc.Generation = 1

	steps := []struct {
		at                     time.Duration
		wantAvailable          metav1.ConditionStatus
		wantProgressing        metav1.ConditionStatus
		wantState              configv1.UpdateState
		wantNext               time.Duration
		wantAvailableSince     time.Duration
		wantHistory            int
		upgradeToBeforeThisRun string
	}{
		{at: 0, wantAvailable: metav1.ConditionFalse, wantProgressing: metav1.ConditionTrue, wantState: configv1.PartialUpdate, wantNext: 10 * time.Second, wantHistory: 1},
		{at: 4 * time.Second, wantAvailable: metav1.ConditionFalse, wantProgressing: metav1.ConditionTrue, wantState: configv1.PartialUpdate, wantNext: 6 * time.Second, wantHistory: 1},
		{at: 10 * time.Second, wantAvailable: metav1.ConditionTrue, wantProgressing: metav1.ConditionFalse, wantState: configv1.CompletedUpdate, wantAvailableSince: 10 * time.Second, wantHistory: 1},
		{at: 30 * time.Second, wantAvailable: metav1.ConditionTrue, wantProgressing: metav1.ConditionFalse, wantState: configv1.CompletedUpdate, wantAvailableSince: 10 * time.Second, wantHistory: 1},
		{at: 40 * time.Second, upgradeToBeforeThisRun: "quay.io/openshift-release-dev/ocp-release:4.19.8-multi",
			wantAvailable: metav1.ConditionTrue, wantProgressing: metav1.ConditionTrue, wantState: configv1.PartialUpdate, wantNext: 10 * time.Second, wantAvailableSince: 10 * time.Second, wantHistory: 2},
		{at: 50 * time.Second, wantAvailable: metav1.ConditionTrue, wantProgressing: metav1.ConditionFalse, wantState: configv1.CompletedUpdate, wantAvailableSince: 10 * time.Second, wantHistory: 2},
	}
	for _, s := range steps {
		if s.upgradeToBeforeThisRun != "" {
			hc.Spec.Release.Image = s.upgradeToBeforeThisRun
			hc.Generation++
		}
		next := hcAt(t, hc, o, t0.Add(s.at))
		av, pr := condOf(hc, hyperv1.HostedClusterAvailable), condOf(hc, hyperv1.HostedClusterProgressing)
		if av.Status != s.wantAvailable || pr.Status != s.wantProgressing {
			t.Errorf("t+%s: Available=%s Progressing=%s, want %s %s", s.at, av.Status, pr.Status, s.wantAvailable, s.wantProgressing)
		}
		if h := hc.Status.Version.History; len(h) != s.wantHistory || h[0].State != s.wantState {
			t.Errorf("t+%s: history %+v, want %d entries, head %s", s.at, h, s.wantHistory, s.wantState)
		}
		if next != s.wantNext {
			t.Errorf("t+%s: next step in %s, want %s", s.at, next, s.wantNext)
		}
		if s.wantAvailable == metav1.ConditionTrue && !av.LastTransitionTime.Time.Equal(t0.Add(s.wantAvailableSince)) {
			t.Errorf("t+%s: Available since %s, want t+%s", s.at, av.LastTransitionTime, s.wantAvailableSince)
		}
		if av.ObservedGeneration != hc.Generation || hc.Status.Version.ObservedGeneration != hc.Generation {
			t.Errorf("t+%s: observedGeneration %d/%d, want %d", s.at, av.ObservedGeneration, hc.Status.Version.ObservedGeneration, hc.Generation)
		}
	}
	if got := hc.Status.Version.History[1]; got.Version != "4.19.7" || got.State != configv1.CompletedUpdate {
		t.Errorf("previous entry %+v", got)
	}
}

func TestComputeHostedClusterStatus_faultsAndPause(t *testing.T) {
	future := t0.Add(time.Hour).Format(time.RFC3339)
	tests := []struct {
		name          string
		mutate        func(*hyperv1.HostedCluster)
		opts          Options
		wantNext      time.Duration
		wantCondition map[hyperv1.ConditionType]metav1.ConditionStatus
		wantVersion   bool
	}{{
		name:   "annotation_failure_is_degraded_and_not_available",
		mutate: func(hc *hyperv1.HostedCluster) { hc.Annotations = map[string]string{FailAnnotation: "boom"} },
		wantCondition: map[hyperv1.ConditionType]metav1.ConditionStatus{
			hyperv1.HostedClusterDegraded: metav1.ConditionTrue, hyperv1.HostedClusterAvailable: metav1.ConditionFalse,
			hyperv1.HostedClusterProgressing: metav1.ConditionFalse,
		},
		wantVersion: true,
	}, {
		name: "never_available_option_keeps_progressing_without_requeue",
		opts: Options{NeverAvailable: true},
		wantCondition: map[hyperv1.ConditionType]metav1.ConditionStatus{
			hyperv1.HostedClusterProgressing: metav1.ConditionTrue, hyperv1.HostedClusterAvailable: metav1.ConditionFalse,
		},
		wantVersion: true,
	}, {
		name:   "paused_until_removed_touches_only_reconciliation_active",
		mutate: func(hc *hyperv1.HostedCluster) { hc.Spec.PausedUntil = ptr.To("true") },
		wantCondition: map[hyperv1.ConditionType]metav1.ConditionStatus{
			hyperv1.ReconciliationActive: metav1.ConditionFalse, hyperv1.HostedClusterAvailable: "",
		},
	}, {
		name:     "paused_until_a_time_requeues_then",
		mutate:   func(hc *hyperv1.HostedCluster) { hc.Spec.PausedUntil = &future },
		wantNext: time.Hour,
		wantCondition: map[hyperv1.ConditionType]metav1.ConditionStatus{
			hyperv1.ReconciliationActive: metav1.ConditionFalse,
		},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			hc := ExampleHostedCluster("ns", "hc", image)
			if tt.mutate != nil {
				tt.mutate(hc)
			}
			tt.opts.AvailableDelay = time.Second
			if next := hcAt(t, hc, tt.opts, t0); next != tt.wantNext {
				t.Errorf("next %s, want %s", next, tt.wantNext)
			}
			// Long after the delay, the fault still holds.
			hcAt(t, hc, tt.opts, t0.Add(time.Minute))
			for typ, want := range tt.wantCondition {
				if got := condOf(hc, typ).Status; got != want {
					t.Errorf("%s=%q, want %q", typ, got, want)
				}
			}
			if (hc.Status.Version != nil) != tt.wantVersion {
				t.Errorf("version status %+v, want present=%v", hc.Status.Version, tt.wantVersion)
			}
			if hc.Status.Version != nil && hc.Status.Version.History[0].State != configv1.PartialUpdate {
				t.Errorf("history head %s, want Partial", hc.Status.Version.History[0].State)
			}
		})
	}
}

func TestComputeHostedClusterStatus_historyIsBounded(t *testing.T) {
	hc := ExampleHostedCluster("ns", "hc", image)
	for i := 0; i < maxHistory+5; i++ {
		hc.Spec.Release.Image = "quay.io/openshift-release-dev/ocp-release:4.19." + strconv.Itoa(i) + "-multi"
		computeHostedClusterStatus(hc, Options{}, t0.Add(time.Duration(i)*time.Second))
	}
	h := hc.Status.Version.History
	if len(h) != maxHistory || h[0].Version != "4.19."+strconv.Itoa(maxHistory+4) {
		t.Fatalf("history has %d entries, head %s", len(h), h[0].Version)
	}
}

func TestComputeNodePoolStatus_waitsForControlPlaneThenDelay(t *testing.T) {
	o := Options{NodePoolReadyDelay: 5 * time.Second}
	hc := ExampleHostedCluster("ns", "hc", image)
	np := ExampleNodePool("ns", "np", "hc", image, 3)
	np.Generation = 1

	if next := computeNodePoolStatus(np, hc, o, t0); next != 0 || np.Status.Replicas != 0 {
		t.Fatalf("cluster not Available: next %s replicas %d, want no progress and no requeue", next, np.Status.Replicas)
	}
	// The cluster becomes Available 20s later; the pool's clock starts then, not at t0.
	meta.SetStatusCondition(&hc.Status.Conditions, metav1.Condition{Type: string(hyperv1.HostedClusterAvailable),
		Status: metav1.ConditionTrue, Reason: "AsExpected", LastTransitionTime: metav1.NewTime(t0.Add(20 * time.Second))})
	if next := computeNodePoolStatus(np, hc, o, t0.Add(21*time.Second)); next != 4*time.Second || np.Status.Replicas != 0 {
		t.Fatalf("1s after Available: next %s replicas %d, want 4s and 0", next, np.Status.Replicas)
	}
	// One node per delay, status.replicas reporting each; the version comes with the last.
	for i, at := range []time.Duration{25 * time.Second, 30 * time.Second, 35 * time.Second} {
		wantNext := 5 * time.Second
		if i == 2 {
			wantNext = 0
		}
		if next := computeNodePoolStatus(np, hc, o, t0.Add(at)); next != wantNext || np.Status.Replicas != int32(i+1) {
			t.Fatalf("%s after t0: next %s replicas %d, want %s and %d", at, next, np.Status.Replicas, wantNext, i+1)
		}
		if i < 2 {
			if np.Status.Version != "" {
				t.Fatalf("version %q reported with %d of 3 nodes", np.Status.Version, np.Status.Replicas)
			}
			if next := computeNodePoolStatus(np, hc, o, t0.Add(at+4*time.Second)); np.Status.Replicas != int32(i+1) || next != time.Second {
				t.Fatalf("a node came before its delay: replicas %d next %s", np.Status.Replicas, next)
			}
		}
	}
	if np.Status.Version != "4.19.7" {
		t.Fatalf("version %q with all nodes up", np.Status.Version)
	}
	ready := findNodePoolCondition(np.Status.Conditions, hyperv1.NodePoolReadyConditionType)
	if ready == nil || ready.Status != corev1.ConditionTrue || !ready.LastTransitionTime.Time.Equal(t0.Add(35*time.Second)) {
		t.Fatalf("Ready %+v", ready)
	}

	// Autoscaling clamps into [min, max]: 3 → 4 is one node, after one delay.
	np.Spec.Replicas = nil
	np.Spec.AutoScaling = &hyperv1.NodePoolAutoScaling{Min: 4, Max: 6}
	np.Generation++
	computeNodePoolStatus(np, hc, o, t0.Add(40*time.Second))
	if np.Status.Replicas != 3 {
		t.Fatalf("scaled before the delay: %d", np.Status.Replicas)
	}
	computeNodePoolStatus(np, hc, o, t0.Add(45*time.Second))
	if np.Status.Replicas != 4 {
		t.Fatalf("autoscaled pool at %d, want min 4", np.Status.Replicas)
	}

	if c := findNodePoolCondition(np.Status.Conditions, hyperv1.NodePoolAutoscalingEnabledConditionType); c == nil || c.Status != corev1.ConditionTrue {
		t.Fatalf("AutoscalingEnabled %+v", c)
	}

	// Scaling down to 1 removes one node per delay too.
	np.Spec.AutoScaling, np.Spec.Replicas = nil, ptrTo(int32(1))
	np.Generation++
	for i, want := range []int32{4, 3, 2, 1} {
		computeNodePoolStatus(np, hc, o, t0.Add(50*time.Second+time.Duration(i)*5*time.Second))
		if np.Status.Replicas != want {
			t.Fatalf("scale down step %d: replicas %d, want %d", i, np.Status.Replicas, want)
		}
	}
}

func TestComputeHostedClusterStatus_upgrades(t *testing.T) {
	const next = "quay.io/openshift-release-dev/ocp-release:4.19.8-multi"
	for _, tc := range []struct {
		name        string
		opts        Options
		annotations map[string]string
		at          time.Duration // after the upgrade started
		wantState   configv1.UpdateState
		wantNext    time.Duration
		want        map[hyperv1.ConditionType]metav1.ConditionStatus
		wantMessage string // of ClusterVersionFailing
	}{
		{name: "upgrade_delay_is_its_own", opts: Options{AvailableDelay: 10 * time.Second, UpgradeDelay: 30 * time.Second}, at: 10 * time.Second,
			wantState: configv1.PartialUpdate, wantNext: 20 * time.Second,
			want: map[hyperv1.ConditionType]metav1.ConditionStatus{hyperv1.HostedClusterAvailable: metav1.ConditionTrue, hyperv1.ClusterVersionProgressing: metav1.ConditionTrue}},
		{name: "upgrade_completes_after_the_upgrade_delay", opts: Options{AvailableDelay: 10 * time.Second, UpgradeDelay: 30 * time.Second}, at: 30 * time.Second,
			wantState: configv1.CompletedUpdate,
			want:      map[hyperv1.ConditionType]metav1.ConditionStatus{hyperv1.ClusterVersionFailing: metav1.ConditionFalse, hyperv1.HostedClusterProgressing: metav1.ConditionFalse}},
		{name: "zero_upgrade_delay_means_the_available_delay", opts: Options{AvailableDelay: 10 * time.Second}, at: 10 * time.Second, wantState: configv1.CompletedUpdate},
		{name: "failing_upgrade_progresses_until_its_delay", opts: Options{AvailableDelay: 10 * time.Second}, annotations: map[string]string{FailUpgradeAnnotation: "etcd is degraded"},
			at: 5 * time.Second, wantState: configv1.PartialUpdate, wantNext: 5 * time.Second,
			want: map[hyperv1.ConditionType]metav1.ConditionStatus{hyperv1.ClusterVersionFailing: metav1.ConditionFalse}},
		{name: "failing_upgrade_stays_partial_and_reports_failing", opts: Options{AvailableDelay: 10 * time.Second}, annotations: map[string]string{FailUpgradeAnnotation: "etcd is degraded"},
			at: time.Minute, wantState: configv1.PartialUpdate,
			want: map[hyperv1.ConditionType]metav1.ConditionStatus{
				hyperv1.ClusterVersionFailing: metav1.ConditionTrue, hyperv1.ClusterVersionSucceeding: metav1.ConditionFalse,
				hyperv1.HostedClusterAvailable: metav1.ConditionTrue, hyperv1.HostedClusterDegraded: metav1.ConditionFalse,
				hyperv1.HostedClusterProgressing: metav1.ConditionFalse,
			}, wantMessage: "etcd is degraded"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			hc := ExampleHostedCluster("ns", "hc", image)
			hc.Annotations = tc.annotations
			hcAt(t, hc, tc.opts, t0)
			hcAt(t, hc, tc.opts, t0.Add(tc.opts.AvailableDelay))
			if hc.Status.Version.History[0].State != configv1.CompletedUpdate {
				t.Fatalf("first install not completed: %+v (the upgrade failure switch must not touch it)", hc.Status.Version.History[0])
			}
			start := t0.Add(time.Minute)
			hc.Spec.Release.Image = next
			hcAt(t, hc, tc.opts, start)
			got := hcAt(t, hc, tc.opts, start.Add(tc.at))
			h := hc.Status.Version.History
			if len(h) != 2 || h[0].Version != "4.19.8" || h[0].State != tc.wantState || h[1].State != configv1.CompletedUpdate {
				t.Fatalf("history %+v; want 4.19.8 %s over a Completed 4.19.7", h, tc.wantState)
			}
			if hc.Status.Version.Desired.Version != "4.19.8" {
				t.Fatalf("desired %+v, want 4.19.8", hc.Status.Version.Desired)
			}
			if got != tc.wantNext {
				t.Fatalf("next %s, want %s", got, tc.wantNext)
			}
			for typ, want := range tc.want {
				if c := condOf(hc, typ); c.Status != want {
					t.Errorf("%s=%s (%s), want %s", typ, c.Status, c.Message, want)
				}
			}
			if tc.wantMessage != "" && condOf(hc, hyperv1.ClusterVersionFailing).Message != tc.wantMessage {
				t.Errorf("ClusterVersionFailing message %q, want %q", condOf(hc, hyperv1.ClusterVersionFailing).Message, tc.wantMessage)
			}
		})
	}
}

func ptrTo[T any](v T) *T { return &v }

func TestComputeHostedClusterStatus_reconciliationSucceeded(t *testing.T) {
	for _, tc := range []struct {
		name        string
		annotations map[string]string
		paused      bool
		want        metav1.Condition // ObservedGeneration is checked against the spec's
	}{
		{name: "every_reconcile_reports_success_at_the_current_generation",
			want: metav1.Condition{Status: metav1.ConditionTrue, Reason: "ReconciliatonSucceeded", Message: "Reconciliation completed successfully"}},
		{name: "an_injected_error_reports_reconciliation_error", annotations: map[string]string{FailReconcileAnnotation: "cannot reach the key vault"},
			want: metav1.Condition{Status: metav1.ConditionFalse, Reason: "ReconciliationError", Message: "cannot reach the key vault"}},
		{name: "a_paused_cluster_is_not_reconciled", paused: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			hc := ExampleHostedCluster("ns", "hc", image)
			hc.Annotations = tc.annotations
			if tc.paused {
				hc.Spec.PausedUntil = ptr.To("true")
			}
			hc.Generation = 4
			hcAt(t, hc, Options{}, t0)
			got := condOf(hc, hyperv1.ReconciliationSucceeded)
			if tc.paused {
				if got.Type != "" {
					t.Fatalf("paused cluster has %+v", got)
				}
				return
			}
			if got.Status != tc.want.Status || got.Reason != tc.want.Reason || got.Message != tc.want.Message || got.ObservedGeneration != 4 {
				t.Fatalf("ReconciliationSucceeded = %+v, want %+v at generation 4", got, tc.want)
			}
			// A spec change is a new generation, reported at once.
			hc.Generation = 5
			hcAt(t, hc, Options{}, t0.Add(time.Second))
			if c := condOf(hc, hyperv1.ReconciliationSucceeded); c.ObservedGeneration != 5 {
				t.Fatalf("after a spec change observedGeneration = %d, want 5", c.ObservedGeneration)
			}
		})
	}
}
