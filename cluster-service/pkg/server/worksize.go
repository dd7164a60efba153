package server

import (
	"errors"
	"log/slog"
	"strings"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	workv1 "open-cluster-management.io/api/work/v1"

	csv1 "github.com/openhcp/openhcp/cluster-service/api/v1"
	"github.com/openhcp/openhcp/cluster-service/pkg/manifests"
	"github.com/openhcp/openhcp/cluster-service/pkg/store"
	"github.com/openhcp/openhcp/internal/logattr"
)

// The size rule of a write: a spec is accepted only if the ManifestWork the controller would
// send for it fits in manifests.ManifestsBudget. Maestro refuses a larger work on every apply,
// so a spec over it, once stored, would leave its resource changing for ever and its cluster
// unable to take any other change. The work is built here as the controller builds it
// (manifests.Build with the cluster's external auth, manifests.BuildNodePool); what a create
// has not chosen yet is stood in at its real size (sizeStandIns). A spec already stored over
// the budget is not checked again on read or delete: only a write that names a new spec is,
// and an update of it is refused only when it grows its work (workFits).

// sizeStandIns: the parts of a cluster's work that Cluster Service chooses after the write
// (its etcd key and SSH key at create), or that a development region fills from a flag, at the
// size they have.
const (
	standInSSHKey   = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"
	standInClientID = "00000000-0000-0000-0000-000000000000"
)

// sizeConfig is the build configuration of the size rule: the controller's, with a stand-in
// workload identity where a development region has none (the build needs one).
func (s *Server) sizeConfig() manifests.Config {
	cfg := s.cfg.Manifests
	cfg.Env = s.cfg.Env
	if cfg.DevWorkloadIdentityClientID == "" {
		cfg.DevWorkloadIdentityClientID = standInClientID
	}
	return cfg
}

// clusterWorkFits adds a violation unless the work of cluster cl with spec and the external
// auth ea (nil: none) fits. blame is the spec the write names, at field: the violation names
// its largest field (largestField) or, when no field stands out, field itself. stored is the
// resource as stored, for an update (nil for a create): its work is what a write over the budget
// is compared with (workFits).
func (s *Server) clusterWorkFits(v *violations, field string, blame proto.Message, cl *store.Cluster, spec *csv1.ClusterSpec, ea *manifests.ExternalAuth, stored *storedClusterWork) {
	w, err := s.clusterWork(cl, spec, ea)
	var was func() (*workv1.ManifestWork, error)
	if stored != nil {
		was = func() (*workv1.ManifestWork, error) { return s.clusterWork(cl, stored.spec, stored.ea) }
	}
	s.workFits(v, field, blame, cl.ID, w, err, was)
}

// storedClusterWork is what a cluster's stored work is built from: its spec and external auth.
type storedClusterWork struct {
	spec *csv1.ClusterSpec
	ea   *manifests.ExternalAuth
}

// clusterWork is the work of cluster cl with spec and the external auth ea (nil: none), with
// stand-ins for the keys a create has not chosen yet.
func (s *Server) clusterWork(cl *store.Cluster, spec *csv1.ClusterSpec, ea *manifests.ExternalAuth) (*workv1.ManifestWork, error) {
	key, ssh := cl.EtcdEncryptionKey, cl.SSHPublicKey
	if len(key) == 0 {
		key = make([]byte, 32)
	}
	if ssh == "" {
		ssh = standInSSHKey
	}
	w, err := manifests.Build(s.sizeConfig(), manifests.Cluster{ID: cl.ID, ARMResourceID: cl.ARMResourceID, Spec: spec,
		EtcdEncryptionKey: key, SSHPublicKey: ssh, WatchStatus: true})
	if err != nil {
		return nil, err
	}
	return manifests.WithExternalAuth(w, ea)
}

// nodePoolWorkFits adds a violation unless the work of a node pool with spec in cluster cl
// fits; field is the spec's path. stored is the pool's stored spec, for an update (nil for a
// create).
func (s *Server) nodePoolWorkFits(v *violations, field string, id, armResourceID string, spec, stored *csv1.NodePoolSpec, cl *store.Cluster) {
	build := func(spec *csv1.NodePoolSpec) (*workv1.ManifestWork, error) {
		return manifests.BuildNodePool(s.sizeConfig(), manifests.NodePool{ID: id, ARMResourceID: armResourceID, Spec: spec,
			Cluster: manifests.Cluster{ID: cl.ID, ARMResourceID: cl.ARMResourceID, Spec: cl.Spec}, WatchStatus: true})
	}
	w, err := build(spec)
	var was func() (*workv1.ManifestWork, error)
	if stored != nil {
		was = func() (*workv1.ManifestWork, error) { return build(stored) }
	}
	s.workFits(v, field, spec, cl.ID, w, err, was)
}

// workFits adds the violation of a built work w over the budget. An update (was, not nil,
// builds the resource's work as stored) whose work is over the budget is still taken when the
// stored work is over it too and the update does not make it larger: a resource stored over
// the budget (before the rule, or before the budget was lowered) can then shrink in steps. An edit that grows it, however little (a drain timeout set adds 27 bytes to
// a node pool's work), is refused until it is under the budget: allowing any growth would let
// such a resource creep, an update at a time, into the headroom the budget keeps below
// Maestro's limit. Nothing over ManifestsLimit is taken: Maestro would refuse it.
//
// A build error (buildErr) is not the size rule's to report: the spec's own rules, or the
// controller's status, say it. It is logged, so that a new build error cannot turn the rule
// off unseen.
func (s *Server) workFits(v *violations, field string, blame proto.Message, clusterID string, w *workv1.ManifestWork, buildErr error,
	was func() (*workv1.ManifestWork, error)) {
	if buildErr != nil || w == nil {
		s.sizeLog().Warn("the size rule could not build the work; the write is not checked against the budget",
			logattr.KeyClusterID, clusterID, "field", field, "error", buildErr)
		return
	}
	var tooLarge *manifests.TooLargeError
	if err := manifests.CheckSize(w); !errors.As(err, &tooLarge) {
		return
	}
	storedSize := 0
	if was != nil && tooLarge.Size <= manifests.ManifestsLimit {
		sw, err := was()
		if err != nil || sw == nil {
			s.sizeLog().Warn("the size rule could not build the stored resource's work; the update is held to the budget",
				logattr.KeyClusterID, clusterID, "field", field, "error", err)
		} else if storedSize = manifests.ManifestsSize(sw); storedSize > manifests.ManifestsBudget && tooLarge.Size <= storedSize {
			return
		}
	}
	at := field
	if name := largestField(blame); name != "" {
		at = field + "." + name
	}
	if storedSize > manifests.ManifestsBudget {
		v.add(at, "is too large: the resource's manifests would be %d bytes, more than the %d they hold now, which is already more than the %d bytes a resource may hold (Maestro refuses a ManifestWork over %d): until they are under it, an update of it must not make them larger",
			tooLarge.Size, storedSize, manifests.ManifestsBudget, manifests.ManifestsLimit)
		return
	}
	v.add(at, "is too large: the resource's manifests would be %d bytes, more than the %d bytes a resource may hold (Maestro refuses a ManifestWork over %d)",
		tooLarge.Size, manifests.ManifestsBudget, manifests.ManifestsLimit)
}

// sizeLog is the server's logger, for what the size rule reports outside a violation.
func (s *Server) sizeLog() *slog.Logger {
	if s.cfg.Log != nil {
		return s.cfg.Log
	}
	return slog.Default()
}

// largestField is the name of m's field that holds most of its encoded size, when one holds at
// least half of it; "" when none does (the size is spread over the spec).
func largestField(m proto.Message) string {
	if m == nil || !m.ProtoReflect().IsValid() {
		return ""
	}
	total := proto.Size(m)
	best, bestSize := "", 0
	m.ProtoReflect().Range(func(fd protoreflect.FieldDescriptor, val protoreflect.Value) bool {
		one := m.ProtoReflect().Type().New()
		one.Set(fd, val)
		if n := proto.Size(one.Interface()); n > bestSize {
			best, bestSize = string(fd.Name()), n
		}
		return true
	})
	if 2*bestSize < total {
		return ""
	}
	return best
}

// updateField is the update request's path of a violation at a merged spec's path ("spec" or
// "spec.<field>"): "update.<its update field>", or "update" when the update cannot name it.
func updateField(update protoreflect.MessageDescriptor, specPath string) string {
	if p, ok := csv1.UpdateFieldPath(update, strings.TrimPrefix(specPath, "spec.")); ok && strings.HasPrefix(specPath, "spec.") {
		return "update." + p
	}
	return "update"
}
