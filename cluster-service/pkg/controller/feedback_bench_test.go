package controller

import (
	"strings"
	"testing"

	workv1 "open-cluster-management.io/api/work/v1"

	"github.com/openhcp/openhcp/cluster-service/pkg/manifests"
)

// feedbackLimit bounds a status feedback value: it reaches Cluster Service inside a Maestro
// gRPC message, and a gRPC client receives at most 4 MiB by default.
const feedbackLimit = 4 << 20

// BenchmarkParseFeedbackAtTheLimit parses a HostedCluster's feedback, which a management
// cluster's agent sends over the network, at the message limit in each shape: deep nesting,
// a long list of conditions, one long message, many keys.
func BenchmarkParseFeedbackAtTheLimit(b *testing.B) {
	fill := func(prefix, item, suffix string) string {
		n := (feedbackLimit - len(prefix) - len(suffix)) / len(item)
		return prefix + strings.TrimSuffix(strings.Repeat(item, n), ",") + suffix
	}
	var keys strings.Builder
	keys.WriteString(`[{"type":"Available"`)
	for i := 0; keys.Len() < feedbackLimit-32; i++ {
		keys.WriteString(`,"k`)
		keys.WriteString(strings.Repeat("x", i%7))
		keys.WriteString(`":1`)
	}
	keys.WriteString(`}]`)
	for name, raw := range map[string]string{
		"deep_arrays":     strings.Repeat("[", feedbackLimit/2) + strings.Repeat("]", feedbackLimit/2),
		"long_list":       fill(`[`, `{"type":"Available","status":"True"},`, `]`),
		"long_message":    `[{"type":"Available","message":"` + strings.Repeat("m", feedbackLimit-40) + `"}]`,
		"many_keys":       keys.String(),
		"repeated_fields": fill(`[{`, `"type":"Available",`, `}]`),
	} {
		w := &workv1.ManifestWork{}
		w.Status.ResourceStatus.Manifests = []workv1.ManifestCondition{{
			ResourceMeta: workv1.ManifestResourceMeta{Kind: "HostedCluster"},
			StatusFeedbacks: workv1.StatusFeedbackResult{Values: []workv1.FeedbackValue{{
				Name: manifests.FeedbackConditions, Value: workv1.FieldValue{Type: workv1.JsonRaw, JsonRaw: &raw},
			}}},
		}}
		b.Run(name, func(b *testing.B) {
			b.SetBytes(int64(len(raw)))
			b.ReportAllocs()
			for b.Loop() {
				_, _ = ParseFeedback(w)
			}
		})
	}
}
