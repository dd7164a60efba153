// Package healthdoc is the document the fleet Monitor (backend/pkg/monitor) keeps per hosted
// cluster in the document store: its latest health verdict and its node pools'. The Monitor
// writes it; the admin API and hcpctl read it. It is never part of an ARM resource.
package healthdoc

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/openhcp/openhcp/internal/docstore"
)

// Where the documents live: a partition of their own, which no ARM query meets.
const (
	Partition = "openhcp-monitor-health"
	Type      = "monitor-health"
)

// Cluster is one cluster's health as the Monitor last decided it.
type Cluster struct {
	ClusterID string `json:"clusterId"`
	Shard     string `json:"shard,omitempty"`
	// Health is healthy, progressing, stuck, degraded, unhealthy or stale (docs/monitor.md).
	Health string `json:"health"`
	Reason string `json:"reason"`
	// Since is when the Monitor first saw this health (by the replica that wrote it).
	Since time.Time `json:"since"`
	// CheckedAt is the check that last wrote the document; the Monitor rewrites an unchanged
	// verdict every few minutes, so an old CheckedAt means no replica checks the cluster.
	CheckedAt time.Time `json:"checkedAt"`
	// Replica is the Monitor replica that wrote it.
	Replica   string     `json:"replica"`
	NodePools []NodePool `json:"nodePools,omitempty"`
}

// NodePool is one node pool's health.
type NodePool struct {
	ID     string `json:"id"`
	Health string `json:"health"`
	Reason string `json:"reason"`
}

// Get reads a cluster's health document; nil without error when the Monitor has written none.
func Get(ctx context.Context, st docstore.Store, clusterID string) (*Cluster, error) {
	d, err := st.Get(ctx, Partition, clusterID)
	if errors.Is(err, docstore.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read health of cluster %s: %w", clusterID, err)
	}
	var c Cluster
	if err := json.Unmarshal(d.Body, &c); err != nil {
		return nil, fmt.Errorf("decode health of cluster %s: %w", clusterID, err)
	}
	return &c, nil
}
