package encryptionconfig

import (
	"os"
	"path/filepath"
	"testing"
)

// TestEncryptionConfigIsOwnerOnlyWhateverWasThere: a temporary file left by an earlier crash
// where the apiserver's EncryptionConfiguration (its Secrets' key) is written does not make the
// key readable by others.
func TestEncryptionConfigIsOwnerOnlyWhateverWasThere(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "encryption-config.yaml.tmp"), []byte("stale"), 0o644); err != nil {
		t.Fatal(err)
	}
	path, err := LoadOrCreate(dir)
	if err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Fatalf("encryption config mode %v, want 0600", fi.Mode().Perm())
	}
}
