// Package envelopetest gives tests a keyring with a fresh key-encryption key, so a store under
// test encrypts its secrets as a running service does.
package envelopetest

import (
	"testing"

	"github.com/openhcp/openhcp/internal/envelope"
)

// Keyring returns a keyring whose only (active) KEK is new.
func Keyring(t testing.TB) *envelope.Keyring {
	t.Helper()
	key, err := envelope.NewKey()
	if err != nil {
		t.Fatal(err)
	}
	k, err := envelope.New(key)
	if err != nil {
		t.Fatal(err)
	}
	return k
}
