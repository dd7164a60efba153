// Package api is the frontend's internal, version-independent model of the RP's resources.
// Each api-version lives in its own package (v20240610preview, ...) that decodes, defaults and
// validates its external types into this model, and renders the model back; handlers only see
// this model.
package api

import (
	"strings"
	"time"

	docs "github.com/openhcp/openhcp/internal/api"
	"github.com/openhcp/openhcp/internal/arm"
)

// ClusterResourceType is the ARM type of a cluster.
const ClusterResourceType = "Microsoft.RedHatOpenShift/hcpOpenShiftClusters"

// Cluster is a whole hcpOpenShiftClusters resource.
type Cluster struct {
	// ID is set from the request path, never from the body.
	ID         *arm.ResourceID   `json:"-"`
	Location   string            `json:"-"`
	Tags       map[string]string `json:"-"`
	SystemData *arm.SystemData   `json:"-"`
	// ProvisioningState and the read-only URLs come from the store and Cluster Service.
	ProvisioningState docs.ProvisioningState `json:"-"`
	// Conditions are observed by Cluster Service (Available, Degraded, Progressing); they are
	// filled when the cluster is read, never stored.
	Conditions []Condition `json:"-"`

	// Identity and Properties are stored as ResourceDocument.Properties.
	Identity   *ManagedServiceIdentity `json:"identity,omitempty"`
	Properties ClusterProperties       `json:"properties"`
}

// Condition is an observed condition of the resource, as the spec's status.conditions has it.
type Condition struct {
	Type               string
	Status             string
	Reason             string
	Message            string
	LastTransitionTime time.Time
}

// ClusterProperties are the customer's settings with defaults applied.
type ClusterProperties struct {
	Version                 VersionProfile              `json:"version"`
	DNS                     DNSProfile                  `json:"dns"`
	Network                 NetworkProfile              `json:"network"`
	Console                 ConsoleProfile              `json:"console"`
	API                     APIProfile                  `json:"api"`
	Platform                PlatformProfile             `json:"platform"`
	Autoscaling             ClusterAutoscalingProfile   `json:"autoscaling"`
	Etcd                    EtcdProfile                 `json:"etcd"`
	NodeDrainTimeoutMinutes int32                       `json:"nodeDrainTimeoutMinutes"`
	ClusterImageRegistry    ClusterImageRegistryProfile `json:"clusterImageRegistry"`
	// Ingress, ImageDigestMirrors and CryptoRestrictions came with later api-versions; a
	// version that does not know them carries the stored values over (see Version.Preserve).
	Ingress            IngressProfile      `json:"ingress"`
	ImageDigestMirrors []ImageDigestMirror `json:"imageDigestMirrors,omitempty"`
	CryptoRestrictions string              `json:"cryptoRestrictions"`
}

type IngressProfile struct {
	Type string `json:"type"`
}

type ImageDigestMirror struct {
	Source  string   `json:"source"`
	Mirrors []string `json:"mirrors"`
}

type VersionProfile struct {
	ID           string `json:"id,omitempty"`
	ChannelGroup string `json:"channelGroup"`
}

type DNSProfile struct {
	// BaseDomain is read-only: chosen by the service.
	BaseDomain       string `json:"baseDomain,omitempty"`
	BaseDomainPrefix string `json:"baseDomainPrefix,omitempty"`
}

type NetworkProfile struct {
	NetworkType string `json:"networkType"`
	PodCIDR     string `json:"podCidr"`
	ServiceCIDR string `json:"serviceCidr"`
	MachineCIDR string `json:"machineCidr"`
	HostPrefix  int32  `json:"hostPrefix"`
}

// ConsoleProfile is read-only.
type ConsoleProfile struct {
	URL string `json:"url,omitempty"`
}

type APIProfile struct {
	// URL is read-only.
	URL             string   `json:"url,omitempty"`
	Visibility      string   `json:"visibility"`
	AuthorizedCIDRs []string `json:"authorizedCidrs,omitempty"`
}

type PlatformProfile struct {
	ManagedResourceGroup    string                         `json:"managedResourceGroup"`
	SubnetID                string                         `json:"subnetId"`
	OutboundType            string                         `json:"outboundType"`
	NetworkSecurityGroupID  string                         `json:"networkSecurityGroupId"`
	VnetIntegrationSubnetID string                         `json:"vnetIntegrationSubnetId,omitempty"`
	OperatorsAuthentication OperatorsAuthenticationProfile `json:"operatorsAuthentication"`
	// IssuerURL is read-only.
	IssuerURL string `json:"issuerUrl,omitempty"`
}

type OperatorsAuthenticationProfile struct {
	UserAssignedIdentities UserAssignedIdentitiesProfile `json:"userAssignedIdentities"`
}

type UserAssignedIdentitiesProfile struct {
	ControlPlaneOperators  map[string]string `json:"controlPlaneOperators"`
	DataPlaneOperators     map[string]string `json:"dataPlaneOperators"`
	ServiceManagedIdentity string            `json:"serviceManagedIdentity"`
}

type ClusterAutoscalingProfile struct {
	MaxNodesTotal               int32 `json:"maxNodesTotal"`
	MaxPodGracePeriodSeconds    int32 `json:"maxPodGracePeriodSeconds"`
	MaxNodeProvisionTimeSeconds int32 `json:"maxNodeProvisionTimeSeconds"`
	PodPriorityThreshold        int32 `json:"podPriorityThreshold"`
}

type EtcdProfile struct {
	DataEncryption EtcdDataEncryptionProfile `json:"dataEncryption"`
}

type EtcdDataEncryptionProfile struct {
	KeyManagementMode string                            `json:"keyManagementMode"`
	CustomerManaged   *CustomerManagedEncryptionProfile `json:"customerManaged,omitempty"`
}

type CustomerManagedEncryptionProfile struct {
	EncryptionType string  `json:"encryptionType"`
	KMS            *KMSKey `json:"kms,omitempty"`
}

// KMSKey is the active Key Vault key.
type KMSKey struct {
	VaultName string `json:"vaultName"`
	// Visibility is the key vault's (Public or Private), from 2025-12-23-preview on.
	Visibility string `json:"visibility,omitempty"`
	Name       string `json:"name"`
	Version    string `json:"version"`
}

type ClusterImageRegistryProfile struct {
	State string `json:"state"`
}

// ManagedServiceIdentity is the resource's identity block.
type ManagedServiceIdentity struct {
	Type                   string                           `json:"type"`
	PrincipalID            string                           `json:"principalId,omitempty"`
	TenantID               string                           `json:"tenantId,omitempty"`
	UserAssignedIdentities map[string]*UserAssignedIdentity `json:"userAssignedIdentities,omitempty"`
}

type UserAssignedIdentity struct {
	PrincipalID string `json:"principalId,omitempty"`
	ClientID    string `json:"clientId,omitempty"`
}

// Enumerations and defaults shared by the api-versions.
const (
	NetworkTypeOVNKubernetes = "OVNKubernetes"
	NetworkTypeOther         = "Other"
	VisibilityPublic         = "Public"
	VisibilityPrivate        = "Private"
	OutboundTypeLoadBalancer = "LoadBalancer"
	KeyManagementPlatform    = "PlatformManaged"
	KeyManagementCustomer    = "CustomerManaged"
	EncryptionTypeKMS        = "KMS"
	RegistryEnabled          = "Enabled"
	RegistryDisabled         = "Disabled"
	ChannelGroupStable       = "stable"
	IngressPublic            = "Public"
	IngressPrivate           = "Private"
	IngressDisabled          = "Disabled"
	CryptoNone               = "None"
	CryptoFIPS               = "FIPS"
)

// Default fills what a cluster has even when no api-version of the request knew the field:
// documents stored before a field existed, or written through an older api-version, describe a
// cluster with the spec's defaults.
func (c *Cluster) Default() {
	if c.Properties.Ingress.Type == "" {
		c.Properties.Ingress.Type = IngressPublic
	}
	if c.Properties.CryptoRestrictions == "" {
		c.Properties.CryptoRestrictions = CryptoNone
	}
}

// KMSExternalPath maps the internal paths of the active KMS key to a version's body, where the
// key's fields sit under kms.activeKey (vaultName too, before 2025-12-23-preview).
func KMSExternalPath(p string, vaultNameInKey bool) string {
	const kms = "properties.etcd.dataEncryption.customerManaged.kms."
	rest, ok := strings.CutPrefix(p, kms)
	if !ok {
		return p
	}
	field, _, _ := strings.Cut(rest, ".")
	switch field {
	case "name", "version":
		return kms + "activeKey." + rest
	case "vaultName":
		if vaultNameInKey {
			return kms + "activeKey." + rest
		}
	}
	return p
}
