package api

import (
	"fmt"

	"google.golang.org/protobuf/proto"

	csv1 "github.com/openhcp/openhcp/cluster-service/api/v1"
	"github.com/openhcp/openhcp/frontend/pkg/api/armpath"
)

// ClusterShapes are the cluster properties whose ARM form is not the proto field's: the
// resource ID (Cluster Service's subscription and resource group are taken from the request
// path, never from a body), the operators' identities (ARM holds their resource IDs, Cluster
// Service the client IDs ARM reports in the resource's identity) and the active KMS key (one
// key URL in Cluster Service).
var ClusterShapes = armpath.Shapes{
	"id": {ToSpec: func(any) (any, error) { return "", nil }},
	"properties.platform.operatorsAuthentication.userAssignedIdentities.controlPlaneOperators": {
		ToSpec: func(any) (any, error) { return map[string]any{}, nil },
	},
	"properties.etcd.dataEncryption.customerManaged.kms": {
		ToSpec: func(v any) (any, error) {
			// 2024-06-10-preview holds vaultName beside the key's name and version.
			vault, _ := armpath.Lookup(v, "vaultName").(string)
			if vault == "" {
				vault, _ = armpath.Lookup(v, "activeKey.vaultName").(string)
			}
			name, _ := armpath.Lookup(v, "activeKey.name").(string)
			version, _ := armpath.Lookup(v, "activeKey.version").(string)
			if vault == "" || name == "" || version == "" {
				return "", nil
			}
			return EtcdKeyID(&KMSKey{VaultName: vault, Name: name, Version: version}), nil
		},
	},
}

// EtcdKeyID is Cluster Service's etcd_encryption_key_id of an active KMS key.
func EtcdKeyID(k *KMSKey) string {
	return fmt.Sprintf("https://%s.vault.azure.net/keys/%s/%s", k.VaultName, k.Name, k.Version)
}

// SpecFromARM is the spec of the properties a body gives (every field of csv1.ClusterSpec with
// an arm_path, SpecProperties), filled from the body decoded into its api-version's type
// through those arm_path options. It applies no defaults: what the body leaves out stays empty,
// and the handlers fill it with Cluster Service's, the one place they are written
// (model.DefaultCluster, through withClusterServiceDefaults), before a create, a replace or a
// patch is written. What the spec does not hold as the model keeps it (the key management mode,
// the customer-managed key's parts, the operators' identities) and the read-only properties are
// the version's to convert.
func SpecFromARM(body any) *csv1.ClusterSpec {
	spec := &csv1.ClusterSpec{}
	if err := armpath.Fill(spec.ProtoReflect(), body, ClusterShapes); err != nil {
		// A body decoded into its version's type has the specification's shapes: a mismatch
		// is a wrong arm_path, caught by the cluster document tests.
		panic(fmt.Sprintf("cluster body %T: %v", body, err))
	}
	return SpecProperties(spec)
}

// SpecProperties makes spec what Cluster.Spec holds, and returns it: the resource's properties.
// It clears what the model keeps elsewhere or not at all (the resource ID's subscription and
// resource group, the location, the tenant, the workload identities, the KMS key and its key
// vault's visibility, and what Cluster Service fills: the base domain, the issuer URL, the
// backup key, the pause), and makes network, azure and autoscaling present, so the ARM form
// shows them as objects and an update compares them field by field.
func SpecProperties(spec *csv1.ClusterSpec) *csv1.ClusterSpec {
	spec.EtcdEncryptionKeyId, spec.EtcdEncryptionKeyVaultVisibility, spec.EtcdEncryptionBackupKeyId = "", "", ""
	spec.DnsBaseDomain, spec.IssuerUrl, spec.PausedUntil = "", "", ""
	if spec.Network == nil {
		spec.Network = &csv1.NetworkSpec{}
	}
	if spec.Azure == nil {
		spec.Azure = &csv1.AzureSpec{}
	}
	az := spec.Azure
	az.SubscriptionId, az.ResourceGroup, az.Location, az.TenantId, az.WorkloadIdentities = "", "", "", "", nil
	if spec.Autoscaling == nil {
		spec.Autoscaling = &csv1.ClusterAutoscaling{}
	}
	return spec
}

// CopySpec is a copy of the cluster's spec (SpecProperties), for a caller to change or send:
// what RenderedProperties renders, and what the frontend sends once it has added the envelope,
// the identities and the KMS key.
func (c *Cluster) CopySpec() *csv1.ClusterSpec {
	if c.Spec == nil {
		return SpecProperties(&csv1.ClusterSpec{})
	}
	return SpecProperties(proto.Clone(c.Spec).(*csv1.ClusterSpec))
}

// armForm is the spec's ARM form: the properties it holds.
func (c *Cluster) armForm() map[string]any {
	props, _ := armpath.Render(c.CopySpec().ProtoReflect(), ClusterShapes)["properties"].(map[string]any)
	if props == nil {
		props = map[string]any{}
	}
	return props
}

// RenderedProperties are, in JSON form, the properties every api-version renders alike, for the
// version to read into its type (codec), which leaves out what it has no property for. Two parts:
//   - the properties Cluster Service's spec holds, rendered through its arm_path options. A
//     property at its zero value is absent there (armpath.Render);
//   - the read-only and status properties, and the forms, that no api-version changes:
//     provisioningState; version, dns, api and platform shown as objects even when empty;
//     dns.baseDomain; console.url, the console left out without one; api.url and
//     platform.issuerUrl shown even when empty; the operators' identities, their maps shown as
//     {} when empty; nodeDrainTimeoutMinutes shown at 0 (no limit); an image digest mirror's
//     mirrors shown as [] when empty (in the versions that have image digest mirrors).
//
// What versions show their own ways is codec.Cluster's, from the version's rules: the etcd block
// (where vaultName sits, which key modes exist), what a schema requires in a response
// (profiles.Present), and the properties only some versions have (status conditions).
func (c *Cluster) RenderedProperties() map[string]any {
	props := c.armForm()
	if c.ProvisioningState != "" {
		props["provisioningState"] = string(c.ProvisioningState)
	}
	armpath.Object(props, "version")
	if dns := armpath.Object(props, "dns"); c.BaseDomain != "" {
		dns["baseDomain"] = c.BaseDomain
	}
	if c.ConsoleURL != "" {
		props["console"] = map[string]any{"url": c.ConsoleURL}
	}
	armpath.Object(props, "api")["url"] = c.APIURL
	platform := armpath.Object(props, "platform")
	ua := c.OperatorIdentities
	identities := map[string]any{"controlPlaneOperators": nonNil(ua.ControlPlaneOperators), "dataPlaneOperators": nonNil(ua.DataPlaneOperators)}
	if ua.ServiceManagedIdentity != "" {
		identities["serviceManagedIdentity"] = ua.ServiceManagedIdentity
	}
	platform["operatorsAuthentication"] = map[string]any{"userAssignedIdentities": identities}
	platform["issuerUrl"] = c.IssuerURL
	props["nodeDrainTimeoutMinutes"] = c.Spec.GetNodeDrainTimeoutMinutes()
	mirrors, _ := props["imageDigestMirrors"].([]any)
	for _, m := range mirrors {
		if m, ok := m.(map[string]any); ok && m["mirrors"] == nil {
			m["mirrors"] = []any{}
		}
	}
	return props
}

// nonNil is m, or an empty map for nil (rendered {}, not null).
func nonNil(m map[string]string) map[string]string {
	if m == nil {
		return map[string]string{}
	}
	return m
}
