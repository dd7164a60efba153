package v20240610preview

import (
	"github.com/openhcp/openhcp/frontend/pkg/api"
	"github.com/openhcp/openhcp/frontend/pkg/api/profiles"
)

// ExternalAuth (generated, an alias of profiles.ConditionExternalAuth): before 2026-06-30-preview
// its read-only observation is one properties.condition, and the schema is the same in every
// version before that one, so the type, its decoding and rendering are shared in profiles.
func init() { api.RegisterExternalAuth(profiles.ConditionExternalAuthVersion(APIVersion)) }
