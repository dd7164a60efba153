package server

import (
	"testing"
	"time"
)

// FuzzFormToken feeds arbitrary form tokens to the check: no panic, and nothing but a token
// issued to that person (and not expired) is valid.
func FuzzFormToken(f *testing.F) {
	now := time.Date(2026, 11, 26, 0, 0, 0, 0, time.UTC)
	tokens := newFormTokens(func() time.Time { return now })
	issued := tokens.issue("alice")
	for _, s := range []string{issued, "", "AAAA", issued[:len(issued)-1], issued + "A", "%%%", tokens.issue("bob")} {
		f.Add("alice", s)
	}
	f.Fuzz(func(t *testing.T, person, tok string) {
		if tokens.valid(person, tok) && !(person == "alice" && tok == issued) {
			t.Fatalf("token %q accepted for %q", tok, person)
		}
	})
}
