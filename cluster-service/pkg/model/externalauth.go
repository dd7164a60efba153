package model

import (
	"bytes"
	"crypto/x509"
	"encoding/pem"
	"net/url"
	"slices"
	"strings"

	"google.golang.org/protobuf/proto"

	csv1 "github.com/openhcp/openhcp/cluster-service/api/v1"
	"github.com/openhcp/openhcp/internal/armspec/bounds"
)

// The specification's bounds (package bounds is generated from it) and words.
const (
	maxAudiences       = bounds.TokenIssuerProfileAudiencesMaxItems
	maxOIDCClients     = bounds.ExternalAuthPropertiesClientsMaxItems
	maxUsernameClaim   = bounds.UsernameClaimProfileClaimMaxLength
	maxGroupClaim      = bounds.GroupClaimProfileClaimMaxLength
	maxComponentName   = bounds.ExternalAuthClientComponentProfileNameMaxLength
	maxComponentNS     = bounds.ExternalAuthClientComponentProfileAuthClientNamespaceMaxLength
	requiredClaimRule  = "RequiredClaim"
	prefixPolicyPrefix = "Prefix"
	prefixPolicyNone   = "None"
)

// DefaultExternalAuth is the one place an external auth spec's defaults are applied: the
// username's prefix policy None and a validation rule's type RequiredClaim, the
// specification's. The spec holds the specification's words, so the frontend's resource
// document (which it fills with this function before its first write) and Cluster Service hold
// the same spec; None is OpenShift's no-opinion policy (""), which the manifest builder writes
// (manifests.OIDCProvider). in is not changed; nil is an empty spec.
func DefaultExternalAuth(in *csv1.ExternalAuthSpec) *csv1.ExternalAuthSpec {
	spec := &csv1.ExternalAuthSpec{}
	if in != nil {
		spec = proto.Clone(in).(*csv1.ExternalAuthSpec)
	}
	if spec.ClaimMappings == nil {
		spec.ClaimMappings = &csv1.TokenClaimMappings{}
	}
	if spec.ClaimMappings.Username == nil {
		spec.ClaimMappings.Username = &csv1.UsernameClaimMapping{}
	}
	if spec.ClaimMappings.Username.PrefixPolicy == "" {
		spec.ClaimMappings.Username.PrefixPolicy = prefixPolicyNone
	}
	for _, r := range spec.ValidationRules {
		if r.Type == "" {
			r.Type = requiredClaimRule
		}
	}
	return spec
}

// ValidateExternalAuthSpec checks a spec against the rules of OpenShift's OIDC provider
// (config.openshift.io/v1 Authentication) and the ARM specification, and returns it with its
// defaults (DefaultExternalAuth: what the frontend sends has them already).
func ValidateExternalAuthSpec(v *Violations, field string, in *csv1.ExternalAuthSpec) *csv1.ExternalAuthSpec {
	if in == nil {
		v.Add(field, "is required")
		return nil
	}
	spec := DefaultExternalAuth(in)
	iss := spec.GetIssuer()
	switch u, err := url.Parse(iss.GetUrl()); {
	case iss.GetUrl() == "":
		v.Add(field+".issuer.url", "is required")
	case err != nil || u.Scheme != "https" || u.Host == "":
		v.Add(field+".issuer.url", "must be an https URL, not %q", iss.GetUrl())
	case u.RawQuery != "" || u.Fragment != "" || u.User != nil:
		v.Add(field+".issuer.url", "must not have a query, fragment or user info")
	}
	// OpenShift's Authentication CRD, which the HostedCluster's configuration.authentication
	// embeds: TokenIssuer.issuerURL MaxLength=512 (openshift/api config/v1
	// types_authentication.go). The ARM specification sets no maximum.
	const maxIssuerURL = 512
	if n := len(iss.GetUrl()); n > maxIssuerURL {
		v.Add(field+".issuer.url", "must be at most %d characters, has %d", maxIssuerURL, n)
	}
	auds := map[string]bool{}
	switch n := len(iss.GetAudiences()); {
	case n == 0:
		v.Add(field+".issuer.audiences", "must have at least one entry")
	case n > maxAudiences:
		v.Add(field+".issuer.audiences", "must have at most %d entries, has %d", maxAudiences, n)
	}
	for i, a := range iss.GetAudiences() {
		if a == "" {
			v.Add(Indexed(field+".issuer.audiences", i), "must not be empty")
		}
		if auds[a] {
			v.Add(Indexed(field+".issuer.audiences", i), "%q is listed twice", a)
		}
		auds[a] = true
	}
	if ca := iss.GetCa(); ca != "" && !validPEMBundle(ca) {
		v.Add(field+".issuer.ca", "must be PEM-encoded certificates")
	}

	if n := len(spec.GetClients()); n > maxOIDCClients {
		v.Add(field+".clients", "must have at most %d entries, has %d", maxOIDCClients, n)
	}
	components := map[string]bool{}
	for i, c := range spec.GetClients() {
		f := Indexed(field+".clients", i)
		lengthIn(v, f+".component_name", c.GetComponentName(), 1, maxComponentName)
		lengthIn(v, f+".component_namespace", c.GetComponentNamespace(), 1, maxComponentNS)
		key := c.GetComponentNamespace() + "/" + c.GetComponentName()
		if components[key] {
			v.Add(f+".component_name", "component %s is configured twice", key)
		}
		components[key] = true
		switch {
		case c.GetClientId() == "":
			v.Add(f+".client_id", "is required")
		case len(auds) > 0 && !auds[c.GetClientId()]:
			v.Add(f+".client_id", "%q must be one of the issuer's audiences", c.GetClientId())
		}
		if c.GetType() == "" {
			v.Add(f+".type", "is required")
		}
		OneOf(v, f+".type", c.GetType(), "Confidential", "Public")
		// HyperShift's extraScopes is a set (x-kubernetes-list-type: set): a scope given twice
		// would be refused by the management cluster, so it is refused here.
		scopes := map[string]bool{}
		for j, sc := range c.GetExtraScopes() {
			switch {
			case sc == "" || strings.ContainsAny(sc, " \t\n"):
				v.Add(Indexed(f+".extra_scopes", j), "must be a non-empty scope without spaces, not %q", sc)
			case scopes[sc]:
				v.Add(Indexed(f+".extra_scopes", j), "%q is listed twice", sc)
			}
			scopes[sc] = true
		}
	}

	cm := spec.GetClaimMappings()
	un := cm.GetUsername()
	lengthIn(v, field+".claim_mappings.username.claim", un.GetClaim(), 1, maxUsernameClaim)
	// The prefix is judged against a policy the specification allows; under another, the
	// policy alone is at fault.
	policies := []string{"", prefixPolicyNone, prefixPolicyPrefix, "NoPrefix"}
	OneOf(v, field+".claim_mappings.username.prefix_policy", un.GetPrefixPolicy(), policies[1:]...)
	if slices.Contains(policies, un.GetPrefixPolicy()) {
		switch {
		case un.GetPrefixPolicy() == prefixPolicyPrefix && un.GetPrefix() == "":
			v.Add(field+".claim_mappings.username.prefix", "is required when the prefix policy is Prefix")
		case un.GetPrefixPolicy() != prefixPolicyPrefix && un.GetPrefix() != "":
			v.Add(field+".claim_mappings.username.prefix", "must be empty unless the prefix policy is Prefix")
		}
	}
	if g := cm.GetGroups(); g != nil {
		lengthIn(v, field+".claim_mappings.groups.claim", g.GetClaim(), 1, maxGroupClaim)
	}
	for i, r := range spec.GetValidationRules() {
		f := Indexed(field+".validation_rules", i)
		OneOf(v, f+".type", r.GetType(), requiredClaimRule)
		if r.GetRequiredClaim() == "" {
			v.Add(f+".required_claim", "is required")
		}
		if r.GetRequiredValue() == "" {
			v.Add(f+".required_value", "is required")
		}
	}
	return spec
}

func lengthIn(v *Violations, field, s string, lo, hi int) {
	switch n := len(s); {
	case n == 0 && lo > 0:
		v.Add(field, "is required")
	case n < lo || n > hi:
		v.Add(field, "must be %d to %d characters, has %d", lo, hi, n)
	}
}

// validPEMBundle: at least one CERTIFICATE block, every block a parseable certificate, nothing
// but whitespace around them, each BEGIN line starting its line (where Go's PEM reader, the
// kube-apiserver's, looks for it). pem.Decode skips any text before a block, so what precedes
// each is checked here.
func validPEMBundle(s string) bool {
	rest := []byte(s)
	n := 0
	for {
		t := bytes.TrimLeft(rest, " \t\r\n")
		if skipped := rest[:len(rest)-len(t)]; len(t) > 0 && len(skipped) > 0 && skipped[len(skipped)-1] != '\n' {
			return false // text, or a BEGIN line indented
		}
		if rest = t; !bytes.HasPrefix(rest, []byte("-----BEGIN ")) {
			break
		}
		var b *pem.Block
		b, rest = pem.Decode(rest)
		if b == nil {
			return false
		}
		if b.Type != "CERTIFICATE" {
			return false
		}
		if _, err := x509.ParseCertificate(b.Bytes); err != nil {
			return false
		}
		n++
	}
	return n > 0 && len(rest) == 0
}
