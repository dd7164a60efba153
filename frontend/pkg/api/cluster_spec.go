package api

import (
	"fmt"

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

// SpecPropertiesFromARM fills the properties that Cluster Service's spec holds (every field
// of csv1.ClusterSpec with an arm_path) from a body decoded into its api-version's type, through
// those arm_path options. It applies no defaults: what the body leaves out stays empty, and the
// handlers fill it with Cluster Service's, the one place they are written (model.DefaultCluster,
// through withClusterServiceDefaults), before a create, a replace or a patch is written. What the spec does not hold (the key management mode, the
// customer-managed key's fields as the model keeps them, the operators' identities) and the
// read-only properties are the version's to convert.
func SpecPropertiesFromARM(body any) ClusterProperties {
	spec := &csv1.ClusterSpec{}
	if err := armpath.Fill(spec.ProtoReflect(), body, ClusterShapes); err != nil {
		// A body decoded into its version's type has the specification's shapes: a mismatch
		// is a wrong arm_path, caught by the cluster document tests.
		panic(fmt.Sprintf("cluster body %T: %v", body, err))
	}
	var out ClusterProperties
	out.SetSpec(spec)
	return out
}

// SetSpec sets the properties that Cluster Service's spec holds from spec, as given: the inverse
// of Spec. What Spec leaves out (the etcd block, the operators' identities, the read-only
// properties) is left as it is.
func (p *ClusterProperties) SetSpec(spec *csv1.ClusterSpec) {
	p.Version = VersionProfile{ID: spec.GetVersionId(), ChannelGroup: spec.GetChannelGroup()}
	p.DNS.BaseDomainPrefix = spec.GetDnsBaseDomainPrefix()
	n := spec.GetNetwork()
	p.Network = NetworkProfile{NetworkType: n.GetNetworkType(), PodCIDR: n.GetPodCidr(), ServiceCIDR: n.GetServiceCidr(),
		MachineCIDR: n.GetMachineCidr(), HostPrefix: n.GetHostPrefix()}
	p.API.Visibility, p.API.AuthorizedCIDRs = spec.GetApiVisibility(), append([]string(nil), spec.GetApiAuthorizedCidrs()...)
	az := spec.GetAzure()
	p.Platform.ManagedResourceGroup = az.GetManagedResourceGroup()
	p.Platform.SubnetID = az.GetSubnetId()
	p.Platform.OutboundType = az.GetOutboundType()
	p.Platform.NetworkSecurityGroupID = az.GetNetworkSecurityGroupId()
	p.Platform.VnetIntegrationSubnetID = az.GetVnetIntegrationSubnetId()
	p.Autoscaling = ClusterAutoscalingProfile{}
	if a := spec.GetAutoscaling(); a != nil {
		p.Autoscaling = ClusterAutoscalingProfile{MaxNodesTotal: a.MaxNodesTotal, MaxPodGracePeriodSeconds: a.MaxPodGracePeriodSeconds,
			MaxNodeProvisionTimeSeconds: a.MaxNodeProvisionTimeSeconds, PodPriorityThreshold: a.PodPriorityThreshold}
	}
	p.NodeDrainTimeoutMinutes = spec.GetNodeDrainTimeoutMinutes()
	p.ClusterImageRegistry.State = spec.GetImageRegistryState()
	p.ImageDigestMirrors = nil
	for _, m := range spec.GetImageDigestMirrors() {
		p.ImageDigestMirrors = append(p.ImageDigestMirrors, ImageDigestMirror{Source: m.GetSource(), Mirrors: append([]string(nil), m.GetMirrors()...)})
	}
	p.Ingress.Type = spec.GetIngressVisibility()
	p.CryptoRestrictions = spec.GetCryptoRestrictions()
}

// Spec is the model's properties that Cluster Service's spec holds, with their ARM values
// (authorized CIDRs as given): what RenderedProperties renders, and what the frontend sends
// once it has added the envelope, the identities and the KMS key. The etcd block, the
// operators' identities and the envelope are left out.
func (p *ClusterProperties) Spec() *csv1.ClusterSpec {
	spec := &csv1.ClusterSpec{
		VersionId:    p.Version.ID,
		ChannelGroup: p.Version.ChannelGroup,
		Network: &csv1.NetworkSpec{NetworkType: p.Network.NetworkType, PodCidr: p.Network.PodCIDR, ServiceCidr: p.Network.ServiceCIDR,
			MachineCidr: p.Network.MachineCIDR, HostPrefix: p.Network.HostPrefix},
		ApiVisibility: p.API.Visibility,
		Azure: &csv1.AzureSpec{ManagedResourceGroup: p.Platform.ManagedResourceGroup, SubnetId: p.Platform.SubnetID,
			NetworkSecurityGroupId: p.Platform.NetworkSecurityGroupID, OutboundType: p.Platform.OutboundType,
			VnetIntegrationSubnetId: p.Platform.VnetIntegrationSubnetID},
		ImageRegistryState:      p.ClusterImageRegistry.State,
		NodeDrainTimeoutMinutes: p.NodeDrainTimeoutMinutes,
		ApiAuthorizedCidrs:      append([]string(nil), p.API.AuthorizedCIDRs...),
		IngressVisibility:       p.Ingress.Type,
		CryptoRestrictions:      p.CryptoRestrictions,
		DnsBaseDomainPrefix:     p.DNS.BaseDomainPrefix,
	}
	a := p.Autoscaling
	spec.Autoscaling = &csv1.ClusterAutoscaling{MaxNodesTotal: a.MaxNodesTotal, MaxPodGracePeriodSeconds: a.MaxPodGracePeriodSeconds,
		MaxNodeProvisionTimeSeconds: a.MaxNodeProvisionTimeSeconds, PodPriorityThreshold: a.PodPriorityThreshold}
	for _, m := range p.ImageDigestMirrors {
		spec.ImageDigestMirrors = append(spec.ImageDigestMirrors, &csv1.ImageDigestMirror{Source: m.Source, Mirrors: append([]string(nil), m.Mirrors...)})
	}
	return spec
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
	props, _ := armpath.Render(c.Properties.Spec().ProtoReflect(), ClusterShapes)["properties"].(map[string]any)
	if props == nil {
		props = map[string]any{}
	}
	object := func(m map[string]any, key string) map[string]any {
		o, ok := m[key].(map[string]any)
		if !ok {
			o = map[string]any{}
			m[key] = o
		}
		return o
	}
	p := &c.Properties
	if c.ProvisioningState != "" {
		props["provisioningState"] = string(c.ProvisioningState)
	}
	object(props, "version")
	if dns := object(props, "dns"); p.DNS.BaseDomain != "" {
		dns["baseDomain"] = p.DNS.BaseDomain
	}
	if p.Console.URL != "" {
		props["console"] = map[string]any{"url": p.Console.URL}
	}
	object(props, "api")["url"] = p.API.URL
	platform := object(props, "platform")
	ua := p.Platform.OperatorsAuthentication.UserAssignedIdentities
	identities := map[string]any{"controlPlaneOperators": nonNil(ua.ControlPlaneOperators), "dataPlaneOperators": nonNil(ua.DataPlaneOperators)}
	if ua.ServiceManagedIdentity != "" {
		identities["serviceManagedIdentity"] = ua.ServiceManagedIdentity
	}
	platform["operatorsAuthentication"] = map[string]any{"userAssignedIdentities": identities}
	platform["issuerUrl"] = p.Platform.IssuerURL
	props["nodeDrainTimeoutMinutes"] = p.NodeDrainTimeoutMinutes
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
