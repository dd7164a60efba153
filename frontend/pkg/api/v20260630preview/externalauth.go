package v20260630preview

import (
	"github.com/openhcp/openhcp/frontend/pkg/api"
	"github.com/openhcp/openhcp/frontend/pkg/api/codec"
)

func init() { api.RegisterExternalAuth(SameExternalAuthSchema(APIVersion)) }

// SameExternalAuthSchema is the api.ExternalAuthVersion of an api-version whose external auth
// schema is this one's (2026-09-01-preview): ExternalAuth (generated), whose read-only
// observation is, from this version on, properties.status.conditions.
func SameExternalAuthSchema(apiVersion string) api.ExternalAuthVersion {
	return codec.ExternalAuth[ExternalAuth]{Name: apiVersion, StatusConditions: true}
}
