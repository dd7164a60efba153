package store

import (
	"context"
	"errors"
	"fmt"

	"github.com/openhcp/openhcp/internal/envelope"
)

// secretColumns are the columns that hold customer secrets: each value is sealed with
// internal/envelope (a data key per value, wrapped by the key-encryption key) and bound to its
// table, column and row. Every read and write of these columns goes through sealSecret and
// openSecret; a column added here is re-encrypted by ReencryptSecrets.
var secretColumns = []struct{ table, column string }{
	// the etcd encryption key that reaches the hosted cluster in a ManifestWork Secret
	{"clusters", "etcd_encryption_key"},
	// the break-glass private key Cluster Service generated (NULL with a customer CSR)
	{"break_glass_credentials", "private_key"},
}

// ErrNoKeyring: Open was given no key-encryption key.
var ErrNoKeyring = errors.New("a key-encryption key is required: Cluster Service stores customer secrets (etcd encryption keys, break-glass private keys) only encrypted")

func secretContext(table, column, id string) []byte {
	return []byte(table + "/" + column + "/" + id)
}

// sealSecret encrypts a secret for table.column of row id. nil stays nil (SQL NULL).
func (s *Store) sealSecret(table, column, id string, plain []byte) ([]byte, error) {
	if plain == nil {
		return nil, nil
	}
	out, err := s.keys.Seal(plain, secretContext(table, column, id))
	if err != nil {
		return nil, fmt.Errorf("encrypt %s.%s of %s: %w", table, column, id, err)
	}
	return out, nil
}

// openSecret decrypts what sealSecret stored. A value that is not sealed was written before
// secrets were encrypted; it is returned as it is, and ReencryptSecrets seals it.
func (s *Store) openSecret(table, column, id string, stored []byte) ([]byte, error) {
	if stored == nil || !envelope.IsSealed(stored) {
		return stored, nil
	}
	out, err := s.keys.Open(stored, secretContext(table, column, id))
	if err != nil {
		return nil, fmt.Errorf("decrypt %s.%s of %s: %w", table, column, id, err)
	}
	return out, nil
}

// ReencryptSecrets brings every stored secret under the active key-encryption key: values
// sealed with a retired KEK get their data key rewrapped (the ciphertext stays), values written
// before encryption existed are sealed. Each row is updated only if it still holds what was
// read, so it is safe beside running writers and idempotent. It returns how many values it
// changed; after it returns without error, no row needs a retired KEK any more.
func (s *Store) ReencryptSecrets(ctx context.Context) (int, error) {
	changed := 0
	for _, col := range secretColumns {
		rows, err := s.reads.Query(ctx, `SELECT id, `+col.column+` FROM `+col.table+` WHERE `+col.column+` IS NOT NULL`)
		if err != nil {
			return changed, fmt.Errorf("re-encrypt %s.%s: %w", col.table, col.column, err)
		}
		type row struct {
			id    string
			value []byte
		}
		var all []row
		for rows.Next() {
			var r row
			if err := rows.Scan(&r.id, &r.value); err != nil {
				rows.Close()
				return changed, fmt.Errorf("re-encrypt %s.%s: %w", col.table, col.column, err)
			}
			all = append(all, r)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return changed, fmt.Errorf("re-encrypt %s.%s: %w", col.table, col.column, err)
		}
		for _, r := range all {
			var next []byte
			if envelope.IsSealed(r.value) {
				var ok bool
				if next, ok, err = s.keys.Rewrap(r.value, secretContext(col.table, col.column, r.id)); err != nil {
					return changed, fmt.Errorf("re-encrypt %s.%s of %s: %w", col.table, col.column, r.id, err)
				}
				if !ok {
					continue
				}
			} else if next, err = s.sealSecret(col.table, col.column, r.id, r.value); err != nil {
				return changed, err
			}
			tag, err := s.pool.Exec(ctx, `UPDATE `+col.table+` SET `+col.column+` = $2 WHERE id = $1 AND `+col.column+` = $3`, r.id, next, r.value)
			if err != nil {
				return changed, fmt.Errorf("re-encrypt %s.%s of %s: %w", col.table, col.column, r.id, err)
			}
			changed += int(tag.RowsAffected())
		}
	}
	return changed, nil
}
