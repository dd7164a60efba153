package codec

import (
	"net/http"
	"time"

	"github.com/openhcp/openhcp/frontend/pkg/api"
	"github.com/openhcp/openhcp/frontend/pkg/api/armpath"
	"github.com/openhcp/openhcp/frontend/pkg/api/fieldcheck"
	"github.com/openhcp/openhcp/frontend/pkg/api/profiles"
	"github.com/openhcp/openhcp/internal/arm"
)

// ExternalAuth is the api.ExternalAuthVersion of an api-version whose generated external auth
// type is T.
type ExternalAuth[T any] struct {
	// Name is the api-version.
	Name string
	// StatusConditions: the version shows Cluster Service's view as
	// properties.status.conditions (from 2026-06-30-preview on), not properties.condition.
	StatusConditions bool
}

func (e ExternalAuth[T]) String() string { return e.Name }

// DecodeExternalAuth implements api.ExternalAuthVersion: the body, checked against the
// version's schema (fieldcheck.ExternalAuth), is filled into Cluster Service's spec through its
// arm_path options.
func (e ExternalAuth[T]) DecodeExternalAuth(body []byte) (*api.ExternalAuth, error) {
	var ext T
	if err := api.DecodeStrict(body, &ext); err != nil {
		return nil, err
	}
	if armpath.Lookup(&ext, "properties") == nil {
		return nil, ExternalAuthPropertiesRequired()
	}
	// The writable properties are of the shared definitions in every version.
	clients, _ := armpath.Lookup(&ext, "properties.clients").([]profiles.ExternalAuthClientProfile)
	err := fieldcheck.ExternalAuth(armpath.As[profiles.TokenIssuerProfile](&ext, "properties.issuer"), clients,
		armpath.As[profiles.ExternalAuthClaimProfile](&ext, "properties.claim"))
	if err != nil {
		return nil, err
	}
	return api.ExternalAuthFromARM(&ext), nil
}

// RenderExternalAuth implements api.ExternalAuthVersion: the spec's ARM form, with the
// envelope and Cluster Service's view, read into the version's type.
func (e ExternalAuth[T]) RenderExternalAuth(ea *api.ExternalAuth) any {
	doc := map[string]any{}
	if ea.ID != nil {
		doc["id"], doc["name"], doc["type"] = ea.ID.String(), ea.ID.Name(), api.ExternalAuthResourceType
	}
	if ea.SystemData != nil {
		doc["systemData"] = ea.SystemData
	}
	props := ea.RenderedProperties()
	if ea.ProvisioningState != "" {
		props["provisioningState"] = string(ea.ProvisioningState)
	}
	if c := ea.Condition; c != nil {
		cond := map[string]any{"message": c.Message, "lastTransitionTime": c.LastTransitionTime.UTC().Format(time.RFC3339)}
		for k, v := range map[string]string{"type": c.Type, "status": c.Status, "reason": c.Reason} {
			if v != "" {
				cond[k] = v
			}
		}
		if e.StatusConditions {
			props["status"] = map[string]any{"conditions": []any{cond}}
		} else {
			props["condition"] = cond
		}
	}
	doc["properties"] = props
	return render[T](doc)
}

// ExternalAuthPropertiesRequired is the error of an external auth body without properties.
func ExternalAuthPropertiesRequired() error {
	return arm.NewCloudError(http.StatusBadRequest, arm.CodeInvalidRequestContent, "properties", "The field 'properties' is required.")
}
