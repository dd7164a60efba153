package placement

import (
	"context"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	csv1 "github.com/openhcp/openhcp/cluster-service/api/v1"
)

const (
	active      = csv1.ShardStatus_SHARD_STATUS_ACTIVE
	maintenance = csv1.ShardStatus_SHARD_STATUS_MAINTENANCE
	offline     = csv1.ShardStatus_SHARD_STATUS_OFFLINE
)

func TestLeastLoaded(t *testing.T) {
	tests := []struct {
		name     string
		shards   []Shard
		want     string
		wantCode codes.Code
	}{
		{
			name:   "least_loaded_wins",
			shards: []Shard{{Name: "a", Status: active, MaxClusters: 10, ClusterCount: 7}, {Name: "b", Status: active, MaxClusters: 10, ClusterCount: 2}},
			want:   "b",
		},
		{
			name:   "most_free_capacity_wins_over_lower_count",
			shards: []Shard{{Name: "small", Status: active, MaxClusters: 3, ClusterCount: 1}, {Name: "big", Status: active, MaxClusters: 100, ClusterCount: 5}},
			want:   "big",
		},
		{
			name:   "tie_broken_by_name",
			shards: []Shard{{Name: "mc-2", Status: active, MaxClusters: 5}, {Name: "mc-1", Status: active, MaxClusters: 5}},
			want:   "mc-1",
		},
		{
			name:   "maintenance_shard_skipped_even_if_empty",
			shards: []Shard{{Name: "a", Status: maintenance, MaxClusters: 100}, {Name: "b", Status: active, MaxClusters: 10, ClusterCount: 9}},
			want:   "b",
		},
		{
			name:   "offline_shard_skipped",
			shards: []Shard{{Name: "a", Status: offline, MaxClusters: 100}, {Name: "b", Status: active, MaxClusters: 2, ClusterCount: 1}},
			want:   "b",
		},
		{
			name:     "all_full_is_resource_exhausted",
			shards:   []Shard{{Name: "a", Status: active, MaxClusters: 2, ClusterCount: 2}, {Name: "b", Status: active, MaxClusters: 1, ClusterCount: 3}},
			wantCode: codes.ResourceExhausted,
		},
		{
			name:     "zero_capacity_takes_nothing",
			shards:   []Shard{{Name: "a", Status: active, MaxClusters: 0}},
			wantCode: codes.ResourceExhausted,
		},
		{
			name:     "no_shards_is_resource_exhausted",
			wantCode: codes.ResourceExhausted,
		},
		{
			name:     "only_maintenance_is_resource_exhausted",
			shards:   []Shard{{Name: "a", Status: maintenance, MaxClusters: 10}},
			wantCode: codes.ResourceExhausted,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := LeastLoaded{}.Choose(context.Background(), Request{ClusterID: "x"}, tt.shards)
			if tt.wantCode != codes.OK {
				if status.Code(err) != tt.wantCode {
					t.Fatalf("code = %v (err %v), want %v", status.Code(err), err, tt.wantCode)
				}
				if st, _ := status.FromError(err); st.Message() != "no shard has capacity" {
					t.Fatalf("message = %q", st.Message())
				}
				return
			}
			if err != nil {
				t.Fatalf("Choose: %v", err)
			}
			if got != tt.want {
				t.Fatalf("Choose = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestShardEligible(t *testing.T) {
	tests := []struct {
		name  string
		shard Shard
		want  bool
	}{
		{"active_with_room", Shard{Status: active, MaxClusters: 1}, true},
		{"active_full", Shard{Status: active, MaxClusters: 1, ClusterCount: 1}, false},
		{"active_overfull_after_capacity_lowered", Shard{Status: active, MaxClusters: 1, ClusterCount: 5}, false},
		{"maintenance", Shard{Status: maintenance, MaxClusters: 1}, false},
		{"unspecified_status", Shard{MaxClusters: 1}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.shard.Eligible(); got != tt.want {
				t.Fatalf("Eligible = %v, want %v", got, tt.want)
			}
		})
	}
}
