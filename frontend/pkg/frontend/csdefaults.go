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
// (setClusterStatus).
//
// Which fields those functions default (never their values) is read off the functions
// themselves: the fields they set in an empty spec (defaultedFields). A field whose empty value
// is a value of its own (nodeDrainTimeoutMinutes 0 is "no limit", an empty cluster version is
// kept as the caller created it) is one they leave empty, so it is not among them, and a replace
// never keeps a stored value the caller cleared there. A default that depended on a value other
// than the placeholders of populated (a string "x", a number 1) would be missed: the test of
// these lists compares them with what the functions fill for a real cluster.

// clusterDefaulted are the cluster spec's fields model.DefaultCluster fills (dotted proto
// field names).
var clusterDefaulted = defaultedFields(func(empty *csv1.ClusterSpec) proto.Message {
	model.DefaultCluster(empty)
	return empty
})

// nodePoolDefaulted are the node pool spec's fields model.DefaultNodePool fills, given a
// cluster whose every field is set: what it takes from the cluster (the subnet, the channel
// group, the control plane's version) and its own (the OS disk).
var nodePoolDefaulted = defaultedFields(func(empty *csv1.NodePoolSpec) proto.Message {
	return model.DefaultNodePool(empty, model.Cluster{Spec: populated[*csv1.ClusterSpec](), Status: populated[*csv1.ClusterStatus]()}, nil)
})

// defaultedFields are the dotted paths of the scalar fields that defaults sets in an empty M
// whose every (non-list, non-map) message field is present and empty.
func defaultedFields[M proto.Message](defaults func(empty M) proto.Message) []string {
	var zero M
	empty := zero.ProtoReflect().New()
	walkMessages(empty, func(protoreflect.Message, protoreflect.FieldDescriptor) {})
	var out []string
	setScalarPaths(defaults(empty.Interface().(M)).ProtoReflect(), "", &out)
	return out
}

// populated is an M whose every scalar field is set (strings to "x", numbers to 1, booleans
// to true, enums to their second value), in present messages all the way down.
func populated[M proto.Message]() M {
	var zero M
	m := zero.ProtoReflect().New()
	walkMessages(m, func(msg protoreflect.Message, fd protoreflect.FieldDescriptor) {
		switch fd.Kind() {
		case protoreflect.StringKind:
			msg.Set(fd, protoreflect.ValueOfString("x"))
		case protoreflect.BoolKind:
			msg.Set(fd, protoreflect.ValueOfBool(true))
		case protoreflect.EnumKind:
			if vs := fd.Enum().Values(); vs.Len() > 1 {
				msg.Set(fd, protoreflect.ValueOfEnum(vs.Get(1).Number()))
			}
		case protoreflect.Int32Kind, protoreflect.Sint32Kind, protoreflect.Sfixed32Kind:
			msg.Set(fd, protoreflect.ValueOfInt32(1))
		case protoreflect.Int64Kind, protoreflect.Sint64Kind, protoreflect.Sfixed64Kind:
			msg.Set(fd, protoreflect.ValueOfInt64(1))
		}
	})
	return m.Interface().(M)
}

// walkMessages makes every singular message field of m present (recursively) and calls scalar
// for each singular scalar field on the way.
func walkMessages(m protoreflect.Message, scalar func(protoreflect.Message, protoreflect.FieldDescriptor)) {
	fields := m.Descriptor().Fields()
	for i := 0; i < fields.Len(); i++ {
		fd := fields.Get(i)
		switch {
		case fd.IsList() || fd.IsMap():
		case fd.Message() != nil:
			walkMessages(m.Mutable(fd).Message(), scalar)
		default:
			scalar(m, fd)
		}
	}
}

// setScalarPaths appends the dotted paths of m's set scalar fields.
func setScalarPaths(m protoreflect.Message, prefix string, out *[]string) {
	m.Range(func(fd protoreflect.FieldDescriptor, v protoreflect.Value) bool {
		p := prefix + string(fd.Name())
		if fd.Message() != nil && !fd.IsList() && !fd.IsMap() {
			setScalarPaths(v.Message(), p+".", out)
		} else {
			*out = append(*out, p)
		}
		return true
	})
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
	spec := c.CopySpec()
	fillDefaulted(spec.ProtoReflect(), from.ProtoReflect(), clusterDefaulted)
	c.Spec = api.SpecProperties(spec)
}

// withClusterServiceDefaults fills what c leaves empty of the fields Cluster Service defaults
// with Cluster Service's defaults (model.DefaultCluster, the one place they are written): on a
// create before the first write, on a replace and a patch before the change is compared.
func withClusterServiceDefaults(c *api.Cluster) {
	defaulted := c.CopySpec()
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
