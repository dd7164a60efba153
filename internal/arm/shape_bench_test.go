package arm_test

import (
	"strings"
	"testing"

	"github.com/openhcp/openhcp/internal/arm"
)

// bodyLimit is the frontend's body limit: a resource ID in a body (subnetId, …) can be a string
// that long. IDs in a URL path and api-versions in a query are bounded far lower, by the
// listener's header limit (internal/serverlimits).
const bodyLimit = 4 << 20

// BenchmarkParseResourceIDAtTheLimit parses IDs at the body size limit in each shape: many
// segments, one long name, many type/name pairs, and a character that refuses the ID only at
// its end. Each must cost time linear in its length.
func BenchmarkParseResourceIDAtTheLimit(b *testing.B) {
	prefix := "/subscriptions/s/resourceGroups/rg/providers/Microsoft.RedHatOpenShift"
	for _, tc := range []struct{ name, id string }{
		{"many_segments", prefix + strings.Repeat("/t/n", (bodyLimit-len(prefix))/4)},
		{"empty_segment_at_the_end", prefix + strings.Repeat("/t/n", (bodyLimit-len(prefix))/4-1) + "//"},
		{"long_name", prefix + "/hcpOpenShiftClusters/" + strings.Repeat("n", bodyLimit-len(prefix)-22)},
		{"unfoldable_character_at_the_end", prefix + "/hcpOpenShiftClusters/" + strings.Repeat("n", bodyLimit-len(prefix)-24) + "İ"},
		{"no_leading_slash", strings.Repeat("x", bodyLimit)},
	} {
		b.Run(tc.name, func(b *testing.B) {
			b.SetBytes(int64(len(tc.id)))
			b.ReportAllocs()
			for b.Loop() {
				_, _ = arm.ParseResourceID(tc.id)
			}
		})
	}
}

// BenchmarkParseAPIVersionAtTheLimit parses api-versions at the body size limit: a regular
// expression of Go's (RE2) is linear, so a long almost-match costs its length, no more.
func BenchmarkParseAPIVersionAtTheLimit(b *testing.B) {
	for _, tc := range []struct{ name, v string }{
		{"long_suffix", "2024-06-10-" + strings.Repeat("a", bodyLimit-11)},
		{"digits", strings.Repeat("1", bodyLimit)},
		{"valid", "2024-06-10-preview"},
	} {
		b.Run(tc.name, func(b *testing.B) {
			b.SetBytes(int64(len(tc.v)))
			b.ReportAllocs()
			for b.Loop() {
				_, _ = arm.ParseAPIVersion(tc.v)
			}
		})
	}
}
