// Package fieldcheck owns the validation rules that every api-version of hcpOpenShiftClusters
// shares: it checks external field values by their JSON path and collects every problem as an
// ARM error, so each version package keeps only its types, enums, limits and field paths.
package fieldcheck

import (
	"fmt"
	"maps"
	"net"
	"net/http"
	"net/netip"
	"regexp"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/openhcp/openhcp/frontend/pkg/api"
	"github.com/openhcp/openhcp/frontend/pkg/api/profiles"
	"github.com/openhcp/openhcp/frontend/pkg/rolesets"
	"github.com/openhcp/openhcp/internal/arm"

	"github.com/openhcp/openhcp/cluster-service/pkg/versions"
)

// Resource types that fields of the cluster refer to.
const (
	TypeSubnet   = "Microsoft.Network/virtualNetworks/subnets"
	TypeNSG      = "Microsoft.Network/networkSecurityGroups"
	TypeIdentity = "Microsoft.ManagedIdentity/userAssignedIdentities"
)

// resourceGroupRE is ARM's rule for a resource group's name, which the specification does not
// state for managedResourceGroup (a plain string there).
var resourceGroupRE = regexp.MustCompile(`^[-\w._()]{1,90}$`)

// Checker collects every problem with its field path, so the caller learns all of them at once.
type Checker struct {
	errs []*arm.CloudError
	// Stored is the existing cluster on an update, nil on create.
	Stored *api.Cluster
	// AsCreate: the api-version checks a write to a stored cluster as a create (every field it
	// requires it required from the start), so the rules for fields required since a version
	// do not read Stored; a rule about what the write changes (identitiesAsStored) still does.
	AsCreate bool
	// NodePoolRules are the rules of a node pool body's api-version and of the pool it writes
	// over, which the hand-written checks its generated checks call read (NodePoolVersion,
	// OSDiskSizeBounded).
	NodePoolRules NodePoolRules
	// RoleSets is the hcpOperatorIdentityRoleSets catalogue the operators' names are checked
	// against (operatorNames); nil checks no names (the api package's tests of a body's shape).
	RoleSets *rolesets.Catalogue
}

// storedForRequired is the stored cluster the rules for fields an api-version made required
// read: nil on a create and when the version checks every write as a create.
func (v *Checker) storedForRequired() *api.Cluster {
	if v.AsCreate {
		return nil
	}
	return v.Stored
}

// Err returns every collected problem as one error, or nil.
func (v *Checker) Err() error { return arm.Multiple(v.errs) }

// Add records a problem with the field at target, up to api.MaxReportedProblems.
func (v *Checker) Add(target, format string, args ...any) {
	if !v.Full() {
		v.errs = append(v.errs, arm.NewCloudError(http.StatusBadRequest, arm.CodeInvalidRequestContent, target, format, args...))
	}
}

// Full says no more problems are recorded: a loop over a list's entries stops there.
func (v *Checker) Full() bool { return len(v.errs) >= api.MaxReportedProblems }

// Required records a missing field and reports whether it is present.
func (v *Checker) Required(present bool, target string) bool {
	if !present {
		v.Add(target, "Missing required field '%s'.", target)
	}
	return present
}

// RequiredSince checks a field an api-version made required that older versions did not
// have: on create it is required; a cluster created through an older version without it may
// keep it empty (storedEmpty), so a tag change through the newer version does not fail on it.
// The empty value counts as keeping it: the RP renders such a field "" (the spec requires it
// in responses), and a PATCH merges into that rendering.
func (v *Checker) RequiredSince(p *string, storedEmpty func(*api.Cluster) bool, target string) bool {
	if stored := v.storedForRequired(); (p == nil || *p == "") && stored != nil && storedEmpty(stored) {
		return false
	}
	return v.Required(p != nil, target)
}

// ChannelGroup refuses an explicit empty channelGroup (cluster or node pool): the
// specification's default 'stable' is for a channelGroup that is not specified, and "" names no
// channel group, so accepting it would store a value that a GET cannot show back.
func (v *Checker) ChannelGroup(p *string, target string) {
	if p != nil && *p == "" {
		v.Add(target, "The value of '%s' must not be empty: leave it out for the default channel group '%s'.", target, api.ChannelGroupStable)
	}
}

// VersionID refuses an explicit empty version ID on a create, where the api-version lets the
// version out (2024-06-10-preview): the empty ID names no version, so Cluster Service would pick
// its default while the stored document kept "", and a GET could show neither what was sent nor
// what runs. A cluster stored without one (created so) keeps its empty value.
func (v *Checker) VersionID(p *string, target string) {
	if stored := v.storedForRequired(); p != nil && *p == "" && (stored == nil || stored.Spec.GetVersionId() != "") {
		v.Add(target, "The value of '%s' must not be empty: leave it out for the default version.", target)
	}
}

// Enum checks that a present value is one of allowed.
func (v *Checker) Enum(p *string, target string, allowed ...string) {
	if p != nil && !slices.Contains(allowed, *p) {
		v.Add(target, "Invalid value '%s' for field '%s' (must be one of: %s).", *p, target, strings.Join(allowed, ", "))
	}
}

// RangeInt checks that a present value lies within lo..hi.
func (v *Checker) RangeInt(p *int32, target string, lo, hi int64) {
	if p != nil && (int64(*p) < lo || int64(*p) > hi) {
		v.Add(target, "Invalid value '%d' for field '%s' (must be between %d and %d).", *p, target, lo, hi)
	}
}

// AtLeast checks that a present value is at least lo.
func (v *Checker) AtLeast(p *int32, target string, lo int64) {
	if p != nil && int64(*p) < lo {
		v.Add(target, "Invalid value '%d' for field '%s' (must be at least %d).", *p, target, lo)
	}
}

// Length checks a required string of 1 to 255 characters.
func (v *Checker) Length(p *string, target string) {
	if v.Required(p != nil, target) && (len(*p) < 1 || len(*p) > 255) {
		v.Add(target, "Field '%s' must be 1 to 255 characters long.", target)
	}
}

// ArmID checks that s is a resource ID of the given type (case-insensitive).
func (v *Checker) ArmID(s, target, resourceType string) {
	id, err := arm.ParseResourceID(s)
	if err != nil {
		v.Add(target, "Invalid value '%s' for field '%s': not a resource ID.", s, target)
		return
	}
	if !strings.EqualFold(id.ResourceType(), resourceType) {
		v.Add(target, "Invalid value '%s' for field '%s': must be a resource ID of type %s.", s, target, resourceType)
	}
}

// CIDR checks that a present value is an IPv4 CIDR block written as one: an IPv4 address in
// IPv6 form (::ffff:192.0.2.0/120), which net.ParseCIDR reads as IPv4, is not (Cluster
// Service's rule, model.ValidateNetwork, refuses it too: the string is what HyperShift is given).
func (v *Checker) CIDR(p *string, target string) {
	if p == nil {
		return
	}
	if pfx, err := netip.ParsePrefix(*p); err != nil || !pfx.Addr().Is4() {
		v.Add(target, "Invalid value '%s' for field '%s': must be an IPv4 CIDR block.", *p, target)
	}
}

// DNS checks properties.dns: all its rules (baseDomainPrefix's length and form) are the
// specification's, generated (zz_generated_shared.go).
func (v *Checker) DNS(d *profiles.DNSProfile) {
	specDNSProfile(v, d, "properties.dns")
}

// Network checks the structure of properties.network: its enum (generated) and that each CIDR
// block is one. CIDR syntax stays here because it is the property's type (a string that is not
// a CIDR block is no more a pod network than a misspelt enum value is a network type), and
// every api-version's specification describes it so. What the values mean together (a hostPrefix
// within the pod network and the range OpenShift on Azure takes, three blocks that do not
// overlap) is Cluster Service's rule, checked once there (model.ValidateClusterSpec) on the
// spec it has defaulted; its refusal reaches the caller as a 400 naming the ARM field
// (fieldViolations).
func (v *Checker) Network(n *profiles.NetworkProfile) {
	specNetworkProfile(v, n, "properties.network")
	v.CIDR(n.PodCIDR, "properties.network.podCidr")
	v.CIDR(n.ServiceCIDR, "properties.network.serviceCidr")
	v.CIDR(n.MachineCIDR, "properties.network.machineCidr")
	// An explicit 0 is a value, never the same as an absent field: Cluster Service, which cannot
	// tell them apart (no presence), would take it for its default. Its range is Cluster
	// Service's rule.
	if n.HostPrefix != nil && *n.HostPrefix == 0 {
		v.Add("properties.network.hostPrefix", "The value of 'properties.network.hostPrefix' must not be 0: leave it out for the default.")
	}
}

// API checks properties.api: the specification's rules (generated), then that each authorized
// CIDR is an IPv4 address or CIDR block, which the specification's plain string cannot say.
func (v *Checker) API(a *profiles.APIProfile) {
	authorizedCIDRs := a.AuthorizedCIDRs
	specAPIProfile(v, a, "properties.api")
	if len(authorizedCIDRs) > specMaxItemsAPIProfileAuthorizedCIDRs {
		return // the entries of a list too long are not checked one by one
	}
	for i, c := range authorizedCIDRs {
		if v.Full() {
			return
		}
		target := fmt.Sprintf("properties.api.authorizedCidrs[%d]", i)
		if ip := net.ParseIP(c); ip != nil && ip.To4() != nil {
			continue
		}
		v.CIDR(&c, target)
	}
}

// Autoscaling checks properties.autoscaling: all its rules (the fields' minimums) are the
// specification's, generated.
func (v *Checker) Autoscaling(a *profiles.ClusterAutoscalingProfile) {
	specClusterAutoscalingProfile(v, a, "properties.autoscaling")
}

// ImageRegistry checks properties.clusterImageRegistry: all its rules (state's enum) are the
// specification's, generated.
func (v *Checker) ImageRegistry(r *profiles.ClusterImageRegistryProfile) {
	specClusterImageRegistryProfile(v, r, "properties.clusterImageRegistry")
}

// ManagedResourceGroup checks properties.platform.managedResourceGroup against ARM's rule for a
// resource group's name (the specification states none: its type is a plain string).
func (v *Checker) ManagedResourceGroup(p *string) {
	if p != nil && (!resourceGroupRE.MatchString(*p) || strings.HasSuffix(*p, ".")) {
		v.Add("properties.platform.managedResourceGroup", "Invalid value '%s' for field 'properties.platform.managedResourceGroup': not a valid resource group name.", *p)
	}
}

// OperatorIdentitiesPath is the field path of the operators' user-assigned identities.
const OperatorIdentitiesPath = "properties.platform.operatorsAuthentication.userAssignedIdentities"

// MaxIdentities bounds the entries of each identity map a resource takes: a cluster's and a
// node pool's identity.userAssignedIdentities, and the operators' controlPlaneOperators and
// dataPlaneOperators. The specification states no maxProperties for them. A cluster needs one
// identity per operator of its OpenShift version: the shipped role sets
// (frontend/pkg/rolesets/default.json) name at most 8 control plane and 3 data plane operators,
// and identity.userAssignedIdentities holds the control plane operators' identities and the
// service managed identity. 32 leaves room for operators that later versions add, and keeps a
// body's identities to a few kilobytes.
const MaxIdentities = 32

// identityCount refuses a map of more than MaxIdentities entries at target and reports whether
// it is within the bound (its entries are then worth checking one by one).
func identityCount[V any](v *Checker, m map[string]V, target string) bool {
	if len(m) > MaxIdentities {
		v.Add(target, "At most %d entries are allowed in '%s', not %d.", MaxIdentities, target, len(m))
		return false
	}
	return true
}

// OperatorsAuthentication checks properties.platform.operatorsAuthentication, which is
// required (oa is nil when it is absent). Its required properties are the specification's,
// written here rather than generated because each guards the resource ID checks of what it
// holds (UserAssignedIdentityResourceId's type, which the specification names but cannot check),
// in the order a caller has always been answered.
func (v *Checker) OperatorsAuthentication(oa *profiles.OperatorsAuthenticationProfile) {
	if !v.Required(oa != nil, "properties.platform.operatorsAuthentication") {
		return
	}
	u := oa.UserAssignedIdentities
	if !v.Required(u != nil, OperatorIdentitiesPath) {
		return
	}
	controlPlane, dataPlane, serviceManaged := u.ControlPlaneOperators, u.DataPlaneOperators, u.ServiceManagedIdentity
	const base = OperatorIdentitiesPath
	v.Required(controlPlane != nil, base+".controlPlaneOperators")
	v.Required(dataPlane != nil, base+".dataPlaneOperators")
	for _, m := range []struct {
		name string
		ids  map[string]string
	}{{"controlPlaneOperators", controlPlane}, {"dataPlaneOperators", dataPlane}} {
		if !identityCount(v, m.ids, base+"."+m.name) {
			continue
		}
		for _, k := range SortedKeys(m.ids) {
			v.ArmID(m.ids[k], fmt.Sprintf("%s.%s[%s]", base, m.name, k), TypeIdentity)
		}
	}
	if v.Required(serviceManaged != nil, base+".serviceManagedIdentity") {
		v.ArmID(*serviceManaged, base+".serviceManagedIdentity", TypeIdentity)
	}
}

// Identity checks the resource's identity (nil when the body has none), and that it agrees with
// the operators' identities (nil when the body has none, which OperatorsAuthentication refuses):
// assignedIdentities. The type (required, and ARM's common ManagedServiceIdentityType) is
// identityType's, shared with node pools: the common types are not among the definitions the
// generator walks. A map over MaxIdentities is refused as a whole (OperatorsAuthentication
// refuses the operators' maps), its entries left unchecked.
func (v *Checker) Identity(id *profiles.ManagedServiceIdentity, operators *profiles.UserAssignedIdentitiesProfile) {
	var assignedIDs map[string]*profiles.UserAssignedIdentity
	if id != nil {
		assignedIDs = id.UserAssignedIdentities
		v.identityType(id)
		if !identityCount(v, assignedIDs, "identity.userAssignedIdentities") {
			return
		}
		for _, k := range SortedKeys(assignedIDs) {
			v.ArmID(k, fmt.Sprintf("identity.userAssignedIdentities[%s]", k), TypeIdentity)
		}
	}
	if operators != nil && len(operators.ControlPlaneOperators) <= MaxIdentities && !v.identitiesAsStored(assignedIDs, operators) {
		v.assignedIdentities(assignedIDs, operators)
	}
}

// identitiesAsStored says a write leaves the stored cluster's assigned identities and its
// operators' identities as they are (the same keys and resource IDs, spelt the same). Such a
// write is not held to assignedIdentities: a cluster stored before that rule (one that assigned
// a data plane operator's identity to itself, as this repository's own example once did) still
// takes a write of its tags or any other field, and a write that changes its identities must
// leave them consistent. False on a create.
func (v *Checker) identitiesAsStored(assigned map[string]*profiles.UserAssignedIdentity, u *profiles.UserAssignedIdentitiesProfile) bool {
	if v.Stored == nil {
		return false
	}
	var stored map[string]*api.UserAssignedIdentity
	if v.Stored.Identity != nil {
		stored = v.Stored.Identity.UserAssignedIdentities
	}
	if len(stored) != len(assigned) {
		return false
	}
	for k := range assigned {
		if _, ok := stored[k]; !ok {
			return false
		}
	}
	s, now := v.Stored.OperatorIdentities, u.ToInternal()
	return maps.Equal(s.ControlPlaneOperators, now.ControlPlaneOperators) && maps.Equal(s.DataPlaneOperators, now.DataPlaneOperators) &&
		s.ServiceManagedIdentity == now.ServiceManagedIdentity
}

// assignedIdentities checks that the identities assigned to the cluster (the keys of
// identity.userAssignedIdentities) are exactly those that act as the cluster: each control
// plane operator's and the service managed identity, each used once. A data plane operator's
// identity acts inside the cluster, for its workload, so it must not be assigned to the cluster.
// This is ARM's contract for the resource type (Azure's own resource provider refuses the same
// bodies). Resource IDs are compared case-insensitively, as ARM compares them; each problem is
// reported at the entry it is about.
func (v *Checker) assignedIdentities(assigned map[string]*profiles.UserAssignedIdentity, u *profiles.UserAssignedIdentitiesProfile) {
	const base = OperatorIdentitiesPath
	// usedBy holds, for each assigned identity (lower-cased), the fields that refer to it.
	usedBy := make(map[string][]string, len(assigned))
	for k := range assigned {
		usedBy[strings.ToLower(k)] = nil
	}
	use := func(rid, field string) {
		key := strings.ToLower(rid)
		if _, ok := usedBy[key]; !ok {
			v.Add(base+"."+field, "The identity '%s' is not assigned to this resource: it must also be a key of 'identity.userAssignedIdentities'.", rid)
			return
		}
		usedBy[key] = append(usedBy[key], field)
	}
	for _, k := range SortedKeys(u.ControlPlaneOperators) {
		use(u.ControlPlaneOperators[k], fmt.Sprintf("controlPlaneOperators[%s]", k))
	}
	if u.ServiceManagedIdentity != nil {
		use(*u.ServiceManagedIdentity, "serviceManagedIdentity")
	}
	first := make(map[string]string, len(assigned)) // the first key naming each identity
	for _, k := range SortedKeys(assigned) {
		target := fmt.Sprintf("identity.userAssignedIdentities[%s]", k)
		// Two keys naming one identity would leave which client ID an operator gets to map order
		// (workload identities are looked up case-insensitively).
		if other, ok := first[strings.ToLower(k)]; ok {
			v.Add(target, "The identity '%s' is assigned to this resource more than once: '%s' names the same identity (resource IDs are case-insensitive).", k, other)
			continue
		}
		first[strings.ToLower(k)] = k
		switch by := usedBy[strings.ToLower(k)]; len(by) {
		case 0:
			v.Add(target, "The identity '%s' is assigned to this resource but not used: no control plane operator and not the service managed identity in '%s' refers to it.", k, base)
		case 1:
		default:
			v.Add(target, "The identity '%s' is used multiple times (by %s in '%s'): each identity assigned to this resource serves one control plane operator or the service managed identity.", k, strings.Join(by, ", "), base)
		}
	}
	if len(u.DataPlaneOperators) > MaxIdentities {
		return
	}
	for _, k := range SortedKeys(u.DataPlaneOperators) {
		rid := u.DataPlaneOperators[k]
		if _, isAssigned := usedBy[strings.ToLower(rid)]; isAssigned {
			v.Add(fmt.Sprintf("%s.dataPlaneOperators[%s]", base, k), "The identity '%s' of a data plane operator must not be assigned to this resource (a key of 'identity.userAssignedIdentities'): a data plane operator's identity acts inside the cluster, not as the cluster.", rid)
		}
	}
}

// operatorNames checks the names of controlPlaneOperators and dataPlaneOperators against the
// operators the role set of the cluster's minor version lists (RoleSets), as Azure's own resource
// provider refuses an identity for an operator the version does not run. Names are compared
// exactly: they are the keys the operators' identities are looked up by (workloadIdentities in
// the frontend, Cluster Service's operator list in Azure's), so "Ingress" would leave the ingress
// operator without its identity.
//
// The rule is about names only: an operator the role set marks "Always" is not required, as the
// specification's own example bodies send empty maps and a cluster without an operator's
// identity is Cluster Service's to refuse or run as it does today.
//
// The minor is that of properties.version.id ("4.19.7" is 4.19); without one, the stored
// cluster's; without that either (a create that leaves the version to Cluster Service, which
// gives the newest version it offers), the newest minor with a role set. A minor with no role set
// is refused at properties.version.id when there are names to check, and only then: with empty
// maps the version is Cluster Service's to accept or refuse. A write that leaves the operators
// and the minor as stored is not checked, so a cluster stored before this rule still takes a
// write of its tags; an upgrade to a minor whose role set lacks a stored operator is refused at
// that operator's entry.
func (v *Checker) operatorNames(versionID *string, u *profiles.UserAssignedIdentitiesProfile) {
	if v.RoleSets == nil || u == nil {
		return
	}
	cp, dp := u.ControlPlaneOperators, u.DataPlaneOperators
	if len(cp)+len(dp) == 0 || len(cp) > MaxIdentities || len(dp) > MaxIdentities {
		return // nothing to check, or a map OperatorsAuthentication refuses as a whole
	}
	id, storedID := "", ""
	if v.Stored != nil {
		storedID = v.Stored.Spec.GetVersionId()
	}
	if id = storedID; versionID != nil && *versionID != "" {
		id = *versionID
	}
	if v.Stored != nil && sameMinor(id, storedID) {
		s := v.Stored.OperatorIdentities
		if maps.Equal(s.ControlPlaneOperators, cp) && maps.Equal(s.DataPlaneOperators, dp) {
			return
		}
	}
	var rs rolesets.RoleSet
	var ok bool
	assumed := ""
	if id == "" {
		rs, ok = v.RoleSets.Newest()
		assumed = " ('properties.version.id' is not given: the newest minor version with a role set is assumed.)"
	} else if minor, isVersion := versions.Minor(id); isVersion {
		rs, ok = v.RoleSets.Get(minor)
	}
	if !ok {
		// A minor without a role set: whether the version is offered at all is Cluster
		// Service's rule (its catalogue), which answers it with the request's other problems;
		// refusing it here would hide those. The names are left unchecked.
		return
	}
	for _, m := range []struct {
		field, plane string
		ids          map[string]string
		ops          []rolesets.Operator
	}{{"controlPlaneOperators", "control plane", cp, rs.ControlPlaneOperators}, {"dataPlaneOperators", "data plane", dp, rs.DataPlaneOperators}} {
		names := rolesets.Names(m.ops)
		for _, k := range SortedKeys(m.ids) {
			if v.Full() {
				return
			}
			if slices.Contains(names, k) {
				continue
			}
			hint := ""
			if i := slices.IndexFunc(names, func(n string) bool { return strings.EqualFold(n, k) }); i >= 0 {
				hint = fmt.Sprintf(" Operator names are case-sensitive: did you mean '%s'?", names[i])
			}
			v.Add(fmt.Sprintf("%s.%s[%s]", OperatorIdentitiesPath, m.field, k), "OpenShift %s has no %s operator '%s': its %s operators are %s (hcpOperatorIdentityRoleSets/%s).%s%s",
				rs.Version, m.plane, k, m.plane, orNone(names), rs.Version, hint, assumed)
		}
	}
}

// sameMinor says two version IDs name the same minor (two IDs of no known form: the same ID).
func sameMinor(a, b string) bool {
	ma, okA := versions.Minor(a)
	mb, okB := versions.Minor(b)
	if okA && okB {
		return ma == mb
	}
	return a == b
}

func orNone(names []string) string {
	if len(names) == 0 {
		return "none"
	}
	return strings.Join(names, ", ")
}

// ImageDigestMirrors checks properties.imageDigestMirrors: all its rules (the list's length,
// each entry's source and mirrors, a source given once) are the specification's, generated.
func (v *Checker) ImageDigestMirrors(mirrors []profiles.ImageDigestMirror) {
	specHcpOpenShiftClusterPropertiesImageDigestMirrors(v, mirrors, "properties.imageDigestMirrors")
}

// SortedKeys returns m's keys in order, so errors come out in a stable order.
func SortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// Azure Resource Manager's limits on a resource's tags. ARM enforces them before a request
// reaches a resource provider; the frontend, which serves here without ARM in front of it,
// enforces them too (Tags), so no caller stores more than ARM would let through.
const (
	MaxTags        = 50
	MaxTagNameLen  = 512
	MaxTagValueLen = 256
	// tagNameForbidden are the characters ARM refuses in a tag's name.
	tagNameForbidden = `<>%&\?/`
)

// Tags checks a resource's tags against ARM's limits: at most MaxTags, each name 1 to
// MaxTagNameLen characters without tagNameForbidden, each value at most MaxTagValueLen, and no
// two names differing only in case (ARM's tag names are case-insensitive).
func (v *Checker) Tags(tags map[string]string) {
	if len(tags) > MaxTags {
		v.Add("tags", "At most %d tags are allowed, not %d.", MaxTags, len(tags))
		return
	}
	seen := map[string]string{}
	for _, k := range SortedKeys(tags) {
		switch n := utf8.RuneCountInString(k); {
		case n < 1 || n > MaxTagNameLen:
			v.Add("tags", "A tag name must be 1 to %d characters long, not %d.", MaxTagNameLen, n)
			continue
		case strings.ContainsAny(k, tagNameForbidden):
			v.Add("tags", "The tag name '%s' has a character tag names cannot have (%s).", k, tagNameForbidden)
			continue
		}
		if other, ok := seen[strings.ToLower(k)]; ok {
			v.Add("tags", "The tag names '%s' and '%s' differ only in case; tag names are case-insensitive.", other, k)
		}
		seen[strings.ToLower(k)] = k
		if n := utf8.RuneCountInString(tags[k]); n > MaxTagValueLen {
			v.Add(fmt.Sprintf("tags[%s]", k), "A tag value must be at most %d characters long, not %d.", MaxTagValueLen, n)
		}
	}
}

// identityType checks an identity block's type: required (ARM's ManagedServiceIdentity, common
// types, requires it) and one of ARM's four. User-assigned identities beside None or
// SystemAssigned are taken as the specification's own examples send them (NodePools_Update's
// maximum set: type None with userAssignedIdentities), not refused as ARM itself would.
func (v *Checker) identityType(id *profiles.ManagedServiceIdentity) {
	if v.Required(id.Type != nil, "identity.type") {
		v.Enum(id.Type, "identity.type", "None", "SystemAssigned", "UserAssigned", "SystemAssigned,UserAssigned")
	}
}
