package model

import (
	"net/netip"
	"regexp"

	csv1 "github.com/openhcp/openhcp/cluster-service/api/v1"
)

var (
	uuidRE     = regexp.MustCompile(`(?i)^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$`)
	dnsNameRE  = regexp.MustCompile(`^([a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?\.)+[a-z]{2,63}$`)
	locationRE = regexp.MustCompile(`^[a-z0-9]{1,40}$`)
)

// ValidateClusterSpec checks a defaulted cluster spec being created (DefaultCluster, with its
// version already resolved by the caller); prefix is the spec's path in the request.
func ValidateClusterSpec(v *Violations, prefix string, spec *csv1.ClusterSpec) {
	OneOf(v, prefix+".channel_group", spec.GetChannelGroup(), ChannelGroups()...)
	OneOf(v, prefix+".api_visibility", spec.GetApiVisibility(), "Public", "Private")
	OneOf(v, prefix+".image_registry_state", spec.GetImageRegistryState(), "Enabled", "Disabled")
	if d := spec.GetDnsBaseDomain(); d != "" && !dnsNameRE.MatchString(d) {
		v.Add(prefix+".dns_base_domain", "must be a lowercase DNS name, not %q", d)
	}
	if k := spec.GetEtcdEncryptionKeyId(); k != "" {
		if err := ValidateKeyVaultKeyID(k); err != nil {
			v.Add(prefix+".etcd_encryption_key_id", "%v", err)
		}
	}

	ValidateConfig(v, prefix, spec)

	ValidateNetwork(v, prefix+".network", spec.GetNetwork())

	az := spec.GetAzure()
	if az == nil {
		v.Add(prefix+".azure", "is required")
	} else {
		if !locationRE.MatchString(az.GetLocation()) {
			v.Add(prefix+".azure.location", "must be an Azure location name like eastus, not %q", az.GetLocation())
		}
		if s := az.GetSubscriptionId(); s != "" && !uuidRE.MatchString(s) {
			v.Add(prefix+".azure.subscription_id", "must be a UUID, not %q", s)
		}
		if t := az.GetTenantId(); t != "" && !uuidRE.MatchString(t) {
			v.Add(prefix+".azure.tenant_id", "must be a UUID, not %q", t)
		}
		// HyperShift requires both on Azure.
		if err := ValidateSubnetID(az.GetSubnetId()); err != nil {
			v.Add(prefix+".azure.subnet_id", "must be a subnet resource ID: %v", err)
		}
		if err := ValidateNSGID(az.GetNetworkSecurityGroupId()); err != nil {
			v.Add(prefix+".azure.network_security_group_id", "must be a network security group resource ID: %v", err)
		}

		OneOf(v, prefix+".azure.outbound_type", az.GetOutboundType(), "LoadBalancer")
		if wi := az.GetWorkloadIdentities(); wi != nil {
			for field, val := range WorkloadIdentityFields(wi) {
				if !uuidRE.MatchString(val) {
					v.Add(prefix+".azure.workload_identities."+field, "must be a managed identity client ID (UUID), not %q", val)
				}
			}
		}
	}
}

// ValidateNetwork checks a defaulted cluster network (DefaultCluster): its type, the three IPv4
// CIDR blocks, that none overlaps another, and the host prefix (23-26, no larger than the pod
// network's); prefix is the network's path in the request. The frontend's deployment preflight
// calls it too, so a template is refused for what its PUT would be.
func ValidateNetwork(v *Violations, prefix string, n *csv1.NetworkSpec) {
	OneOf(v, prefix+".network_type", n.GetNetworkType(), "OVNKubernetes", "Other")
	nets := map[string]netip.Prefix{}
	for field, cidr := range map[string]string{"pod_cidr": n.GetPodCidr(), "service_cidr": n.GetServiceCidr(), "machine_cidr": n.GetMachineCidr()} {
		p, ok := ipv4CIDR(cidr)
		if !ok || p.Masked() != p {
			v.Add(prefix+"."+field, "must be an IPv4 network in CIDR form, not %q", cidr)
			continue
		}
		nets[field] = p
	}
	// Descriptions name no fields (the frontend puts the ARM path in the target).
	networkNames := map[string]string{"pod_cidr": "the pod network", "service_cidr": "the service network"}
	for _, pair := range [][2]string{{"pod_cidr", "service_cidr"}, {"pod_cidr", "machine_cidr"}, {"service_cidr", "machine_cidr"}} {
		a, aok := nets[pair[0]]
		b, bok := nets[pair[1]]
		if aok && bok && a.Overlaps(b) {
			v.Add(prefix+"."+pair[1], "overlaps %s %s", networkNames[pair[0]], a)
		}
	}
	if hp := n.GetHostPrefix(); hp < 23 || hp > 26 {
		v.Add(prefix+".host_prefix", "must be between 23 and 26, not %d", hp)
	} else if pod, ok := nets["pod_cidr"]; ok && int32(pod.Bits()) > hp {
		v.Add(prefix+".host_prefix", "/%d is larger than the pod network /%d", hp, pod.Bits())
	}
}

// ipv4CIDR parses s as an IPv4 CIDR block in dotted form. An IPv4 address written in IPv6
// form (::ffff:192.0.2.0/120), which net.ParseCIDR reads as IPv4, is refused: what is sent on is
// the string, which HyperShift and Azure read as IPv6.
func ipv4CIDR(s string) (netip.Prefix, bool) {
	p, err := netip.ParsePrefix(s)
	return p, err == nil && p.Addr().Is4()
}

// DefaultCluster fills what the caller left empty with the documented defaults, so the stored
// spec says exactly what was built.
func DefaultCluster(s *csv1.ClusterSpec) {
	if s.ChannelGroup == "" {
		s.ChannelGroup = DefaultChannelGroup
	}
	if s.ApiVisibility == "" {
		s.ApiVisibility = "Public"
	}
	if s.ImageRegistryState == "" {
		s.ImageRegistryState = "Enabled"
	}
	if s.Network == nil {
		s.Network = &csv1.NetworkSpec{}
	}
	n := s.Network
	if n.NetworkType == "" {
		n.NetworkType = "OVNKubernetes"
	}
	if n.PodCidr == "" {
		n.PodCidr = "10.128.0.0/14"
	}
	if n.ServiceCidr == "" {
		n.ServiceCidr = "172.30.0.0/16"
	}
	if n.MachineCidr == "" {
		n.MachineCidr = "10.0.0.0/16"
	}
	if n.HostPrefix == 0 {
		n.HostPrefix = 23
	}
	if s.Azure != nil && s.Azure.OutboundType == "" {
		s.Azure.OutboundType = "LoadBalancer"
	}
	if s.IngressVisibility == "" {
		s.IngressVisibility = "Public"
	}
	if s.CryptoRestrictions == "" {
		s.CryptoRestrictions = "None"
	}
}
