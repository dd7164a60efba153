package hypershiftsim

import (
	"strings"
	"testing"
	"unicode/utf8"
)

func TestLastLineOfAFailedStartsLog(t *testing.T) {
	// "é" is two bytes: after one "x" the cut at maxFailureLine falls inside one.
	long := "x" + strings.Repeat("é", maxFailureLine)
	tests := []struct {
		name, tail, want string
	}{
		{name: "last_non_empty_line_without_trailing_newlines", tail: "I1126 starting\nE1126 bind: address already in use\n\n", want: "E1126 bind: address already in use"},
		{name: "empty_log_says_so", tail: "\n", want: "(empty log)"},
		{name: "long_line_is_cut_on_a_rune_boundary", tail: "x\n" + long, want: "x" + strings.Repeat("é", (maxFailureLine-1)/2) + "…"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := lastLine(tt.tail)
			if got != tt.want {
				t.Errorf("lastLine = %q, want %q", got, tt.want)
			}
			if !utf8.ValidString(got) {
				t.Errorf("lastLine %q is not valid UTF-8", got)
			}
		})
	}
}
