package api

import (
	"bytes"
	"encoding/json"
	"sync"

	"github.com/openhcp/openhcp/internal/arm"
	"github.com/openhcp/openhcp/internal/armdoc"
)

// NodePoolResourceType is the ARM type of a node pool.
const NodePoolResourceType = "Microsoft.RedHatOpenShift/hcpOpenShiftClusters/nodePools"

// NodePool is a whole hcpOpenShiftClusters/nodePools resource.
type NodePool struct {
	// ID is set from the request path, never from the body.
	ID                *arm.ResourceID          `json:"-"`
	Location          string                   `json:"-"`
	Tags              map[string]string        `json:"-"`
	SystemData        *arm.SystemData          `json:"-"`
	ProvisioningState armdoc.ProvisioningState `json:"-"`

	// Identity and Properties are stored as ResourceDocument.Properties.
	Identity   *ManagedServiceIdentity `json:"identity,omitempty"`
	Properties NodePoolProperties      `json:"properties"`
}

// NodePoolProperties are the customer's settings with defaults applied.
type NodePoolProperties struct {
	Version  NodePoolVersionProfile  `json:"version"`
	Platform NodePoolPlatformProfile `json:"platform"`
	// Replicas is the fixed node count; Cluster Service refuses it beside AutoScaling unless 0.
	Replicas    int32                `json:"replicas"`
	AutoRepair  bool                 `json:"autoRepair"`
	AutoScaling *NodePoolAutoScaling `json:"autoScaling,omitempty"`
	Labels      []Label              `json:"labels,omitempty"`
	Taints      []Taint              `json:"taints,omitempty"`
	// NodeDrainTimeoutMinutes is nil when unset: the cluster's value applies.
	NodeDrainTimeoutMinutes *int32 `json:"nodeDrainTimeoutMinutes,omitempty"`
}

type NodePoolVersionProfile struct {
	ID           string `json:"id,omitempty"`
	ChannelGroup string `json:"channelGroup"`
}

type NodePoolPlatformProfile struct {
	SubnetID               string        `json:"subnetId,omitempty"`
	VMSize                 string        `json:"vmSize"`
	EnableEncryptionAtHost bool          `json:"enableEncryptionAtHost"`
	OSDisk                 OSDiskProfile `json:"osDisk"`
	AvailabilityZone       string        `json:"availabilityZone,omitempty"`
}

type OSDiskProfile struct {
	SizeGiB                int32  `json:"sizeGiB"`
	DiskStorageAccountType string `json:"diskStorageAccountType"`
	EncryptionSetID        string `json:"encryptionSetId,omitempty"`
	// DiskType came with 2025-12-23-preview; older versions keep what is stored.
	DiskType string `json:"diskType"`
}

type NodePoolAutoScaling struct {
	Min int32 `json:"min"`
	Max int32 `json:"max"`
}

type Label struct {
	Key   string `json:"key"`
	Value string `json:"value"`
}

type Taint struct {
	Key    string `json:"key"`
	Value  string `json:"value,omitempty"`
	Effect string `json:"effect"`
}

// The diskType values of the specification (Cluster Service's Persistent and Ephemeral).
const (
	DiskTypeManaged   = "Managed"
	DiskTypeEphemeral = "Ephemeral"
)

// Default fills diskType in a document stored before node pools had one (their disks are
// Managed, as Cluster Service holds them); new documents hold Cluster Service's answer.
func (np *NodePool) Default() {
	if np.Properties.Platform.OSDisk.DiskType == "" {
		np.Properties.Platform.OSDisk.DiskType = DiskTypeManaged
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

var (
	npMu       sync.RWMutex
	npVersions = map[string]NodePoolVersion{}
)

// RegisterNodePool makes a version's node pool schema servable; each version package registers
// itself in init.
func RegisterNodePool(v NodePoolVersion) {
	npMu.Lock()
	defer npMu.Unlock()
	npVersions[v.String()] = v
}

// LookupNodePool finds a registered node pool schema by its exact api-version string.
func LookupNodePool(apiVersion string) (NodePoolVersion, bool) {
	npMu.RLock()
	defer npMu.RUnlock()
	v, ok := npVersions[apiVersion]
	return v, ok
}

// PatchNodePool applies a PATCH body (a JSON merge patch, RFC 7396, of the version's
// NodePoolUpdate schema) to stored as the version shows it, then decodes, defaults and
// validates the result like a PUT body. Keys outside the update schema are errors naming them.
func PatchNodePool(v NodePoolVersion, stored *NodePool, body []byte) (*NodePool, error) {
	rendered := v.RenderNodePool(stored)
	patch, err := decodePatch(body, rendered, v.String(), v.NodePoolUpdatePaths(), "node pool")
	if err != nil {
		return nil, err
	}
	doc, err := renderedBody(rendered)
	if err != nil {
		return nil, err
	}
	// The rendered pool is read back as a body: read-only fields are accepted and ignored by
	// the decoder, but provisioningState and status are not the caller's to send.
	if props, ok := doc["properties"].(map[string]any); ok {
		delete(props, "provisioningState")
		delete(props, "status")
	}
	merged := mergePatch(doc, patch).(map[string]any)
	// replicas and autoScaling exclude each other: a patch that sets one drops the other.
	if pp, ok := patch["properties"].(map[string]any); ok {
		if props, ok := merged["properties"].(map[string]any); ok {
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
		}
	}
	b, err := json.Marshal(merged)
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
