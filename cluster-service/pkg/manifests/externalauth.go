package manifests

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	configv1 "github.com/openshift/api/config/v1"
	hypershiftv1beta1 "github.com/openshift/hypershift/api/hypershift/v1beta1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	workv1 "open-cluster-management.io/api/work/v1"

	csv1 "github.com/openhcp/openhcp/cluster-service/api/v1"
)

// Feedback value names for external auth on the HostedCluster manifest.
const (
	// FeedbackAuthenticationSpec is .spec.configuration.authentication as it is on the
	// management cluster: what the agent applied.
	FeedbackAuthenticationSpec = "authenticationSpec"
	// FeedbackAuthenticationStatus is .status.configuration.authentication: the OIDC clients
	// HyperShift reports in use.
	FeedbackAuthenticationStatus = "authenticationStatus"

	// OIDCCAKey is the key HyperShift reads an issuer CA bundle from.
	OIDCCAKey = "ca-bundle.crt"
)

// ExternalAuth is the input of an external auth to the cluster's work.
type ExternalAuth struct {
	// ARMResourceID names the provider: its last segment, lower-cased.
	ARMResourceID string
	Spec          *csv1.ExternalAuthSpec
}

// OIDCProviderName is the HostedCluster's oidcProviders[].name for an external auth.
func OIDCProviderName(armResourceID string) string {
	return strings.ToLower(armResourceID[strings.LastIndex(armResourceID, "/")+1:])
}

// OIDCCAConfigMapName is the ConfigMap holding an issuer's CA bundle, beside the HostedCluster.
func OIDCCAConfigMapName(hostedCluster, provider string) string {
	return hostedCluster + "-" + provider + "-oidc-ca"
}

// OIDCClientSecretName is the secret a confidential client's secret is read from, in the hosted
// cluster's openshift-config namespace (HyperShift's convention for client secrets: the customer
// creates it inside the cluster; ARM has no field for it).
func OIDCClientSecretName(provider, component string) string {
	return provider + "-" + component + "-client-secret"
}

// usernamePrefixPolicy is OpenShift's word for the spec's prefix policy: the specification's
// None (model.DefaultExternalAuth's, which the spec holds) is OpenShift's no opinion, "".
func usernamePrefixPolicy(p string) configv1.UsernamePrefixPolicy {
	if p == "None" {
		return configv1.NoOpinion
	}
	return configv1.UsernamePrefixPolicy(p)
}

// OIDCProvider builds the HyperShift/OpenShift provider for an external auth.
func OIDCProvider(hostedCluster string, ea ExternalAuth) configv1.OIDCProvider {
	name := OIDCProviderName(ea.ARMResourceID)
	s := ea.Spec
	p := configv1.OIDCProvider{
		Name: name,
		Issuer: configv1.TokenIssuer{
			URL: s.GetIssuer().GetUrl(),
		},
		ClaimMappings: configv1.TokenClaimMappings{
			Username: configv1.UsernameClaimMapping{
				Claim:        s.GetClaimMappings().GetUsername().GetClaim(),
				PrefixPolicy: usernamePrefixPolicy(s.GetClaimMappings().GetUsername().GetPrefixPolicy()),
			},
		},
	}
	for _, a := range s.GetIssuer().GetAudiences() {
		p.Issuer.Audiences = append(p.Issuer.Audiences, configv1.TokenAudience(a))
	}
	if s.GetIssuer().GetCa() != "" {
		p.Issuer.CertificateAuthority = configv1.ConfigMapNameReference{Name: OIDCCAConfigMapName(hostedCluster, name)}
	}
	if pre := s.GetClaimMappings().GetUsername().GetPrefix(); pre != "" {
		p.ClaimMappings.Username.Prefix = &configv1.UsernamePrefix{PrefixString: pre}
	}
	if g := s.GetClaimMappings().GetGroups(); g != nil {
		p.ClaimMappings.Groups = configv1.PrefixedClaimMapping{TokenClaimMapping: configv1.TokenClaimMapping{Claim: g.GetClaim()}, Prefix: g.GetPrefix()}
	}
	for _, c := range s.GetClients() {
		cc := configv1.OIDCClientConfig{
			ComponentName: c.GetComponentName(), ComponentNamespace: c.GetComponentNamespace(),
			ClientID: c.GetClientId(), ExtraScopes: c.GetExtraScopes(),
		}
		if c.GetType() == "Confidential" {
			cc.ClientSecret = configv1.SecretNameReference{Name: OIDCClientSecretName(name, c.GetComponentName())}
		}
		p.OIDCClients = append(p.OIDCClients, cc)
	}
	// listType=map keyed by namespace/name: a stable order keeps the build identical.
	sort.Slice(p.OIDCClients, func(i, j int) bool {
		a, b := p.OIDCClients[i], p.OIDCClients[j]
		return a.ComponentNamespace+"/"+a.ComponentName < b.ComponentNamespace+"/"+b.ComponentName
	})
	for _, r := range s.GetValidationRules() {
		p.ClaimValidationRules = append(p.ClaimValidationRules, configv1.TokenClaimValidationRule{
			Type:          configv1.TokenValidationRuleType(r.GetType()),
			RequiredClaim: &configv1.TokenRequiredClaim{Claim: r.GetRequiredClaim(), RequiredValue: r.GetRequiredValue()},
		})
	}
	return p
}

// WithExternalAuth completes a cluster's work (from Build) for external authentication: the
// HostedCluster's feedback rules gain the authentication spec and status, and
// with ea the HostedCluster gets spec.configuration.authentication {type: OIDC, oidcProviders:
// [the provider]} and, with an issuer CA, a ConfigMap holding it. Without ea the HostedCluster
// has no authentication configuration; server-side apply then removes one applied before. The
// spec hash is recomputed. work is changed in place and returned.
func WithExternalAuth(work *workv1.ManifestWork, ea *ExternalAuth) (*workv1.ManifestWork, error) {
	hcIndex := -1
	var hc hypershiftv1beta1.HostedCluster
	for i, m := range work.Spec.Workload.Manifests {
		var meta metav1.TypeMeta
		if err := json.Unmarshal(m.Raw, &meta); err != nil {
			return nil, fmt.Errorf("read manifest %d of work %s: %w", i, work.Name, err)
		}
		if meta.Kind == "HostedCluster" {
			if err := json.Unmarshal(m.Raw, &hc); err != nil {
				return nil, fmt.Errorf("read HostedCluster of work %s: %w", work.Name, err)
			}
			hcIndex = i
			break
		}
	}
	if hcIndex < 0 {
		return nil, fmt.Errorf("work %s has no HostedCluster", work.Name)
	}
	for i := range work.Spec.ManifestConfigs {
		mc := &work.Spec.ManifestConfigs[i]
		if mc.ResourceIdentifier.Resource != "hostedclusters" {
			continue
		}
		for j := range mc.FeedbackRules {
			if mc.FeedbackRules[j].Type == workv1.JSONPathsType {
				mc.FeedbackRules[j].JsonPaths = append(mc.FeedbackRules[j].JsonPaths,
					workv1.JsonPath{Name: FeedbackAuthenticationSpec, Path: ".spec.configuration.authentication"},
					workv1.JsonPath{Name: FeedbackAuthenticationStatus, Path: ".status.configuration.authentication"},
				)
			}
		}
	}
	if ea != nil && ea.Spec != nil {
		provider := OIDCProvider(hc.Name, *ea)
		if hc.Spec.Configuration == nil {
			hc.Spec.Configuration = &hypershiftv1beta1.ClusterConfiguration{}
		}
		hc.Spec.Configuration.Authentication = &configv1.AuthenticationSpec{Type: configv1.AuthenticationTypeOIDC, OIDCProviders: []configv1.OIDCProvider{provider}}
		raw, err := withoutNulls(&hc)
		if err != nil {
			return nil, fmt.Errorf("encode HostedCluster of work %s: %w", work.Name, err)
		}
		work.Spec.Workload.Manifests[hcIndex] = workv1.Manifest{RawExtension: runtime.RawExtension{Raw: raw}}
		if ca := ea.Spec.GetIssuer().GetCa(); ca != "" {
			cm := &corev1.ConfigMap{
				TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
				ObjectMeta: metav1.ObjectMeta{Name: provider.Issuer.CertificateAuthority.Name, Namespace: hc.Namespace, Labels: hc.Labels},
				Data:       map[string]string{OIDCCAKey: ca},
			}
			raw, err := json.Marshal(cm)
			if err != nil {
				return nil, fmt.Errorf("encode issuer CA of work %s: %w", work.Name, err)
			}
			// Before the HostedCluster, so HyperShift finds it when it reads the provider.
			ms := append([]workv1.Manifest{}, work.Spec.Workload.Manifests[:hcIndex]...)
			ms = append(ms, workv1.Manifest{RawExtension: runtime.RawExtension{Raw: raw}})
			work.Spec.Workload.Manifests = append(ms, work.Spec.Workload.Manifests[hcIndex:]...)
			opt := manifestConfig(cm)
			opt.ResourceIdentifier = workv1.ResourceIdentifier{Resource: "configmaps", Name: cm.Name, Namespace: cm.Namespace}
			work.Spec.ManifestConfigs = append(work.Spec.ManifestConfigs, opt)
		}
	}
	hash, err := SpecHash(work)
	if err != nil {
		return nil, err
	}
	if work.Annotations == nil {
		work.Annotations = map[string]string{}
	}
	work.Annotations[AnnotationSpecHash] = hash
	return work, nil
}

// withoutNulls encodes v without null values. The OpenShift config types leave some optional
// fields without omitempty (oidcClients[].extraScopes, claimMappings.username.prefix); the CRD
// refuses an explicit null for them, and an absent field means the same.
func withoutNulls(v any) ([]byte, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	var m any
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, err
	}
	return json.Marshal(pruneNulls(m))
}

func pruneNulls(v any) any {
	switch t := v.(type) {
	case map[string]any:
		for k, e := range t {
			if e == nil {
				delete(t, k)
				continue
			}
			t[k] = pruneNulls(e)
		}
	case []any:
		for i := range t {
			t[i] = pruneNulls(t[i])
		}
	}
	return v
}
