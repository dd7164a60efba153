package v20240610preview

import (
	"github.com/openhcp/openhcp/frontend/pkg/api"
	"github.com/openhcp/openhcp/frontend/pkg/api/codec"
)

// The node pool of this version: its structural checks generated from its specification (no
// maximum disk size), version.id optional, and no osDisk.diskType, which came with
// 2025-12-23-preview, so a write through this version keeps the stored one.
func init() {
	api.RegisterNodePool(codec.NodePool[NodePool]{
		Name: APIVersion, ValidateSpec: (*NodePool).validateSpec, UpdatePaths: specNodePoolUpdatePaths, KeepStored: preserveDiskType,
	})
}

func preserveDiskType(stored, next *api.NodePool) {
	if stored == nil {
		return
	}
	if d := stored.Spec.GetPlatform().GetOsDiskPersistence(); d != "" && next.Spec.GetPlatform() != nil {
		next.Spec.Platform.OsDiskPersistence = d
	}
}
