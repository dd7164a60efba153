package codec

import (
	"strings"
	"time"

	"github.com/openhcp/openhcp/frontend/pkg/api"
	"github.com/openhcp/openhcp/frontend/pkg/api/armpath"
	"github.com/openhcp/openhcp/frontend/pkg/api/fieldcheck"
	"github.com/openhcp/openhcp/frontend/pkg/api/profiles"
	"github.com/openhcp/openhcp/frontend/pkg/rolesets"
)

// ClusterSpec is what a version's specification says of its cluster type T beyond the type
// itself, generated (specCluster in the version's zz_generated_validate.go).
type ClusterSpec[T any] struct {
	// ValidateSpec checks what the specification says of each field (T's validateSpec).
	ValidateSpec func(x *T, v *fieldcheck.Checker, path string)
	// UpdatePaths are what a PATCH body may hold: the version's HcpOpenShiftClusterUpdate.
	UpdatePaths []string
	// Updatable are the body paths a write may change after creation: the version's
	// x-ms-mutability.
	Updatable []string
}

// Cluster is the api.Version of an api-version whose generated cluster type is T.
type Cluster[T any] struct {
	// Name is the api-version.
	Name string
	// Spec is what the version's specification says, generated.
	Spec ClusterSpec[T]
	// Rules are what a body means beyond its schema (fieldcheck.Cluster). They shape the
	// rendering too: a field required since a version (VersionIDRequiredSince,
	// VnetIntegrationSubnet) is required in a response, shown "" when the model has none
	// (profiles.Present); without PlatformManagedKey a platform-managed key shows no
	// etcd.dataEncryption.
	Rules fieldcheck.ClusterRules
	// CheckAsCreate: a write to a stored cluster is checked as a create (the rules for fields
	// required since a version do not consult the stored cluster), as 2024-06-10-preview always has.
	CheckAsCreate bool
	// VaultNameInKey: the key vault name sits in kms.activeKey (before 2025-12-23-preview),
	// not beside it.
	VaultNameInKey bool
	// KeepStored copies into next what the version cannot express, from stored (nil: it
	// expresses every field of the model).
	KeepStored func(stored, next *api.Cluster)
	// RoleSets is the operator identity role set catalogue a body's operator names are checked
	// against (fieldcheck.Checker.RoleSets); set per server by WithRoleSets.
	RoleSets *rolesets.Catalogue
}

// WithRoleSets implements api.Version.
func (cv Cluster[T]) WithRoleSets(c *rolesets.Catalogue) api.Version {
	cv.RoleSets = c
	return cv
}

func (cv Cluster[T]) String() string { return cv.Name }

// DecodeCluster implements api.Version.
func (cv Cluster[T]) DecodeCluster(body []byte) (*api.Cluster, error) {
	return cv.DecodeClusterUpdate(body, nil)
}

// DecodeClusterUpdate implements api.Version: the generated checks, then fieldcheck.Cluster
// with the version's rules, then the body filled into the model (toInternal: Cluster
// Service's defaults are not applied here).
func (cv Cluster[T]) DecodeClusterUpdate(body []byte, stored *api.Cluster) (*api.Cluster, error) {
	var ext T
	if err := api.DecodeStrict(body, &ext); err != nil {
		return nil, err
	}
	v := &fieldcheck.Checker{Stored: stored, AsCreate: cv.CheckAsCreate, RoleSets: cv.RoleSets}
	cv.Spec.ValidateSpec(&ext, v, "")
	v.Cluster(&ext, cv.Rules)
	v.Tags(tags(&ext))
	if err := v.Err(); err != nil {
		return nil, err
	}
	return cv.toInternal(&ext), nil
}

// toInternal converts a checked body doc. Read-only fields are dropped. What Cluster Service's
// spec holds keeps what the body left out empty, for the handlers to fill with Cluster Service's
// defaults (model.DefaultCluster); the defaults
// here are of what only the frontend's model holds (the key management mode and type, the
// key vault's visibility).
func (cv Cluster[T]) toInternal(doc any) *api.Cluster {
	// What Cluster Service's spec holds is filled through its arm_path options; the rest is
	// the envelope, the identities and the etcd block.
	c := &api.Cluster{Location: str(doc, "location"), Tags: tags(doc), Spec: api.SpecFromARM(doc)}
	if u := armpath.As[profiles.UserAssignedIdentitiesProfile](doc, fieldcheck.OperatorIdentitiesPath); u != nil {
		c.OperatorIdentities = u.ToInternal()
	}
	// The model keeps the key's parts, where Cluster Service holds one key URL; where they sit
	// in the body is the version's (ExternalPath).
	const de = "properties.etcd.dataEncryption"
	c.Etcd.KeyManagementMode = orDefault(armpath.As[string](doc, de+".keyManagementMode"), api.KeyManagementPlatform)
	if armpath.Lookup(doc, de+".customerManaged") != nil {
		icm := &api.CustomerManagedEncryptionProfile{EncryptionType: orDefault(armpath.As[string](doc, de+".customerManaged.encryptionType"), api.EncryptionTypeKMS)}
		const kms = de + ".customerManaged.kms"
		if armpath.Lookup(doc, kms+".activeKey") != nil {
			at := func(field string) string { return str(doc, cv.ExternalPath(kms+"."+field)) }
			icm.KMS = &api.KMSKey{VaultName: at("vaultName"), Visibility: at("visibility"), Name: at("name"), Version: at("version")}
		}
		c.Etcd.CustomerManaged = icm
	}
	if id := armpath.As[profiles.ManagedServiceIdentity](doc, "identity"); id != nil {
		c.Identity = id.ToInternal()
	}
	c.DefaultKMSVisibility()
	return c
}

// RenderCluster implements api.Version: what every version renders alike
// (api.Cluster.RenderedProperties), what the version's rules shape, read into its type.
func (cv Cluster[T]) RenderCluster(c *api.Cluster) any {
	doc := envelope(c.ID, api.ClusterResourceType, c.Location, c.Tags, c.SystemData)
	props := c.RenderedProperties()
	// Required in the version's schema since it came (profiles.Present).
	if cv.Rules.VersionIDRequiredSince {
		armpath.Object(props, "version")["id"] = c.Spec.GetVersionId()
	}
	if cv.Rules.VnetIntegrationSubnet {
		armpath.Object(props, "platform")["vnetIntegrationSubnetId"] = c.Spec.GetAzure().GetVnetIntegrationSubnetId()
	}
	props["etcd"] = cv.renderEtcd(&c.Etcd)
	// Status conditions: only the versions whose type has properties.status show them.
	if len(c.Conditions) > 0 {
		var conditions []any
		for _, cond := range c.Conditions {
			m := map[string]any{"message": cond.Message, "lastTransitionTime": cond.LastTransitionTime.Format(time.RFC3339)}
			set(m, "type", cond.Type)
			set(m, "status", cond.Status)
			set(m, "reason", cond.Reason)
			conditions = append(conditions, m)
		}
		props["status"] = map[string]any{"conditions": conditions}
	}
	doc["properties"] = props
	if id := c.Identity; id != nil {
		doc["identity"] = profiles.RenderIdentity(id)
	}
	return render[T](doc)
}

// renderEtcd is properties.etcd: without the PlatformManaged mode, a platform-managed key shows
// no dataEncryption; the key's parts sit where the version has them (ExternalPath).
func (cv Cluster[T]) renderEtcd(de *api.EtcdDataEncryptionProfile) map[string]any {
	etcd := map[string]any{}
	cm := de.CustomerManaged
	if cm == nil && !cv.Rules.PlatformManagedKey {
		return etcd
	}
	out := map[string]any{}
	set(out, "keyManagementMode", de.KeyManagementMode)
	if cm != nil {
		ecm := map[string]any{}
		set(ecm, "encryptionType", cm.EncryptionType)
		if k := cm.KMS; k != nil {
			const kms = "properties.etcd.dataEncryption.customerManaged.kms"
			doc := map[string]any{"activeKey": map[string]any{}}
			for _, f := range []struct{ name, value string }{{"vaultName", k.VaultName}, {"visibility", k.Visibility}, {"name", k.Name}, {"version", k.Version}} {
				if f.value != "" {
					armpath.Set(doc, strings.TrimPrefix(cv.ExternalPath(kms+"."+f.name), kms+"."), f.value)
				}
			}
			ecm["kms"] = doc
		}
		out["customerManaged"] = ecm
	}
	etcd["dataEncryption"] = out
	return etcd
}

// PatchCluster implements api.Version.
func (cv Cluster[T]) PatchCluster(stored *api.Cluster, body []byte) (*api.Cluster, error) {
	return api.Patch(cv, stored, body, cv.Spec.UpdatePaths)
}

// Preserve implements api.Version.
func (cv Cluster[T]) Preserve(stored, next *api.Cluster) {
	if cv.KeepStored != nil {
		cv.KeepStored(stored, next)
	}
}

// UpdatableFields implements api.Version: Updatable as internal-model paths.
func (cv Cluster[T]) UpdatableFields() []string {
	out := make([]string, len(cv.Spec.Updatable))
	for i, p := range cv.Spec.Updatable {
		out[i] = api.KMSInternalPath(p)
	}
	return out
}

// ExternalPath implements api.Version.
func (cv Cluster[T]) ExternalPath(p string) string { return api.KMSExternalPath(p, cv.VaultNameInKey) }

// orDefault is *p, or def when p is nil.
func orDefault(p *string, def string) string {
	if p == nil {
		return def
	}
	return *p
}

// set puts a non-empty value at key (a rendered property at its zero value is left out).
func set(m map[string]any, key, value string) {
	if value != "" {
		m[key] = value
	}
}
