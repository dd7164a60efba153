package model

import (
	"slices"
	"testing"

	csv1 "github.com/openhcp/openhcp/cluster-service/api/v1"
)

// TestValidateScaling: the one rule of a pool's size, at each bound.
func TestValidateScaling(t *testing.T) {
	for _, tc := range []struct {
		name   string
		spec   *csv1.NodePoolSpec
		fields []string
	}{
		{"replicas_200_without_zone", &csv1.NodePoolSpec{Replicas: 200}, nil},
		{"replicas_201_without_zone_is_refused", &csv1.NodePoolSpec{Replicas: 201}, []string{"spec.replicas"}},
		{"replicas_500_in_a_zone", &csv1.NodePoolSpec{Replicas: 500, Platform: &csv1.NodePoolPlatform{AvailabilityZone: "1"}}, nil},
		{"replicas_501_in_a_zone_is_refused", &csv1.NodePoolSpec{Replicas: 501, Platform: &csv1.NodePoolPlatform{AvailabilityZone: "1"}}, []string{"spec.replicas"}},
		{"negative_replicas_is_refused", &csv1.NodePoolSpec{Replicas: -1}, []string{"spec.replicas"}},
		{"autoscaling_from_zero_is_refused", &csv1.NodePoolSpec{Autoscaling: &csv1.NodePoolAutoscaling{Min: 0, Max: 3}}, []string{"spec.autoscaling.min"}},
		{"autoscaling_negative_both", &csv1.NodePoolSpec{Autoscaling: &csv1.NodePoolAutoscaling{Min: -1, Max: -1}}, []string{"spec.autoscaling.min", "spec.autoscaling.max"}},
		{"autoscaling_max_below_min", &csv1.NodePoolSpec{Autoscaling: &csv1.NodePoolAutoscaling{Min: 4, Max: 2}}, []string{"spec.autoscaling.max"}},
		{"autoscaling_max_201_without_zone", &csv1.NodePoolSpec{Autoscaling: &csv1.NodePoolAutoscaling{Min: 1, Max: 201}}, []string{"spec.autoscaling.max"}},
		{"replicas_beside_autoscaling_is_refused", &csv1.NodePoolSpec{Replicas: 3, Autoscaling: &csv1.NodePoolAutoscaling{Min: 1, Max: 3}}, []string{"spec.replicas"}},
		{"replicas_0_beside_autoscaling_is_none", &csv1.NodePoolSpec{Autoscaling: &csv1.NodePoolAutoscaling{Min: 1, Max: 3}}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var v Violations
			validateScaling(&v, "spec", tc.spec)
			var got []string
			for _, f := range v {
				got = append(got, f.GetField())
			}
			if !slices.Equal(got, tc.fields) {
				t.Fatalf("violations %v, want %v", v, tc.fields)
			}
		})
	}
}
