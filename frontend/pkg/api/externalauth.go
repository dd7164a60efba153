package api

import (
	"encoding/json"
	"fmt"

	csv1 "github.com/openhcp/openhcp/cluster-service/api/v1"
	"github.com/openhcp/openhcp/frontend/pkg/api/armpath"
	"github.com/openhcp/openhcp/internal/arm"
	"github.com/openhcp/openhcp/internal/armdoc"
)

// ExternalAuthResourceType is the ARM type of an external auth.
const ExternalAuthResourceType = "Microsoft.RedHatOpenShift/hcpOpenShiftClusters/externalAuths"

// ExternalAuth is a whole hcpOpenShiftClusters/externalAuths resource: the OIDC provider of a
// cluster, its ARM envelope around Cluster Service's spec, which is the model of its properties.
// A body is filled into Spec and Spec is rendered, in every api-version, through the spec's
// arm_path options (every property's ARM shape is the proto's: no Shapes), so a property with an
// arm_path has no conversion of its own. Its schema is the same in every api-version except how
// the read-only condition is shown (properties.condition before 2026-06-30-preview,
// properties.status.conditions after).
type ExternalAuth struct {
	// ID is set from the request path, never from the body.
	ID                *arm.ResourceID
	SystemData        *arm.SystemData
	ProvisioningState armdoc.ProvisioningState
	// Condition is Cluster Service's view, filled on GET; never stored.
	Condition *Condition

	// Spec is what the caller asked for, and, once the frontend has filled it before its first
	// write, Cluster Service's defaults (model.DefaultExternalAuth) for what the caller left
	// out. Never nil in a decoded or read external auth.
	Spec *csv1.ExternalAuthSpec
}

// ExternalAuthFromARM is the external auth whose properties are doc's: a body decoded into its
// api-version's type and checked. What the body leaves out stays empty, for Cluster Service's
// model to default.
func ExternalAuthFromARM(doc any) *ExternalAuth {
	spec := &csv1.ExternalAuthSpec{}
	if err := armpath.Fill(spec.ProtoReflect(), doc, nil); err != nil {
		// A body decoded into its version's type has the specification's shapes: a mismatch
		// is a wrong arm_path, caught by the mapping tests (a stored document's is an error:
		// UnmarshalJSON).
		panic(fmt.Sprintf("external auth body %T: %v", doc, err))
	}
	return &ExternalAuth{Spec: spec}
}

// RenderedProperties are the external auth's properties as every api-version shows them, in
// their JSON form, for the version to read into its type.
func (ea *ExternalAuth) RenderedProperties() map[string]any {
	spec := ea.Spec
	if spec == nil {
		spec = &csv1.ExternalAuthSpec{}
	}
	props, _ := armpath.Render(spec.ProtoReflect(), nil)["properties"].(map[string]any)
	if props == nil {
		props = map[string]any{}
	}
	return props
}

// externalAuthDocument is the resource document's properties of an external auth: the spec's
// ARM form.
type externalAuthDocument struct {
	Properties map[string]any `json:"properties"`
}

// MarshalJSON writes the resource document's properties: the spec's ARM form.
func (ea *ExternalAuth) MarshalJSON() ([]byte, error) {
	return json.Marshal(externalAuthDocument{Properties: ea.RenderedProperties()})
}

// UnmarshalJSON reads a resource document's properties, those written before the spec was the
// model (the same ARM form, TestStoredExternalAuthDocumentsReadAndRender) included. A value of
// another shape than its property's is an error naming its ARM path.
func (ea *ExternalAuth) UnmarshalJSON(b []byte) error {
	doc, err := armpath.Parse(b)
	if err != nil {
		return fmt.Errorf("read external auth document: %w", err)
	}
	spec := &csv1.ExternalAuthSpec{}
	if err := armpath.Fill(spec.ProtoReflect(), doc, nil); err != nil {
		return fmt.Errorf("read external auth document: %w", err)
	}
	ea.Spec = spec
	return nil
}

// ExternalAuthVersion is one api-version's external auth schema. It is registered beside
// Version, so the cluster interface stays as it is.
type ExternalAuthVersion interface {
	String() string
	// DecodeExternalAuth decodes a PUT body strictly and checks it against the version's
	// schema; what it leaves out stays empty (the frontend fills Cluster Service's defaults).
	// Errors are *arm.CloudError with targets in the body's paths.
	DecodeExternalAuth(body []byte) (*ExternalAuth, error)
	// RenderExternalAuth is the resource as this version shows it.
	RenderExternalAuth(ea *ExternalAuth) any
}

var externalAuthVersions registry[ExternalAuthVersion]

// RegisterExternalAuth makes a version's external auth schema servable (from init).
func RegisterExternalAuth(v ExternalAuthVersion) { externalAuthVersions.register(v) }

// LookupExternalAuth finds a registered external auth schema by its exact api-version.
func LookupExternalAuth(apiVersion string) (ExternalAuthVersion, bool) {
	return externalAuthVersions.lookup(apiVersion)
}

// externalAuthUpdatePaths is ExternalAuthUpdate of every api-version: all of properties.
var externalAuthUpdatePaths = []string{"properties.issuer", "properties.clients", "properties.claim"}

// PatchExternalAuth applies a PATCH body (a JSON merge patch, RFC 7396, of ExternalAuthUpdate)
// to stored as the version shows it, then decodes and checks the result like a PUT.
// Keys outside the update schema are errors naming them.
func PatchExternalAuth(v ExternalAuthVersion, stored *ExternalAuth, body []byte) (*ExternalAuth, error) {
	// The message for a key outside the schema has always said the cluster; kept as ARM sees it.
	shown := *stored
	shown.Condition = nil
	rendered := v.RenderExternalAuth(&shown)
	merged, err := patchedBody(body, rendered, v.String(), externalAuthUpdatePaths, "cluster",
		func(merged, _ map[string]any) { dropReadOnly(merged, "provisioningState") })
	if err != nil {
		return nil, err
	}
	return v.DecodeExternalAuth(merged)
}
