// Package v20260630preview is api-version 2026-06-30-preview of Microsoft.RedHatOpenShift
// hcpOpenShiftClusters (and 2026-09-01-preview, whose cluster schema is the same): its external
// types, defaults and validation, taken from the OpenAPI specification, and their conversion to
// and from the internal model in package api.
package v20260630preview

import (
	"github.com/openhcp/openhcp/frontend/pkg/api"
	"github.com/openhcp/openhcp/frontend/pkg/api/profiles"
	"github.com/openhcp/openhcp/internal/arm"
)

// APIVersion is this package's api-version.
const APIVersion = "2026-06-30-preview"

func init() { api.Register(version{APIVersion}) }

// version is this package's types under an api-version name: 2026-09-01-preview has the same
// cluster schema and is served by this package too (see v20260901preview).
type version struct{ name string }

func (v version) String() string { return v.name }

// SameSchema is the api.Version of an api-version whose cluster schema is this one's.
func SameSchema(apiVersion string) api.Version { return version{apiVersion} }

// HcpOpenShiftCluster is the resource. Pointers tell "absent" from a zero value, so defaults
// apply only to what the caller left out.
type HcpOpenShiftCluster struct {
	// Read-only envelope fields: accepted in a PUT body and ignored.
	ID         *string         `json:"id,omitempty"`
	Name       *string         `json:"name,omitempty"`
	Type       *string         `json:"type,omitempty"`
	SystemData *arm.SystemData `json:"systemData,omitempty"`

	Location   *string                        `json:"location,omitempty"`
	Tags       map[string]string              `json:"tags,omitempty"`
	Identity   *ManagedServiceIdentity        `json:"identity,omitempty"`
	Properties *HcpOpenShiftClusterProperties `json:"properties,omitempty"`
}

type HcpOpenShiftClusterProperties struct {
	ProvisioningState       *string                      `json:"provisioningState,omitempty"`
	Version                 *VersionProfile              `json:"version,omitempty"`
	DNS                     *DNSProfile                  `json:"dns,omitempty"`
	Network                 *NetworkProfile              `json:"network,omitempty"`
	Console                 *ConsoleProfile              `json:"console,omitempty"`
	API                     *APIProfile                  `json:"api,omitempty"`
	Platform                *PlatformProfile             `json:"platform,omitempty"`
	Autoscaling             *ClusterAutoscalingProfile   `json:"autoscaling,omitempty"`
	Etcd                    *EtcdProfile                 `json:"etcd,omitempty"`
	NodeDrainTimeoutMinutes *int32                       `json:"nodeDrainTimeoutMinutes,omitempty"`
	ClusterImageRegistry    *ClusterImageRegistryProfile `json:"clusterImageRegistry,omitempty"`
	ImageDigestMirrors      []ImageDigestMirror          `json:"imageDigestMirrors,omitempty"`
	Ingress                 *IngressProfile              `json:"ingress,omitempty"`
	CryptoRestrictions      *string                      `json:"cryptoRestrictions,omitempty"`
	// Status is read-only; it is accepted in a body and ignored, and not rendered yet.
	Status *ResourceStatus `json:"status,omitempty"`
}

type IngressProfile struct {
	Type *string `json:"type,omitempty"`
}

type ResourceStatus struct {
	Conditions []Condition `json:"conditions,omitempty"`
}

type Condition struct {
	Type               *string `json:"type,omitempty"`
	Status             *string `json:"status,omitempty"`
	LastTransitionTime *string `json:"lastTransitionTime,omitempty"`
	Reason             *string `json:"reason,omitempty"`
	Message            *string `json:"message,omitempty"`
}

type PlatformProfile struct {
	ManagedResourceGroup    *string                         `json:"managedResourceGroup,omitempty"`
	SubnetID                *string                         `json:"subnetId,omitempty"`
	OutboundType            *string                         `json:"outboundType,omitempty"`
	NetworkSecurityGroupID  *string                         `json:"networkSecurityGroupId,omitempty"`
	VnetIntegrationSubnetID *string                         `json:"vnetIntegrationSubnetId,omitempty"`
	OperatorsAuthentication *OperatorsAuthenticationProfile `json:"operatorsAuthentication,omitempty"`
	IssuerURL               *string                         `json:"issuerUrl,omitempty"`
}

type EtcdProfile struct {
	DataEncryption *EtcdDataEncryptionProfile `json:"dataEncryption,omitempty"`
}

type EtcdDataEncryptionProfile struct {
	KeyManagementMode *string                           `json:"keyManagementMode,omitempty"`
	CustomerManaged   *CustomerManagedEncryptionProfile `json:"customerManaged,omitempty"`
}

type CustomerManagedEncryptionProfile struct {
	EncryptionType *string               `json:"encryptionType,omitempty"`
	KMS            *KmsEncryptionProfile `json:"kms,omitempty"`
}

type KmsEncryptionProfile struct {
	VaultName  *string `json:"vaultName,omitempty"`
	Visibility *string `json:"visibility,omitempty"`
	ActiveKey  *KmsKey `json:"activeKey,omitempty"`
}

type KmsKey struct {
	Name    *string `json:"name,omitempty"`
	Version *string `json:"version,omitempty"`
}

// Sub-structures whose shape is the same in every api-version.
type (
	VersionProfile                 = profiles.VersionProfile
	DNSProfile                     = profiles.DNSProfile
	NetworkProfile                 = profiles.NetworkProfile
	ConsoleProfile                 = profiles.ConsoleProfile
	APIProfile                     = profiles.APIProfile
	OperatorsAuthenticationProfile = profiles.OperatorsAuthenticationProfile
	UserAssignedIdentitiesProfile  = profiles.UserAssignedIdentitiesProfile
	ClusterAutoscalingProfile      = profiles.ClusterAutoscalingProfile
	ClusterImageRegistryProfile    = profiles.ClusterImageRegistryProfile
	ManagedServiceIdentity         = profiles.ManagedServiceIdentity
	UserAssignedIdentity           = profiles.UserAssignedIdentity
	ImageDigestMirror              = profiles.ImageDigestMirror
)

// HcpOpenShiftClusterListResult is one page of a list.
type HcpOpenShiftClusterListResult struct {
	Value    []any  `json:"value"`
	NextLink string `json:"nextLink,omitempty"`
}
