// Package placement chooses the provision shard (management cluster) a new cluster goes to.
// It owns the eligibility rules (active, with free capacity) and the pluggable choice among the
// eligible shards; the store calls it inside the transaction that counts clusters per shard.
package placement

import (
	"context"
	"fmt"
	"sort"
	"strings"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	csv1 "github.com/openhcp/openhcp/cluster-service/api/v1"
)

// Shard is a provision shard as placement sees it: its capacity and current load.
type Shard struct {
	Name         string
	Status       csv1.ShardStatus
	MaxClusters  int32
	ClusterCount int32
	Labels       map[string]string
}

// Free is the number of clusters the shard can still take.
func (s Shard) Free() int32 {
	if s.ClusterCount >= s.MaxClusters {
		return 0
	}
	return s.MaxClusters - s.ClusterCount
}

// Eligible says whether the shard may take a new cluster: only ACTIVE shards with room do.
// MAINTENANCE and OFFLINE shards keep their clusters but take no new ones.
func (s Shard) Eligible() bool {
	return s.Status == csv1.ShardStatus_SHARD_STATUS_ACTIVE && s.Free() > 0
}

// Request describes the cluster being placed, for policies that look at it.
type Request struct {
	ClusterID string
	Location  string
}

// Policy picks one shard out of all known shards. Implementations must only return a shard
// for which Eligible is true, and return ErrNoCapacity when there is none. Choose must be
// deterministic for the same input so that a retried transaction makes the same decision.
type Policy interface {
	Choose(ctx context.Context, req Request, shards []Shard) (string, error)
}

// ErrNoCapacity is the gRPC error returned when no shard can take the cluster; the frontend
// maps it to 503 with Retry-After.
var ErrNoCapacity = status.Error(codes.ResourceExhausted, "no shard has capacity")

// LeastLoaded is the default policy: the eligible shard with the most free capacity; ties are
// broken by the lower load (fewer clusters), then by name.
type LeastLoaded struct{}

// Choose implements Policy.
func (LeastLoaded) Choose(_ context.Context, _ Request, shards []Shard) (string, error) {
	eligible := Filter(shards)
	if len(eligible) == 0 {
		return "", ErrNoCapacity
	}
	sort.Slice(eligible, func(i, j int) bool {
		a, b := eligible[i], eligible[j]
		if a.Free() != b.Free() {
			return a.Free() > b.Free()
		}
		if a.ClusterCount != b.ClusterCount {
			return a.ClusterCount < b.ClusterCount
		}
		return a.Name < b.Name
	})
	return eligible[0].Name, nil
}

// Filter returns the eligible shards, in input order.
func Filter(shards []Shard) []Shard {
	var out []Shard
	for _, s := range shards {
		if s.Eligible() {
			out = append(out, s)
		}
	}
	return out
}

// PolicyFunc adapts a function to Policy.
type PolicyFunc func(ctx context.Context, req Request, shards []Shard) (string, error)

// Choose implements Policy.
func (f PolicyFunc) Choose(ctx context.Context, req Request, shards []Shard) (string, error) {
	return f(ctx, req, shards)
}

// SpreadByLabel spreads clusters over the values of one shard label, e.g. "zone": it picks the
// label value whose eligible shards hold the fewest clusters (ties: the most free capacity, then
// the value), then the least-loaded eligible shard with that value. Shards without the label
// count as one more value, "". Like every policy it only ever returns an eligible shard, so
// capacity and maintenance rules are the same as LeastLoaded's.
type SpreadByLabel struct {
	Key string
}

// Choose implements Policy.
func (p SpreadByLabel) Choose(ctx context.Context, req Request, shards []Shard) (string, error) {
	eligible := Filter(shards)
	if len(eligible) == 0 {
		return "", ErrNoCapacity
	}
	type group struct {
		value      string
		load, free int32
		shardsOfIt []Shard
	}
	byValue := map[string]*group{}
	for _, s := range eligible {
		v := s.Labels[p.Key]
		g := byValue[v]
		if g == nil {
			g = &group{value: v}
			byValue[v] = g
		}
		g.load += s.ClusterCount
		g.free += s.Free()
		g.shardsOfIt = append(g.shardsOfIt, s)
	}
	groups := make([]*group, 0, len(byValue))
	for _, g := range byValue {
		groups = append(groups, g)
	}
	sort.Slice(groups, func(i, j int) bool {
		a, b := groups[i], groups[j]
		if a.load != b.load {
			return a.load < b.load
		}
		if a.free != b.free {
			return a.free > b.free
		}
		return a.value < b.value
	})
	return LeastLoaded{}.Choose(ctx, req, groups[0].shardsOfIt)
}

// ParsePolicy reads a policy name as the --placement-policy flag takes it: "least-loaded", or
// "spread:<label>" (e.g. "spread:zone").
func ParsePolicy(name string) (Policy, error) {
	switch {
	case name == "" || name == "least-loaded":
		return LeastLoaded{}, nil
	case strings.HasPrefix(name, "spread:") && len(name) > len("spread:"):
		return SpreadByLabel{Key: strings.TrimPrefix(name, "spread:")}, nil
	}
	return nil, fmt.Errorf("unknown placement policy %q: use least-loaded or spread:<label>", name)
}
