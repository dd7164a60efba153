package fieldcheck

import (
	"fmt"

	"github.com/openhcp/openhcp/frontend/pkg/api/profiles"
	"github.com/openhcp/openhcp/internal/armspec/bounds"
)

// ExternalAuth checks a body's writable properties, the same in every api-version: first the properties the schema
// requires (without them nothing else is checked), then what the specification says of each
// value (the generated spec functions of its shared definitions, armgen.SharedAuthChecks).
// Problems are named by the body's paths. The rules the specification cannot state (an https
// issuer, audiences given once, a PEM bundle, client IDs among the audiences, unique components,
// the prefix and its policy) are Cluster Service's alone (model.ValidateExternalAuthSpec): its
// refusal reaches the client as a 400 naming the same properties (fieldViolations).
//
// Hand-written, not generated per version, because the required checks come first and alone (a
// body without its issuer or username has always been told only that, in that order), which a
// version's generated checks of its root do not do; below them, every check of a value is
// generated.
func ExternalAuth(issuer *profiles.TokenIssuerProfile, clients []profiles.ExternalAuthClientProfile, claim *profiles.ExternalAuthClaimProfile) error {
	v := &Checker{}
	if issuer == nil {
		v.Add("properties.issuer", "The field '%s' is required.", "properties.issuer")
	}
	if claim == nil || claim.Mappings == nil || claim.Mappings.Username == nil {
		v.Add("properties.claim.mappings.username", "The field '%s' is required.", "properties.claim.mappings.username")
	}
	if err := v.Err(); err != nil {
		return err
	}
	specTokenIssuerProfile(v, issuer, "properties.issuer")
	// The clients' maxItems is the specification's (a schema bound, so the frontend's to check,
	// as Cluster Service checks it too). ExternalAuthProperties is not a shared definition
	// (2026-06-30-preview's has its status), so the bound is read here; each client's checks are
	// generated.
	if n := len(clients); n > bounds.ExternalAuthPropertiesClientsMaxItems {
		v.Add("properties.clients", "The field 'properties.clients' has %d entries; at most %d are allowed.", n, bounds.ExternalAuthPropertiesClientsMaxItems)
	}
	for i := range clients {
		specExternalAuthClientProfile(v, &clients[i], fmt.Sprintf("properties.clients[%d]", i))
	}
	specExternalAuthClaimProfile(v, claim, "properties.claim")
	return v.Err()
}
