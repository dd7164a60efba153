package model

import (
	"fmt"
	"regexp"
	"strings"
	"time"

	"google.golang.org/protobuf/proto"

	csv1 "github.com/openhcp/openhcp/cluster-service/api/v1"
	"github.com/openhcp/openhcp/internal/armspec/bounds"
)

// The cluster's configuration: the fields besides version and network that reach the
// HostedCluster, some of which UpdateCluster may change. Create and update validate them with
// the same functions, so a value accepted once is accepted again.

// The bounds of the configuration are the ARM specification's, read from package bounds (the
// newest api-version's, generated from the specification). HyperShift allows as much: its
// allowedCIDRBlocks has the same maxItems, an image digest mirror the same maxItems and maxLength.

var (
	// host[:port][/namespace...][/repo], and for a source also *.host (containers-registries.conf).
	imageRepositoryRE = regexp.MustCompile(`^[a-zA-Z0-9]([-a-zA-Z0-9.]*[a-zA-Z0-9])?(:[0-9]{1,5})?(/[a-z0-9]+([._-]+[a-z0-9]+)*)*$`)
	// dns.baseDomainPrefix in the ARM spec.
	baseDomainPrefixRE = regexp.MustCompile(bounds.DNSProfileBaseDomainPrefixPattern)
	// A Key Vault key version's characters, at most the ARM spec's KmsKey.version maxLength of them.
	keyVersionRE = regexp.MustCompile(fmt.Sprintf(`^[A-Za-z0-9-]{1,%d}$`, bounds.KmsKeyVersionMaxLength))
)

// ValidateConfig checks the configuration of a spec being created; prefix is the spec's path.
func ValidateConfig(v *Violations, prefix string, s *csv1.ClusterSpec) {
	validateAutoscaling(v, prefix+".autoscaling", s.GetAutoscaling())
	ValidateDrainTimeout(v, prefix+".node_drain_timeout_minutes", s.GetNodeDrainTimeoutMinutes())
	validateAuthorizedCIDRs(v, prefix+".api_authorized_cidrs", s.GetApiAuthorizedCidrs())
	validateImageDigestMirrors(v, prefix+".image_digest_mirrors", s.GetImageDigestMirrors())
	OneOf(v, prefix+".ingress_visibility", s.GetIngressVisibility(), "Public", "Private", "Disabled")
	OneOf(v, prefix+".crypto_restrictions", s.GetCryptoRestrictions(), "None", "FIPS")
	if p := s.GetDnsBaseDomainPrefix(); p != "" && (len(p) > bounds.DNSProfileBaseDomainPrefixMaxLength || !baseDomainPrefixRE.MatchString(p)) {
		v.Add(prefix+".dns_base_domain_prefix", "must be 1-%d characters of [a-z0-9-], starting with a letter and not ending with '-', not %q",
			bounds.DNSProfileBaseDomainPrefixMaxLength, p)
	}
	if vis := s.GetEtcdEncryptionKeyVaultVisibility(); vis != "" {
		OneOf(v, prefix+".etcd_encryption_key_vault_visibility", vis, "Public", "Private")
		if s.GetEtcdEncryptionKeyId() == "" {
			v.Add(prefix+".etcd_encryption_key_vault_visibility", "is only for a customer-managed key")
		}
	}
	if s.GetIssuerUrl() != "" {
		v.Add(prefix+".issuer_url", "is chosen by Cluster Service, not by the caller")
	}
	if s.GetEtcdEncryptionBackupKeyId() != "" {
		v.Add(prefix+".etcd_encryption_backup_key_id", "is set by Cluster Service when the key version is rotated (UpdateCluster), not on create")
	}
	ValidateVnetIntegrationSubnet(v, prefix+".azure.vnet_integration_subnet_id", s.GetAzure())
}

// ValidateVnetIntegrationSubnet checks the VNet integration subnet, when az has one: a subnet
// resource ID other than the cluster's subnet (resource IDs compare case-insensitively). The
// frontend's deployment preflight calls it too, so a template is refused for what its PUT
// would be.
func ValidateVnetIntegrationSubnet(v *Violations, field string, az *csv1.AzureSpec) {
	id := az.GetVnetIntegrationSubnetId()
	if id == "" {
		return
	}
	if err := ValidateSubnetID(id); err != nil {
		v.Add(field, "must be a subnet resource ID: %v", err)
	} else if strings.EqualFold(id, az.GetSubnetId()) {
		v.Add(field, "must be a subnet of its own, not the cluster's subnet")
	}
}

func validateAutoscaling(v *Violations, field string, a *csv1.ClusterAutoscaling) {
	if a == nil {
		return
	}
	for name, val := range map[string]*int32{
		"max_nodes_total":                 a.MaxNodesTotal,
		"max_pod_grace_period_seconds":    a.MaxPodGracePeriodSeconds,
		"max_node_provision_time_seconds": a.MaxNodeProvisionTimeSeconds,
	} {
		if val != nil && *val < 0 {
			v.Add(field+"."+name, "must not be negative, not %d", *val)
		}
	}
}

// ValidateDrainTimeout checks a node drain timeout in minutes (a cluster's or a node pool's).
func ValidateDrainTimeout(v *Violations, field string, m int32) {
	lo, hi := int32(bounds.HcpOpenShiftClusterPropertiesNodeDrainTimeoutMinutesMinimum), int32(bounds.HcpOpenShiftClusterPropertiesNodeDrainTimeoutMinutesMaximum)
	if m < lo || m > hi {
		v.Add(field, "must be between %d and %d minutes, not %d", lo, hi, m)
	}
}

func validateAuthorizedCIDRs(v *Violations, field string, cidrs []string) {
	if len(cidrs) > bounds.APIProfileAuthorizedCIDRsMaxItems {
		v.Add(field, "must have at most %d entries, not %d", bounds.APIProfileAuthorizedCIDRsMaxItems, len(cidrs))
		return
	}
	seen := map[string]bool{}
	for i, c := range cidrs {
		if _, ok := ipv4CIDR(c); !ok {
			v.Add(Indexed(field, i), "must be an IPv4 CIDR block like 192.0.2.0/24, not %q", c)
			continue
		}
		// allowedCIDRBlocks is a set: the API server refuses duplicates.
		if seen[c] {
			v.Add(Indexed(field, i), "%s is listed twice", c)
		}
		seen[c] = true
	}
}

func validateImageDigestMirrors(v *Violations, field string, ms []*csv1.ImageDigestMirror) {
	if len(ms) > bounds.HcpOpenShiftClusterPropertiesImageDigestMirrorsMaxItems {
		v.Add(field, "must have at most %d entries, not %d", bounds.HcpOpenShiftClusterPropertiesImageDigestMirrorsMaxItems, len(ms))
		return
	}
	sources := map[string]bool{}
	for i, m := range ms {
		f := Indexed(field, i)
		src := m.GetSource()
		// The length bound (the ARM spec's source maxLength, ImageRepository's) is the whole
		// source's, the wildcard's "*." included.
		if len(src) > bounds.ImageDigestMirrorSourceMaxLength || !imageRepositoryRE.MatchString(strings.TrimPrefix(src, "*.")) {
			v.Add(f+".source", "must be host[:port][/namespace...][/repo] or *.host of at most %d characters, not %q", bounds.ImageDigestMirrorSourceMaxLength, src)
		} else if strings.HasPrefix(src, "*.") && strings.Contains(src, "/") {
			v.Add(f+".source", "a wildcard source (*.host) has no path, not %q", src)
		}
		if sources[src] {
			v.Add(f+".source", "%q is listed twice", src)
		}
		sources[src] = true
		switch n := len(m.GetMirrors()); {
		case n == 0:
			v.Add(f+".mirrors", "must have at least one mirror")
		case n > bounds.ImageDigestMirrorMirrorsMaxItems:
			v.Add(f+".mirrors", "must have at most %d mirrors, not %d", bounds.ImageDigestMirrorMirrorsMaxItems, n)
		}
		seen := map[string]bool{}
		for j, mir := range m.GetMirrors() {
			if len(mir) > bounds.ImageDigestMirrorMirrorsItemsMaxLength || !imageRepositoryRE.MatchString(mir) {
				v.Add(Indexed(f+".mirrors", j), "must be host[:port][/namespace...][/repo] of at most %d characters, not %q", bounds.ImageDigestMirrorMirrorsItemsMaxLength, mir)
			}
			if seen[mir] {
				v.Add(Indexed(f+".mirrors", j), "%q is listed twice", mir)
			}
			seen[mir] = true
		}
	}
}

// ValidateConfigUpdate checks the configuration fields of an update on their own (what does
// not depend on the stored cluster).
func ValidateConfigUpdate(v *Violations, u *csv1.ClusterUpdate) {
	validateAutoscaling(v, "update.autoscaling", u.GetAutoscaling())
	if u.NodeDrainTimeoutMinutes != nil {
		ValidateDrainTimeout(v, "update.node_drain_timeout_minutes", u.GetNodeDrainTimeoutMinutes())
	}
	if u.GetApiAuthorizedCidrs() != nil {
		validateAuthorizedCIDRs(v, "update.api_authorized_cidrs.values", u.GetApiAuthorizedCidrs().GetValues())
	}
	if u.GetImageDigestMirrors() != nil {
		validateImageDigestMirrors(v, "update.image_digest_mirrors.mirrors", u.GetImageDigestMirrors().GetMirrors())
	}
	if k := u.GetEtcdEncryptionKeyVersion(); k != "" && !keyVersionRE.MatchString(k) {
		v.Add("update.etcd_encryption_key_version", "must be a Key Vault key version (letters, digits, '-'), not %q", k)
	}
	if u.PausedUntil != nil && !validPausedUntil(u.GetPausedUntil()) {
		v.Add("update.paused_until", "must be \"true\" (paused until resumed), an RFC 3339 time (paused until then) or \"\" (resume), not %q", u.GetPausedUntil())
	}
	if wi := u.GetWorkloadIdentities(); wi != nil {
		for field, val := range WorkloadIdentityFields(wi) {
			if !uuidRE.MatchString(val) {
				v.Add("update.workload_identities."+field, "must be a managed identity client ID (UUID), not %q", val)
			}
		}
	}
}

// HasConfigUpdate reports whether u changes any configuration field (anything but the version
// and the channel group).
func HasConfigUpdate(u *csv1.ClusterUpdate) bool {
	return csv1.ClusterUpdateChangesConfiguration(u)
}

// validPausedUntil: the values of HyperShift's spec.pausedUntil Cluster Service sets ("true"
// or an RFC 3339 time), or "" for none.
func validPausedUntil(s string) bool {
	_, err := parsePausedUntil(s)
	return err == nil
}

// parsePausedUntil reads paused_until: "" and "true" are the zero time (not paused, and paused
// until resumed), anything else an RFC 3339 time.
func parsePausedUntil(s string) (time.Time, error) {
	if s == "" || s == "true" {
		return time.Time{}, nil
	}
	return time.Parse(time.RFC3339, s)
}

// PausedAt reports whether spec's paused_until pauses the cluster at now, and until when (zero
// for "true": until an SRE resumes it). A time already past pauses nothing; a value Cluster
// Service does not write pauses, as HyperShift takes it.
func PausedAt(spec *csv1.ClusterSpec, now time.Time) (until time.Time, paused bool) {
	p := spec.GetPausedUntil()
	t, err := parsePausedUntil(p)
	switch {
	case p == "":
		return time.Time{}, false
	case err != nil:
		return time.Time{}, true
	case t.IsZero():
		return time.Time{}, true
	default:
		return t, t.After(now)
	}
}

// ApplyConfigUpdate returns spec with u's configuration applied (spec itself is not changed,
// csv1.ApplyClusterUpdate says how each field applies), or violations that depend on the stored
// spec. The version and the channel group are left to the caller: it checks both against the
// version catalogue, and a version change is an upgrade policy, whose start writes the spec's
// version.
func ApplyConfigUpdate(v *Violations, spec *csv1.ClusterSpec, u *csv1.ClusterUpdate) *csv1.ClusterSpec {
	if u.GetWorkloadIdentities() != nil && spec.GetAzure() == nil {
		v.Add("update.workload_identities", "the cluster has no Azure platform")
		return proto.Clone(spec).(*csv1.ClusterSpec)
	}
	if u.GetEtcdEncryptionKeyVersion() != "" && spec.GetEtcdEncryptionKeyId() == "" {
		v.Add("update.etcd_encryption_key_version", "the cluster's etcd encryption key is platform-managed; only a customer-managed key has versions to rotate")
		return proto.Clone(spec).(*csv1.ClusterSpec)
	}
	config := proto.Clone(u).(*csv1.ClusterUpdate)
	config.VersionId, config.ChannelGroup = "", ""
	return csv1.ApplyClusterUpdate(spec, config)
}
