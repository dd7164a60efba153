package api

import (
	"bytes"
	"encoding/json"
	"fmt"

	csv1 "github.com/openhcp/openhcp/cluster-service/api/v1"
	"github.com/openhcp/openhcp/frontend/pkg/api/armpath"
)

// clusterDocument is the resource document of a cluster as a frontend reads it, in one decoding
// of its bytes: the identity, and the properties as JSON objects (numbers kept as written), which
// the spec is filled from and the model's other parts are read from (readProperties).
type clusterDocument struct {
	Identity   *ManagedServiceIdentity `json:"identity,omitempty"`
	Properties map[string]any          `json:"properties"`
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
// profile model of their own included (TestStoredClusterDocumentsReadAndRender). The bytes are
// decoded once: the spec is filled from the properties' JSON objects, and what the model keeps
// beside the spec is read from the same objects.
func (c *Cluster) UnmarshalJSON(b []byte) error {
	var d clusterDocument
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	if err := dec.Decode(&d); err != nil {
		return fmt.Errorf("read cluster document: %w", err)
	}
	props := d.Properties
	if a, ok := props["autoscaling"].(map[string]any); ok && a[zeroIsValue] != true {
		for k, v := range a {
			if n, ok := v.(json.Number); ok && n.String() == "0" {
				delete(a, k)
			}
		}
	}
	spec := &csv1.ClusterSpec{}
	if err := armpath.Fill(spec.ProtoReflect(), map[string]any{"properties": props}, ClusterShapes); err != nil {
		return fmt.Errorf("read cluster document: %w", err)
	}
	*c = Cluster{Identity: d.Identity, Spec: SpecProperties(spec)}
	if err := c.readProperties(props); err != nil {
		return fmt.Errorf("read cluster document: %w", err)
	}
	return nil
}

// readProperties reads what the model keeps beside the spec from the properties' JSON objects:
// the ARM form MarshalJSON writes. A value of another shape than its field's is an error, as a
// typed decoding's would be.
func (c *Cluster) readProperties(props map[string]any) error {
	for _, s := range []struct {
		path string
		into *string
	}{
		{"dns.baseDomain", &c.BaseDomain},
		{"console.url", &c.ConsoleURL},
		{"api.url", &c.APIURL},
		{"platform.issuerUrl", &c.IssuerURL},
	} {
		switch v := armpath.Lookup(props, s.path).(type) {
		case nil:
		case string:
			*s.into = v
		default:
			return fmt.Errorf("properties.%s: a %T, not a string", s.path, v)
		}
	}
	// The etcd block is small: encoded again and decoded into its type, rather than a second
	// decoding of the whole document.
	const etcd = "etcd.dataEncryption"
	if v := armpath.Lookup(props, etcd); v != nil {
		raw, err := json.Marshal(v)
		if err != nil {
			return fmt.Errorf("properties.%s: %w", etcd, err)
		}
		if err := json.Unmarshal(raw, &c.Etcd); err != nil {
			return fmt.Errorf("properties.%s: %w", etcd, err)
		}
	}
	// The operators' identities are most of a document's bytes after the spec: read from the
	// objects as they are.
	const ids = "platform.operatorsAuthentication.userAssignedIdentities"
	switch v := armpath.Lookup(props, ids).(type) {
	case nil:
	case map[string]any:
		return c.OperatorIdentities.read(v, "properties."+ids)
	default:
		return fmt.Errorf("properties.%s: a %T, not an object", ids, v)
	}
	return nil
}

// read sets the profile from its JSON object, as decoding it into the type would.
func (p *UserAssignedIdentitiesProfile) read(o map[string]any, path string) error {
	var err error
	if p.ControlPlaneOperators, err = stringMap(o["controlPlaneOperators"], path+".controlPlaneOperators"); err != nil {
		return err
	}
	if p.DataPlaneOperators, err = stringMap(o["dataPlaneOperators"], path+".dataPlaneOperators"); err != nil {
		return err
	}
	switch s := o["serviceManagedIdentity"].(type) {
	case nil:
	case string:
		p.ServiceManagedIdentity = s
	default:
		return fmt.Errorf("%s.serviceManagedIdentity: a %T, not a string", path, s)
	}
	return nil
}

// stringMap is a JSON object of strings as a map; nil for an absent or null one.
func stringMap(v any, path string) (map[string]string, error) {
	if v == nil {
		return nil, nil
	}
	o, ok := v.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("%s: a %T, not an object", path, v)
	}
	m := make(map[string]string, len(o))
	for k, e := range o {
		s, ok := e.(string)
		if !ok {
			return nil, fmt.Errorf("%s[%s]: a %T, not a string", path, k, e)
		}
		m[k] = s
	}
	return m, nil
}
