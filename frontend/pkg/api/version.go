package api

import (
	"sort"
	"sync"

	"github.com/openhcp/openhcp/frontend/pkg/rolesets"
)

// Version is one api-version of the RP: external types that convert to and from the internal
// model.
type Version interface {
	String() string
	// DecodeCluster decodes a PUT body strictly (unknown fields are errors naming the field),
	// applies the version's defaults and validates it. Errors are *arm.CloudError with targets.
	// Read-only fields in the body are ignored.
	DecodeCluster(body []byte) (*Cluster, error)
	// DecodeClusterUpdate is DecodeCluster for a write to stored, an existing cluster: a field
	// this version requires but an older version did not have may stay empty if it is empty in
	// stored.
	DecodeClusterUpdate(body []byte, stored *Cluster) (*Cluster, error)
	// RenderCluster is the resource as this version shows it.
	RenderCluster(c *Cluster) any
	// PatchCluster applies a PATCH body (a JSON merge patch, RFC 7396, of this version's
	// update schema) to stored as this version shows it, and decodes, defaults and validates
	// the result like a PUT body. Fields outside the update schema are errors naming the field.
	PatchCluster(stored *Cluster, body []byte) (*Cluster, error)
	// Preserve copies into next, a cluster decoded from this version, what this version cannot
	// express, from stored: a write through an older api-version keeps what a newer one set.
	Preserve(stored, next *Cluster)
	// UpdatableFields are the internal-model paths (as in the stored JSON) that this version's
	// specification lets a write change after creation (x-ms-mutability "update").
	UpdatableFields() []string
	// WithRoleSets is this version checking the operators' names of a cluster body against the
	// role sets of c (the server's hcpOperatorIdentityRoleSets catalogue); without it no names
	// are checked.
	WithRoleSets(c *rolesets.Catalogue) Version
	// ExternalPath turns an internal-model path into the path this version's body uses, for
	// error targets.
	ExternalPath(internal string) string
}

// registry holds one kind's api-versions by their exact api-version string; each version
// package registers itself in init, and the handlers look a version up per request. Clusters,
// node pools and external auths each have one.
type registry[V interface{ String() string }] struct {
	mu sync.RWMutex
	m  map[string]V
}

func (r *registry[V]) register(v V) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.m == nil {
		r.m = map[string]V{}
	}
	r.m[v.String()] = v
}

func (r *registry[V]) lookup(apiVersion string) (V, bool) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	v, ok := r.m[apiVersion]
	return v, ok
}

func (r *registry[V]) names() []string {
	r.mu.RLock()
	defer r.mu.RUnlock()
	out := make([]string, 0, len(r.m))
	for v := range r.m {
		out = append(out, v)
	}
	sort.Strings(out)
	return out
}

var versions registry[Version]

// Register makes a version servable; each version package registers itself in init.
func Register(v Version) { versions.register(v) }

// Lookup finds a registered version by its exact api-version string.
func Lookup(apiVersion string) (Version, bool) { return versions.lookup(apiVersion) }

// Versions lists the registered api-versions, sorted.
func Versions() []string { return versions.names() }
