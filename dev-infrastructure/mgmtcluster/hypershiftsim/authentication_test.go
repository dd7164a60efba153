package hypershiftsim

import (
	"testing"
	"time"

	configv1 "github.com/openshift/api/config/v1"
	hyperv1 "github.com/openshift/hypershift/api/hypershift/v1beta1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func oidcAuth(mutate func(p *configv1.OIDCProvider)) *configv1.AuthenticationSpec {
	p := configv1.OIDCProvider{
		Name:   "entra",
		Issuer: configv1.TokenIssuer{URL: "https://login.example.com/t/v2.0", Audiences: []configv1.TokenAudience{"console-app"}},
		OIDCClients: []configv1.OIDCClientConfig{
			{ComponentName: "console", ComponentNamespace: "openshift-console", ClientID: "console-app"},
		},
		ClaimMappings: configv1.TokenClaimMappings{Username: configv1.UsernameClaimMapping{Claim: "email"}},
	}
	if mutate != nil {
		mutate(&p)
	}
	return &configv1.AuthenticationSpec{Type: configv1.AuthenticationTypeOIDC, OIDCProviders: []configv1.OIDCProvider{p}}
}

func TestObserveAuthentication(t *testing.T) {
	o := Options{AvailableDelay: 10 * time.Second}
	tests := []struct {
		name        string
		auth        *configv1.AuthenticationSpec
		at          time.Duration // after creation; the control plane is up from 10s
		wantValid   metav1.ConditionStatus
		wantClients int
	}{
		{"no_authentication", nil, 20 * time.Second, metav1.ConditionTrue, 0},
		{"oidc_before_the_control_plane_is_up", oidcAuth(nil), 0, metav1.ConditionTrue, 0},
		{"oidc_clients_reported_once_up", oidcAuth(nil), 20 * time.Second, metav1.ConditionTrue, 1},
		{"http_issuer_is_invalid", oidcAuth(func(p *configv1.OIDCProvider) { p.Issuer.URL = "http://x" }), 20 * time.Second, metav1.ConditionFalse, 0},
		{"prefix_policy_without_prefix_is_invalid", oidcAuth(func(p *configv1.OIDCProvider) { p.ClaimMappings.Username.PrefixPolicy = configv1.Prefix }), 20 * time.Second, metav1.ConditionFalse, 0},
		{"two_clients_of_one_component_are_invalid", oidcAuth(func(p *configv1.OIDCProvider) { p.OIDCClients = append(p.OIDCClients, p.OIDCClients[0]) }), 20 * time.Second, metav1.ConditionFalse, 0},
		{"the_service_account_issuer_is_invalid", oidcAuth(func(p *configv1.OIDCProvider) { p.Issuer.URL = "https://kubernetes.default.svc" }), 20 * time.Second, metav1.ConditionFalse, 0},
		{"an_issuer_with_a_query_is_invalid", oidcAuth(func(p *configv1.OIDCProvider) { p.Issuer.URL = "https://login.example.com/t?x=1" }), 20 * time.Second, metav1.ConditionFalse, 0},
		{"duplicate_audiences_are_invalid", oidcAuth(func(p *configv1.OIDCProvider) { p.Issuer.Audiences = append(p.Issuer.Audiences, p.Issuer.Audiences[0]) }), 20 * time.Second, metav1.ConditionFalse, 0},
		{"two_rules_on_one_claim_are_invalid", oidcAuth(func(p *configv1.OIDCProvider) {
			r := configv1.TokenClaimValidationRule{Type: configv1.TokenValidationRuleTypeRequiredClaim, RequiredClaim: &configv1.TokenRequiredClaim{Claim: "tid", RequiredValue: "a"}}
			p.ClaimValidationRules = []configv1.TokenClaimValidationRule{r, r}
		}), 20 * time.Second, metav1.ConditionFalse, 0},
		{"providers_without_type_oidc_are_invalid", func() *configv1.AuthenticationSpec {
			a := oidcAuth(nil)
			a.Type = configv1.AuthenticationTypeIntegratedOAuth
			return a
		}(), 20 * time.Second, metav1.ConditionFalse, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			hc := ExampleHostedCluster("ns", "hc", image)
			hc.Generation = 3
			hc.Spec.Configuration = &hyperv1.ClusterConfiguration{Authentication: tc.auth}
			computeHostedClusterStatus(hc, o, t0)
			for _, at := range []time.Duration{tc.at, tc.at} { // the second pass must change nothing
				before := hc.Status.DeepCopy()
				computeHostedClusterStatus(hc, o, t0.Add(at))
				observeAuthentication(hc, before)
				if at == tc.at && before.Conditions != nil && tc.at > 0 {
					again := hc.Status.DeepCopy()
					computeHostedClusterStatus(hc, o, t0.Add(at))
					observeAuthentication(hc, again)
					if !equality.Semantic.DeepEqual(again, &hc.Status) {
						t.Fatalf("a second reconcile at the same moment changed the status")
					}
				}
			}
			v := condOf(hc, hyperv1.ValidHostedClusterConfiguration)
			if v.Status != tc.wantValid || v.ObservedGeneration != 3 {
				t.Fatalf("ValidConfiguration = %+v, want %s at generation 3", v, tc.wantValid)
			}
			if tc.wantValid == metav1.ConditionFalse && v.Reason != hyperv1.InvalidConfigurationReason {
				t.Fatalf("reason = %s", v.Reason)
			}
			var got []configv1.OIDCClientStatus
			if hc.Status.Configuration != nil {
				got = hc.Status.Configuration.Authentication.OIDCClients
			}
			if len(got) != tc.wantClients {
				t.Fatalf("oidcClients = %+v, want %d", got, tc.wantClients)
			}
			if tc.wantClients == 1 {
				ref := got[0].CurrentOIDCClients[0]
				if got[0].ComponentName != "console" || ref.OIDCProviderName != "entra" || ref.ClientID != "console-app" || ref.IssuerURL != "https://login.example.com/t/v2.0" {
					t.Fatalf("client status = %+v", got[0])
				}
			}
		})
	}
	t.Run("removing_the_configuration_clears_the_clients", func(t *testing.T) {
		hc := ExampleHostedCluster("ns", "hc", image)
		hc.Spec.Configuration = &hyperv1.ClusterConfiguration{Authentication: oidcAuth(nil)}
		computeHostedClusterStatus(hc, o, t0)
		before := hc.Status.DeepCopy()
		computeHostedClusterStatus(hc, o, t0.Add(20*time.Second))
		observeAuthentication(hc, before)
		if hc.Status.Configuration == nil {
			t.Fatal("no clients reported")
		}
		hc.Spec.Configuration.Authentication = nil
		observeAuthentication(hc, hc.Status.DeepCopy())
		if hc.Status.Configuration != nil {
			t.Fatalf("status.configuration = %+v after the provider was removed", hc.Status.Configuration)
		}
	})
}
