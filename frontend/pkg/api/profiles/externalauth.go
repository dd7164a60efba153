package profiles

// External auth sub-structures: their shape is the same in every api-version (the generated
// types alias them, armgen.sharedProfiles); only the read-only condition/status differs, which
// each version's generated ExternalAuthProperties has.

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
