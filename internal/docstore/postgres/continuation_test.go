package postgres

import (
	"encoding/base64"
	"errors"
	"testing"

	"github.com/openhcp/openhcp/internal/docstore"
)

// TestDecodeContinuationRefusesWhatTheStoreCannotHold: a token is the caller's input, so one
// whose key PostgreSQL cannot compare (a NUL, which a text parameter cannot carry: the query
// failed with SQLSTATE 22021 and the list answered 500) is an invalid continuation, as a token
// that is not ours is.
func TestDecodeContinuationRefusesWhatTheStoreCannotHold(t *testing.T) {
	tok := func(json string) string { return base64.RawURLEncoding.EncodeToString([]byte(json)) }
	for _, tc := range []struct {
		name, token string
		ok          bool
	}{
		{"ours", encodeContinuation(&docstore.Document{PartitionKey: "sub", ID: "/subscriptions/sub/x"}), true},
		{"not base64", "not-a-token!", false},
		{"no id", tok(`{"p":"sub"}`), false},
		{"unknown field", tok(`{"p":"sub","i":"a","x":1}`), false},
		{"NUL in the id", tok(`{"p":"sub","i":"\u0000"}`), false},
		{"NUL inside the id", tok(`{"p":"sub","i":"a\u0000b"}`), false},
		{"NUL in the partition", tok(`{"p":"s\u0000","i":"a"}`), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := decodeContinuation(tc.token)
			if tc.ok && err != nil {
				t.Fatalf("decode: %v", err)
			}
			if !tc.ok && !errors.Is(err, docstore.ErrInvalidContinuation) {
				t.Fatalf("decode: %v, want ErrInvalidContinuation", err)
			}
		})
	}
}
