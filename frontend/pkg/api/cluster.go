// Package api is the frontend's internal, version-independent model of the RP's resources.
// Each api-version lives in its own package (v20240610preview, ...) that decodes, defaults and
// validates its external types into this model, and renders the model back; handlers only see
// this model.
package api

import (
	"encoding/json"
	"strings"
	"time"

	"github.com/openhcp/openhcp/internal/arm"
	"github.com/openhcp/openhcp/internal/armdoc"
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
	ProvisioningState armdoc.ProvisioningState `json:"-"`
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

// ClusterProperties are the customer's settings, with Cluster Service's defaults
// (model.DefaultCluster, applied by the frontend's handlers before a write) for what the customer
// left out.
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

// ClusterAutoscalingProfile is properties.autoscaling. nil is a value the caller did not give:
// Cluster Service leaves it out and HyperShift's default applies (no node limit, 600 s, 900 s,
// -10, the defaults the spec's descriptions name; the spec declares no default to apply here).
// A value, 0 included, is sent as given.
type ClusterAutoscalingProfile struct {
	MaxNodesTotal               *int32 `json:"maxNodesTotal,omitempty"`
	MaxPodGracePeriodSeconds    *int32 `json:"maxPodGracePeriodSeconds,omitempty"`
	MaxNodeProvisionTimeSeconds *int32 `json:"maxNodeProvisionTimeSeconds,omitempty"`
	PodPriorityThreshold        *int32 `json:"podPriorityThreshold,omitempty"`
}

// Equal reports whether a and b hold the same values (set or not).
func (a ClusterAutoscalingProfile) Equal(b ClusterAutoscalingProfile) bool {
	same := func(x, y *int32) bool { return (x == nil && y == nil) || (x != nil && y != nil && *x == *y) }
	return same(a.MaxNodesTotal, b.MaxNodesTotal) && same(a.MaxPodGracePeriodSeconds, b.MaxPodGracePeriodSeconds) &&
		same(a.MaxNodeProvisionTimeSeconds, b.MaxNodeProvisionTimeSeconds) && same(a.PodPriorityThreshold, b.PodPriorityThreshold)
}

// storedAutoscaling is how ClusterAutoscalingProfile is stored. ZeroIsValue marks documents
// written since the model tells an explicit 0 from an absent value: documents written before
// held every field, with 0 meaning "not given", and still decode that way.
type storedAutoscaling struct {
	ZeroIsValue                 bool   `json:"zeroIsValue,omitempty"`
	MaxNodesTotal               *int32 `json:"maxNodesTotal,omitempty"`
	MaxPodGracePeriodSeconds    *int32 `json:"maxPodGracePeriodSeconds,omitempty"`
	MaxNodeProvisionTimeSeconds *int32 `json:"maxNodeProvisionTimeSeconds,omitempty"`
	PodPriorityThreshold        *int32 `json:"podPriorityThreshold,omitempty"`
}

// MarshalJSON writes the stored form, marked as telling 0 from absent.
func (a ClusterAutoscalingProfile) MarshalJSON() ([]byte, error) {
	return json.Marshal(storedAutoscaling{ZeroIsValue: true, MaxNodesTotal: a.MaxNodesTotal, MaxPodGracePeriodSeconds: a.MaxPodGracePeriodSeconds,
		MaxNodeProvisionTimeSeconds: a.MaxNodeProvisionTimeSeconds, PodPriorityThreshold: a.PodPriorityThreshold})
}

// UnmarshalJSON reads the stored form, old or new.
func (a *ClusterAutoscalingProfile) UnmarshalJSON(b []byte) error {
	var s storedAutoscaling
	if err := json.Unmarshal(b, &s); err != nil {
		return err
	}
	if !s.ZeroIsValue {
		for _, p := range []**int32{&s.MaxNodesTotal, &s.MaxPodGracePeriodSeconds, &s.MaxNodeProvisionTimeSeconds, &s.PodPriorityThreshold} {
			if *p != nil && **p == 0 {
				*p = nil
			}
		}
	}
	*a = ClusterAutoscalingProfile{MaxNodesTotal: s.MaxNodesTotal, MaxPodGracePeriodSeconds: s.MaxPodGracePeriodSeconds,
		MaxNodeProvisionTimeSeconds: s.MaxNodeProvisionTimeSeconds, PodPriorityThreshold: s.PodPriorityThreshold}
	return nil
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

// Enumerations shared by the api-versions, and the values the frontend's own rules name.
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

// Default is the frontend's upgrade rule for stored documents, applied when one is read
// (clusterFromDoc); it is not a default of new bodies, which take Cluster Service's
// (model.DefaultCluster, applied by the handlers before a write). What stays here, and why:
//   - ingress.type and cryptoRestrictions: documents stored before the fields existed hold no
//     value. Cluster Service's answer cannot stand in for them: a GET answers from the store
//     when Cluster Service is not reachable (addClusterStatus is best effort), a replace through
//     an older api-version keeps the stored value (Version.Preserve) and compares with it, and
//     Cluster Service itself defaults a spec only when it is created or updated.
//   - the key vault's visibility (DefaultKMSVisibility), which Cluster Service does not default.
func (c *Cluster) Default() {
	if c.Properties.Ingress.Type == "" {
		c.Properties.Ingress.Type = IngressPublic
	}
	if c.Properties.CryptoRestrictions == "" {
		c.Properties.CryptoRestrictions = CryptoNone
	}
	c.DefaultKMSVisibility()
}

// DefaultKMSVisibility: 2024-06-10-preview has no key vault visibility; its customer-managed
// keys live in key vaults reached over their public endpoint. It is the frontend's, not a
// Cluster Service default: it says what an api-version without the property means.
func (c *Cluster) DefaultKMSVisibility() {
	if cm := c.Properties.Etcd.DataEncryption.CustomerManaged; cm != nil && cm.KMS != nil && cm.KMS.Visibility == "" {
		cm.KMS.Visibility = VisibilityPublic
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

// KMSInternalPath is the internal-model path of a body path (of any api-version) of the active
// KMS key: the body holds the key's fields under kms.activeKey, the model beside the vault's.
func KMSInternalPath(p string) string {
	const kms = "properties.etcd.dataEncryption.customerManaged.kms."
	if rest, ok := strings.CutPrefix(p, kms+"activeKey."); ok {
		return kms + rest
	}
	return p
}
