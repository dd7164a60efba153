package envelope

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func mustKey(t *testing.T) []byte {
	t.Helper()
	k, err := NewKey()
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func mustRing(t *testing.T, active []byte, retired ...[]byte) *Keyring {
	t.Helper()
	r, err := New(active, retired...)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func TestSealOpen(t *testing.T) {
	oldKEK, newKEK, otherKEK := mustKey(t), mustKey(t), mustKey(t)
	old := mustRing(t, oldKEK)
	secret := []byte(`{"auths":{"quay.io":{"auth":"c2VjcmV0"}}}`)
	ctx := []byte("clusters/abc/etcd_encryption_key")
	sealed, err := old.Seal(secret, ctx)
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(sealed, secret) || bytes.Contains(sealed, oldKEK) {
		t.Fatal("sealed value contains the plaintext or the KEK")
	}
	if id, _ := SealedKeyID(sealed); id != KeyID(oldKEK) {
		t.Fatalf("key ID %q, want %q", id, KeyID(oldKEK))
	}
	flip := func(i int) []byte { b := bytes.Clone(sealed); b[i] ^= 1; return b }
	hl := len(magic) + 1 + len(KeyID(oldKEK))

	tests := []struct {
		name    string
		ring    *Keyring
		sealed  []byte
		context []byte
		wantErr string
	}{
		{"same_key_opens", old, sealed, ctx, ""},
		{"rotated_ring_opens_with_the_retired_key", mustRing(t, newKEK, oldKEK), sealed, ctx, ""},
		{"ring_without_the_key_refuses", mustRing(t, newKEK, otherKEK), sealed, ctx, "not in the keyring"},
		{"other_context_refuses", old, sealed, []byte("clusters/other/etcd_encryption_key"), "does not authenticate"},
		{"altered_wrapped_dek_refuses", old, flip(hl + 20), ctx, "does not authenticate"},
		{"altered_ciphertext_refuses", old, flip(len(sealed) - 20), ctx, "does not authenticate"},
		{"altered_key_id_refuses", old, flip(len(magic) + 2), ctx, "not in the keyring"},
		{"truncated_refuses", old, sealed[:hl+10], ctx, "truncated"},
		{"plaintext_refuses", old, secret, ctx, "not a sealed value"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := tc.ring.Open(tc.sealed, tc.context)
			if tc.wantErr == "" {
				if err != nil || !bytes.Equal(got, secret) {
					t.Fatalf("Open = %q, %v; want the secret", got, err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("Open error %v, want one containing %q", err, tc.wantErr)
			}
			if bytes.Contains([]byte(err.Error()), secret) {
				t.Fatal("the error names the secret")
			}
		})
	}
}

func TestSealIsFreshEachTime(t *testing.T) {
	r := mustRing(t, mustKey(t))
	a, _ := r.Seal([]byte("same"), nil)
	b, _ := r.Seal([]byte("same"), nil)
	if bytes.Equal(a, b) {
		t.Fatal("two seals of the same secret are equal: DEK or nonce reused")
	}
}

func TestRewrap(t *testing.T) {
	oldKEK, newKEK := mustKey(t), mustKey(t)
	ctx := []byte("break_glass_credentials/c1/private_key")
	sealed, err := mustRing(t, oldKEK).Seal([]byte("private key"), ctx)
	if err != nil {
		t.Fatal(err)
	}
	rotated := mustRing(t, newKEK, oldKEK)
	out, changed, err := rotated.Rewrap(sealed, ctx)
	if err != nil || !changed {
		t.Fatalf("Rewrap = changed %v, %v", changed, err)
	}
	if id, _ := SealedKeyID(out); id != KeyID(newKEK) {
		t.Fatalf("rewrapped under %s, want the active %s", id, KeyID(newKEK))
	}
	// The ciphertext is untouched: only the wrapped DEK changed.
	if !bytes.Equal(out[len(out)-len("private key")-tagSize-nonceSize:], sealed[len(sealed)-len("private key")-tagSize-nonceSize:]) {
		t.Fatal("rewrap changed the ciphertext")
	}
	// The new key alone opens it: the old key can be removed.
	if got, err := mustRing(t, newKEK).Open(out, ctx); err != nil || string(got) != "private key" {
		t.Fatalf("Open after rewrap = %q, %v", got, err)
	}
	if _, err := mustRing(t, oldKEK).Open(out, ctx); !errors.Is(err, ErrUnknownKey) {
		t.Fatalf("the old key still opens a rewrapped value: %v", err)
	}
	again, changed, err := rotated.Rewrap(out, ctx)
	if err != nil || changed || !bytes.Equal(again, out) {
		t.Fatalf("second Rewrap = changed %v, %v; want unchanged", changed, err)
	}
	if _, _, err := rotated.Rewrap(sealed, []byte("elsewhere")); err == nil {
		t.Fatal("Rewrap under another context succeeded")
	}
}

func TestKeyFiles(t *testing.T) {
	dir := t.TempDir()
	active := filepath.Join(dir, "kek")
	key, err := WriteKeyFile(active)
	if err != nil {
		t.Fatal(err)
	}
	if fi, _ := os.Stat(active); fi.Mode().Perm() != 0o600 {
		t.Fatalf("key file mode %04o, want 0600", fi.Mode().Perm())
	}
	retired := filepath.Join(dir, "retired")
	if err := os.Mkdir(retired, 0o700); err != nil {
		t.Fatal(err)
	}
	old, err := WriteKeyFile(filepath.Join(retired, "2026-01"))
	if err != nil {
		t.Fatal(err)
	}
	write := func(name, content string, mode os.FileMode) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), mode); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(p, mode); err != nil {
			t.Fatal(err)
		}
		return p
	}
	type keyFileCase struct {
		name       string
		active     string
		retiredDir string
		wantErr    string
		wantIDs    []string
	}
	tests := []keyFileCase{
		{"active_only", active, "", "", []string{KeyID(key)}},
		{"active_and_retired", active, retired, "", []string{KeyID(key), KeyID(old)}},
		{"group_readable_refused", write("loose", "AAAA", 0o640), "", "chmod 600", nil},
		{"world_readable_refused", write("open", "AAAA", 0o604), "", "chmod 600", nil},
		{"not_base64_refused", write("garbage", "not base64!", 0o600), "", "not base64", nil},
		{"short_key_refused", write("short", "c2hvcnQ=", 0o600), "", "must be 32 bytes", nil},
		{"missing_file_refused", filepath.Join(dir, "absent"), "", "no such file", nil},
		{"missing_retired_dir_refused", active, filepath.Join(dir, "absent"), "no such file", nil},
	}
	// A Kubernetes Secret volume with fsGroup: another user's file (root's, there) that this
	// process reads through its own group. Changing a file's owner needs root.
	if os.Getuid() == 0 {
		raw, err := os.ReadFile(active)
		if err != nil {
			t.Fatal(err)
		}
		chowned := func(name string, uid, gid int, mode os.FileMode) string {
			p := write(name, string(raw), mode)
			if err := os.Chown(p, uid, gid); err != nil {
				t.Fatal(err)
			}
			return p
		}
		tests = append(tests,
			keyFileCase{"secret_volume_own_group_accepted", chowned("fsgroup", 65532, os.Getgid(), 0o440), "", "", []string{KeyID(key)}},
			keyFileCase{"other_group_refused", chowned("othergroup", 65532, 65532, 0o440), "", "chmod 600", nil},
			keyFileCase{"own_group_writable_refused", chowned("groupwrite", 65532, os.Getgid(), 0o460), "", "chmod 600", nil},
			keyFileCase{"own_group_and_others_refused", chowned("others", 65532, os.Getgid(), 0o444), "", "chmod 600", nil},
		)
	}
	// A retired-key directory laid out as a Kubernetes Secret volume: each key a symbolic link
	// into ..data, which links to a timestamped directory.
	secretVolume := filepath.Join(dir, "retired-secret-volume")
	stamped := filepath.Join(secretVolume, "..2026_11_23_07_00_00.000000001")
	if err := os.MkdirAll(stamped, 0o700); err != nil {
		t.Fatal(err)
	}
	rawOld, err := os.ReadFile(filepath.Join(retired, "2026-01"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(stamped, "2026-01"), rawOld, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Base(stamped), filepath.Join(secretVolume, "..data")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("..data/2026-01", filepath.Join(secretVolume, "2026-01")); err != nil {
		t.Fatal(err)
	}
	tests = append(tests, keyFileCase{"retired_in_secret_volume_layout", active, secretVolume, "", []string{KeyID(key), KeyID(old)}})
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r, err := LoadFiles(tc.active, tc.retiredDir)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("LoadFiles error %v, want one containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if r.ActiveKeyID() != KeyID(key) {
				t.Fatalf("active %s, want %s", r.ActiveKeyID(), KeyID(key))
			}
			want := append([]string(nil), tc.wantIDs...)
			if len(want) == 2 && want[0] > want[1] {
				want[0], want[1] = want[1], want[0]
			}
			if got := r.KeyIDs(); strings.Join(got, ",") != strings.Join(want, ",") {
				t.Fatalf("key IDs %v, want %v", got, want)
			}
		})
	}
}
