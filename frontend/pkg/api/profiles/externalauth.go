package profiles

import (
	"errors"
	"strings"

	"github.com/openhcp/openhcp/frontend/pkg/api"
	"github.com/openhcp/openhcp/internal/arm"
)

// External auth sub-structures: their shape is the same in every api-version; only the
// read-only condition/status differs, which each version package adds.

type TokenIssuerProfile struct {
	URL       *string  `json:"url,omitempty"`
	Audiences []string `json:"audiences,omitempty"`
	CA        *string  `json:"ca,omitempty"`
}

type ExternalAuthClientProfile struct {
	Component   *ExternalAuthClientComponentProfile `json:"component,omitempty"`
	ClientID    *string                             `json:"clientId,omitempty"`
	ExtraScopes []string                            `json:"extraScopes,omitempty"`
	Type        *string                             `json:"type,omitempty"`
}

type ExternalAuthClientComponentProfile struct {
	Name                *string `json:"name,omitempty"`
	AuthClientNamespace *string `json:"authClientNamespace,omitempty"`
}

type ExternalAuthClaimProfile struct {
	Mappings        *TokenClaimMappingsProfile `json:"mappings,omitempty"`
	ValidationRules []TokenClaimValidationRule `json:"validationRules,omitempty"`
}

type TokenClaimMappingsProfile struct {
	Username *UsernameClaimProfile `json:"username,omitempty"`
	Groups   *GroupClaimProfile    `json:"groups,omitempty"`
}

type UsernameClaimProfile struct {
	Claim        *string `json:"claim,omitempty"`
	Prefix       *string `json:"prefix,omitempty"`
	PrefixPolicy *string `json:"prefixPolicy,omitempty"`
}

type GroupClaimProfile struct {
	Claim  *string `json:"claim,omitempty"`
	Prefix *string `json:"prefix,omitempty"`
}

type TokenClaimValidationRule struct {
	Type          *string             `json:"type,omitempty"`
	RequiredClaim *TokenRequiredClaim `json:"requiredClaim,omitempty"`
}

type TokenRequiredClaim struct {
	Claim         *string `json:"claim,omitempty"`
	RequiredValue *string `json:"requiredValue,omitempty"`
}

// ExternalAuthFields are the writable properties of every version's ExternalAuthProperties.
type ExternalAuthFields struct {
	Issuer  *TokenIssuerProfile         `json:"issuer,omitempty"`
	Clients []ExternalAuthClientProfile `json:"clients,omitempty"`
	Claim   *ExternalAuthClaimProfile   `json:"claim,omitempty"`
}

// embeddedFields is how encoding/json names the embedded ExternalAuthFields in the path of a
// type error ("properties.ExternalAuthFields.issuer.audiences"); the body has no such level.
const embeddedFields = "ExternalAuthFields."

// DecodeStrict is api.DecodeStrict for a version's external auth: a type error's target (and
// message) name the body's path, without the Go name of the embedded ExternalAuthFields.
func DecodeStrict(body []byte, v any) error {
	err := api.DecodeStrict(body, v)
	var ce *arm.CloudError
	if errors.As(err, &ce) {
		ce.Target = strings.ReplaceAll(ce.Target, embeddedFields, "")
		ce.Message = strings.ReplaceAll(ce.Message, embeddedFields, "")
	}
	return err
}

// ConditionExternalAuth is the hcpOpenShiftClusters/externalAuths resource of the api-versions
// before 2026-06-30-preview, whose read-only observation is one properties.condition. Their
// specifications define it identically (ExternalAuth and all it references), so they share it;
// a version whose schema departs from it gets its own type.
type ConditionExternalAuth struct {
	// Read-only envelope fields: accepted in a PUT body and ignored.
	ID         *string         `json:"id,omitempty"`
	Name       *string         `json:"name,omitempty"`
	Type       *string         `json:"type,omitempty"`
	SystemData *arm.SystemData `json:"systemData,omitempty"`

	Properties *ConditionExternalAuthProperties `json:"properties,omitempty"`
}

type ConditionExternalAuthProperties struct {
	ProvisioningState *string `json:"provisioningState,omitempty"`
	// Condition is read-only: accepted in a body and ignored.
	Condition *ExternalAuthCondition `json:"condition,omitempty"`
	ExternalAuthFields
}

type ExternalAuthCondition struct {
	Type               *string `json:"type,omitempty"`
	Status             *string `json:"status,omitempty"`
	LastTransitionTime *string `json:"lastTransitionTime,omitempty"`
	Reason             *string `json:"reason,omitempty"`
	Message            *string `json:"message,omitempty"`
}
