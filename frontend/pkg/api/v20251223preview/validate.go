package v20251223preview

import (
	"fmt"
	"net"
	"net/http"
	"regexp"
	"slices"
	"strings"

	"github.com/openhcp/openhcp/frontend/pkg/api"
	"github.com/openhcp/openhcp/internal/arm"
)

// validator collects every problem with its field path, so the caller learns all of them at once.
type validator struct {
	errs []*arm.CloudError
	// stored is the existing cluster on an update, nil on create.
	stored *api.Cluster
}

// requiredSince checks a field this api-version made required that older versions did not
// have: on create it is required; a cluster created through an older version without it may
// keep it empty (storedEmpty), so a tag change through this version does not fail on it.
func (v *validator) requiredSince(present bool, storedEmpty func(*api.Cluster) bool, target string) bool {
	if !present && v.stored != nil && storedEmpty(v.stored) {
		return false
	}
	return v.required(present, target)
}

func (v *validator) add(target, format string, args ...any) {
	v.errs = append(v.errs, arm.NewCloudError(http.StatusBadRequest, arm.CodeInvalidRequestContent, target, format, args...))
}

func (v *validator) required(present bool, target string) bool {
	if !present {
		v.add(target, "Missing required field '%s'.", target)
	}
	return present
}

func (v *validator) enum(p *string, target string, allowed ...string) {
	if p != nil && !slices.Contains(allowed, *p) {
		v.add(target, "Invalid value '%s' for field '%s' (must be one of: %s).", *p, target, strings.Join(allowed, ", "))
	}
}

func (v *validator) rangeInt(p *int32, target string, lo, hi int64) {
	if p != nil && (int64(*p) < lo || int64(*p) > hi) {
		v.add(target, "Invalid value '%d' for field '%s' (must be between %d and %d).", *p, target, lo, hi)
	}
}

// armID checks that s is a resource ID of the given type (case-insensitive).
func (v *validator) armID(s, target, resourceType string) {
	id, err := arm.ParseResourceID(s)
	if err != nil {
		v.add(target, "Invalid value '%s' for field '%s': not a resource ID.", s, target)
		return
	}
	if !strings.EqualFold(id.ResourceType(), resourceType) {
		v.add(target, "Invalid value '%s' for field '%s': must be a resource ID of type %s.", s, target, resourceType)
	}
}

func (v *validator) cidr(p *string, target string) *net.IPNet {
	if p == nil {
		return nil
	}
	ip, n, err := net.ParseCIDR(*p)
	if err != nil || ip.To4() == nil {
		v.add(target, "Invalid value '%s' for field '%s': must be an IPv4 CIDR block.", *p, target)
		return nil
	}
	return n
}

var (
	baseDomainPrefixRE = regexp.MustCompile(`^[a-z]([-a-z0-9]*[a-z0-9])?$`)
	resourceGroupRE    = regexp.MustCompile(`^[-\w._()]{1,90}$`)
)

const (
	typeSubnet   = "Microsoft.Network/virtualNetworks/subnets"
	typeNSG      = "Microsoft.Network/networkSecurityGroups"
	typeIdentity = "Microsoft.ManagedIdentity/userAssignedIdentities"
)

// validate checks a decoded body against the specification's constraints (required fields,
// enums, ranges, patterns, resource ID types) and a few cross-field rules.
func validate(e *HcpOpenShiftCluster, stored *api.Cluster) error {
	v := &validator{stored: stored}
	v.required(e.Location != nil && *e.Location != "", "location")
	if v.required(e.Properties != nil, "properties") {
		validateProperties(v, e.Properties)
	}
	validateIdentity(v, e)
	return arm.Multiple(v.errs)
}

func validateProperties(v *validator, p *HcpOpenShiftClusterProperties) {
	if v.required(p.Version != nil, "properties.version") {
		v.requiredSince(p.Version.ID != nil, func(c *api.Cluster) bool { return c.Properties.Version.ID == "" }, "properties.version.id")
	}
	validateImageDigestMirrors(v, p.ImageDigestMirrors)
	if d := p.DNS; d != nil && d.BaseDomainPrefix != nil {
		s := *d.BaseDomainPrefix
		if len(s) > 15 || !baseDomainPrefixRE.MatchString(s) {
			v.add("properties.dns.baseDomainPrefix", "Invalid value '%s' for field 'properties.dns.baseDomainPrefix': at most 15 lowercase letters, digits and '-', starting with a letter.", s)
		}
	}
	if n := p.Network; n != nil {
		v.enum(n.NetworkType, "properties.network.networkType", api.NetworkTypeOVNKubernetes, api.NetworkTypeOther)
		nets := map[string]*net.IPNet{
			"properties.network.podCidr":     v.cidr(n.PodCIDR, "properties.network.podCidr"),
			"properties.network.serviceCidr": v.cidr(n.ServiceCIDR, "properties.network.serviceCidr"),
			"properties.network.machineCidr": v.cidr(n.MachineCIDR, "properties.network.machineCidr"),
		}
		v.rangeInt(n.HostPrefix, "properties.network.hostPrefix", 1, 32)
		pod := nets["properties.network.podCidr"]
		if pod == nil && n.PodCIDR == nil {
			_, pod, _ = net.ParseCIDR(defaultPodCIDR)
		}
		if pod != nil && n.HostPrefix != nil && *n.HostPrefix >= 1 && *n.HostPrefix <= 32 {
			if ones, _ := pod.Mask.Size(); int(*n.HostPrefix) <= ones {
				v.add("properties.network.hostPrefix", "Invalid value '%d' for field 'properties.network.hostPrefix': must be longer than the pod CIDR's prefix /%d.", *n.HostPrefix, ones)
			}
		}
		// The three ranges must not overlap (defaults fill the ones left out).
		names := []string{"properties.network.podCidr", "properties.network.serviceCidr", "properties.network.machineCidr"}
		defaults := []string{defaultPodCIDR, defaultServiceCIDR, defaultMachineCIDR}
		for i := range names {
			if nets[names[i]] == nil && [](*string){n.PodCIDR, n.ServiceCIDR, n.MachineCIDR}[i] == nil {
				_, nets[names[i]], _ = net.ParseCIDR(defaults[i])
			}
		}
		for i := 0; i < len(names); i++ {
			for j := i + 1; j < len(names); j++ {
				a, b := nets[names[i]], nets[names[j]]
				if a != nil && b != nil && (a.Contains(b.IP) || b.Contains(a.IP)) {
					v.add(names[j], "The CIDR block '%s' of '%s' overlaps '%s' of '%s'.", b, names[j], a, names[i])
				}
			}
		}
	}
	if a := p.API; a != nil {
		v.enum(a.Visibility, "properties.api.visibility", api.VisibilityPublic, api.VisibilityPrivate)
		if len(a.AuthorizedCIDRs) > 500 {
			v.add("properties.api.authorizedCidrs", "At most 500 entries are allowed in 'properties.api.authorizedCidrs', not %d.", len(a.AuthorizedCIDRs))
		}
		for i, c := range a.AuthorizedCIDRs {
			target := fmt.Sprintf("properties.api.authorizedCidrs[%d]", i)
			if ip := net.ParseIP(c); ip != nil && ip.To4() != nil {
				continue
			}
			v.cidr(&c, target)
		}
	}
	if v.required(p.Platform != nil, "properties.platform") {
		validatePlatform(v, p.Platform)
	}
	if a := p.Autoscaling; a != nil {
		const maxI32 = 1<<31 - 1
		v.rangeInt(a.MaxNodesTotal, "properties.autoscaling.maxNodesTotal", 0, maxI32)
		v.rangeInt(a.MaxPodGracePeriodSeconds, "properties.autoscaling.maxPodGracePeriodSeconds", 0, maxI32)
		v.rangeInt(a.MaxNodeProvisionTimeSeconds, "properties.autoscaling.maxNodeProvisionTimeSeconds", 0, maxI32)
	}
	v.rangeInt(p.NodeDrainTimeoutMinutes, "properties.nodeDrainTimeoutMinutes", 0, 10080)
	if et := p.Etcd; et != nil && et.DataEncryption != nil {
		validateEtcd(v, et.DataEncryption)
	}
	if r := p.ClusterImageRegistry; r != nil {
		v.enum(r.State, "properties.clusterImageRegistry.state", api.RegistryEnabled, api.RegistryDisabled)
	}
}

func validatePlatform(v *validator, pl *PlatformProfile) {
	if pl.ManagedResourceGroup != nil && (!resourceGroupRE.MatchString(*pl.ManagedResourceGroup) || strings.HasSuffix(*pl.ManagedResourceGroup, ".")) {
		v.add("properties.platform.managedResourceGroup", "Invalid value '%s' for field 'properties.platform.managedResourceGroup': not a valid resource group name.", *pl.ManagedResourceGroup)
	}
	if v.required(pl.SubnetID != nil, "properties.platform.subnetId") {
		v.armID(*pl.SubnetID, "properties.platform.subnetId", typeSubnet)
	}
	if v.requiredSince(pl.VnetIntegrationSubnetID != nil, func(c *api.Cluster) bool { return c.Properties.Platform.VnetIntegrationSubnetID == "" },
		"properties.platform.vnetIntegrationSubnetId") {
		v.armID(*pl.VnetIntegrationSubnetID, "properties.platform.vnetIntegrationSubnetId", typeSubnet)
		if pl.SubnetID != nil && strings.EqualFold(*pl.SubnetID, *pl.VnetIntegrationSubnetID) {
			v.add("properties.platform.vnetIntegrationSubnetId", "The VNet integration subnet must not be the cluster subnet '%s'.", *pl.SubnetID)
		}
	}
	if v.required(pl.NetworkSecurityGroupID != nil, "properties.platform.networkSecurityGroupId") {
		v.armID(*pl.NetworkSecurityGroupID, "properties.platform.networkSecurityGroupId", typeNSG)
	}
	v.enum(pl.OutboundType, "properties.platform.outboundType", api.OutboundTypeLoadBalancer)
	const oa = "properties.platform.operatorsAuthentication"
	if !v.required(pl.OperatorsAuthentication != nil, oa) {
		return
	}
	u := pl.OperatorsAuthentication.UserAssignedIdentities
	if !v.required(u != nil, oa+".userAssignedIdentities") {
		return
	}
	base := oa + ".userAssignedIdentities"
	v.required(u.ControlPlaneOperators != nil, base+".controlPlaneOperators")
	v.required(u.DataPlaneOperators != nil, base+".dataPlaneOperators")
	for _, m := range []struct {
		name string
		ids  map[string]string
	}{{"controlPlaneOperators", u.ControlPlaneOperators}, {"dataPlaneOperators", u.DataPlaneOperators}} {
		for _, k := range sortedKeys(m.ids) {
			v.armID(m.ids[k], fmt.Sprintf("%s.%s[%s]", base, m.name, k), typeIdentity)
		}
	}
	if v.required(u.ServiceManagedIdentity != nil, base+".serviceManagedIdentity") {
		v.armID(*u.ServiceManagedIdentity, base+".serviceManagedIdentity", typeIdentity)
	}
}

func validateEtcd(v *validator, de *EtcdDataEncryptionProfile) {
	const base = "properties.etcd.dataEncryption"
	v.enum(de.KeyManagementMode, base+".keyManagementMode", api.KeyManagementCustomer, api.KeyManagementPlatform)
	mode := str(de.KeyManagementMode, api.KeyManagementPlatform)
	switch {
	case mode == api.KeyManagementCustomer && de.CustomerManaged == nil:
		v.add(base+".customerManaged", "Missing required field '%s.customerManaged' (keyManagementMode is CustomerManaged).", base)
	case mode == api.KeyManagementPlatform && de.CustomerManaged != nil:
		v.add(base+".customerManaged", "Field '%s.customerManaged' must not be set when keyManagementMode is PlatformManaged.", base)
	}
	cm := de.CustomerManaged
	if cm == nil {
		return
	}
	v.enum(cm.EncryptionType, base+".customerManaged.encryptionType", api.EncryptionTypeKMS)
	if !v.required(cm.KMS != nil, base+".customerManaged.kms") {
		return
	}
	kms := cm.KMS
	v.length(kms.VaultName, base+".customerManaged.kms.vaultName")
	noVisibility := func(c *api.Cluster) bool {
		cm := c.Properties.Etcd.DataEncryption.CustomerManaged
		return cm == nil || cm.KMS == nil || cm.KMS.Visibility == ""
	}
	if v.requiredSince(kms.Visibility != nil, noVisibility, base+".customerManaged.kms.visibility") {
		v.enum(kms.Visibility, base+".customerManaged.kms.visibility", "Public", "Private")
	}
	k := kms.ActiveKey
	if !v.required(k != nil, base+".customerManaged.kms.activeKey") {
		return
	}
	v.length(k.Name, base+".customerManaged.kms.activeKey.name")
	v.length(k.Version, base+".customerManaged.kms.activeKey.version")
}

// length checks a required string of 1 to 255 characters.
func (v *validator) length(p *string, target string) {
	if v.required(p != nil, target) && (len(*p) < 1 || len(*p) > 255) {
		v.add(target, "Field '%s' must be 1 to 255 characters long.", target)
	}
}

func validateImageDigestMirrors(v *validator, mirrors []ImageDigestMirror) {
	const base = "properties.imageDigestMirrors"
	if len(mirrors) > 240 {
		v.add(base, "At most 240 entries are allowed in '%s', not %d.", base, len(mirrors))
	}
	seen := map[string]bool{}
	for i, m := range mirrors {
		at := fmt.Sprintf("%s[%d]", base, i)
		if v.required(m.Source != nil, at+".source") {
			if len(*m.Source) > 255 {
				v.add(at+".source", "Field '%s' must be at most 255 characters long.", at+".source")
			}
			// x-ms-identifiers: source identifies an entry.
			if seen[*m.Source] {
				v.add(at+".source", "The source '%s' appears more than once in '%s'.", *m.Source, base)
			}
			seen[*m.Source] = true
		}
		if v.required(m.Mirrors != nil, at+".mirrors") && (len(m.Mirrors) < 1 || len(m.Mirrors) > 255) {
			v.add(at+".mirrors", "Field '%s' must have 1 to 255 entries, not %d.", at+".mirrors", len(m.Mirrors))
		}
		for j, mirror := range m.Mirrors {
			if len(mirror) > 255 {
				v.add(fmt.Sprintf("%s.mirrors[%d]", at, j), "Each mirror must be at most 255 characters long.")
			}
		}
	}
}

func validateIdentity(v *validator, e *HcpOpenShiftCluster) {
	id := e.Identity
	if id != nil {
		v.enum(id.Type, "identity.type", "None", "SystemAssigned", "UserAssigned", "SystemAssigned,UserAssigned")
		for _, k := range sortedKeys(id.UserAssignedIdentities) {
			v.armID(k, fmt.Sprintf("identity.userAssignedIdentities[%s]", k), typeIdentity)
		}
	}
	// Control plane operators and the service managed identity act as the cluster, so they
	// must be assigned to it.
	if e.Properties == nil || e.Properties.Platform == nil || e.Properties.Platform.OperatorsAuthentication == nil ||
		e.Properties.Platform.OperatorsAuthentication.UserAssignedIdentities == nil {
		return
	}
	u := e.Properties.Platform.OperatorsAuthentication.UserAssignedIdentities
	assigned := func(rid string) bool {
		if id == nil {
			return false
		}
		for k := range id.UserAssignedIdentities {
			if strings.EqualFold(k, rid) {
				return true
			}
		}
		return false
	}
	const base = "properties.platform.operatorsAuthentication.userAssignedIdentities"
	for _, k := range sortedKeys(u.ControlPlaneOperators) {
		if rid := u.ControlPlaneOperators[k]; !assigned(rid) {
			v.add(fmt.Sprintf("%s.controlPlaneOperators[%s]", base, k), "The identity '%s' must also be listed in identity.userAssignedIdentities.", rid)
		}
	}
	if u.ServiceManagedIdentity != nil && !assigned(*u.ServiceManagedIdentity) {
		v.add(base+".serviceManagedIdentity", "The identity '%s' must also be listed in identity.userAssignedIdentities.", *u.ServiceManagedIdentity)
	}
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}
