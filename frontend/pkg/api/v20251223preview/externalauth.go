package v20251223preview

import (
	"github.com/openhcp/openhcp/frontend/pkg/api"
	"github.com/openhcp/openhcp/frontend/pkg/api/profiles"
)

func init() { api.RegisterExternalAuth(version{}) }

// ExternalAuth (generated, an alias of profiles.ConditionExternalAuth): before 2026-06-30-preview
// its read-only observation is one properties.condition, and the schema is the same in every
// version before that one, so the type and its decoding are shared in profiles.

// DecodeExternalAuth implements api.ExternalAuthVersion.
func (version) DecodeExternalAuth(body []byte) (*api.ExternalAuth, error) {
	return profiles.DecodeConditionExternalAuth(body)
}

// RenderExternalAuth implements api.ExternalAuthVersion.
func (version) RenderExternalAuth(ea *api.ExternalAuth) any {
	return profiles.RenderConditionExternalAuth(ea)
}
