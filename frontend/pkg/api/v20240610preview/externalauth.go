package v20240610preview

import (
	"github.com/openhcp/openhcp/frontend/pkg/api"
	"github.com/openhcp/openhcp/frontend/pkg/api/codec"
)

// ExternalAuth (generated): before 2026-06-30-preview its read-only observation is one
// properties.condition.
func init() { api.RegisterExternalAuth(codec.ExternalAuth[ExternalAuth]{Name: APIVersion}) }
