package session

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/openhcp/openhcp/internal/envelope"
)

// Key seals session credentials at rest: AES-256-GCM, with the session's ID as additional data
// so a sealed credential copied into another session's row does not open. The admin API
// (which seals) and the gateway (which opens) read the same key file (--session-key-file).
type Key struct{ aead cipher.AEAD }

// keyFileSize is the key's length: 32 bytes, base64 in the file.
const keyFileSize = 32

// NewKey makes a key of 32 bytes.
func NewKey(raw []byte) (*Key, error) {
	if len(raw) != keyFileSize {
		return nil, fmt.Errorf("session key: %d bytes, want %d", len(raw), keyFileSize)
	}
	block, err := aes.NewCipher(raw)
	if err != nil {
		return nil, fmt.Errorf("session key: %w", err)
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		return nil, fmt.Errorf("session key: %w", err)
	}
	return &Key{aead: aead}, nil
}

// ReadKeyFile reads a key file: 32 bytes in standard base64, readable by its owner only, or as
// a Kubernetes Secret volume gives it to a pod (envelope.CheckSecretFileMode, the region's one
// rule for key files).
func ReadKeyFile(path string) (*Key, error) {
	if err := envelope.CheckSecretFileMode(path); err != nil {
		return nil, fmt.Errorf("session key: %w", err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("session key: %w", err)
	}
	raw, err := base64.StdEncoding.DecodeString(strings.TrimSpace(string(b)))
	if err != nil {
		return nil, fmt.Errorf("session key %s: not base64: %w", path, err)
	}
	return NewKey(raw)
}

// WriteKeyFile writes a new random key to path (mode 0600); an existing file is kept, so every
// start of a region reads the key its sessions were sealed with.
func WriteKeyFile(path string) error {
	raw := make([]byte, keyFileSize)
	if _, err := rand.Read(raw); err != nil {
		return fmt.Errorf("session key: %w", err)
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if errors.Is(err, os.ErrExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("session key: %w", err)
	}
	_, err = f.WriteString(base64.StdEncoding.EncodeToString(raw) + "\n")
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("session key: write %s: %w", path, err)
	}
	return nil
}

// Seal encrypts plaintext for session id: nonce || ciphertext.
func (k *Key) Seal(id string, plaintext []byte) ([]byte, error) {
	nonce := make([]byte, k.aead.NonceSize())
	if _, err := rand.Read(nonce); err != nil {
		return nil, fmt.Errorf("seal: %w", err)
	}
	return k.aead.Seal(nonce, nonce, plaintext, []byte(id)), nil
}

// Open decrypts what Seal sealed for session id.
func (k *Key) Open(id string, sealed []byte) ([]byte, error) {
	n := k.aead.NonceSize()
	if len(sealed) < n {
		return nil, errors.New("sealed credential is too short")
	}
	out, err := k.aead.Open(nil, sealed[:n], sealed[n:], []byte(id))
	if err != nil {
		return nil, fmt.Errorf("sealed credential does not open with this key for this session: %w", err)
	}
	return out, nil
}
