package api_test

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/openhcp/openhcp/frontend/pkg/api"
)

// TestWrittenClusterDocumentsReadByThePreviousFrontend: what the frontend writes of each stored
// document reads, in the frontend of the version before (its reader is copied below, as it
// was when clusters had their own profile model), to the same cluster as the document itself
// does: a rollback, or an old frontend beside a new one in a rolling upgrade, reads what the new
// one wrote.
func TestWrittenClusterDocumentsReadByThePreviousFrontend(t *testing.T) {
	for _, d := range storedClusterDocuments {
		t.Run(d.name, func(t *testing.T) {
			var c api.Cluster
			if err := json.Unmarshal([]byte(d.doc), &c); err != nil {
				t.Fatalf("read: %v", err)
			}
			c.Default()
			written, err := json.Marshal(&c)
			if err != nil {
				t.Fatalf("write: %v", err)
			}
			want, got := prevRead(t, []byte(d.doc)), prevRead(t, written)
			if !reflect.DeepEqual(got, want) {
				g, _ := json.Marshal(got)
				w, _ := json.Marshal(want)
				t.Fatalf("the previous frontend reads what is written as\n%s\nwant\n%s\nwritten:\n%s", g, w, written)
			}
		})
	}
}

// prevCluster is the stored document as the previous frontend read it (api.Cluster's JSON).
type prevCluster struct {
	Identity   *api.ManagedServiceIdentity `json:"identity,omitempty"`
	Properties prevClusterProperties       `json:"properties"`
}

// prevRead reads a stored document as the previous frontend did (clusterFromDoc: decode, then
// Default's upgrade rules).
func prevRead(t *testing.T, doc []byte) *prevCluster {
	t.Helper()
	var c prevCluster
	if err := json.Unmarshal(doc, &c); err != nil {
		t.Fatalf("previous frontend's read: %v\n%s", err, doc)
	}
	p := &c.Properties
	if p.Ingress.Type == "" {
		p.Ingress.Type = "Public"
	}
	if p.CryptoRestrictions == "" {
		p.CryptoRestrictions = "None"
	}
	if cm := p.Etcd.DataEncryption.CustomerManaged; cm != nil && cm.KMS != nil && cm.KMS.Visibility == "" {
		cm.KMS.Visibility = "Public"
	}
	return &c
}

// The previous frontend's model, as it was stored (frontend/pkg/api/cluster.go before the
// cluster model became Cluster Service's spec).

type prevClusterProperties struct {
	Version                 prevVersionProfile              `json:"version"`
	DNS                     prevDNSProfile                  `json:"dns"`
	Network                 prevNetworkProfile              `json:"network"`
	Console                 prevConsoleProfile              `json:"console"`
	API                     prevAPIProfile                  `json:"api"`
	Platform                prevPlatformProfile             `json:"platform"`
	Autoscaling             prevClusterAutoscalingProfile   `json:"autoscaling"`
	Etcd                    prevEtcdProfile                 `json:"etcd"`
	NodeDrainTimeoutMinutes int32                           `json:"nodeDrainTimeoutMinutes"`
	ClusterImageRegistry    prevClusterImageRegistryProfile `json:"clusterImageRegistry"`
	// Ingress, ImageDigestMirrors and CryptoRestrictions came with later api-versions; a
	// version that does not know them carries the stored values over (see Version.Preserve).
	Ingress            prevIngressProfile      `json:"ingress"`
	ImageDigestMirrors []prevImageDigestMirror `json:"imageDigestMirrors,omitempty"`
	CryptoRestrictions string                  `json:"cryptoRestrictions"`
}

type prevIngressProfile struct {
	Type string `json:"type"`
}

type prevImageDigestMirror struct {
	Source  string   `json:"source"`
	Mirrors []string `json:"mirrors"`
}

type prevVersionProfile struct {
	ID           string `json:"id,omitempty"`
	ChannelGroup string `json:"channelGroup"`
}

type prevDNSProfile struct {
	// BaseDomain is read-only: chosen by the service.
	BaseDomain       string `json:"baseDomain,omitempty"`
	BaseDomainPrefix string `json:"baseDomainPrefix,omitempty"`
}

type prevNetworkProfile struct {
	NetworkType string `json:"networkType"`
	PodCIDR     string `json:"podCidr"`
	ServiceCIDR string `json:"serviceCidr"`
	MachineCIDR string `json:"machineCidr"`
	HostPrefix  int32  `json:"hostPrefix"`
}

// prevConsoleProfile is read-only.
type prevConsoleProfile struct {
	URL string `json:"url,omitempty"`
}

type prevAPIProfile struct {
	// URL is read-only.
	URL             string   `json:"url,omitempty"`
	Visibility      string   `json:"visibility"`
	AuthorizedCIDRs []string `json:"authorizedCidrs,omitempty"`
}

type prevPlatformProfile struct {
	ManagedResourceGroup    string                             `json:"managedResourceGroup"`
	SubnetID                string                             `json:"subnetId"`
	OutboundType            string                             `json:"outboundType"`
	NetworkSecurityGroupID  string                             `json:"networkSecurityGroupId"`
	VnetIntegrationSubnetID string                             `json:"vnetIntegrationSubnetId,omitempty"`
	OperatorsAuthentication prevOperatorsAuthenticationProfile `json:"operatorsAuthentication"`
	// IssuerURL is read-only.
	IssuerURL string `json:"issuerUrl,omitempty"`
}

type prevOperatorsAuthenticationProfile struct {
	UserAssignedIdentities prevUserAssignedIdentitiesProfile `json:"userAssignedIdentities"`
}

type prevUserAssignedIdentitiesProfile struct {
	ControlPlaneOperators  map[string]string `json:"controlPlaneOperators"`
	DataPlaneOperators     map[string]string `json:"dataPlaneOperators"`
	ServiceManagedIdentity string            `json:"serviceManagedIdentity"`
}

// prevClusterAutoscalingProfile is properties.autoscaling. nil is a value the caller did not give:
// Cluster Service leaves it out and HyperShift's default applies (no node limit, 600 s, 900 s,
// -10, the defaults the spec's descriptions name; the spec declares no default to apply here).
// A value, 0 included, is sent as given.
type prevClusterAutoscalingProfile struct {
	MaxNodesTotal               *int32 `json:"maxNodesTotal,omitempty"`
	MaxPodGracePeriodSeconds    *int32 `json:"maxPodGracePeriodSeconds,omitempty"`
	MaxNodeProvisionTimeSeconds *int32 `json:"maxNodeProvisionTimeSeconds,omitempty"`
	PodPriorityThreshold        *int32 `json:"podPriorityThreshold,omitempty"`
}

// Equal reports whether a and b hold the same values (set or not).
func (a prevClusterAutoscalingProfile) Equal(b prevClusterAutoscalingProfile) bool {
	same := func(x, y *int32) bool { return (x == nil && y == nil) || (x != nil && y != nil && *x == *y) }
	return same(a.MaxNodesTotal, b.MaxNodesTotal) && same(a.MaxPodGracePeriodSeconds, b.MaxPodGracePeriodSeconds) &&
		same(a.MaxNodeProvisionTimeSeconds, b.MaxNodeProvisionTimeSeconds) && same(a.PodPriorityThreshold, b.PodPriorityThreshold)
}

// prevstoredAutoscaling is how prevClusterAutoscalingProfile is stored. ZeroIsValue marks documents
// written since the model tells an explicit 0 from an absent value: documents written before
// held every field, with 0 meaning "not given", and still decode that way.
type prevstoredAutoscaling struct {
	ZeroIsValue                 bool   `json:"zeroIsValue,omitempty"`
	MaxNodesTotal               *int32 `json:"maxNodesTotal,omitempty"`
	MaxPodGracePeriodSeconds    *int32 `json:"maxPodGracePeriodSeconds,omitempty"`
	MaxNodeProvisionTimeSeconds *int32 `json:"maxNodeProvisionTimeSeconds,omitempty"`
	PodPriorityThreshold        *int32 `json:"podPriorityThreshold,omitempty"`
}

// MarshalJSON writes the stored form, marked as telling 0 from absent.
func (a prevClusterAutoscalingProfile) MarshalJSON() ([]byte, error) {
	return json.Marshal(prevstoredAutoscaling{ZeroIsValue: true, MaxNodesTotal: a.MaxNodesTotal, MaxPodGracePeriodSeconds: a.MaxPodGracePeriodSeconds,
		MaxNodeProvisionTimeSeconds: a.MaxNodeProvisionTimeSeconds, PodPriorityThreshold: a.PodPriorityThreshold})
}

// UnmarshalJSON reads the stored form, old or new.
func (a *prevClusterAutoscalingProfile) UnmarshalJSON(b []byte) error {
	var s prevstoredAutoscaling
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
	*a = prevClusterAutoscalingProfile{MaxNodesTotal: s.MaxNodesTotal, MaxPodGracePeriodSeconds: s.MaxPodGracePeriodSeconds,
		MaxNodeProvisionTimeSeconds: s.MaxNodeProvisionTimeSeconds, PodPriorityThreshold: s.PodPriorityThreshold}
	return nil
}

type prevEtcdProfile struct {
	DataEncryption prevEtcdDataEncryptionProfile `json:"dataEncryption"`
}

type prevEtcdDataEncryptionProfile struct {
	KeyManagementMode string                                `json:"keyManagementMode"`
	CustomerManaged   *prevCustomerManagedEncryptionProfile `json:"customerManaged,omitempty"`
}

type prevCustomerManagedEncryptionProfile struct {
	EncryptionType string      `json:"encryptionType"`
	KMS            *prevKMSKey `json:"kms,omitempty"`
}

// prevKMSKey is the active Key Vault key.
type prevKMSKey struct {
	VaultName string `json:"vaultName"`
	// Visibility is the key vault's (Public or Private), from 2025-12-23-preview on.
	Visibility string `json:"visibility,omitempty"`
	Name       string `json:"name"`
	Version    string `json:"version"`
}

type prevClusterImageRegistryProfile struct {
	State string `json:"state"`
}
