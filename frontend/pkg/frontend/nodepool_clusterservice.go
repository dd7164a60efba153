package frontend

import (
	"errors"
	"net/http"
	"regexp"
	"sort"
	"strings"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	csv1 "github.com/openhcp/openhcp/cluster-service/api/v1"
	"github.com/openhcp/openhcp/frontend/pkg/api"
	"github.com/openhcp/openhcp/internal/arm"
)

// nodePoolSpec maps the internal model to Cluster Service's node pool spec: every field of
// the node pool's properties has its place there.
func nodePoolSpec(np *api.NodePool) *csv1.NodePoolSpec {
	p := &np.Properties
	spec := &csv1.NodePoolSpec{
		VersionId:               p.Version.ID,
		ChannelGroup:            p.Version.ChannelGroup,
		AutoRepair:              p.AutoRepair,
		NodeDrainTimeoutMinutes: p.NodeDrainTimeoutMinutes,
		Platform: &csv1.NodePoolPlatform{
			VmSize:                   p.Platform.VMSize,
			OsDiskSizeGib:            p.Platform.OSDisk.SizeGiB,
			OsDiskStorageAccountType: p.Platform.OSDisk.DiskStorageAccountType,
			SubnetId:                 p.Platform.SubnetID,
			AvailabilityZone:         p.Platform.AvailabilityZone,
			EncryptionAtHost:         p.Platform.EnableEncryptionAtHost,
			OsDiskEncryptionSetId:    p.Platform.OSDisk.EncryptionSetID,
			OsDiskPersistence:        osDiskPersistence(p.Platform.OSDisk.DiskType),
		},
	}
	if a := p.AutoScaling; a != nil {
		spec.Autoscaling = &csv1.NodePoolAutoscaling{Min: a.Min, Max: a.Max}
	} else {
		spec.Replicas = p.Replicas
	}
	if len(p.Labels) > 0 {
		spec.Labels = map[string]string{}
		for _, l := range p.Labels {
			spec.Labels[l.Key] = l.Value
		}
	}
	for _, t := range p.Taints {
		spec.Taints = append(spec.Taints, &csv1.Taint{Key: t.Key, Value: t.Value, Effect: t.Effect})
	}
	return spec
}

// osDiskPersistence is Cluster Service's name for an ARM diskType: a Managed disk is
// Persistent (HyperShift's word); empty leaves Cluster Service's default (Persistent).
func osDiskPersistence(diskType string) string {
	switch diskType {
	case api.DiskTypeManaged:
		return "Persistent"
	case api.DiskTypeEphemeral:
		return "Ephemeral"
	}
	return diskType
}

// mergedNodePoolSpec is what UpdateNodePool gets: Cluster Service's current spec (whose
// platform carries the defaults it resolved) with every field an update may change replaced
// from next. An empty version or channel group keeps the pool's current one; an unset
// nodeDrainTimeoutMinutes goes back to the cluster's.
func mergedNodePoolSpec(cur *csv1.NodePoolSpec, next *api.NodePool) *csv1.NodePoolSpec {
	want := nodePoolSpec(next)
	out := proto.Clone(cur).(*csv1.NodePoolSpec)
	if want.VersionId != "" {
		out.VersionId = want.VersionId
	}
	if want.ChannelGroup != "" {
		out.ChannelGroup = want.ChannelGroup
	}
	out.Replicas, out.Autoscaling = want.Replicas, want.Autoscaling
	out.Labels, out.Taints = want.Labels, want.Taints
	out.NodeDrainTimeoutMinutes = want.NodeDrainTimeoutMinutes
	return out
}

// sameClusterServiceSpec reports whether two versions of a node pool ask Cluster Service for
// the same thing: a change elsewhere (tags, identity) needs no Cluster Service call.
func sameClusterServiceSpec(a, b *api.NodePool) bool {
	return proto.Equal(nodePoolSpec(a), nodePoolSpec(b))
}

// csFieldPaths map Cluster Service's field violation paths (below the spec) to the node pool's
// properties, so its validation errors name the field as the caller wrote it.
var csFieldPaths = []struct{ cs, ext string }{
	{"version_id", "properties.version.id"},
	{"channel_group", "properties.version.channelGroup"},
	{"node_drain_timeout_minutes", "properties.nodeDrainTimeoutMinutes"},
	{"replicas", "properties.replicas"},
	{"autoscaling.min", "properties.autoScaling.min"},
	{"autoscaling.max", "properties.autoScaling.max"},
	{"autoscaling", "properties.autoScaling"},
	{"labels", "properties.labels"},
	{"taints", "properties.taints"},
	{"platform.vm_size", "properties.platform.vmSize"},
	{"platform.os_disk_size_gib", "properties.platform.osDisk.sizeGiB"},
	{"platform.os_disk_storage_account_type", "properties.platform.osDisk.diskStorageAccountType"},
	{"platform.subnet_id", "properties.platform.subnetId"},
	{"platform.availability_zone", "properties.platform.availabilityZone"},
	{"platform.encryption_at_host", "properties.platform.enableEncryptionAtHost"},
	{"platform.os_disk_encryption_set_id", "properties.platform.osDisk.encryptionSetId"},
	{"platform.os_disk_persistence", "properties.platform.osDisk.diskType"},
}

var csTaintFieldRE = regexp.MustCompile(`^taints\[(\d+)\](.*)$`)

func externalNodePoolField(field string) string {
	f := strings.TrimPrefix(strings.TrimPrefix(field, "node_pool."), "spec.")
	if m := csTaintFieldRE.FindStringSubmatch(f); m != nil {
		return "properties.taints[" + m[1] + "]" + m[2]
	}
	for _, p := range csFieldPaths {
		if f == p.cs {
			return p.ext
		}
	}
	if field == "node_pool.arm_resource_id" {
		return "name"
	}
	return ""
}

// nodePoolCSError turns Cluster Service's refusal of a node pool spec into ARM errors whose
// targets are the node pool's fields; other errors go to the common mapping unchanged.
func nodePoolCSError(err error) error {
	var gs interface{ GRPCStatus() *status.Status }
	if !errors.As(err, &gs) || gs.GRPCStatus().Code() != codes.InvalidArgument {
		return err
	}
	st := gs.GRPCStatus()
	var errs []*arm.CloudError
	for _, d := range st.Details() {
		br, ok := d.(*errdetails.BadRequest)
		if !ok {
			continue
		}
		for _, fv := range br.GetFieldViolations() {
			target := externalNodePoolField(fv.GetField())
			errs = append(errs, arm.NewCloudError(http.StatusBadRequest, arm.CodeInvalidRequestContent, target,
				"Invalid value for field '%s': %s", orField(target, fv.GetField()), fv.GetDescription()))
		}
	}
	if len(errs) == 0 {
		return err
	}
	sort.SliceStable(errs, func(i, j int) bool { return errs[i].Target < errs[j].Target })
	return arm.Multiple(errs)
}

func orField(target, field string) string {
	if target != "" {
		return target
	}
	return field
}
