package store

import (
	"fmt"
	"sync"
	"time"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"

	csv1 "github.com/openhcp/openhcp/cluster-service/api/v1"
)

// decodedCacheSize bounds decodedClusters: a few kilobytes each, so some tens of megabytes at
// most; past it an arbitrary entry makes room.
const decodedCacheSize = 10000

// decodedClusters keeps the last decoded spec and status of each cluster read, by the revision
// and update time it was read at, so that reading an unchanged cluster again does not decode the
// same JSON again. Every ARM GET of a cluster reads it (its status), and in P1 protojson decoding
// was 40 % of Cluster Service's CPU for a GetCluster (docs/perf-data/run-log-2026-11.md, "P1 with the
// management clusters paused"). Every write of a cluster draws a new revision from the
// sequence, so a cluster's revision and update time name one content of its spec and status.
// Readers get clones: what they change is theirs.
type decodedClusters struct {
	mu sync.Mutex
	m  map[string]decodedCluster
}

type decodedCluster struct {
	revision int64
	updated  time.Time
	spec     *csv1.ClusterSpec
	status   *csv1.ClusterStatus
}

// decode sets c's Spec and Status from their stored JSON, from the cache when c's revision and
// update time are those it holds for c's ID. A nil cache always decodes.
func (d *decodedClusters) decode(c *Cluster, specJSON, statusJSON []byte) error {
	if d != nil {
		d.mu.Lock()
		e, ok := d.m[c.ID]
		d.mu.Unlock()
		if ok && e.revision == c.Revision && e.updated.Equal(c.UpdateTime) {
			c.Spec, c.Status = proto.Clone(e.spec).(*csv1.ClusterSpec), proto.Clone(e.status).(*csv1.ClusterStatus)
			return nil
		}
	}
	spec, status := &csv1.ClusterSpec{}, &csv1.ClusterStatus{}
	if err := protojson.Unmarshal(specJSON, spec); err != nil {
		return fmt.Errorf("decode spec of cluster %s: %w", c.ID, err)
	}
	if err := protojson.Unmarshal(statusJSON, status); err != nil {
		return fmt.Errorf("decode status of cluster %s: %w", c.ID, err)
	}
	if d != nil {
		d.mu.Lock()
		if _, ok := d.m[c.ID]; !ok && len(d.m) >= decodedCacheSize {
			for id := range d.m {
				delete(d.m, id)
				break
			}
		}
		d.m[c.ID] = decodedCluster{revision: c.Revision, updated: c.UpdateTime, spec: spec, status: status}
		d.mu.Unlock()
		spec, status = proto.Clone(spec).(*csv1.ClusterSpec), proto.Clone(status).(*csv1.ClusterStatus)
	}
	c.Spec, c.Status = spec, status
	return nil
}
