package v20240610preview

import (
	"github.com/openhcp/openhcp/frontend/pkg/api/fieldcheck"
)

// clusterRules are what a cluster body of this version means beyond its schema
// (fieldcheck.Cluster): version.id is optional (required from 2025-12-23-preview on); there is
// no vnet integration subnet and no KMS key vault visibility (both came with
// 2025-12-23-preview); keyManagementMode has PlatformManaged, its default.
var clusterRules = fieldcheck.ClusterRules{PlatformManagedKey: true, ImageRegistryStates: ClusterImageRegistryStateValues}

// validate checks a decoded body: first what the specification says of each field (required
// fields, enums, ranges, lengths: validateSpec, generated), then what it cannot say
// (fieldcheck.Cluster).
func validate(e *HcpOpenShiftCluster) error {
	v := &fieldcheck.Checker{}
	e.validateSpec(v, "")
	v.Cluster(e, clusterRules)
	return v.Err()
}
