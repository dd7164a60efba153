package secretseal

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"testing"
)

func TestSealOpensOnlyWithItsKeyAndItsSecret(t *testing.T) {
	dir := t.TempDir()
	priv, err := WriteKeyPair(filepath.Join(dir, "mgmt-1.key"), filepath.Join(dir, "mgmt-1.pub"))
	if err != nil {
		t.Fatal(err)
	}
	pub, err := ReadPublicKey(filepath.Join(dir, "mgmt-1.pub"))
	if err != nil {
		t.Fatal(err)
	}
	read, err := ReadPrivateKey(filepath.Join(dir, "mgmt-1.key"))
	if err != nil {
		t.Fatal(err)
	}
	if pub.KeyID() != priv.Public().KeyID() || read.Public().KeyID() != pub.KeyID() {
		t.Fatal("the files do not hold one key pair")
	}
	other, err := GenerateKey()
	if err != nil {
		t.Fatal(err)
	}
	secret := []byte("0123456789abcdef0123456789abcdef")
	sealed, err := pub.Seal("ns", "hc-etcd-encryption-key", "key", secret)
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(sealed, secret) {
		t.Fatal("the sealed value holds the plaintext")
	}
	again, _ := pub.Seal("ns", "hc-etcd-encryption-key", "key", secret)
	if bytes.Equal(sealed, again) {
		t.Fatal("two seals of one value are equal: no fresh encapsulation")
	}
	got, err := read.Open("ns", "hc-etcd-encryption-key", "key", sealed)
	if err != nil || !bytes.Equal(got, secret) {
		t.Fatalf("open with the key: %q, %v", got, err)
	}
	tampered := append([]byte{}, sealed...)
	tampered[len(tampered)-3] ^= 'A' ^ 'B'
	for _, tc := range []struct {
		name            string
		key             *PrivateKey
		ns, secret, val string
		sealed          []byte
	}{
		{"another_management_clusters_key", other, "ns", "hc-etcd-encryption-key", "key", sealed},
		{"moved_to_another_namespace", read, "ns2", "hc-etcd-encryption-key", "key", sealed},
		{"moved_to_another_secret", read, "ns", "hc-pull-secret", "key", sealed},
		{"moved_to_another_key", read, "ns", "hc-etcd-encryption-key", "other", sealed},
		{"tampered", read, "ns", "hc-etcd-encryption-key", "key", tampered},
		{"not_sealed", read, "ns", "hc-etcd-encryption-key", "key", secret},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got, err := tc.key.Open(tc.ns, tc.secret, tc.val, tc.sealed); err == nil {
				t.Fatalf("opened: %q", got)
			}
		})
	}
	if _, err := other.Open("ns", "hc-etcd-encryption-key", "key", sealed); !errors.Is(err, ErrOtherKey) {
		t.Fatalf("another key's error %v, want ErrOtherKey", err)
	}
}

func TestPrivateKeyFileMustBeOwnerOnly(t *testing.T) {
	dir := t.TempDir()
	key := filepath.Join(dir, "k")
	if _, err := WriteKeyPair(key, filepath.Join(dir, "k.pub")); err != nil {
		t.Fatal(err)
	}
	if st, _ := os.Stat(key); st.Mode().Perm() != 0o600 {
		t.Fatalf("key file mode %v", st.Mode().Perm())
	}
	if err := os.Chmod(key, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadPrivateKey(key); err == nil {
		t.Fatal("a world-readable private key was read")
	}
	// Under make deploy the sim reads it from a Secret volume: root's file, mode 0440, readable
	// through the pod's fsGroup. Changing a file's owner needs root.
	if os.Getuid() != 0 {
		return
	}
	if err := os.Chmod(key, 0o440); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(key, 65532, os.Getgid()); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadPrivateKey(key); err != nil {
		t.Fatalf("a key as a Secret volume gives it to the pod's group was refused: %v", err)
	}
}

func TestKeyDirFindsEachManagementClustersKey(t *testing.T) {
	dir := t.TempDir()
	k, err := WriteKeyPair(filepath.Join(t.TempDir(), "mgmt-1.key"), filepath.Join(dir, "mgmt-1.pub"))
	if err != nil {
		t.Fatal(err)
	}
	got, err := KeyDir(dir).PublicKey("mgmt-1")
	if err != nil || got == nil || got.KeyID() != k.Public().KeyID() {
		t.Fatalf("mgmt-1: %v, %v", got, err)
	}
	if got, err := KeyDir(dir).PublicKey("mgmt-2"); got != nil || err != nil {
		t.Fatalf("a management cluster without a key: %v, %v; want none and no error", got, err)
	}
	for _, bad := range []string{"", "../mgmt-1", ".hidden", "a/b"} {
		if _, err := KeyDir(dir).PublicKey(bad); err == nil {
			t.Errorf("consumer %q was looked up", bad)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "mgmt-3.pub"), []byte("not a key\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := KeyDir(dir).PublicKey("mgmt-3"); err == nil {
		t.Error("a broken key file was accepted")
	}
}
