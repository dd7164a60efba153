package v20260630preview

import (
	"time"

	"github.com/openhcp/openhcp/frontend/pkg/api"
	"github.com/openhcp/openhcp/frontend/pkg/api/codec"
	"github.com/openhcp/openhcp/frontend/pkg/api/fieldcheck"
	"github.com/openhcp/openhcp/frontend/pkg/api/profiles"
)

func init() { api.RegisterExternalAuth(externalAuth(APIVersion)) }

// SameExternalAuthSchema is the api.ExternalAuthVersion of an api-version whose external auth
// schema is this one's (2026-09-01-preview).
func SameExternalAuthSchema(apiVersion string) api.ExternalAuthVersion {
	return externalAuth(apiVersion)
}

// externalAuth is the api.ExternalAuthVersion of this external auth schema: its api-version.
type externalAuth string

func (v externalAuth) String() string { return string(v) }

// ExternalAuth (generated) is the hcpOpenShiftClusters/externalAuths resource of this version.
// From this version on, its read-only observation is properties.status.conditions; its writable
// properties are profiles.ExternalAuthFields, embedded, as in every version.

// DecodeExternalAuth implements api.ExternalAuthVersion.
func (externalAuth) DecodeExternalAuth(body []byte) (*api.ExternalAuth, error) {
	var ext ExternalAuth
	if err := profiles.DecodeStrict(body, &ext); err != nil {
		return nil, err
	}
	if ext.Properties == nil {
		return nil, codec.ExternalAuthPropertiesRequired()
	}
	return fieldcheck.ExternalAuth(&ext.Properties.ExternalAuthFields)
}

// RenderExternalAuth implements api.ExternalAuthVersion.
func (externalAuth) RenderExternalAuth(ea *api.ExternalAuth) any {
	ext := &ExternalAuth{SystemData: ea.SystemData}
	if ea.ID != nil {
		ext.ID, ext.Name, ext.Type = ptr(ea.ID.String()), ptr(ea.ID.Name()), ptr(api.ExternalAuthResourceType)
	}
	ext.Properties = &ExternalAuthProperties{ProvisioningState: ptr(string(ea.ProvisioningState)), ExternalAuthFields: profiles.RenderExternalAuthFields(&ea.Properties)}
	if c := ea.Condition; c != nil {
		ext.Properties.Status = &ResourceStatus{Conditions: []Condition{{Type: ptr(c.Type), Status: ptr(c.Status), Reason: ptr(c.Reason), Message: profiles.Present(c.Message),
			LastTransitionTime: ptr(c.LastTransitionTime.UTC().Format(time.RFC3339))}}}
	}
	return ext
}

func ptr[T comparable](v T) *T {
	var zero T
	if v == zero {
		return nil
	}
	return &v
}
