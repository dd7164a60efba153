package v20260901preview

import (
	"github.com/openhcp/openhcp/frontend/pkg/api"
	"github.com/openhcp/openhcp/frontend/pkg/api/v20260630preview"
)

// The external auth schema of this version (ExternalAuth, ExternalAuthUpdate and what they
// reference) is 2026-06-30-preview's too.
func init() { api.RegisterExternalAuth(v20260630preview.SameExternalAuthSchema(APIVersion)) }
