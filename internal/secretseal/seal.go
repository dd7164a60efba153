// Package secretseal seals a Kubernetes Secret's data to one management cluster, so that the
// ManifestWork that carries it through Maestro (its database, its REST API, the broker) holds
// only ciphertext. Cluster Service seals with the management cluster's public key; only the
// holder of the private key (hypershift-sim, on the management side) opens it and writes the
// real Secret. The cipher is HPKE (RFC 9180, crypto/hpke): DHKEM(X25519, HKDF-SHA256),
// HKDF-SHA256, AES-256-GCM, base mode; the info binds each value to its Secret's namespace,
// name and key, so a value moved to another Secret does not open.
package secretseal

import (
	"crypto/ecdh"
	"crypto/hpke"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/openhcp/openhcp/internal/atomicfile"
	"github.com/openhcp/openhcp/internal/envelope"
)

// The sealed Secret's shape on the wire (in the ManifestWork) and on the management cluster.
const (
	// Type is the type of a sealed Secret: nothing but the unsealer reads it.
	Type = "openhcp.io/sealed"
	// TargetAnnotation names the Secret (same namespace) the unsealer writes.
	TargetAnnotation = "openhcp.io/unseal-to"
	// TargetTypeAnnotation is the type the written Secret gets.
	TargetTypeAnnotation = "openhcp.io/unseal-type"
	// KeyIDAnnotation is the ID of the public key the Secret is sealed to (KeyID).
	KeyIDAnnotation = "openhcp.io/sealed-to"
	// LabelSealed marks sealed Secrets, so the unsealer watches only them.
	LabelSealed = "openhcp.io/sealed"
)

const format = "ohseal1:"

var (
	kem  = hpke.DHKEM(ecdh.X25519())
	kdf  = hpke.HKDFSHA256()
	aead = hpke.AES256GCM()
)

// PublicKey is a management cluster's sealing key, as Cluster Service holds it.
type PublicKey struct{ k hpke.PublicKey }

// PrivateKey is a management cluster's opening key, held on the management side only.
type PrivateKey struct{ k hpke.PrivateKey }

// GenerateKey makes a new key pair.
func GenerateKey() (*PrivateKey, error) {
	k, err := kem.GenerateKey()
	if err != nil {
		return nil, fmt.Errorf("generate sealing key: %w", err)
	}
	return &PrivateKey{k}, nil
}

// Public is the key's public half.
func (p *PrivateKey) Public() *PublicKey { return &PublicKey{p.k.PublicKey()} }

// KeyID names a public key: the first 8 bytes of the SHA-256 of its encoding, in hex.
func (p *PublicKey) KeyID() string {
	sum := sha256.Sum256(p.k.Bytes())
	return hex.EncodeToString(sum[:8])
}

// info binds a sealed value to where it belongs.
func info(namespace, name, key string) []byte {
	return []byte("openhcp secret seal v1\x00" + namespace + "\x00" + name + "\x00" + key)
}

// Seal seals one value of the Secret namespace/name under key: "ohseal1:<key ID>:<base64 of
// HPKE's encapsulated key and ciphertext>".
func (p *PublicKey) Seal(namespace, name, key string, plaintext []byte) ([]byte, error) {
	ct, err := hpke.Seal(p.k, kdf, aead, info(namespace, name, key), plaintext)
	if err != nil {
		return nil, fmt.Errorf("seal %s/%s %s: %w", namespace, name, key, err)
	}
	return []byte(format + p.KeyID() + ":" + base64.StdEncoding.EncodeToString(ct)), nil
}

// ErrOtherKey is returned for a value sealed to another key.
var ErrOtherKey = errors.New("sealed to another key")

// Open opens a value Seal made for the Secret namespace/name under key.
func (p *PrivateKey) Open(namespace, name, key string, sealed []byte) ([]byte, error) {
	rest, ok := strings.CutPrefix(string(sealed), format)
	if !ok {
		return nil, fmt.Errorf("open %s/%s %s: not a sealed value", namespace, name, key)
	}
	id, b64, ok := strings.Cut(rest, ":")
	if !ok {
		return nil, fmt.Errorf("open %s/%s %s: not a sealed value", namespace, name, key)
	}
	if want := p.Public().KeyID(); id != want {
		return nil, fmt.Errorf("open %s/%s %s: key %s, this is %s: %w", namespace, name, key, id, want, ErrOtherKey)
	}
	ct, err := base64.StdEncoding.DecodeString(b64)
	if err != nil {
		return nil, fmt.Errorf("open %s/%s %s: %w", namespace, name, key, err)
	}
	pt, err := hpke.Open(p.k, kdf, aead, info(namespace, name, key), ct)
	if err != nil {
		return nil, fmt.Errorf("open %s/%s %s: %w", namespace, name, key, err)
	}
	return pt, nil
}

// Key files: base64 of RFC 9180's serialized key, one line. The private file is 0600.

// WriteKeyPair writes a new key pair to privPath (0600) and pubPath (0644), atomically.
func WriteKeyPair(privPath, pubPath string) (*PrivateKey, error) {
	k, err := GenerateKey()
	if err != nil {
		return nil, err
	}
	raw, err := k.k.Bytes()
	if err != nil {
		return nil, fmt.Errorf("encode sealing key: %w", err)
	}
	if err := atomicfile.Write(privPath, []byte(base64.StdEncoding.EncodeToString(raw)+"\n"), 0o600); err != nil {
		return nil, err
	}
	if err := atomicfile.Write(pubPath, []byte(base64.StdEncoding.EncodeToString(k.Public().k.Bytes())+"\n"), 0o644); err != nil {
		return nil, err
	}
	return k, nil
}

func readKeyFile(path string) ([]byte, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read sealing key: %w", err)
	}
	raw, err := base64.StdEncoding.DecodeString(strings.TrimSpace(string(b)))
	if err != nil {
		return nil, fmt.Errorf("sealing key %s: %w", path, err)
	}
	return raw, nil
}

// ReadPrivateKey reads a private key file; a file others may read is refused.
func ReadPrivateKey(path string) (*PrivateKey, error) {
	// The region's one rule for key files: the owner's only, or a Kubernetes Secret volume's.
	if err := envelope.CheckSecretFileMode(path); err != nil {
		return nil, fmt.Errorf("sealing key: %w", err)
	}
	raw, err := readKeyFile(path)
	if err != nil {
		return nil, err
	}
	k, err := kem.NewPrivateKey(raw)
	if err != nil {
		return nil, fmt.Errorf("sealing key %s: %w", path, err)
	}
	return &PrivateKey{k}, nil
}

// ReadPublicKey reads a public key file.
func ReadPublicKey(path string) (*PublicKey, error) {
	raw, err := readKeyFile(path)
	if err != nil {
		return nil, err
	}
	k, err := kem.NewPublicKey(raw)
	if err != nil {
		return nil, fmt.Errorf("sealing public key %s: %w", path, err)
	}
	return &PublicKey{k}, nil
}

// KeyDir is a directory of management clusters' public keys, one file "<consumer>.pub" each
// (the file WriteKeyPair's pubPath names). It is read on each lookup, so a management
// cluster added later needs no restart.
type KeyDir string

// PublicKey is consumer's key, or nil and no error when the directory holds none for it.
func (d KeyDir) PublicKey(consumer string) (*PublicKey, error) {
	if consumer == "" || consumer != filepath.Base(consumer) || strings.HasPrefix(consumer, ".") {
		return nil, fmt.Errorf("sealing key of management cluster %q: not a file name", consumer)
	}
	k, err := ReadPublicKey(filepath.Join(string(d), consumer+".pub"))
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	return k, err
}
