package main

import (
	"strings"
	"testing"
)

// TestRevokedNoteSaysWhenAReplacementWorks: a certificate is refused while its NotBefore is
// before the revocation, and the region's PKI backdates NotBefore by pki.Backdate, so the note
// names the first moment a replacement may be issued, rounded up to the second.
func TestRevokedNoteSaysWhenAReplacementWorks(t *testing.T) {
	for _, tc := range []struct {
		name      string
		revokedAt any
		want      string
	}{
		{"whole_second", "2026-11-28T12:00:00Z", "issued after 2026-11-28T12:05:00Z"},
		{"fraction_rounds_up", "2026-11-28T12:00:00.25Z", "issued after 2026-11-28T12:05:01Z"},
		{"offset_shown_in_utc", "2026-11-28T13:00:00+01:00", "issued after 2026-11-28T12:05:00Z"},
		{"unreadable_time_still_says_the_margin", nil, "issued at least 5m0s after the revocation"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := revokedNote("bob", tc.revokedAt); !strings.Contains(got, tc.want) || !strings.HasPrefix(got, "bob's certificates issued before") {
				t.Fatalf("note %q, want it to say %q", got, tc.want)
			}
		})
	}
}
