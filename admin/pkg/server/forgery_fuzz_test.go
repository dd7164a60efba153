package server

import (
	"testing"
	"time"
)

// FuzzFormToken feeds arbitrary form tokens to the check: no panic, and nothing but a token
// issued to that person (and not expired) is valid.
func FuzzFormToken(f *testing.F) {
	now := time.Date(2026, 11, 26, 0, 0, 0, 0, time.UTC)
	tokens := newFormTokens(nil, func() time.Time { return now })
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

// TestFormTokensOfOneReplicaPassAnother: replicas that share the region's form key accept each
// other's tokens; a replica with another key, or a token past its expiry, does not.
func TestFormTokensOfOneReplicaPassAnother(t *testing.T) {
	now := time.Date(2026, 11, 26, 0, 0, 0, 0, time.UTC)
	clock := func() time.Time { return now }
	key := make([]byte, 32)
	key[0] = 7
	a, b, other := newFormTokens(key, clock), newFormTokens(key, clock), newFormTokens(nil, clock)
	tok := a.issue("alice")
	if !b.valid("alice", tok) {
		t.Fatal("a replica with the same key refused the token")
	}
	if other.valid("alice", tok) {
		t.Fatal("a replica with another key accepted the token")
	}
	now = now.Add(formTokenTTL + time.Second)
	if b.valid("alice", tok) {
		t.Fatal("an expired token was accepted")
	}
}
