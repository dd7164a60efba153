package pgserver

import (
	"os"
	"path/filepath"
	"testing"
)

// TestPasswordFileIsOwnerOnlyWhateverWasThere: a temporary file left by an earlier crash where
// the password file is written does not make the password readable by others.
func TestPasswordFileIsOwnerOnlyWhateverWasThere(t *testing.T) {
	path := filepath.Join(t.TempDir(), "admin.pgpass")
	if err := os.WriteFile(path+".tmp", []byte("stale"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := writePassFile(path, "admin", "admin", "s3cret", 5432); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Fatalf("password file mode %v, want 0600", fi.Mode().Perm())
	}
}
