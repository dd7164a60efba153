package v20240610preview

import (
	"github.com/openhcp/openhcp/frontend/pkg/api"
	"github.com/openhcp/openhcp/frontend/pkg/api/profiles"
)

func init() { api.RegisterExternalAuth(version{}) }

// ExternalAuth is the hcpOpenShiftClusters/externalAuths resource of this version. Before
// 2026-06-30-preview its read-only observation is one properties.condition; the schema is the
// same in every version before that one, so the type is shared in profiles.
type ExternalAuth = profiles.ConditionExternalAuth

type (
	ExternalAuthProperties = profiles.ConditionExternalAuthProperties
	ExternalAuthCondition  = profiles.ExternalAuthCondition
)

// DecodeExternalAuth implements api.ExternalAuthVersion.
func (version) DecodeExternalAuth(body []byte) (*api.ExternalAuth, error) {
	return profiles.DecodeConditionExternalAuth(body)
}

// RenderExternalAuth implements api.ExternalAuthVersion.
func (version) RenderExternalAuth(ea *api.ExternalAuth) any {
	return profiles.RenderConditionExternalAuth(ea)
}
