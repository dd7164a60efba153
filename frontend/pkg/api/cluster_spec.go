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
// those arm_path options, and applies the specification's defaults to what the body leaves out.
// A property an api-version does not have is absent from its body and takes its default here.
// What the spec does not hold (the key management mode, the customer-managed key's fields as
// the model keeps them, the operators' identities) and the read-only properties are the
// version's to convert.
func SpecPropertiesFromARM(body any) ClusterProperties {
	spec := &csv1.ClusterSpec{}
	if err := armpath.Fill(spec.ProtoReflect(), body, ClusterShapes); err != nil {
		// A body decoded into its version's type has the specification's shapes: a mismatch
		// is a wrong arm_path, caught by the cluster document tests.
		panic(fmt.Sprintf("cluster body %T: %v", body, err))
	}
	def := func(s, d string) string {
		if s == "" {
			return d
		}
		return s
	}
	var out ClusterProperties
	out.Version = VersionProfile{ID: spec.GetVersionId(), ChannelGroup: def(spec.GetChannelGroup(), ChannelGroupStable)}
	out.DNS.BaseDomainPrefix = spec.GetDnsBaseDomainPrefix()
	n := spec.GetNetwork()
	out.Network = NetworkProfile{
		NetworkType: def(n.GetNetworkType(), NetworkTypeOVNKubernetes),
		PodCIDR:     def(n.GetPodCidr(), DefaultPodCIDR),
		ServiceCIDR: def(n.GetServiceCidr(), DefaultServiceCIDR),
		MachineCIDR: def(n.GetMachineCidr(), DefaultMachineCIDR),
		HostPrefix:  n.GetHostPrefix(),
	}
	if out.Network.HostPrefix == 0 {
		out.Network.HostPrefix = DefaultHostPrefix
	}
	out.API = APIProfile{Visibility: def(spec.GetApiVisibility(), VisibilityPublic), AuthorizedCIDRs: append([]string(nil), spec.GetApiAuthorizedCidrs()...)}
	az := spec.GetAzure()
	out.Platform = PlatformProfile{
		ManagedResourceGroup:    az.GetManagedResourceGroup(),
		SubnetID:                az.GetSubnetId(),
		OutboundType:            def(az.GetOutboundType(), OutboundTypeLoadBalancer),
		NetworkSecurityGroupID:  az.GetNetworkSecurityGroupId(),
		VnetIntegrationSubnetID: az.GetVnetIntegrationSubnetId(),
	}
	if a := spec.GetAutoscaling(); a != nil {
		out.Autoscaling = ClusterAutoscalingProfile{MaxNodesTotal: a.MaxNodesTotal, MaxPodGracePeriodSeconds: a.MaxPodGracePeriodSeconds,
			MaxNodeProvisionTimeSeconds: a.MaxNodeProvisionTimeSeconds, PodPriorityThreshold: a.PodPriorityThreshold}
	}
	out.NodeDrainTimeoutMinutes = spec.GetNodeDrainTimeoutMinutes()
	out.ClusterImageRegistry.State = def(spec.GetImageRegistryState(), RegistryEnabled)
	for _, m := range spec.GetImageDigestMirrors() {
		out.ImageDigestMirrors = append(out.ImageDigestMirrors, ImageDigestMirror{Source: m.GetSource(), Mirrors: append([]string(nil), m.GetMirrors()...)})
	}
	out.Ingress.Type = def(spec.GetIngressVisibility(), IngressPublic)
	out.CryptoRestrictions = def(spec.GetCryptoRestrictions(), CryptoNone)
	return out
}

// Network defaults of the specification, the same in every api-version.
const (
	DefaultPodCIDR     = "10.128.0.0/14"
	DefaultServiceCIDR = "172.30.0.0/16"
	DefaultMachineCIDR = "10.0.0.0/16"
	DefaultHostPrefix  = 23
)

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
