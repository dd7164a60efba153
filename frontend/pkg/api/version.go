package api

import (
	"sort"
	"sync"
)

// Version is one api-version of the RP: external types that convert to and from the internal
// model.
type Version interface {
	String() string
	// DecodeCluster decodes a PUT body strictly (unknown fields are errors naming the field),
	// applies the version's defaults and validates it. Errors are *arm.CloudError with targets.
	// Read-only fields in the body are ignored.
	DecodeCluster(body []byte) (*Cluster, error)
	// RenderCluster is the resource as this version shows it.
	RenderCluster(c *Cluster) any
}

var (
	mu       sync.RWMutex
	versions = map[string]Version{}
)

// Register makes a version servable; each version package registers itself in init.
func Register(v Version) {
	mu.Lock()
	defer mu.Unlock()
	versions[v.String()] = v
}

// Lookup finds a registered version by its exact api-version string.
func Lookup(apiVersion string) (Version, bool) {
	mu.RLock()
	defer mu.RUnlock()
	v, ok := versions[apiVersion]
	return v, ok
}

// Versions lists the registered api-versions, sorted.
func Versions() []string {
	mu.RLock()
	defer mu.RUnlock()
	out := make([]string, 0, len(versions))
	for v := range versions {
		out = append(out, v)
	}
	sort.Strings(out)
	return out
}
