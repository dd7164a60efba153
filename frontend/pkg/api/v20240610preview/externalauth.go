package v20240610preview

import (
	"github.com/openhcp/openhcp/frontend/pkg/api"
	"github.com/openhcp/openhcp/frontend/pkg/api/codec"
)

// ExternalAuth (generated, an alias of profiles.ConditionExternalAuth): before 2026-06-30-preview
// its read-only observation is one properties.condition, and the schema is the same in every
// version before that one, so the type and its rendering are shared in profiles, its decoding in codec.
func init() { api.RegisterExternalAuth(codec.ConditionExternalAuthVersion(APIVersion)) }
