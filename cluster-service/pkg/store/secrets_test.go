package store

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"testing"

	csv1 "github.com/openhcp/openhcp/cluster-service/api/v1"
	"github.com/openhcp/openhcp/cluster-service/pkg/placement"
	"github.com/openhcp/openhcp/internal/envelope"
)

func keyring(t *testing.T, active []byte, retired ...[]byte) *envelope.Keyring {
	t.Helper()
	k, err := envelope.New(active, retired...)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func newKEK(t *testing.T) []byte {
	t.Helper()
	k, err := envelope.NewKey()
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// rawSecret reads a secret column as PostgreSQL holds it, past the store.
func rawSecret(t *testing.T, s *Store, table, column, id string) []byte {
	t.Helper()
	var v []byte
	if err := s.pool.QueryRow(context.Background(), `SELECT `+column+` FROM `+table+` WHERE id = $1`, id).Scan(&v); err != nil {
		t.Fatalf("read %s.%s of %s: %v", table, column, id, err)
	}
	return v
}

// readyCluster creates a cluster and makes it READY, so a break-glass credential can be requested.
func readyCluster(t testing.TB, s *Store, n int) *Cluster {
	t.Helper()
	ctx := context.Background()
	c, _, err := s.CreateCluster(ctx, newCluster(csid(n), armID("secret"+csid(n))), placement.LeastLoaded{})
	if err != nil {
		t.Fatalf("CreateCluster: %v", err)
	}
	if c, err = s.UpdateStatus(ctx, c.ID, c.Revision, &csv1.ClusterStatus{State: csv1.ClusterState_CLUSTER_STATE_READY}); err != nil {
		t.Fatalf("UpdateStatus: %v", err)
	}
	return c
}

func openWith(t *testing.T, dsn string, keys *envelope.Keyring) *Store {
	t.Helper()
	s, err := Open(context.Background(), dsn, slog.Default(), keys)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(s.Close)
	return s
}

// TestSecretsAtRest reads the rows PostgreSQL holds and proves that no secret is stored in
// plaintext, that the store still reads them after a KEK rotation, that the re-encrypt pass
// moves every row to the new KEK (after which the old one can go), and that rows written before
// encryption are sealed by it.
func TestSecretsAtRest(t *testing.T) {
	ctx := context.Background()
	dsn := newDSN(t)
	oldKEK, newKEK := newKEK(t), newKEK(t)

	if _, err := Open(ctx, dsn, slog.Default(), nil); err == nil || !strings.Contains(err.Error(), "key-encryption key is required") {
		t.Fatalf("Open without a keyring: %v", err)
	}

	s := openWith(t, dsn, keyring(t, oldKEK))
	register(t, s, "mc-1", 10)
	c := readyCluster(t, s, 1)
	privateKey := []byte("-----PKCS#8 DER of a generated break-glass key-----")
	cred, _, err := s.CreateCredential(ctx, &Credential{ID: "cred-1", ClusterID: c.ID, PrivateKey: privateKey}, testAudit)
	if err != nil {
		t.Fatalf("CreateCredential: %v", err)
	}
	customerCSR, _, err := s.CreateCredential(ctx, &Credential{ID: "cred-csr", ClusterID: c.ID, CSR: "-----BEGIN CERTIFICATE REQUEST-----"}, testAudit)
	if err != nil {
		t.Fatalf("CreateCredential with a CSR: %v", err)
	}

	secrets := []struct {
		name, table, column, id string
		plain                   []byte
	}{
		{"etcd_key", "clusters", "etcd_encryption_key", c.ID, c.EtcdEncryptionKey},
		{"break_glass_private_key", "break_glass_credentials", "private_key", cred.ID, privateKey},
	}
	if len(c.EtcdEncryptionKey) != 32 || !bytes.Equal(cred.PrivateKey, privateKey) || customerCSR.PrivateKey != nil {
		t.Fatalf("the store returns etcd key %d bytes, private key %q, CSR credential key %q", len(c.EtcdEncryptionKey), cred.PrivateKey, customerCSR.PrivateKey)
	}
	if raw := rawSecret(t, s, "break_glass_credentials", "private_key", customerCSR.ID); raw != nil {
		t.Fatalf("a credential without a generated key stores %q, want NULL", raw)
	}

	t.Run("rows_hold_no_plaintext", func(t *testing.T) {
		for _, sc := range secrets {
			raw := rawSecret(t, s, sc.table, sc.column, sc.id)
			if bytes.Contains(raw, sc.plain) || !envelope.IsSealed(raw) {
				t.Errorf("%s: %s.%s holds the plaintext or an unsealed value", sc.name, sc.table, sc.column)
			}
			if id, _ := envelope.SealedKeyID(raw); id != envelope.KeyID(oldKEK) {
				t.Errorf("%s: sealed under key %q, want %q", sc.name, id, envelope.KeyID(oldKEK))
			}
		}
		// The etcd key is nowhere else in the database either (event log included).
		var hits int
		if err := s.pool.QueryRow(ctx, `SELECT count(*) FROM cluster_events WHERE position($1::bytea in convert_to(cluster::text, 'UTF8')) > 0
			OR position(encode($1::bytea, 'base64')::bytea in convert_to(cluster::text, 'UTF8')) > 0`, c.EtcdEncryptionKey).Scan(&hits); err != nil || hits != 0 {
			t.Errorf("etcd key found in %d cluster events (%v)", hits, err)
		}
	})

	t.Run("a_row_moved_to_another_cluster_does_not_decrypt", func(t *testing.T) {
		other := readyCluster(t, s, 2)
		if _, err := s.pool.Exec(ctx, `UPDATE clusters SET etcd_encryption_key = $2 WHERE id = $1`, other.ID, rawSecret(t, s, "clusters", "etcd_encryption_key", c.ID)); err != nil {
			t.Fatal(err)
		}
		if _, err := s.GetCluster(ctx, other.ID); err == nil || !strings.Contains(err.Error(), "decrypt clusters.etcd_encryption_key") {
			t.Fatalf("GetCluster of a row with another cluster's key: %v", err)
		}
		if _, err := s.pool.Exec(ctx, `DELETE FROM clusters WHERE id = $1`, other.ID); err != nil {
			t.Fatal(err)
		}
	})

	s.Close()
	t.Run("without_the_kek_nothing_decrypts", func(t *testing.T) {
		stranger := openWith(t, dsn, keyring(t, newKEK))
		if _, err := stranger.GetCluster(ctx, c.ID); err == nil || !strings.Contains(err.Error(), "not in the keyring") {
			t.Fatalf("GetCluster with a foreign KEK: %v", err)
		}
	})

	// Rotation: newKEK active, oldKEK retired.
	rotated := openWith(t, dsn, keyring(t, newKEK, oldKEK))
	t.Run("after_rotation_old_rows_decrypt_and_new_rows_use_the_new_kek", func(t *testing.T) {
		got, err := rotated.GetCluster(ctx, c.ID)
		if err != nil || !bytes.Equal(got.EtcdEncryptionKey, c.EtcdEncryptionKey) {
			t.Fatalf("GetCluster after rotation: %v", err)
		}
		gotCred, err := rotated.GetCredential(ctx, cred.ID)
		if err != nil || !bytes.Equal(gotCred.PrivateKey, privateKey) {
			t.Fatalf("GetCredential after rotation: %v", err)
		}
		fresh := readyCluster(t, rotated, 3)
		if id, _ := envelope.SealedKeyID(rawSecret(t, rotated, "clusters", "etcd_encryption_key", fresh.ID)); id != envelope.KeyID(newKEK) {
			t.Fatalf("a new cluster's key is sealed under %q, want the new KEK %q", id, envelope.KeyID(newKEK))
		}
	})

	// A row from before encryption existed (plaintext) is read as it is and sealed by the pass.
	legacy := readyCluster(t, rotated, 4)
	legacyKey := bytes.Repeat([]byte{7}, 32)
	if _, err := rotated.pool.Exec(ctx, `UPDATE clusters SET etcd_encryption_key = $2 WHERE id = $1`, legacy.ID, legacyKey); err != nil {
		t.Fatal(err)
	}
	secrets = append(secrets, struct {
		name, table, column, id string
		plain                   []byte
	}{"legacy_plaintext_etcd_key", "clusters", "etcd_encryption_key", legacy.ID, legacyKey})

	t.Run("reencrypt_moves_every_row_to_the_active_kek", func(t *testing.T) {
		before := map[string][]byte{}
		for _, sc := range secrets {
			before[sc.name] = rawSecret(t, rotated, sc.table, sc.column, sc.id)
		}
		n, err := rotated.ReencryptSecrets(ctx)
		if err != nil || n != 3 {
			t.Fatalf("ReencryptSecrets = %d, %v; want 3 (two rewrapped, one legacy sealed)", n, err)
		}
		if n, err := rotated.ReencryptSecrets(ctx); err != nil || n != 0 {
			t.Fatalf("second ReencryptSecrets = %d, %v; want 0", n, err)
		}
		for _, sc := range secrets {
			raw := rawSecret(t, rotated, sc.table, sc.column, sc.id)
			if id, _ := envelope.SealedKeyID(raw); id != envelope.KeyID(newKEK) || bytes.Contains(raw, sc.plain) {
				t.Errorf("%s: after re-encryption under key %q (want %q), plaintext present %v", sc.name, id, envelope.KeyID(newKEK), bytes.Contains(raw, sc.plain))
			}
			if envelope.IsSealed(before[sc.name]) && !bytes.Equal(raw[len(raw)-len(sc.plain)-16:], before[sc.name][len(before[sc.name])-len(sc.plain)-16:]) {
				t.Errorf("%s: the rotation rewrote the ciphertext; only the data key's wrapping should change", sc.name)
			}
		}
	})

	rotated.Close()
	t.Run("the_retired_kek_can_go", func(t *testing.T) {
		newOnly := openWith(t, dsn, keyring(t, newKEK))
		for _, sc := range secrets {
			var got []byte
			switch sc.table {
			case "clusters":
				c, err := newOnly.GetCluster(ctx, sc.id)
				if err != nil {
					t.Fatalf("%s: %v", sc.name, err)
				}
				got = c.EtcdEncryptionKey
			default:
				c, err := newOnly.GetCredential(ctx, sc.id)
				if err != nil {
					t.Fatalf("%s: %v", sc.name, err)
				}
				got = c.PrivateKey
			}
			if !bytes.Equal(got, sc.plain) {
				t.Errorf("%s: read %x, want the original secret", sc.name, got)
			}
		}
	})
}

// testAudit is the audit record of credentials the store tests create.
var testAudit = CredentialAudit{Identity: "frontend", ForWhom: "system:customer-break-glass:test", Kind: AuditKindCustomer, ValiditySeconds: 3600}
