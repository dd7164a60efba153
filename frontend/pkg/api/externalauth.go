package api

import (
	"encoding/json"

	"github.com/openhcp/openhcp/internal/arm"
	"github.com/openhcp/openhcp/internal/armdoc"
)

// ExternalAuthResourceType is the ARM type of an external auth.
const ExternalAuthResourceType = "Microsoft.RedHatOpenShift/hcpOpenShiftClusters/externalAuths"

// ExternalAuth is a whole hcpOpenShiftClusters/externalAuths resource: the OIDC provider of a
// cluster. Its schema is the same in every api-version except how the read-only condition is
// shown (properties.condition before 2026-06-30-preview, properties.status.conditions after).
type ExternalAuth struct {
	// ID is set from the request path, never from the body.
	ID                *arm.ResourceID          `json:"-"`
	SystemData        *arm.SystemData          `json:"-"`
	ProvisioningState armdoc.ProvisioningState `json:"-"`
	// Condition is Cluster Service's view, filled on GET; never stored.
	Condition *Condition `json:"-"`

	// Properties are stored as ResourceDocument.Properties.
	Properties ExternalAuthProperties `json:"properties"`
}

type ExternalAuthProperties struct {
	Issuer  TokenIssuer          `json:"issuer"`
	Clients []ExternalAuthClient `json:"clients,omitempty"`
	Claim   ExternalAuthClaim    `json:"claim"`
}

type TokenIssuer struct {
	URL       string   `json:"url"`
	Audiences []string `json:"audiences"`
	CA        string   `json:"ca,omitempty"`
}

type ExternalAuthClient struct {
	Component   ExternalAuthClientComponent `json:"component"`
	ClientID    string                      `json:"clientId"`
	ExtraScopes []string                    `json:"extraScopes,omitempty"`
	Type        string                      `json:"type"`
}

type ExternalAuthClientComponent struct {
	Name                string `json:"name"`
	AuthClientNamespace string `json:"authClientNamespace"`
}

type ExternalAuthClaim struct {
	Mappings        TokenClaimMappings         `json:"mappings"`
	ValidationRules []TokenClaimValidationRule `json:"validationRules,omitempty"`
}

type TokenClaimMappings struct {
	Username UsernameClaim `json:"username"`
	Groups   *GroupClaim   `json:"groups,omitempty"`
}

type UsernameClaim struct {
	Claim        string `json:"claim"`
	Prefix       string `json:"prefix,omitempty"`
	PrefixPolicy string `json:"prefixPolicy"`
}

type GroupClaim struct {
	Claim  string `json:"claim"`
	Prefix string `json:"prefix,omitempty"`
}

type TokenClaimValidationRule struct {
	Type          string             `json:"type"`
	RequiredClaim TokenRequiredClaim `json:"requiredClaim"`
}

type TokenRequiredClaim struct {
	Claim         string `json:"claim"`
	RequiredValue string `json:"requiredValue"`
}

// Defaults of the specification.
const (
	DefaultUsernamePrefixPolicy = "None"
	RuleTypeRequiredClaim       = "RequiredClaim"
)

// ExternalAuthVersion is one api-version's external auth schema. It is registered beside
// Version, so the cluster interface stays as it is.
type ExternalAuthVersion interface {
	String() string
	// DecodeExternalAuth decodes a PUT body strictly, applies the defaults and validates it.
	// Errors are *arm.CloudError with targets in the body's paths.
	DecodeExternalAuth(body []byte) (*ExternalAuth, error)
	// RenderExternalAuth is the resource as this version shows it.
	RenderExternalAuth(ea *ExternalAuth) any
}

var externalAuthVersions registry[ExternalAuthVersion]

// RegisterExternalAuth makes a version's external auth schema servable (from init).
func RegisterExternalAuth(v ExternalAuthVersion) { externalAuthVersions.register(v) }

// LookupExternalAuth finds a registered external auth schema by its exact api-version.
func LookupExternalAuth(apiVersion string) (ExternalAuthVersion, bool) {
	return externalAuthVersions.lookup(apiVersion)
}

// externalAuthUpdatePaths is ExternalAuthUpdate of every api-version: all of properties.
var externalAuthUpdatePaths = []string{"properties.issuer", "properties.clients", "properties.claim"}

// PatchExternalAuth applies a PATCH body (a JSON merge patch, RFC 7396, of ExternalAuthUpdate)
// to stored as the version shows it, then decodes, defaults and validates the result like a PUT.
// Keys outside the update schema are errors naming them.
func PatchExternalAuth(v ExternalAuthVersion, stored *ExternalAuth, body []byte) (*ExternalAuth, error) {
	// The message for a key outside the schema has always said the cluster; kept as ARM sees it.
	shown := *stored
	shown.Condition = nil
	rendered := v.RenderExternalAuth(&shown)
	patch, err := decodePatch(body, rendered, v.String(), externalAuthUpdatePaths, "cluster")
	if err != nil {
		return nil, err
	}
	doc, err := renderedBody(rendered)
	if err != nil {
		return nil, err
	}
	if props, ok := doc["properties"].(map[string]any); ok {
		delete(props, "provisioningState")
	}
	merged, err := json.Marshal(mergePatch(doc, patch))
	if err != nil {
		return nil, err
	}
	return v.DecodeExternalAuth(merged)
}

// Default fills the specification's defaults.
func (ea *ExternalAuth) Default() {
	if ea.Properties.Claim.Mappings.Username.PrefixPolicy == "" {
		ea.Properties.Claim.Mappings.Username.PrefixPolicy = DefaultUsernamePrefixPolicy
	}
	for i := range ea.Properties.Claim.ValidationRules {
		if ea.Properties.Claim.ValidationRules[i].Type == "" {
			ea.Properties.Claim.ValidationRules[i].Type = RuleTypeRequiredClaim
		}
	}
}
