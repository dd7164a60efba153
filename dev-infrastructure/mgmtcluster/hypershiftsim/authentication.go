package hypershiftsim

import (
	"fmt"
	"net/url"
	"strings"

	configv1 "github.com/openshift/api/config/v1"
	hyperv1 "github.com/openshift/hypershift/api/hypershift/v1beta1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// observeAuthentication plays what HyperShift and the hosted cluster's operators do with
// spec.configuration.authentication, after computeHostedClusterStatus:
//   - HyperShift validates the configuration: ValidConfiguration=False InvalidConfiguration with
//     the reason when an OIDC provider cannot be used (it then goes no further);
//   - once the control plane is up, the components configured as OIDC clients (console, CLI, …)
//     report the client they use in status.configuration.authentication.oidcClients, which
//     HyperShift copies from the hosted cluster's Authentication resource. Without an OIDC
//     configuration that list is empty.
//
// It writes into hc.Status only (before is the status the reconcile started from, for the
// condition's transition time); a paused cluster is left alone.
func observeAuthentication(hc *hyperv1.HostedCluster, before *hyperv1.HostedClusterStatus) {
	if meta.IsStatusConditionFalse(hc.Status.Conditions, string(hyperv1.ReconciliationActive)) {
		return
	}
	var auth *configv1.AuthenticationSpec
	if hc.Spec.Configuration != nil {
		auth = hc.Spec.Configuration.Authentication
	}
	if err := validateAuthentication(auth); err != nil {
		c := meta.FindStatusCondition(before.Conditions, string(hyperv1.ValidHostedClusterConfiguration))
		ts := metav1.Now().Rfc3339Copy()
		if c != nil && c.Status == metav1.ConditionFalse && c.Message == err.Error() {
			ts = c.LastTransitionTime
		}
		meta.SetStatusCondition(&hc.Status.Conditions, metav1.Condition{
			Type: string(hyperv1.ValidHostedClusterConfiguration), Status: metav1.ConditionFalse,
			Reason: hyperv1.InvalidConfigurationReason, Message: err.Error(),
			ObservedGeneration: hc.Generation, LastTransitionTime: ts,
		})
		setOIDCClients(hc, nil)
		return
	}
	if auth == nil || auth.Type != configv1.AuthenticationTypeOIDC || !controlPlaneUp(hc) {
		setOIDCClients(hc, nil)
		return
	}
	var clients []configv1.OIDCClientStatus
	for _, p := range auth.OIDCProviders {
		for _, c := range p.OIDCClients {
			clients = append(clients, configv1.OIDCClientStatus{
				ComponentName: c.ComponentName, ComponentNamespace: c.ComponentNamespace,
				CurrentOIDCClients: []configv1.OIDCClientReference{{OIDCProviderName: p.Name, IssuerURL: p.Issuer.URL, ClientID: c.ClientID}},
			})
		}
	}
	setOIDCClients(hc, clients)
}

func setOIDCClients(hc *hyperv1.HostedCluster, clients []configv1.OIDCClientStatus) {
	if len(clients) == 0 {
		if hc.Status.Configuration != nil {
			hc.Status.Configuration.Authentication.OIDCClients = nil
			if hc.Status.Configuration.Authentication.IntegratedOAuthMetadata.Name == "" {
				hc.Status.Configuration = nil
			}
		}
		return
	}
	if hc.Status.Configuration == nil {
		hc.Status.Configuration = &hyperv1.ConfigurationStatus{}
	}
	hc.Status.Configuration.Authentication.OIDCClients = clients
}

// controlPlaneUp: a rollout has completed once, so the hosted cluster's operators exist.
func controlPlaneUp(hc *hyperv1.HostedCluster) bool {
	if hc.Status.Version == nil {
		return false
	}
	for _, h := range hc.Status.Version.History {
		if h.State == configv1.CompletedUpdate {
			return true
		}
	}
	return false
}

// validateAuthentication applies the rules of OpenShift's Authentication API that the CRD's
// schema does not already enforce and that a kube-apiserver would refuse to start with.
func validateAuthentication(a *configv1.AuthenticationSpec) error {
	if a == nil {
		return nil
	}
	if a.Type != configv1.AuthenticationTypeOIDC {
		if len(a.OIDCProviders) > 0 {
			return fmt.Errorf("authentication: oidcProviders can only be set when type is OIDC, not %q", a.Type)
		}
		return nil
	}
	if len(a.OIDCProviders) > 1 {
		return fmt.Errorf("authentication: at most one OIDC provider can be configured, have %d", len(a.OIDCProviders))
	}
	for _, p := range a.OIDCProviders {
		u, err := url.Parse(p.Issuer.URL)
		if err != nil || u.Scheme != "https" || u.Host == "" {
			return fmt.Errorf("authentication: OIDC provider %s: issuerURL must be an https URL, not %q", p.Name, p.Issuer.URL)
		}
		if len(p.Issuer.Audiences) == 0 {
			return fmt.Errorf("authentication: OIDC provider %s: at least one audience is required", p.Name)
		}
		if p.ClaimMappings.Username.PrefixPolicy == configv1.Prefix && (p.ClaimMappings.Username.Prefix == nil || p.ClaimMappings.Username.Prefix.PrefixString == "") {
			return fmt.Errorf("authentication: OIDC provider %s: username prefix is required when prefixPolicy is Prefix", p.Name)
		}
		seen := map[string]bool{}
		for _, c := range p.OIDCClients {
			key := c.ComponentNamespace + "/" + c.ComponentName
			if seen[key] {
				return fmt.Errorf("authentication: OIDC provider %s: component %s has two clients", p.Name, key)
			}
			seen[key] = true
			if strings.TrimSpace(c.ClientID) == "" {
				return fmt.Errorf("authentication: OIDC provider %s: component %s has no clientID", p.Name, key)
			}
		}
		if err := validateIssuerForAPIServer(p); err != nil {
			return err
		}
	}
	return nil
}
