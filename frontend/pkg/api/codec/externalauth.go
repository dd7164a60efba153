package codec

import (
	"net/http"

	"github.com/openhcp/openhcp/frontend/pkg/api"
	"github.com/openhcp/openhcp/frontend/pkg/api/fieldcheck"
	"github.com/openhcp/openhcp/frontend/pkg/api/profiles"
	"github.com/openhcp/openhcp/internal/arm"
)

// ConditionExternalAuthVersion is the api.ExternalAuthVersion of an api-version whose external
// auth is profiles.ConditionExternalAuth (every version before 2026-06-30-preview): its name.
type ConditionExternalAuthVersion string

func (v ConditionExternalAuthVersion) String() string { return string(v) }

// DecodeExternalAuth implements api.ExternalAuthVersion.
func (ConditionExternalAuthVersion) DecodeExternalAuth(body []byte) (*api.ExternalAuth, error) {
	var ext profiles.ConditionExternalAuth
	if err := profiles.DecodeStrict(body, &ext); err != nil {
		return nil, err
	}
	if ext.Properties == nil {
		return nil, ExternalAuthPropertiesRequired()
	}
	return fieldcheck.ExternalAuth(&ext.Properties.ExternalAuthFields)
}

// RenderExternalAuth implements api.ExternalAuthVersion.
func (ConditionExternalAuthVersion) RenderExternalAuth(ea *api.ExternalAuth) any {
	return profiles.RenderConditionExternalAuth(ea)
}

// ExternalAuthPropertiesRequired is the error of an external auth body without properties.
func ExternalAuthPropertiesRequired() error {
	return arm.NewCloudError(http.StatusBadRequest, arm.CodeInvalidRequestContent, "properties", "The field 'properties' is required.")
}
