package srestatement

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	csv1 "github.com/openhcp/openhcp/cluster-service/api/v1"
)

// TestKeyFiles: a written pair signs and verifies; a signing key that group or others may read
// is refused, naming its mode.
func TestKeyFiles(t *testing.T) {
	dir := t.TempDir()
	keyFile, pubFile := filepath.Join(dir, "k"), filepath.Join(dir, "k.pub")
	if err := WriteKeyPair(keyFile, pubFile); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(keyFile); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("key file mode: %v %v", fi.Mode(), err)
	}
	key, err := ReadKey(keyFile)
	if err != nil {
		t.Fatal(err)
	}
	pub, err := ReadPublicKey(pubFile)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	st := &csv1.SREStatement{Person: "alice", ClusterId: "c", CredentialId: "x", Access: csv1.SREAccess_SRE_ACCESS_ADMIN, ValiditySeconds: 600}
	signed, err := Sign(key, st, now)
	if err != nil {
		t.Fatal(err)
	}
	got, err := Verify(pub, signed, now)
	if err != nil || got.GetPerson() != "alice" {
		t.Fatalf("verify: %v %v", got, err)
	}
	if err := Matches(got, "x", "c", &csv1.SRECredential{Person: "alice", Access: csv1.SREAccess_SRE_ACCESS_ADMIN, ValiditySeconds: 600}); err != nil {
		t.Fatalf("matches: %v", err)
	}
	if err := Matches(got, "x", "other", &csv1.SRECredential{Person: "alice", Access: csv1.SREAccess_SRE_ACCESS_ADMIN, ValiditySeconds: 600}); err == nil || !strings.Contains(err.Error(), "cluster") {
		t.Fatalf("another cluster matches: %v", err)
	}
	for _, tc := range []struct {
		name string
		at   time.Time
	}{
		{"expired", now.Add(Lifetime + Skew + time.Second)},
		{"issued_in_the_future", now.Add(-Skew - time.Second)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := Verify(pub, signed, tc.at); err == nil {
				t.Fatal("verified")
			}
		})
	}
	if err := os.Chmod(keyFile, 0o640); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadKey(keyFile); err == nil || !strings.Contains(err.Error(), "0640") {
		t.Fatalf("group-readable key: %v", err)
	}
}
