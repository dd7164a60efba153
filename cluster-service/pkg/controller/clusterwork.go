package controller

import (
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"sync"

	hypershiftv1beta1 "github.com/openshift/hypershift/api/hypershift/v1beta1"
	workv1 "open-cluster-management.io/api/work/v1"

	"google.golang.org/protobuf/proto"

	"github.com/openhcp/openhcp/cluster-service/pkg/manifests"
	"github.com/openhcp/openhcp/cluster-service/pkg/store"
	"github.com/openhcp/openhcp/internal/secretseal"
)

// builtClusterWork is a cluster's work as one reconcile sends it.
type builtClusterWork struct {
	work *workv1.ManifestWork
}

// hostedCluster decodes the HostedCluster the work carries (not kept with the work: at about
// 20 KB per cluster with both modes, the decoded form doubled what the cache holds).
func (b builtClusterWork) hostedCluster() (*hypershiftv1beta1.HostedCluster, error) {
	return manifests.HostedClusterOf(b.work)
}

// errBuild marks a spec that cannot be built (as opposed to a failure to add the external auth).
type errBuild struct{ err error }

func (e errBuild) Error() string { return e.err.Error() }
func (e errBuild) Unwrap() error { return e.err }

// Every reconcile of a cluster needs its work in both feedback modes (withFeedbackMode), and
// building one encodes every manifest, hashes the spec, decodes the HostedCluster to add the
// external auth, hashes again and decodes it once more: with a create reconciled about ten
// times (placement, apply, each status event) this was the largest item of Cluster Service's
// own CPU per create (docs/performance.md, "CPU per operation"). What a work is built from
// (the spec, the ARM ID, the keys, the key its secrets are sealed to, the external auth, the mode) changes far less often than
// the row, whose revision every status write moves, so the works last built are kept per
// cluster and mode with a digest of those inputs, and built again only when it differs.

// builtWorks is the work last built per cluster and feedback mode, with its inputs' digest.
// The works in it are shared and never modified (maestro.Client.Apply sends a copy).
type builtWorks struct {
	mu sync.Mutex
	m  map[builtKey]builtEntry
}

type builtKey struct {
	id    string
	watch bool
}

type builtEntry struct {
	inputs [sha256.Size]byte
	built  builtClusterWork
}

func newBuiltWorks() *builtWorks { return &builtWorks{m: map[builtKey]builtEntry{}} }

func (b *builtWorks) get(k builtKey, inputs [sha256.Size]byte) (builtClusterWork, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	e, ok := b.m[k]
	return e.built, ok && e.inputs == inputs
}

func (b *builtWorks) put(k builtKey, inputs [sha256.Size]byte, w builtClusterWork) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.m[k] = builtEntry{inputs: inputs, built: w}
}

// forgetWatched drops the watched form of id's work: a steady cluster's reconciles use only
// the polled one until its spec changes, so the cache holds one work per steady cluster.
func (b *builtWorks) forgetWatched(id string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	delete(b.m, builtKey{id, true})
}

func (b *builtWorks) forget(id string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	delete(b.m, builtKey{id, false})
	delete(b.m, builtKey{id, true})
}

// workInputs digests everything clusterWork builds from besides the controller's fixed
// configuration: each field length-prefixed, the protos in deterministic encoding.
func workInputs(cl *store.Cluster, ea *store.ExternalAuth, sealTo *secretseal.PublicKey) ([sha256.Size]byte, error) {
	h := sha256.New()
	field := func(b []byte) {
		h.Write(binary.BigEndian.AppendUint64(nil, uint64(len(b))))
		h.Write(b)
	}
	det := proto.MarshalOptions{Deterministic: true}
	spec, err := det.Marshal(cl.Spec)
	if err != nil {
		return [sha256.Size]byte{}, fmt.Errorf("digest spec of cluster %s: %w", cl.ID, err)
	}
	field([]byte(cl.ID))
	field([]byte(cl.ARMResourceID))
	field(spec)
	field(cl.EtcdEncryptionKey)
	field([]byte(cl.SSHPublicKey))
	// The key the secrets are sealed to (a seal is random, so the key's ID stands for it).
	if sealTo != nil {
		field([]byte(sealTo.KeyID()))
	} else {
		field(nil)
	}
	if ea != nil && !ea.Deleting {
		eaSpec, err := det.Marshal(ea.Spec)
		if err != nil {
			return [sha256.Size]byte{}, fmt.Errorf("digest external auth of cluster %s: %w", cl.ID, err)
		}
		field([]byte{1})
		field([]byte(ea.ARMResourceID))
		field(eaSpec)
	} else {
		field([]byte{0})
	}
	var out [sha256.Size]byte
	h.Sum(out[:0])
	return out, nil
}

// clusterWork is the work of cl with its external auth ea (nil: none) in the feedback mode
// watch: the one last built when its inputs are unchanged,
// else built now. The result is shared: callers must not modify it.
func (c *Controller) clusterWork(cl *store.Cluster, ea *store.ExternalAuth, sealTo *secretseal.PublicKey, watch bool) (builtClusterWork, error) {
	inputs, err := workInputs(cl, ea, sealTo)
	if err != nil {
		return builtClusterWork{}, err
	}
	k := builtKey{cl.ID, watch}
	if b, ok := c.built.get(k, inputs); ok {
		return b, nil
	}
	b, err := c.buildClusterWork(cl, ea, sealTo, watch)
	if err != nil {
		return builtClusterWork{}, err
	}
	c.built.put(k, inputs, b)
	return b, nil
}

// buildClusterWork builds the work of cl with its external auth ea (nil: none) in the
// feedback mode watch.
func (c *Controller) buildClusterWork(cl *store.Cluster, ea *store.ExternalAuth, sealTo *secretseal.PublicKey, watch bool) (builtClusterWork, error) {
	c.workBuilds.WithLabelValues("cluster").Inc()
	w, err := manifests.Build(c.cfg.Manifests, manifests.Cluster{ID: cl.ID, ARMResourceID: cl.ARMResourceID, Spec: cl.Spec,
		EtcdEncryptionKey: cl.EtcdEncryptionKey, SSHPublicKey: cl.SSHPublicKey, WatchStatus: watch, ReadSecretsLive: c.cfg.ReadSecretsLive,
		SealTo: sealTo})
	if err != nil {
		return builtClusterWork{}, errBuild{err}
	}
	var in *manifests.ExternalAuth
	if ea != nil && !ea.Deleting {
		in = &manifests.ExternalAuth{ARMResourceID: ea.ARMResourceID, Spec: ea.Spec}
	}
	if w, err = manifests.WithExternalAuth(w, in); err != nil {
		return builtClusterWork{}, fmt.Errorf("add external auth to the work of cluster %s: %w", cl.ID, err)
	}
	return builtClusterWork{work: w}, nil
}
