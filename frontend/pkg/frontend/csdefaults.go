package frontend

import (
	"fmt"
	"net/http"
	"strings"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"

	csv1 "github.com/openhcp/openhcp/cluster-service/api/v1"
	"github.com/openhcp/openhcp/cluster-service/pkg/model"
	"github.com/openhcp/openhcp/frontend/pkg/api"
	"github.com/openhcp/openhcp/internal/armdoc"
)

// Cluster Service is the one owner of a cluster's and a node pool's defaults (its model's
// DefaultCluster and DefaultNodePool). The frontend calls those functions itself before a
// create's first write (withClusterServiceDefaults, withClusterServiceNodePoolDefaults), so the
// resource document holds from its first write what Cluster Service will hold, and no crash or
// failed write after Cluster Service's answer leaves a document without them. A node pool's
// defaults read the cluster as Cluster Service holds it (its subnet, channel group and the
// version its control plane runs), so the frontend reads it first and sends the pool as filled.
// A GET of a cluster fills what a document lacks from the spec Cluster Service holds
// (setClusterStatus). The lists below
// name, per kind, the spec fields whose empty value means "Cluster Service's default" (proto
// field names, dotted): never their values. They cannot be read from the proto: an empty field
// means something else for others (nodeDrainTimeoutMinutes 0 is "no limit", an empty cluster
// version is kept as the caller created it), and a replace must not keep a stored value the
// caller cleared.

// clusterDefaulted are the cluster spec's fields model.DefaultCluster fills. The version is
// not among them: Cluster Service resolves it, and a cluster created without one (through
// 2024-06-10-preview) has always shown none.
var clusterDefaulted = []string{
	"channel_group",
	"network.network_type", "network.pod_cidr", "network.service_cidr", "network.machine_cidr", "network.host_prefix",
	"api_visibility", "azure.outbound_type", "image_registry_state", "ingress_visibility", "crypto_restrictions",
}

// nodePoolDefaulted are the node pool spec's fields model.DefaultNodePool fills: from the
// cluster (the subnet, the channel group), the control plane's version, and the OS disk.
var nodePoolDefaulted = []string{
	"version_id", "channel_group",
	"platform.subnet_id", "platform.os_disk_size_gib", "platform.os_disk_storage_account_type", "platform.os_disk_persistence",
}

// fillDefaulted sets each field of dst at paths (fields without presence: a scalar's zero is
// empty) that is empty in dst and set in from to from's value, making the messages on the way
// where from has a value to copy.
func fillDefaulted(dst, from protoreflect.Message, paths []string) {
	for _, p := range paths {
		fillPath(dst, from, strings.Split(p, "."))
	}
}

func fillPath(dst, from protoreflect.Message, names []string) {
	fd := dst.Descriptor().Fields().ByName(protoreflect.Name(names[0]))
	if fd == nil {
		// A list above names a field the spec does not have: the lists' test fails on it.
		panic(fmt.Sprintf("%s has no field %s", dst.Descriptor().FullName(), names[0]))
	}
	if !from.Has(fd) {
		return
	}
	if len(names) == 1 {
		if !dst.Has(fd) {
			dst.Set(fd, from.Get(fd))
		}
		return
	}
	if !hasPath(from.Get(fd).Message(), names[1:]) {
		return
	}
	fillPath(dst.Mutable(fd).Message(), from.Get(fd).Message(), names[1:])
}

// hasPath reports whether the field at names is set in m.
func hasPath(m protoreflect.Message, names []string) bool {
	fd := m.Descriptor().Fields().ByName(protoreflect.Name(names[0]))
	if fd == nil || !m.Has(fd) {
		return false
	}
	return len(names) == 1 || hasPath(m.Get(fd).Message(), names[1:])
}

// withClusterDefaultsOf fills what c leaves empty of the fields Cluster Service defaults
// (clusterDefaulted) with from's values: model.DefaultCluster's on a create, a replace or a
// patch (withClusterServiceDefaults); on a GET, the spec Cluster Service holds.
func withClusterDefaultsOf(c *api.Cluster, from *csv1.ClusterSpec) {
	if from == nil {
		return
	}
	spec := c.Properties.Spec()
	fillDefaulted(spec.ProtoReflect(), from.ProtoReflect(), clusterDefaulted)
	c.Properties.SetSpec(spec)
}

// withClusterServiceDefaults fills what c leaves empty of the fields Cluster Service defaults
// with Cluster Service's defaults (model.DefaultCluster, the one place they are written): on a
// create before the first write, on a replace and a patch before the change is compared.
func withClusterServiceDefaults(c *api.Cluster) {
	defaulted := c.Properties.Spec()
	model.DefaultCluster(defaulted)
	withClusterDefaultsOf(c, defaulted)
}

// withDefaultsOf is withClusterDefaultsOf for a node pool (nodePoolDefaulted): on a replace,
// from the stored spec. What the caller sent stays as sent ("4.20" is shown as "4.20", as a
// cluster's version is, although Cluster Service resolves it).
func withDefaultsOf(next *api.NodePool, from *csv1.NodePoolSpec) {
	if from == nil {
		return
	}
	// A copy: next's spec may be shared with the stored pool's.
	s := proto.Clone(nodePoolSpec(next)).(*csv1.NodePoolSpec)
	fillDefaulted(s.ProtoReflect(), from.ProtoReflect(), nodePoolDefaulted)
	next.Spec = s
}

// withClusterServiceNodePoolDefaults fills what a new node pool leaves empty of the fields
// Cluster Service defaults with model.DefaultNodePool's values, from the cluster as Cluster
// Service holds it now, before the create's first write. The pool is then sent as filled:
// Cluster Service defaults nothing more and holds what the document holds, even if the cluster
// changed in between (an upgrade of the control plane ending: the pool keeps the version it
// was given, which Cluster Service checks as any named version).
func withClusterServiceNodePoolDefaults(s *Server, r *http.Request, cluster *armdoc.ResourceDocument, np *api.NodePool) error {
	ctx, cancel := s.csContext(r.Context(), info(r))
	defer cancel()
	cl, err := s.cs.GetCluster(ctx, &csv1.GetClusterRequest{Id: cluster.InternalID})
	if err != nil {
		return fmt.Errorf("read cluster %s in cluster service for its node pool defaults: %w", cluster.ResourceID, err)
	}
	withDefaultsOf(np, model.DefaultNodePool(nodePoolSpec(np), model.Cluster{Spec: cl.GetSpec(), Status: cl.GetStatus()}, nil))
	return nil
}
