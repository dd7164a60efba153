package api

import (
	"bytes"
	"encoding/json"
	"fmt"

	csv1 "github.com/openhcp/openhcp/cluster-service/api/v1"
	"github.com/openhcp/openhcp/frontend/pkg/api/armpath"
	"github.com/openhcp/openhcp/internal/arm"
	"github.com/openhcp/openhcp/internal/armdoc"
)

// NodePoolResourceType is the ARM type of a node pool.
const NodePoolResourceType = "Microsoft.RedHatOpenShift/hcpOpenShiftClusters/nodePools"

// NodePool is a whole hcpOpenShiftClusters/nodePools resource: its ARM envelope around
// Cluster Service's spec, which is the model of its properties. A body is filled into Spec and
// Spec is rendered, in every api-version, through the spec's arm_path options (NodePoolShapes
// where the ARM shape differs), so a property with an arm_path has no conversion of its own.
type NodePool struct {
	// ID is set from the request path, never from the body.
	ID                *arm.ResourceID
	Location          string
	Tags              map[string]string
	SystemData        *arm.SystemData
	ProvisioningState armdoc.ProvisioningState

	Identity *ManagedServiceIdentity
	// Spec is what the caller asked for, and after a create what Cluster Service answered for
	// what the caller left out (its defaults). Never nil in a decoded or read pool.
	Spec *csv1.NodePoolSpec
}

// The diskType values of the specification (Cluster Service's Persistent and Ephemeral).
const (
	DiskTypeManaged   = "Managed"
	DiskTypeEphemeral = "Ephemeral"
)

// NodePoolShapes are the node pool properties whose ARM shape is not the proto's: labels are a
// list of key and value (a map in the proto), and a Managed disk is Persistent (HyperShift's
// word).
var NodePoolShapes = armpath.Shapes{
	"properties.labels": armpath.KeyValueList,
	"properties.platform.osDisk.diskType": {
		ToSpec: func(v any) (any, error) {
			s, ok := v.(string)
			if !ok {
				return nil, fmt.Errorf("%v (%T) where a string is expected", v, v)
			}
			return swap(s, DiskTypeManaged, "Persistent"), nil
		},
		ToARM: func(v any) any { return swap(v.(string), DiskTypeManaged, "Persistent") },
	},
}

// swap exchanges a and b (Managed and Persistent), both ways, so the mapping is one-to-one: an
// ARM Persistent (no value of the specification, which the structural check refuses first) can
// never become a value Cluster Service accepts. Anything else (Ephemeral in both) is as it is.
func swap(s, a, b string) string {
	switch s {
	case a:
		return b
	case b:
		return a
	}
	return s
}

// NodePoolFromARM is the node pool whose properties are doc's: a body decoded into its
// api-version's type and checked, or a stored document as JSON objects with exact numbers. autoRepair's default (true, the
// specification's) is applied here: Cluster Service's spec cannot tell an absent autoRepair
// from false. Everything else the body leaves out stays empty, for Cluster Service's model to
// default.
func NodePoolFromARM(doc any) *NodePool {
	spec := &csv1.NodePoolSpec{}
	if err := armpath.Fill(spec.ProtoReflect(), doc, NodePoolShapes); err != nil {
		// A body decoded into its version's type has the specification's shapes: a mismatch
		// is a wrong arm_path, caught by the mapping tests (a stored document's is an error:
		// UnmarshalJSON).
		panic(fmt.Sprintf("node pool body %T: %v", doc, err))
	}
	if armpath.Lookup(doc, "properties.autoRepair") == nil {
		spec.AutoRepair = true
	}
	return &NodePool{Spec: spec}
}

// RenderedProperties are the pool's properties as every api-version shows them, in their JSON
// form, for the version to read into its type (what it has no property for, such as
// 2024-06-10-preview's diskType, is left out there). Replicas is left out when autoscaling is
// set (the two exclude each other), so a GET body can be sent back as a PUT, and shown, 0
// included, when it is not.
func (np *NodePool) RenderedProperties() map[string]any {
	props := np.armForm()
	delete(props, "replicas")
	if props["autoScaling"] == nil {
		props["replicas"] = np.spec().GetReplicas()
	}
	return props
}

// armForm is the spec's ARM form: the resource's properties.
func (np *NodePool) armForm() map[string]any {
	props, _ := armpath.Render(np.spec().ProtoReflect(), NodePoolShapes)["properties"].(map[string]any)
	if props == nil {
		props = map[string]any{}
	}
	return props
}

func (np *NodePool) spec() *csv1.NodePoolSpec {
	if np.Spec == nil {
		return &csv1.NodePoolSpec{}
	}
	return np.Spec
}

// nodePoolDocument is the resource document's properties of a node pool: the spec's ARM form.
type nodePoolDocument struct {
	Identity   *ManagedServiceIdentity `json:"identity,omitempty"`
	Properties map[string]any          `json:"properties"`
}

// MarshalJSON writes the resource document's properties: the identity and the spec's ARM form.
func (np *NodePool) MarshalJSON() ([]byte, error) {
	return json.Marshal(nodePoolDocument{Identity: np.Identity, Properties: np.armForm()})
}

// UnmarshalJSON reads a resource document's properties, those written before the spec was the
// model (the same ARM form, TestStoredNodePoolDocumentsReadAndRender) included.
func (np *NodePool) UnmarshalJSON(b []byte) error {
	doc, err := armpath.Parse(b)
	if err != nil {
		return fmt.Errorf("read node pool document: %w", err)
	}
	var d struct {
		Identity *ManagedServiceIdentity `json:"identity"`
	}
	if err := json.Unmarshal(b, &d); err != nil {
		return fmt.Errorf("read node pool identity: %w", err)
	}
	spec := &csv1.NodePoolSpec{}
	if err := armpath.Fill(spec.ProtoReflect(), doc, NodePoolShapes); err != nil {
		return fmt.Errorf("read node pool document: %w", err)
	}
	np.Identity, np.Spec = d.Identity, spec
	return nil
}

// Default fills diskType in a document stored before node pools had one (their disks are
// Managed, as Cluster Service holds them); new documents hold Cluster Service's defaults from
// their first write.
func (np *NodePool) Default() {
	if np.Spec == nil {
		np.Spec = &csv1.NodePoolSpec{}
	}
	if np.Spec.Platform == nil {
		np.Spec.Platform = &csv1.NodePoolPlatform{}
	}
	if np.Spec.Platform.OsDiskPersistence == "" {
		np.Spec.Platform.OsDiskPersistence = "Persistent"
	}
}

// NodePoolVersion is one api-version's node pool schema: external types that convert to and
// from NodePool. It is registered beside Version, so the cluster interface stays as it is.
type NodePoolVersion interface {
	String() string
	// DecodeNodePool decodes a PUT body strictly, applies the version's defaults and validates
	// it; stored is the existing node pool on a replace, nil on create. Errors are
	// *arm.CloudError with targets in this version's paths.
	DecodeNodePool(body []byte, stored *NodePool) (*NodePool, error)
	// RenderNodePool is the resource as this version shows it.
	RenderNodePool(np *NodePool) any
	// NodePoolUpdatePaths are the paths of the version's NodePoolUpdate schema: what a PATCH
	// body may hold.
	NodePoolUpdatePaths() []string
	// PreserveNodePool copies into next what this version cannot express, from stored.
	PreserveNodePool(stored, next *NodePool)
}

var nodePoolVersions registry[NodePoolVersion]

// RegisterNodePool makes a version's node pool schema servable; each version package registers
// itself in init.
func RegisterNodePool(v NodePoolVersion) { nodePoolVersions.register(v) }

// LookupNodePool finds a registered node pool schema by its exact api-version string.
func LookupNodePool(apiVersion string) (NodePoolVersion, bool) {
	return nodePoolVersions.lookup(apiVersion)
}

// PatchNodePool applies a PATCH body (a JSON merge patch, RFC 7396, of the version's
// NodePoolUpdate schema) to stored as the version shows it, then decodes, defaults and
// validates the result like a PUT body. Keys outside the update schema are errors naming them.
func PatchNodePool(v NodePoolVersion, stored *NodePool, body []byte) (*NodePool, error) {
	rendered := v.RenderNodePool(stored)
	b, err := patchedBody(body, rendered, v.String(), v.NodePoolUpdatePaths(), "node pool", func(merged, patch map[string]any) {
		// The rendered pool is read back as a body: provisioningState and status are not the
		// caller's to send.
		dropReadOnly(merged, "provisioningState", "status")
		// replicas and autoScaling exclude each other: a patch that sets one drops the other.
		pp, ok := patch["properties"].(map[string]any)
		props, ok2 := merged["properties"].(map[string]any)
		if !ok || !ok2 {
			return
		}
		dropOther := func(set, other string) {
			for k, val := range pp {
				if equalFold(k, set) && val != nil {
					for mk := range props {
						if equalFold(mk, other) {
							if _, inPatch := pp[mk]; !inPatch {
								delete(props, mk)
							}
						}
					}
				}
			}
		}
		dropOther("autoScaling", "replicas")
		dropOther("replicas", "autoScaling")
	})
	if err != nil {
		return nil, err
	}
	next, err := v.DecodeNodePool(b, stored)
	if err != nil {
		return nil, err
	}
	v.PreserveNodePool(stored, next)
	return next, nil
}

func equalFold(a, b string) bool { return len(a) == len(b) && bytes.EqualFold([]byte(a), []byte(b)) }
