// Package api is the frontend's internal, version-independent model of the RP's resources.
// Each api-version lives in its own package (v20240610preview, ...) that decodes, defaults and
// validates its external types into this model, and renders the model back; handlers only see
// this model.
package api

import (
	"strings"
	"time"

	csv1 "github.com/openhcp/openhcp/cluster-service/api/v1"
	"github.com/openhcp/openhcp/internal/arm"
	"github.com/openhcp/openhcp/internal/armdoc"
)

// ClusterResourceType is the ARM type of a cluster.
const ClusterResourceType = "Microsoft.RedHatOpenShift/hcpOpenShiftClusters"

// Cluster is a whole hcpOpenShiftClusters resource: its ARM envelope around Cluster Service's
// spec, which is the model of the properties it holds, and beside it what the spec does not
// hold. A body is filled into Spec and Spec is rendered, in every api-version, through the
// spec's arm_path options (ClusterShapes where the ARM shape differs), as a node pool's is.
type Cluster struct {
	// ID is set from the request path, never from the body.
	ID         *arm.ResourceID
	Location   string
	Tags       map[string]string
	SystemData *arm.SystemData
	// ProvisioningState comes from the store.
	ProvisioningState armdoc.ProvisioningState
	// Conditions are observed by Cluster Service (Available, Degraded, Progressing); they are
	// filled when the cluster is read, never stored.
	Conditions []Condition

	Identity *ManagedServiceIdentity
	// Spec holds the customer's settings that Cluster Service's spec holds, with Cluster
	// Service's defaults (model.DefaultCluster, applied by the frontend's handlers before a
	// write) for what the customer left out. It holds the resource's properties only
	// (SpecProperties): the envelope, the operators' identities and the KMS key are the fields
	// below, and are added when a spec is sent (the frontend's clusterSpec). Never nil in a
	// decoded or read cluster.
	Spec *csv1.ClusterSpec
	// OperatorIdentities are properties.platform.operatorsAuthentication.userAssignedIdentities:
	// ARM holds the identities' resource IDs, Cluster Service the client IDs ARM reports in
	// the resource's identity.
	OperatorIdentities UserAssignedIdentitiesProfile
	// Etcd is properties.etcd.dataEncryption, the key's parts as ARM has them (Cluster Service
	// holds one key URL, EtcdKeyID).
	Etcd EtcdDataEncryptionProfile
	// The read-only properties, filled from Cluster Service when the cluster is read
	// (properties.dns.baseDomain, console.url, api.url, platform.issuerUrl).
	BaseDomain, ConsoleURL, APIURL, IssuerURL string
}

// Condition is an observed condition of the resource, as the spec's status.conditions has it.
type Condition struct {
	Type               string
	Status             string
	Reason             string
	Message            string
	LastTransitionTime time.Time
}

// UserAssignedIdentitiesProfile are the operators' identities: their resource IDs by operator.
type UserAssignedIdentitiesProfile struct {
	ControlPlaneOperators  map[string]string `json:"controlPlaneOperators"`
	DataPlaneOperators     map[string]string `json:"dataPlaneOperators"`
	ServiceManagedIdentity string            `json:"serviceManagedIdentity"`
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
//   - identity.type: required since a cluster could be stored without one; such a cluster takes
//     the type its identities imply (UserAssigned with user-assigned identities, else None), so
//     a GET shows the type the schema requires and a write that does not touch the identity is
//     not refused for it, nor taken for an identity change.
func (c *Cluster) Default() {
	if id := c.Identity; id != nil && id.Type == "" {
		id.Type = "None"
		if len(id.UserAssignedIdentities) > 0 {
			id.Type = "UserAssigned"
		}
	}
	if c.Spec == nil {
		c.Spec = SpecProperties(&csv1.ClusterSpec{})
	}
	if c.Spec.IngressVisibility == "" {
		c.Spec.IngressVisibility = IngressPublic
	}
	if c.Spec.CryptoRestrictions == "" {
		c.Spec.CryptoRestrictions = CryptoNone
	}
	c.DefaultKMSVisibility()
}

// DefaultKMSVisibility: 2024-06-10-preview has no key vault visibility; its customer-managed
// keys live in key vaults reached over their public endpoint. It is the frontend's, not a
// Cluster Service default: it says what an api-version without the property means.
func (c *Cluster) DefaultKMSVisibility() {
	if cm := c.Etcd.CustomerManaged; cm != nil && cm.KMS != nil && cm.KMS.Visibility == "" {
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
