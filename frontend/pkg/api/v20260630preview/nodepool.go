package v20260630preview

import (
	"slices"

	"github.com/openhcp/openhcp/frontend/pkg/api"
	"github.com/openhcp/openhcp/frontend/pkg/api/fieldcheck"
	"github.com/openhcp/openhcp/frontend/pkg/api/profiles"
)

func init() { api.RegisterNodePool(version{APIVersion}) }

// SameNodePoolSchema is the api.NodePoolVersion of an api-version whose node pool schema is
// this one's (2026-09-01-preview).
func SameNodePoolSchema(apiVersion string) api.NodePoolVersion { return version{apiVersion} }

// nodePoolRules: version.id required, sizeGiB at most 4095 (this version's OsDiskProfile).
var nodePoolRules = fieldcheck.NodePoolRules{VersionIDRequired: true, MaxOSDiskSizeGiB: 4095}

// DecodeNodePool implements api.NodePoolVersion: the body, checked against this version's
// schema, is filled into Cluster Service's spec through its arm_path options.
func (version) DecodeNodePool(body []byte, stored *api.NodePool) (*api.NodePool, error) {
	var ext NodePool
	if err := api.DecodeStrict(body, &ext); err != nil {
		return nil, err
	}
	v := &fieldcheck.Checker{}
	v.Required(ext.Location != nil && *ext.Location != "", "location")
	rules := nodePoolRules
	rules.StoredWithoutVersionID = stored != nil && stored.Spec.GetVersionId() == ""
	var size fieldcheck.NodePoolSize
	if p := ext.Properties; p != nil {
		size = fieldcheck.NodePoolSize{Replicas: p.Replicas, AutoScaling: p.AutoScaling}
	}
	v.NodePool(&ext, size, rules)
	v.NodePoolIdentity(ext.Identity)
	if err := v.Err(); err != nil {
		return nil, err
	}
	np := api.NodePoolFromARM(&ext)
	np.Location, np.Tags = str(ext.Location, ""), ext.Tags
	if ext.Identity != nil {
		np.Identity = ext.Identity.ToInternal()
	}
	return np, nil
}

// RenderNodePool implements api.NodePoolVersion: the spec's ARM form read into this version's
// type.
func (version) RenderNodePool(np *api.NodePool) any {
	ext := &NodePool{Location: ptr(np.Location), Tags: np.Tags, SystemData: np.SystemData}
	if np.ID != nil {
		ext.ID, ext.Name, ext.Type = ptr(np.ID.String()), ptr(np.ID.Name()), ptr(api.NodePoolResourceType)
	}
	if ext.Tags == nil {
		ext.Tags = map[string]string{}
	}
	np.RenderProperties(&ext.Properties)
	ext.Properties.ProvisioningState = ptr(string(np.ProvisioningState))
	ext.Properties.Version = profiles.VersionWithRequiredID(ext.Properties.Version) // version.id is required in this version's schema
	if np.Identity != nil {
		ext.Identity = profiles.RenderIdentity(np.Identity)
	}
	return ext
}

// NodePoolUpdatePaths implements api.NodePoolVersion: NodePoolUpdate of this version, generated
// from the specification.
func (version) NodePoolUpdatePaths() []string { return slices.Clone(specNodePoolUpdatePaths) }

// PreserveNodePool implements api.NodePoolVersion: this version expresses every field.
func (version) PreserveNodePool(stored, next *api.NodePool) {}
