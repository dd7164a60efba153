package server

import (
	"regexp"
	"time"

	"google.golang.org/protobuf/proto"

	csv1 "github.com/openhcp/openhcp/cluster-service/api/v1"
	"github.com/openhcp/openhcp/cluster-service/pkg/model"
	"github.com/openhcp/openhcp/cluster-service/pkg/versions"
)

var (
	clusterIDRE = regexp.MustCompile(`^[0-9a-v]{32}$`)
	// /subscriptions/{sub}/resourceGroups/{rg}/providers/Microsoft.RedHatOpenShift/hcpOpenShiftClusters/{name}
	armClusterRE = regexp.MustCompile(`(?i)^/subscriptions/([0-9a-f-]{36})/resourcegroups/([-\w._()]{1,90})/providers/microsoft\.redhatopenshift/hcpopenshiftclusters/([a-zA-Z]([-a-zA-Z0-9]{0,52}[a-zA-Z0-9])?)$`)
	shardNameRE  = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$`)
)

// violations collects field errors as model.Violations does (the one implementation): the
// request-level checks here and the model's rules add to the same list.
type violations model.Violations

func (v *violations) add(field, format string, args ...any) { v.model().Add(field, format, args...) }

func (v violations) err() error { return model.Violations(v).Err() }

// model is v as the model package's rules take it.
func (v *violations) model() *model.Violations { return (*model.Violations)(v) }

func oneOf(v *violations, field, val string, allowed ...string) {
	model.OneOf(v.model(), field, val, allowed...)
}

func validateClusterID(v *violations, field, id string) {
	if !clusterIDRE.MatchString(id) {
		v.add(field, "must be 32 characters of [0-9a-v], not %q", id)
	}
}

// validateCreate checks a create request and returns the spec with defaults applied and the
// version resolved through the catalogue ("4.19" becomes the newest enabled 4.19.z).
func validateCreate(req *csv1.CreateClusterRequest, catalogue *versions.Catalogue, now time.Time) (*csv1.ClusterSpec, error) {
	var v violations
	c := req.GetCluster()
	if c == nil {
		v.add("cluster", "is required")
		return nil, v.err()
	}
	validateClusterID(&v, "cluster.id", c.GetId())
	if !armClusterRE.MatchString(c.GetArmResourceId()) {
		v.add("cluster.arm_resource_id", "must be /subscriptions/{uuid}/resourceGroups/{rg}/providers/Microsoft.RedHatOpenShift/hcpOpenShiftClusters/{name}, not %q", c.GetArmResourceId())
	}
	if c.GetSpec() == nil {
		v.add("cluster.spec", "is required")
		return nil, v.err()
	}
	spec := proto.Clone(c.GetSpec()).(*csv1.ClusterSpec)
	model.DefaultCluster(spec)

	if resolved, err := catalogue.Resolve(spec.GetChannelGroup(), spec.GetVersionId(), now); err != nil {
		v.add("cluster.spec.version_id", "%v", err)
	} else {
		spec.VersionId = resolved
	}
	model.ValidateClusterSpec(v.model(), "cluster.spec", spec)
	return spec, v.err()
}

func validateShard(sh *csv1.ProvisionShard) error {
	var v violations
	if sh == nil {
		v.add("shard", "is required")
		return v.err()
	}
	if !shardNameRE.MatchString(sh.GetName()) {
		v.add("shard.name", "must be a DNS label (the Maestro consumer name), not %q", sh.GetName())
	}
	if sh.GetMaxClusters() < 0 {
		v.add("shard.max_clusters", "must not be negative")
	}
	if _, ok := csv1.ShardStatus_name[int32(sh.GetStatus())]; !ok {
		v.add("shard.status", "unknown status %d", sh.GetStatus())
	}
	for k := range sh.GetLabels() {
		if k == "" || len(k) > 63 {
			v.add("shard.labels", "keys must be 1-63 characters")
		}
	}
	return v.err()
}
