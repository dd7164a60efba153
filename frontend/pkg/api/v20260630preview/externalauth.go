package v20260630preview

import (
	"github.com/openhcp/openhcp/frontend/pkg/api"
	"github.com/openhcp/openhcp/frontend/pkg/api/codec"
	"github.com/openhcp/openhcp/frontend/pkg/api/profiles"
)

func init() { api.RegisterExternalAuth(externalAuth(APIVersion)) }

// SameExternalAuthSchema is the api.ExternalAuthVersion of an api-version whose external auth
// schema is this one's (2026-09-01-preview).
func SameExternalAuthSchema(apiVersion string) api.ExternalAuthVersion {
	return externalAuth(apiVersion)
}

// externalAuth is the api.ExternalAuthVersion of this external auth schema: ExternalAuth
// (generated), whose read-only observation is, from this version on,
// properties.status.conditions; its writable properties are profiles.ExternalAuthFields,
// embedded, as in every version.
func externalAuth(apiVersion string) api.ExternalAuthVersion {
	return codec.ExternalAuth[ExternalAuth]{Name: apiVersion, StatusConditions: true, Fields: func(x *ExternalAuth) *profiles.ExternalAuthFields {
		if x.Properties == nil {
			return nil
		}
		return &x.Properties.ExternalAuthFields
	}}
}
