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

func TestSpreadByLabel(t *testing.T) {
	zone := func(name, z string, max, count int32, st csv1.ShardStatus) Shard {
		s := Shard{Name: name, Status: st, MaxClusters: max, ClusterCount: count}
		if z != "" {
			s.Labels = map[string]string{"zone": z, "size": "large"}
		}
		return s
	}
	tests := []struct {
		name     string
		shards   []Shard
		want     string
		wantCode codes.Code
	}{
		{
			name: "the_zone_with_fewest_clusters_wins_even_if_a_shard_elsewhere_is_emptier",
			shards: []Shard{
				zone("z1-a", "1", 100, 0, active), zone("z1-b", "1", 100, 9, active),
				zone("z2-a", "2", 100, 5, active),
			},
			want: "z2-a",
		},
		{
			name:   "within_the_zone_least_loaded",
			shards: []Shard{zone("z1-a", "1", 10, 4, active), zone("z1-b", "1", 10, 1, active), zone("z2-a", "2", 10, 6, active)},
			want:   "z1-b",
		},
		{
			name:   "shards_without_the_label_are_a_zone_of_their_own",
			shards: []Shard{zone("z1-a", "1", 10, 3, active), zone("plain", "", 10, 1, active)},
			want:   "plain",
		},
		{
			name:   "maintenance_and_full_shards_do_not_count",
			shards: []Shard{zone("z1-a", "1", 10, 0, maintenance), zone("z1-b", "1", 2, 2, active), zone("z2-a", "2", 10, 8, active)},
			want:   "z2-a",
		},
		{
			name:   "equal_zones_most_free_capacity_then_name",
			shards: []Shard{zone("z2-a", "2", 10, 2, active), zone("z1-a", "1", 10, 2, active), zone("z3-a", "3", 20, 2, active)},
			want:   "z3-a",
		},
		{
			name:     "no_room_anywhere_is_resource_exhausted",
			shards:   []Shard{zone("z1-a", "1", 1, 1, active), zone("z2-a", "2", 5, 0, offline)},
			wantCode: codes.ResourceExhausted,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := SpreadByLabel{Key: "zone"}.Choose(context.Background(), Request{ClusterID: "c"}, tc.shards)
			if tc.wantCode != codes.OK {
				if status.Code(err) != tc.wantCode {
					t.Fatalf("error %v, want code %s", err, tc.wantCode)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("got %q, %v; want %q", got, err, tc.want)
			}
		})
	}
}

func TestParsePolicy(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want Policy
		ok   bool
	}{
		{"", LeastLoaded{}, true},
		{"least-loaded", LeastLoaded{}, true},
		{"spread:zone", SpreadByLabel{Key: "zone"}, true},
		{"spread:", nil, false},
		{"round-robin", nil, false},
	} {
		got, err := ParsePolicy(tc.in)
		if (err == nil) != tc.ok || got != tc.want {
			t.Errorf("ParsePolicy(%q) = %v, %v", tc.in, got, err)
		}
	}
}
