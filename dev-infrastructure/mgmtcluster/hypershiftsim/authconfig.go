package hypershiftsim

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	configv1 "github.com/openshift/api/config/v1"
)

// The hosted kube-apiserver's structured authentication configuration
// (--authentication-config, apiserver.config.k8s.io/v1beta1 in kube-apiserver 1.32): always
// given, with no JWT authenticator for a cluster without an OIDC provider, so adding, changing
// and removing one is a rewrite of the file, which kube-apiserver reloads by itself (it watches
// the file and checks it every minute; a new issuer takes effect once its discovery document
// has been fetched, and until then the previous configuration stays).

const (
	authenticationConfigFile = "authentication-config.yaml"
	// hostedSAIssuer is the hosted kube-apiserver's --service-account-issuer, which no OIDC
	// provider may share.
	hostedSAIssuer = "https://kubernetes.default.svc"
)

type authConfig struct {
	APIVersion string          `json:"apiVersion"`
	Kind       string          `json:"kind"`
	JWT        []jwtAuthConfig `json:"jwt"`
}

type jwtAuthConfig struct {
	Issuer               jwtIssuer             `json:"issuer"`
	ClaimValidationRules []claimValidationRule `json:"claimValidationRules,omitempty"`
	ClaimMappings        claimMappings         `json:"claimMappings"`
}

type jwtIssuer struct {
	URL                  string   `json:"url"`
	DiscoveryURL         string   `json:"discoveryURL"`
	CertificateAuthority string   `json:"certificateAuthority"`
	Audiences            []string `json:"audiences"`
	AudienceMatchPolicy  string   `json:"audienceMatchPolicy,omitempty"`
}

type claimValidationRule struct {
	Claim         string `json:"claim"`
	RequiredValue string `json:"requiredValue"`
}

type claimMappings struct {
	Username prefixedClaimOrExpression  `json:"username"`
	Groups   *prefixedClaimOrExpression `json:"groups,omitempty"`
}

type prefixedClaimOrExpression struct {
	Claim      string  `json:"claim,omitempty"`
	Prefix     *string `json:"prefix,omitempty"`
	Expression string  `json:"expression,omitempty"`
}

// oidcProviderOf returns the OIDC provider a kube-apiserver should honour under auth, nil for
// none (no authentication configuration, or not type OIDC).
func oidcProviderOf(auth *configv1.AuthenticationSpec) *configv1.OIDCProvider {
	if auth == nil || auth.Type != configv1.AuthenticationTypeOIDC || len(auth.OIDCProviders) == 0 {
		return nil
	}
	return &auth.OIDCProviders[0]
}

// authenticationConfig is the configuration file's content for provider p (nil for none),
// whose discovery document the kube-apiserver fetches from discoveryURL on the sim's OIDC
// front, trusting frontCA.
//
// The groups claim is mapped by a CEL expression that reads the claim, never by claim name: with
// a claim name, kube-apiserver resolves a token's distributed claims (_claim_sources), fetching
// any endpoint the token names, and the issuer's tokens are the customer's to sign.
func authenticationConfig(p *configv1.OIDCProvider, discoveryURL string, frontCA []byte) ([]byte, error) {
	c := authConfig{APIVersion: "apiserver.config.k8s.io/v1beta1", Kind: "AuthenticationConfiguration", JWT: []jwtAuthConfig{}}
	if p != nil {
		j := jwtAuthConfig{Issuer: jwtIssuer{URL: p.Issuer.URL, DiscoveryURL: discoveryURL, CertificateAuthority: string(frontCA)}}
		for _, a := range p.Issuer.Audiences {
			j.Issuer.Audiences = append(j.Issuer.Audiences, string(a))
		}
		if len(j.Issuer.Audiences) > 1 {
			j.Issuer.AudienceMatchPolicy = "MatchAny"
		}
		prefix := usernamePrefix(p)
		j.ClaimMappings.Username = prefixedClaimOrExpression{Claim: p.ClaimMappings.Username.Claim, Prefix: &prefix}
		if g := p.ClaimMappings.Groups; g.Claim != "" {
			j.ClaimMappings.Groups = &prefixedClaimOrExpression{Expression: groupsExpression(g.Claim, g.Prefix)}
		}
		for _, r := range p.ClaimValidationRules {
			if r.Type == configv1.TokenValidationRuleTypeRequiredClaim && r.RequiredClaim != nil {
				j.ClaimValidationRules = append(j.ClaimValidationRules, claimValidationRule{Claim: r.RequiredClaim.Claim, RequiredValue: r.RequiredClaim.RequiredValue})
			}
		}
		c.JWT = append(c.JWT, j)
	}
	return json.MarshalIndent(c, "", "  ") // JSON is YAML
}

// usernamePrefix applies the provider's prefix policy: none for NoPrefix, the prefix string for
// Prefix, and with no opinion "<issuer URL>#" unless the claim is email (OpenShift's rule).
func usernamePrefix(p *configv1.OIDCProvider) string {
	u := p.ClaimMappings.Username
	switch u.PrefixPolicy {
	case configv1.NoPrefix:
		return ""
	case configv1.Prefix:
		if u.Prefix != nil {
			return u.Prefix.PrefixString
		}
		return ""
	}
	if u.Claim == "email" {
		return ""
	}
	return p.Issuer.URL + "#"
}

// groupsExpression maps claim to groups with prefix as kube-apiserver's claim mapping does (a
// string is one group, a list is the groups, an absent claim is none), as a CEL expression.
func groupsExpression(claim, prefix string) string {
	c, pre := strconv.Quote(claim), strconv.Quote(prefix)
	return fmt.Sprintf("%[1]s in claims ? (type(claims[%[1]s]) == string ? [%[2]s + dyn(claims[%[1]s])] : dyn(claims[%[1]s]).map(g, %[2]s + g)) : []", c, pre)
}

// validateIssuerForAPIServer applies the rules kube-apiserver's authentication configuration
// adds to an issuer URL, its audiences, the username claim and the required claims (a
// configuration breaking them is refused, and an apiserver started with one does not start).
func validateIssuerForAPIServer(p configv1.OIDCProvider) error {
	u := p.Issuer.URL
	if strings.TrimSuffix(u, "/") == hostedSAIssuer {
		return fmt.Errorf("authentication: OIDC provider %s: issuerURL %q is the cluster's service account issuer", p.Name, u)
	}
	if strings.ContainsAny(u, "?#@") {
		return fmt.Errorf("authentication: OIDC provider %s: issuerURL %q must not hold a query, a fragment or user information", p.Name, u)
	}
	seen := map[configv1.TokenAudience]bool{}
	for _, a := range p.Issuer.Audiences {
		if a == "" || seen[a] {
			return fmt.Errorf("authentication: OIDC provider %s: audiences must be unique and not empty", p.Name)
		}
		seen[a] = true
	}
	if p.ClaimMappings.Username.Claim == "" {
		return fmt.Errorf("authentication: OIDC provider %s: a username claim is required", p.Name)
	}
	claims := map[string]bool{}
	for _, r := range p.ClaimValidationRules {
		if r.Type != configv1.TokenValidationRuleTypeRequiredClaim || r.RequiredClaim == nil {
			continue
		}
		if c := r.RequiredClaim.Claim; c == "" || claims[c] {
			return fmt.Errorf("authentication: OIDC provider %s: required claims must be unique and named", p.Name)
		}
		claims[r.RequiredClaim.Claim] = true
	}
	return nil
}
