package armgen

// Version is what the generator needs to know about one api-version beyond its specification.
type Version struct {
	// APIVersion names the folder of the specification: preview/<APIVersion>/openapi.json.
	APIVersion string
	// Package is the Go package under frontend/pkg/api that serves it.
	Package string
	// SameAs, when set, is an earlier api-version whose cluster, node pool and external auth
	// schemas this one repeats: the generator checks that every definition the roots reach is
	// the same (descriptions aside) and writes aliases of that version's types.
	SameAs string
	// Shared maps a definition to the Go type of package profiles (or internal/arm) that every
	// version uses for it: the generated file declares an alias, and the conversions to and
	// from the internal model live once, with that type. A definition whose shape differs
	// between versions must not be listed (the generator fails when it does).
	Shared map[string]string
}

// Roots are the resources a version package serves.
var Roots = []string{"HcpOpenShiftCluster", "NodePool", "ExternalAuth"}

// external are definitions of the common types that map to a type of internal/arm and get no
// alias (the envelope's systemData).
var external = map[string]string{"systemData": "arm.SystemData"}

// typeNames renames definitions whose spec name breaks Go's initialisms.
var typeNames = map[string]string{"ApiProfile": "APIProfile", "DnsProfile": "DNSProfile"}

// sharedProfiles are the definitions whose JSON shape is the same in every api-version.
var sharedProfiles = map[string]string{
	"VersionProfile":                 "profiles.VersionProfile",
	"DnsProfile":                     "profiles.DNSProfile",
	"NetworkProfile":                 "profiles.NetworkProfile",
	"ConsoleProfile":                 "profiles.ConsoleProfile",
	"ApiProfile":                     "profiles.APIProfile",
	"OperatorsAuthenticationProfile": "profiles.OperatorsAuthenticationProfile",
	"UserAssignedIdentitiesProfile":  "profiles.UserAssignedIdentitiesProfile",
	"ClusterAutoscalingProfile":      "profiles.ClusterAutoscalingProfile",
	"ClusterImageRegistryProfile":    "profiles.ClusterImageRegistryProfile",
	"ManagedServiceIdentity":         "profiles.ManagedServiceIdentity",
	"UserAssignedIdentity":           "profiles.UserAssignedIdentity",
	"ImageDigestMirror":              "profiles.ImageDigestMirror",
	"NodePoolVersionProfile":         "profiles.NodePoolVersionProfile",
	"NodePoolAutoScaling":            "profiles.NodePoolAutoScaling",
	"Label":                          "profiles.Label",
	"Taint":                          "profiles.Taint",
	"TokenIssuerProfile":             "profiles.TokenIssuerProfile",
	"ExternalAuthClientProfile":      "profiles.ExternalAuthClientProfile",
	"ExternalAuthClaimProfile":       "profiles.ExternalAuthClaimProfile",
	// Below the three above: shared so that their checks are generated (SharedAuthChecks) and
	// checkAgreement compares them across versions.
	"ExternalAuthClientComponentProfile": "profiles.ExternalAuthClientComponentProfile",
	"TokenClaimMappingsProfile":          "profiles.TokenClaimMappingsProfile",
	"UsernameClaimProfile":               "profiles.UsernameClaimProfile",
	"GroupClaimProfile":                  "profiles.GroupClaimProfile",
	"TokenClaimValidationRule":           "profiles.TokenClaimValidationRule",
	"TokenRequiredClaim":                 "profiles.TokenRequiredClaim",
}

// Versions are the api-versions the frontend serves, oldest first.
var Versions = []Version{
	{APIVersion: "2024-06-10-preview", Package: "v20240610preview", Shared: sharedProfiles},
	{APIVersion: "2025-12-23-preview", Package: "v20251223preview", Shared: sharedProfiles},
	{APIVersion: "2026-06-30-preview", Package: "v20260630preview", Shared: sharedProfiles},
	{APIVersion: "2026-09-01-preview", Package: "v20260901preview", SameAs: "2026-06-30-preview"},
}

// ValidateRoots are the resources whose version package validates its own types with the
// generated checks. An external auth is decoded into each version's generated type, but checked
// by shared code over its writable properties, all of shared definitions (fieldcheck.ExternalAuth,
// calling the generated SharedAuthChecks): its answers name a missing issuer and a missing
// claims' username (properties.claim.mappings.username, below the schema's required claim) and
// nothing else, which the generated required checks of its root would not say.
var ValidateRoots = []string{"HcpOpenShiftCluster", "NodePool"}

// handWritten are checks of the specification the generated code leaves to the version
// package, keyed "Definition.property:rule", with the reason; the generated file lists them.
var handWritten = map[string]string{
	"PlatformProfile.vnetIntegrationSubnetId:required": "required only on create and for clusters that have one (fieldcheck.RequiredSince)",
	"KmsEncryptionProfile.visibility:required":         "required only on create and for clusters that have one (fieldcheck.RequiredSince)",
	"KmsEncryptionProfile.visibility:enum":             "checked only when present for RequiredSince: a cluster without one renders \"\" and a PATCH sends that back",
	"PlatformProfile.operatorsAuthentication:required": "fieldcheck.OperatorsAuthentication checks it with its content",
	"TokenIssuerProfile.url:format":                    "Cluster Service's model.ValidateExternalAuthSpec requires an https URL without query, fragment or user info (its one owner)",
	// A resource ID (format arm-id) is otherwise checked where it is, for the type its
	// x-ms-arm-id-details allow. A cluster's are checked by fieldcheck.Cluster, after the
	// generated checks, where its answers have always had them
	// (frontend/pkg/api TestClusterAnswersResourceIDsAfterTheGeneratedChecks).
	"PlatformProfile.subnetId:format":                "fieldcheck.Cluster checks the resource ID's type after the generated checks, in the order a cluster's problems have always been answered",
	"PlatformProfile.vnetIntegrationSubnetId:format": "fieldcheck.Cluster checks the resource ID's type once its RequiredSince rule has found it present",
	"PlatformProfile.networkSecurityGroupId:format":  "fieldcheck.Cluster checks the resource ID's type after the generated checks, in the order a cluster's problems have always been answered",
	// Shared definitions whose versions differ in what is required: the difference is a rule
	// of the version's (ClusterRules, NodePoolRules), so the type can still be shared.
	"VersionProfile.id:required":         "required from 2025-12-23-preview on, except for a cluster created without one (fieldcheck.ClusterRules.VersionIDRequiredSince)",
	"NodePoolVersionProfile.id:required": "required from 2025-12-23-preview on, except for a pool created without one (fieldcheck.NodePoolRules.VersionIDRequired)",
}

// SharedChecks are the shared definitions whose structural checks the generator writes into
// package fieldcheck (zz_generated_shared.go) as functions spec<Type>, from every version's
// specification: a method cannot be declared on an alias of another package's type, and the
// checks are the same in every version (the generator fails when the specifications disagree).
// fieldcheck's hand-written checks call them where a body's checks run, and add what the
// specification cannot say.
var SharedChecks = []string{"DnsProfile", "NetworkProfile", "ApiProfile", "ClusterAutoscalingProfile", "ClusterImageRegistryProfile", "NodePoolAutoScaling"}

// SharedAuthChecks are the external auth's shared definitions whose structural checks the
// generator writes into package fieldcheck as functions spec<Type> (authchecks.go), in the words
// an external auth's problems have always had; fieldcheck.ExternalAuth calls them, and the rules
// the specification cannot state are Cluster Service's (model.ValidateExternalAuthSpec). A
// property holding one of them
// is checked by calling its function, so every definition an external auth's writable
// properties reach is listed.
var SharedAuthChecks = []string{
	"TokenIssuerProfile", "ExternalAuthClientProfile", "ExternalAuthClientComponentProfile", "ExternalAuthClaimProfile",
	"TokenClaimMappingsProfile", "UsernameClaimProfile", "GroupClaimProfile", "TokenClaimValidationRule", "TokenRequiredClaim",
}

// absentAsEmpty are properties holding a definition (a SharedAuthChecks one, or one of a
// version's own that ValidateRoots reach), keyed "Definition.property", that are checked as an
// empty one when absent (each of its required properties named), with the reason.
var absentAsEmpty = map[string]string{
	"NodePool.properties": "a node pool cannot be created without properties, and a body without them has always been " +
		"told what they require (properties.platform)",
	"ExternalAuthClientProfile.component": "a client without a component has always been told that its name and namespace are required",
	"TokenClaimValidationRule.requiredClaim": "a rule checks a claim's value, so both are required; Cluster Service requires them too " +
		"(the specification's TokenRequiredClaim requires them, its TokenClaimValidationRule does not require requiredClaim)",
}

// SharedLists are properties, "Definition.property", of a version's definitions that hold a list
// of a shared definition: fieldcheck gets a function spec<Definition><Property> that checks the
// list's length and each entry (its properties, and, when one property identifies an entry
// (x-ms-identifiers), that it appears once), from every version's specification that has the
// property. Entries identified by several properties together (a taint by its key, value and
// effect) are not checked for repeats: no api-version has refused a repeated taint.
var SharedLists = []string{"HcpOpenShiftClusterProperties.imageDigestMirrors", "NodePoolProperties.taints"}

// presentIsEnough are required string properties, keyed "Definition.property", for which an
// empty value is not missing, with the reason (the rule is otherwise that "" names nothing).
var presentIsEnough = map[string]string{
	"ImageDigestMirror.source": "an empty source is a repository of the wrong form, which Cluster Service's rule names",
}

// atLeast are integer properties, keyed "Definition.property", with a minimum and no maximum
// that are answered "must be at least <minimum>" (a node pool's have always been) rather than
// "must be between <minimum> and 2147483647" (the rule elsewhere, a cluster's autoscaling).
var atLeast = map[string]bool{"NodePoolAutoScaling.min": true, "NodePoolAutoScaling.max": true, "NodePoolProperties.replicas": true}

// The hand-written checks a version's generated checks call at a property (hooks) are declared
// where they are written: a method of fieldcheck.Checker whose doc comment carries
// "//armgen:hook Definition.property" (discoverHooks, hooks.go).

// checkOrder is the order in which a definition's properties are checked where it is not the
// specification's, with the reason; properties it leaves out follow in the specification's order.
var checkOrder = map[string]struct {
	Props []string
	Why   string
}{
	"NodePoolPlatformProfile": {Props: []string{"vmSize", "subnetId"}, Why: "a node pool's vmSize has always been checked before its subnetId"},
}

// valueWords say in words what a string property's pattern (and length) allow, keyed
// "Definition.property": the generated check takes both as one rule and answers
// "Invalid value '<value>' for field '<path>': <words>." instead of quoting the expression.
// {maxLength} in the words is the property's maxLength in the specification.
var valueWords = map[string]string{
	"DnsProfile.baseDomainPrefix": "at most {maxLength} lowercase letters, digits and '-', starting with a letter",
}

// Bounds are the structural bounds of the newest api-version's specification that hand-written
// code reads (Cluster Service's model, fieldcheck), keyed "Definition.property:keyword" with
// keyword one of minimum, maximum, minLength, maxLength, minItems, maxItems, items.maxLength and
// pattern. The generator writes each as an exported constant of package bounds
// (internal/armspec/bounds), named <Definition><Property><Keyword>, and fails when one is missing
// from the specification: a name a consumer reads cannot silently vanish.
var Bounds = []string{
	"ApiProfile.authorizedCidrs:maxItems",
	"HcpOpenShiftClusterProperties.imageDigestMirrors:maxItems",
	"HcpOpenShiftClusterProperties.nodeDrainTimeoutMinutes:minimum",
	"HcpOpenShiftClusterProperties.nodeDrainTimeoutMinutes:maximum",
	"ImageDigestMirror.source:maxLength",
	"ImageDigestMirror.mirrors:maxItems",
	"ImageDigestMirror.mirrors:items.maxLength",
	"DnsProfile.baseDomainPrefix:maxLength",
	"DnsProfile.baseDomainPrefix:pattern",
	"OsDiskProfile.sizeGiB:minimum",
	"OsDiskProfile.sizeGiB:maximum",
	"Taint.key:maxLength",
	"Taint.value:maxLength",
	"KmsKey.version:maxLength",
	"TokenIssuerProfile.audiences:maxItems",
	"ExternalAuthProperties.clients:maxItems",
	"ExternalAuthClientComponentProfile.name:maxLength",
	"ExternalAuthClientComponentProfile.authClientNamespace:maxLength",
	"UsernameClaimProfile.claim:maxLength",
	"GroupClaimProfile.claim:maxLength",
}
