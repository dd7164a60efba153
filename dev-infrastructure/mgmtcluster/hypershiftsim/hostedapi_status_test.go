package hypershiftsim

import (
	"strings"
	"testing"
	"time"

	configv1 "github.com/openshift/api/config/v1"
	hyperv1 "github.com/openshift/hypershift/api/hypershift/v1beta1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// A served cluster's status follows its hosted kube-apiserver: the timer alone completes
// nothing, and Available drops when /readyz stops answering.
func TestComputeStatus_servedClusterFollowsItsAPIServer(t *testing.T) {
	o := Options{AvailableDelay: 10 * time.Second}
	steps := []struct {
		name          string
		at            time.Duration
		cp            controlPlane
		wantDue       bool
		wantAvailable metav1.ConditionStatus
		wantState     configv1.UpdateState
		wantHosted    metav1.ConditionStatus
		wantReason    string
	}{
		{name: "before_the_delay_it_waits_for_the_rollout", at: 0, cp: controlPlane{served: true, host: "127.0.0.1", port: 40001},
			wantAvailable: metav1.ConditionFalse, wantState: configv1.PartialUpdate, wantHosted: metav1.ConditionFalse, wantReason: ReasonHostedAPIServerWaiting},
		{name: "after_the_delay_it_is_due_but_not_available_until_ready", at: 11 * time.Second, cp: controlPlane{served: true, host: "127.0.0.1", port: 40001},
			wantDue: true, wantAvailable: metav1.ConditionFalse, wantState: configv1.PartialUpdate, wantHosted: metav1.ConditionFalse, wantReason: ReasonHostedAPIServerNotReady},
		{name: "readyz_answering_completes_the_rollout", at: 12 * time.Second, cp: controlPlane{served: true, host: "127.0.0.1", port: 40001, ready: true},
			wantDue: true, wantAvailable: metav1.ConditionTrue, wantState: configv1.CompletedUpdate, wantHosted: metav1.ConditionTrue, wantReason: ReasonHostedAPIServerRunning},
		{name: "restarting_with_the_sim_keeps_available_within_the_grace", at: 30 * time.Second, cp: controlPlane{served: true, host: "127.0.0.1", port: 40001, starting: true},
			wantDue: true, wantAvailable: metav1.ConditionTrue, wantState: configv1.CompletedUpdate, wantHosted: metav1.ConditionFalse, wantReason: ReasonHostedAPIServerNotReady},
		{name: "readyz_failing_later_makes_it_unavailable", at: 60 * time.Second, cp: controlPlane{served: true, host: "127.0.0.1", port: 40001},
			wantDue: true, wantAvailable: metav1.ConditionFalse, wantState: configv1.CompletedUpdate, wantHosted: metav1.ConditionFalse, wantReason: ReasonHostedAPIServerNotReady},
		{name: "a_failed_start_says_so_and_makes_it_unavailable", at: 70 * time.Second, cp: controlPlane{served: true, host: "127.0.0.1", port: 40001, failed: true, detail: "kube-apiserver exit status 3"},
			wantDue: true, wantAvailable: metav1.ConditionFalse, wantState: configv1.CompletedUpdate, wantHosted: metav1.ConditionFalse, wantReason: ReasonHostedAPIServerStartFailed},
	}
	hc := ExampleHostedCluster("ns", "hc", image)
	hc.Generation = 1
	for _, s := range steps {
		t.Run(s.name, func(t *testing.T) {
			cp := s.cp
			computeStatus(hc, o, t0.Add(s.at), &cp)
			if cp.due != s.wantDue {
				t.Errorf("due = %v, want %v", cp.due, s.wantDue)
			}
			if ep := hc.Status.ControlPlaneEndpoint; ep.Host != "127.0.0.1" || ep.Port != 40001 {
				t.Errorf("endpoint %+v, want 127.0.0.1:40001", ep)
			}
			if c := condOf(hc, hyperv1.HostedClusterAvailable); c.Status != s.wantAvailable {
				t.Errorf("Available = %s (%s), want %s", c.Status, c.Message, s.wantAvailable)
			}
			if st := hc.Status.Version.History[0].State; st != s.wantState {
				t.Errorf("history[0] %s, want %s", st, s.wantState)
			}
			if c := condOf(hc, HostedAPIServerCondition); c.Status != s.wantHosted || c.Reason != s.wantReason {
				t.Errorf("HostedAPIServer = %s %s, want %s %s", c.Status, c.Reason, s.wantHosted, s.wantReason)
			}
		})
	}
}

func TestComputeStatus_cappedClusterIsStatusOnlyAndNamesTheCap(t *testing.T) {
	hc := ExampleHostedCluster("ns", "hc", image)
	cp := controlPlane{capped: true, max: 4}
	computeStatus(hc, Options{}, t0, &cp)
	if c := condOf(hc, hyperv1.HostedClusterAvailable); c.Status != metav1.ConditionTrue {
		t.Errorf("Available = %s, want True on the timer", c.Status)
	}
	c := condOf(hc, HostedAPIServerCondition)
	if c.Status != metav1.ConditionFalse || c.Reason != ReasonHostedAPIServerCapReached || !strings.Contains(c.Message, "at most 4") {
		t.Errorf("HostedAPIServer = %+v, want False CapReached naming the cap", c)
	}
	if hc.Status.ControlPlaneEndpoint.Host == "127.0.0.1" {
		t.Errorf("capped endpoint %+v", hc.Status.ControlPlaneEndpoint)
	}
	plain := ExampleHostedCluster("ns", "hc", image)
	computeHostedClusterStatus(plain, Options{}, t0)
	if c := condOf(plain, HostedAPIServerCondition); c.Type != "" {
		t.Errorf("with hosted kube-apiservers disabled the sim wrote %+v", c)
	}
}
