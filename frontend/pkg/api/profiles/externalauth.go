package profiles

import (
	"errors"
	"strings"
	"time"

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

func deref(p *string) string {
	if p == nil {
		return ""
	}
	return *p
}

func ptrIf(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

// ToInternal converts the writable properties; required fields that are missing stay empty
// (fieldcheck.ExternalAuth has reported them).
func (f *ExternalAuthFields) ToInternal() api.ExternalAuthProperties {
	var out api.ExternalAuthProperties
	if f.Issuer != nil {
		out.Issuer = api.TokenIssuer{URL: deref(f.Issuer.URL), Audiences: f.Issuer.Audiences, CA: deref(f.Issuer.CA)}
	}
	for _, c := range f.Clients {
		ic := api.ExternalAuthClient{ClientID: deref(c.ClientID), ExtraScopes: c.ExtraScopes, Type: deref(c.Type)}
		if c.Component != nil {
			ic.Component = api.ExternalAuthClientComponent{Name: deref(c.Component.Name), AuthClientNamespace: deref(c.Component.AuthClientNamespace)}
		}
		out.Clients = append(out.Clients, ic)
	}
	if f.Claim != nil {
		if m := f.Claim.Mappings; m != nil {
			if u := m.Username; u != nil {
				out.Claim.Mappings.Username = api.UsernameClaim{Claim: deref(u.Claim), Prefix: deref(u.Prefix), PrefixPolicy: deref(u.PrefixPolicy)}
			}
			if g := m.Groups; g != nil {
				out.Claim.Mappings.Groups = &api.GroupClaim{Claim: deref(g.Claim), Prefix: deref(g.Prefix)}
			}
		}
		for _, r := range f.Claim.ValidationRules {
			ir := api.TokenClaimValidationRule{Type: deref(r.Type)}
			if r.RequiredClaim != nil {
				ir.RequiredClaim = api.TokenRequiredClaim{Claim: deref(r.RequiredClaim.Claim), RequiredValue: deref(r.RequiredClaim.RequiredValue)}
			}
			out.Claim.ValidationRules = append(out.Claim.ValidationRules, ir)
		}
	}
	return out
}

// RenderExternalAuthFields is the writable properties as every version shows them.
func RenderExternalAuthFields(p *api.ExternalAuthProperties) ExternalAuthFields {
	f := ExternalAuthFields{
		Issuer: &TokenIssuerProfile{URL: ptrIf(p.Issuer.URL), Audiences: p.Issuer.Audiences, CA: ptrIf(p.Issuer.CA)},
		Claim: &ExternalAuthClaimProfile{Mappings: &TokenClaimMappingsProfile{Username: &UsernameClaimProfile{
			Claim: ptrIf(p.Claim.Mappings.Username.Claim), Prefix: ptrIf(p.Claim.Mappings.Username.Prefix), PrefixPolicy: ptrIf(p.Claim.Mappings.Username.PrefixPolicy),
		}}},
	}
	if g := p.Claim.Mappings.Groups; g != nil {
		f.Claim.Mappings.Groups = &GroupClaimProfile{Claim: ptrIf(g.Claim), Prefix: ptrIf(g.Prefix)}
	}
	for _, r := range p.Claim.ValidationRules {
		f.Claim.ValidationRules = append(f.Claim.ValidationRules, TokenClaimValidationRule{Type: ptrIf(r.Type),
			RequiredClaim: &TokenRequiredClaim{Claim: ptrIf(r.RequiredClaim.Claim), RequiredValue: ptrIf(r.RequiredClaim.RequiredValue)}})
	}
	for _, c := range p.Clients {
		f.Clients = append(f.Clients, ExternalAuthClientProfile{
			Component: &ExternalAuthClientComponentProfile{Name: ptrIf(c.Component.Name), AuthClientNamespace: ptrIf(c.Component.AuthClientNamespace)},
			ClientID:  ptrIf(c.ClientID), ExtraScopes: c.ExtraScopes, Type: ptrIf(c.Type),
		})
	}
	return f
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

// RenderConditionExternalAuth is an external auth as a ConditionExternalAuth.
func RenderConditionExternalAuth(ea *api.ExternalAuth) *ConditionExternalAuth {
	ext := &ConditionExternalAuth{SystemData: ea.SystemData}
	if ea.ID != nil {
		ext.ID, ext.Name, ext.Type = ptr(ea.ID.String()), ptr(ea.ID.Name()), ptr(api.ExternalAuthResourceType)
	}
	ext.Properties = &ConditionExternalAuthProperties{ProvisioningState: ptr(string(ea.ProvisioningState)), ExternalAuthFields: RenderExternalAuthFields(&ea.Properties)}
	if c := ea.Condition; c != nil {
		ext.Properties.Condition = &ExternalAuthCondition{Type: ptr(c.Type), Status: ptr(c.Status), Reason: ptr(c.Reason), Message: Present(c.Message),
			LastTransitionTime: ptr(c.LastTransitionTime.UTC().Format(time.RFC3339))}
	}
	return ext
}
