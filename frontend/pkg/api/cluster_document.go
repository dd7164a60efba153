package api

import (
	"encoding/json"
	"fmt"

	csv1 "github.com/openhcp/openhcp/cluster-service/api/v1"
	"github.com/openhcp/openhcp/frontend/pkg/api/armpath"
)

// clusterDocument is the resource document's properties of a cluster, as a frontend reads them:
// the identity, and the properties in their ARM form, where the key's parts sit beside the key
// vault's (kms.vaultName, kms.name, ...), not under kms.activeKey.
type clusterDocument struct {
	Identity   *ManagedServiceIdentity `json:"identity,omitempty"`
	Properties struct {
		DNS struct {
			BaseDomain string `json:"baseDomain"`
		} `json:"dns"`
		Console struct {
			URL string `json:"url"`
		} `json:"console"`
		API struct {
			URL string `json:"url"`
		} `json:"api"`
		Platform struct {
			IssuerURL               string `json:"issuerUrl"`
			OperatorsAuthentication struct {
				UserAssignedIdentities UserAssignedIdentitiesProfile `json:"userAssignedIdentities"`
			} `json:"operatorsAuthentication"`
		} `json:"platform"`
		Etcd struct {
			DataEncryption EtcdDataEncryptionProfile `json:"dataEncryption"`
		} `json:"etcd"`
	} `json:"properties"`
}

// zeroIsValue marks properties.autoscaling in documents written since the model tells an
// explicit 0 from an absent value. Documents written before held every autoscaling field, with
// 0 meaning "not given", and still read that way; a frontend of that time reads a 0 as absent
// without the marker, so every document carries it.
const zeroIsValue = "zeroIsValue"

// MarshalJSON writes the resource document's properties: the identity, and the spec's ARM form
// with what the model keeps beside the spec (the operators' identities, the etcd block, the
// read-only properties when set). A property at its zero value is absent, as a frontend of the
// version before wrote it (TestWrittenClusterDocumentsReadByThePreviousFrontend).
func (c Cluster) MarshalJSON() ([]byte, error) {
	props := c.armForm()
	// The objects are written even when empty, as that frontend wrote them: a change is
	// compared on this form (the frontend's changedFields), and a property taken away is then
	// named, not the object that held it.
	for _, o := range []string{"version", "dns", "network", "console", "api", "platform", "clusterImageRegistry", "ingress"} {
		armpath.Object(props, o)
	}
	armpath.Object(props, "autoscaling")[zeroIsValue] = true
	platform := armpath.Object(props, "platform")
	platform["operatorsAuthentication"] = map[string]any{"userAssignedIdentities": c.OperatorIdentities}
	props["etcd"] = map[string]any{"dataEncryption": c.Etcd}
	if c.BaseDomain != "" {
		armpath.Object(props, "dns")["baseDomain"] = c.BaseDomain
	}
	if c.ConsoleURL != "" {
		props["console"] = map[string]any{"url": c.ConsoleURL}
	}
	if c.APIURL != "" {
		armpath.Object(props, "api")["url"] = c.APIURL
	}
	if c.IssuerURL != "" {
		platform["issuerUrl"] = c.IssuerURL
	}
	doc := map[string]any{"properties": props}
	if c.Identity != nil {
		doc["identity"] = c.Identity
	}
	return json.Marshal(doc)
}

// UnmarshalJSON reads a resource document's properties, those written while clusters had a
// profile model of their own included (TestStoredClusterDocumentsReadAndRender).
func (c *Cluster) UnmarshalJSON(b []byte) error {
	doc, err := armpath.Parse(b)
	if err != nil {
		return fmt.Errorf("read cluster document: %w", err)
	}
	var d clusterDocument
	if err := json.Unmarshal(b, &d); err != nil {
		return fmt.Errorf("read cluster document: %w", err)
	}
	if props, ok := doc["properties"].(map[string]any); ok {
		if a, ok := props["autoscaling"].(map[string]any); ok && a[zeroIsValue] != true {
			for k, v := range a {
				if n, ok := v.(json.Number); ok && n.String() == "0" {
					delete(a, k)
				}
			}
		}
	}
	spec := &csv1.ClusterSpec{}
	if err := armpath.Fill(spec.ProtoReflect(), doc, ClusterShapes); err != nil {
		return fmt.Errorf("read cluster document: %w", err)
	}
	p := &d.Properties
	*c = Cluster{Identity: d.Identity, Spec: SpecProperties(spec), OperatorIdentities: p.Platform.OperatorsAuthentication.UserAssignedIdentities,
		Etcd: p.Etcd.DataEncryption, BaseDomain: p.DNS.BaseDomain, ConsoleURL: p.Console.URL, APIURL: p.API.URL, IssuerURL: p.Platform.IssuerURL}
	return nil
}
