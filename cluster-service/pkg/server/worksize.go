package server

import (
	"errors"
	"strings"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	workv1 "open-cluster-management.io/api/work/v1"

	csv1 "github.com/openhcp/openhcp/cluster-service/api/v1"
	"github.com/openhcp/openhcp/cluster-service/pkg/manifests"
	"github.com/openhcp/openhcp/cluster-service/pkg/store"
)

// The size rule of a write: a spec is accepted only if the ManifestWork the controller would
// send for it fits in manifests.ManifestsBudget. Maestro refuses a larger work on every apply,
// so a spec over it, once stored, would leave its resource changing for ever and its cluster
// unable to take any other change. The work is built here as the controller builds it
// (manifests.Build with the cluster's external auth, manifests.BuildNodePool); what a create
// has not chosen yet is stood in at its real size (sizeStandIns). A spec already stored over
// the budget is not checked again on read or delete: only a write that names a new spec is.

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
// its largest field (largestField) or, when no field stands out, field itself.
func (s *Server) clusterWorkFits(v *violations, field string, blame proto.Message, cl *store.Cluster, spec *csv1.ClusterSpec, ea *manifests.ExternalAuth) {
	key, ssh := cl.EtcdEncryptionKey, cl.SSHPublicKey
	if len(key) == 0 {
		key = make([]byte, 32)
	}
	if ssh == "" {
		ssh = standInSSHKey
	}
	w, err := manifests.Build(s.sizeConfig(), manifests.Cluster{ID: cl.ID, ARMResourceID: cl.ARMResourceID, Spec: spec,
		EtcdEncryptionKey: key, SSHPublicKey: ssh, WatchStatus: true})
	if err == nil {
		w, err = manifests.WithExternalAuth(w, ea)
	}
	workFits(v, field, blame, w, err)
}

// nodePoolWorkFits adds a violation unless the work of a node pool with spec in cluster cl
// fits; field is the spec's path.
func (s *Server) nodePoolWorkFits(v *violations, field string, id, armResourceID string, spec *csv1.NodePoolSpec, cl *store.Cluster) {
	w, err := manifests.BuildNodePool(s.sizeConfig(), manifests.NodePool{ID: id, ARMResourceID: armResourceID, Spec: spec,
		Cluster: manifests.Cluster{ID: cl.ID, ARMResourceID: cl.ARMResourceID, Spec: cl.Spec}, WatchStatus: true})
	workFits(v, field, spec, w, err)
}

// workFits adds the violation of a built work w over the budget. A build error (buildErr) is
// not the size rule's to report: the spec's own rules, or the controller's status, say it.
func workFits(v *violations, field string, blame proto.Message, w *workv1.ManifestWork, buildErr error) {
	if buildErr != nil || w == nil {
		return
	}
	var tooLarge *manifests.TooLargeError
	if err := manifests.CheckSize(w); errors.As(err, &tooLarge) {
		at := field
		if name := largestField(blame); name != "" {
			at = field + "." + name
		}
		v.add(at, "is too large: the resource's manifests would be %d bytes, more than the %d bytes a resource may hold (Maestro refuses a ManifestWork over %d)",
			tooLarge.Size, manifests.ManifestsBudget, manifests.ManifestsLimit)
	}
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
