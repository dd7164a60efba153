package model

import (
	"strings"
	"testing"
	"unicode/utf8"
)

// TestViolationDescriptionIsBounded: a description that quotes a caller's value is cut at
// 1024 on a UTF-8 boundary and marked, so a 60,000-character ID is not repeated whole
// in the answer's message and details; a short one is kept as it is.
func TestViolationDescriptionIsBounded(t *testing.T) {
	for _, tc := range []struct {
		name, value string
		cut         bool
	}{
		{"short", "abc", false},
		{"long", strings.Repeat("b", 60_000), true},
		{"long_multibyte", strings.Repeat("é", 30_000), true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var v Violations
			v.Add("id", "must be 32 characters, not %q", tc.value)
			d := v[0].GetDescription()
			if !utf8.ValidString(d) {
				t.Fatalf("description is not UTF-8: %q", d[len(d)-8:])
			}
			switch {
			case tc.cut && (len(d) > MaxDescription+len("…") || !strings.HasSuffix(d, "…")):
				t.Fatalf("description of %d bytes, want at most %d and marked", len(d), MaxDescription+len("…"))
			case !tc.cut && d != `must be 32 characters, not "abc"`:
				t.Fatalf("description %q changed", d)
			}
			if msg := v.Err().Error(); len(msg) > 2*MaxDescription {
				t.Fatalf("message of %d bytes", len(msg))
			}
		})
	}
}
