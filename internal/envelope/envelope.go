// Package envelope encrypts secrets at rest the envelope way: every secret gets a fresh
// data-encryption key (DEK, AES-256-GCM), and the DEK is stored wrapped by a key-encryption key
// (KEK) named by its key ID. A Keyring holds the active KEK (new writes) and retired ones (old
// rows still open), so a KEK is rotated by rewrapping DEKs, never by touching the data.
package envelope

import (
	"bytes"
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"syscall"

	"github.com/openhcp/openhcp/internal/atomicfile"
)

// KeySize is the size of a KEK and of a DEK: AES-256.
const KeySize = 32

// magic starts every sealed value; version 1 is the layout below.
var magic = []byte("ohenv1")

// Layout of a sealed value (all lengths fixed but the key ID's):
//
//	magic "ohenv1" | len(keyID) 1 byte | keyID | wrapped DEK (nonce 12 | DEK 32 | tag 16) | nonce 12 | ciphertext | tag 16
//
// The DEK is wrapped with the KEK, and the additional data of that seal is the header (magic,
// key ID) plus the caller's context, so a wrapped DEK cannot be moved to another key ID or row.
// The secret is sealed with the DEK and the context as additional data: the DEK is unique to
// the value, and leaving the key ID out of the body's additional data lets a rotation rewrap
// the DEK without touching the ciphertext.
const (
	nonceSize   = 12
	tagSize     = 16
	wrappedSize = nonceSize + KeySize + tagSize
)

// ErrUnknownKey: the value was sealed with a KEK that is not in the keyring.
var ErrUnknownKey = errors.New("sealed with a key-encryption key that is not in the keyring")

// Keyring is the active KEK and the retired ones. Its zero value has no keys and seals nothing.
type Keyring struct {
	active string
	keys   map[string]cipher.AEAD
}

// KeyID names a KEK by its content: the first 8 bytes of its SHA-256, in hex. Stored beside
// every wrapped DEK, it picks the KEK that opens it; a name taken from the key itself cannot
// be mislabelled when files are moved around during a rotation.
func KeyID(kek []byte) string {
	sum := sha256.Sum256(kek)
	return hex.EncodeToString(sum[:8])
}

// New makes a keyring whose active KEK is active; retired KEKs only open.
func New(active []byte, retired ...[]byte) (*Keyring, error) {
	k := &Keyring{keys: map[string]cipher.AEAD{}}
	for i, key := range append([][]byte{active}, retired...) {
		aead, err := newAEAD(key)
		if err != nil {
			return nil, fmt.Errorf("key-encryption key %d: %w", i, err)
		}
		id := KeyID(key)
		if i == 0 {
			k.active = id
		}
		k.keys[id] = aead
	}
	return k, nil
}

// NewKey returns a fresh random KEK.
func NewKey() ([]byte, error) {
	key := make([]byte, KeySize)
	if _, err := rand.Read(key); err != nil {
		return nil, fmt.Errorf("generate key-encryption key: %w", err)
	}
	return key, nil
}

// ActiveKeyID is the key ID new seals use.
func (k *Keyring) ActiveKeyID() string { return k.active }

// KeyIDs lists every key ID in the keyring, sorted.
func (k *Keyring) KeyIDs() []string {
	out := make([]string, 0, len(k.keys))
	for id := range k.keys {
		out = append(out, id)
	}
	sort.Strings(out)
	return out
}

// Seal encrypts plaintext under a fresh DEK wrapped by the active KEK. context binds the value
// to where it is stored (table, column, row): Open with another context fails.
func (k *Keyring) Seal(plaintext, context []byte) ([]byte, error) {
	dek := make([]byte, KeySize)
	if _, err := rand.Read(dek); err != nil {
		return nil, fmt.Errorf("seal: generate data-encryption key: %w", err)
	}
	data, err := newAEAD(dek)
	if err != nil {
		return nil, fmt.Errorf("seal: %w", err)
	}
	out, err := k.wrap(dek, context)
	if err != nil {
		return nil, fmt.Errorf("seal: %w", err)
	}
	if out, err = sealWith(data, out, plaintext, bodyData(context)); err != nil {
		return nil, fmt.Errorf("seal: %w", err)
	}
	return out, nil
}

// Open decrypts a value Seal made with the same context, with whichever KEK of the keyring
// its key ID names.
func (k *Keyring) Open(sealed, context []byte) ([]byte, error) {
	p, err := parse(sealed)
	if err != nil {
		return nil, err
	}
	dek, err := k.unwrap(p, context)
	if err != nil {
		return nil, err
	}
	data, err := newAEAD(dek)
	if err != nil {
		return nil, fmt.Errorf("open: %w", err)
	}
	plain, err := data.Open(nil, p.body[:nonceSize], p.body[nonceSize:], bodyData(context))
	if err != nil {
		return nil, errors.New("open: the value does not authenticate (altered, or stored under another context)")
	}
	return plain, nil
}

// Rewrap re-wraps the value's DEK with the active KEK and leaves the ciphertext as it is: a KEK
// rotation touches 60 bytes per secret and never the secret. A value already under the active
// KEK is returned unchanged with changed false.
func (k *Keyring) Rewrap(sealed, context []byte) (_ []byte, changed bool, err error) {
	p, err := parse(sealed)
	if err != nil {
		return nil, false, err
	}
	if p.keyID == k.active {
		return sealed, false, nil
	}
	dek, err := k.unwrap(p, context)
	if err != nil {
		return nil, false, err
	}
	out, err := k.wrap(dek, context)
	if err != nil {
		return nil, false, fmt.Errorf("rewrap: %w", err)
	}
	return append(out, p.body...), true, nil
}

// IsSealed reports whether b has the layout Seal writes (not whether it opens).
func IsSealed(b []byte) bool { _, err := parse(b); return err == nil }

// SealedKeyID is the key ID of the KEK that wraps a sealed value's DEK.
func SealedKeyID(sealed []byte) (string, error) {
	p, err := parse(sealed)
	if err != nil {
		return "", err
	}
	return p.keyID, nil
}

type parsed struct {
	header  []byte
	keyID   string
	wrapped []byte
	body    []byte // nonce | ciphertext | tag
}

func parse(b []byte) (parsed, error) {
	if !bytes.HasPrefix(b, magic) || len(b) < len(magic)+1 {
		return parsed{}, errors.New("open: not a sealed value")
	}
	n := int(b[len(magic)])
	hl := len(magic) + 1 + n
	if n == 0 || len(b) < hl+wrappedSize+nonceSize+tagSize {
		return parsed{}, errors.New("open: sealed value is truncated")
	}
	return parsed{header: b[:hl], keyID: string(b[len(magic)+1 : hl]), wrapped: b[hl : hl+wrappedSize], body: b[hl+wrappedSize:]}, nil
}

func (k *Keyring) unwrap(p parsed, context []byte) ([]byte, error) {
	kek, ok := k.keys[p.keyID]
	if !ok {
		return nil, fmt.Errorf("open: key ID %s: %w", p.keyID, ErrUnknownKey)
	}
	dek, err := kek.Open(nil, p.wrapped[:nonceSize], p.wrapped[nonceSize:], additionalData(p.header, context))
	if err != nil {
		return nil, errors.New("open: the wrapped data-encryption key does not authenticate (altered, or stored under another context)")
	}
	return dek, nil
}

// wrap returns the header and dek wrapped by the active KEK.
func (k *Keyring) wrap(dek, context []byte) ([]byte, error) {
	kek, ok := k.keys[k.active]
	if !ok {
		return nil, errors.New("the keyring has no active key-encryption key")
	}
	hdr := header(k.active)
	out, err := sealWith(kek, append([]byte(nil), hdr...), dek, additionalData(hdr, context))
	if err != nil {
		return nil, fmt.Errorf("wrap data-encryption key: %w", err)
	}
	return out, nil
}

func header(keyID string) []byte {
	return append(append(append([]byte(nil), magic...), byte(len(keyID))), keyID...)
}

func additionalData(hdr, context []byte) []byte {
	return append(append(append([]byte(nil), hdr...), 0), context...)
}

func bodyData(context []byte) []byte { return append([]byte("body\x00"), context...) }

func sealWith(aead cipher.AEAD, dst, plaintext, ad []byte) ([]byte, error) {
	nonce := make([]byte, nonceSize)
	if _, err := rand.Read(nonce); err != nil {
		return nil, fmt.Errorf("nonce: %w", err)
	}
	dst = append(dst, nonce...)
	return aead.Seal(dst, nonce, plaintext, ad), nil
}

func newAEAD(key []byte) (cipher.AEAD, error) {
	if len(key) != KeySize {
		return nil, fmt.Errorf("key must be %d bytes, have %d", KeySize, len(key))
	}
	block, err := aes.NewCipher(key)
	if err != nil {
		return nil, err
	}
	return cipher.NewGCM(block)
}

// ---- key files

// A key file holds one KEK as standard base64 on one line (`openssl rand -base64 32` makes
// one), mode 0600 or stricter. The file format is owned here; the local region writes it with
// WriteKeyFile and Cluster Service reads it with LoadFiles.

// WriteKeyFile writes a fresh KEK to path (0600, atomically) and returns it.
func WriteKeyFile(path string) ([]byte, error) {
	key, err := NewKey()
	if err != nil {
		return nil, err
	}
	if err := atomicfile.Write(path, []byte(base64.StdEncoding.EncodeToString(key)+"\n"), 0o600); err != nil {
		return nil, fmt.Errorf("write key file: %w", err)
	}
	return key, nil
}

// ReadKeyFile reads one KEK. A file that group or others may read is refused: a key anyone on
// the host can read protects nothing. One exception (groupReadableSecret): a file this process
// does not own and may read only through its own primary group, as a Kubernetes Secret volume
// with the pod's fsGroup gives it (root:<fsGroup>, mode 0440; the kubelet adds the group bits
// whatever the volume's defaultMode, and a non-root pod cannot read it otherwise).
func ReadKeyFile(path string) ([]byte, error) {
	if err := CheckSecretFileMode(path); err != nil {
		return nil, err
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read key file: %w", err)
	}
	key, err := base64.StdEncoding.DecodeString(strings.TrimSpace(string(b)))
	if err != nil {
		return nil, fmt.Errorf("key file %s: not base64", path)
	}
	if len(key) != KeySize {
		return nil, fmt.Errorf("key file %s: key must be %d bytes, have %d", path, KeySize, len(key))
	}
	return key, nil
}

// LoadFiles makes a keyring from the active KEK's file and, when retiredDir is not empty, every
// regular file in retiredDir (older KEKs that still open rows sealed before a rotation; the
// active key may be among them). Files whose names start with "." are skipped.
func LoadFiles(activeFile, retiredDir string) (*Keyring, error) {
	active, err := ReadKeyFile(activeFile)
	if err != nil {
		return nil, err
	}
	var retired [][]byte
	if retiredDir != "" {
		entries, err := os.ReadDir(retiredDir)
		if err != nil {
			return nil, fmt.Errorf("read retired key directory: %w", err)
		}
		for _, e := range entries {
			// Dot entries are skipped: a Kubernetes Secret volume keeps its data in ..data and
			// ..<timestamp>, and names each key by a symbolic link into them, which is followed.
			if strings.HasPrefix(e.Name(), ".") {
				continue
			}
			path := filepath.Join(retiredDir, e.Name())
			if fi, err := os.Stat(path); err != nil {
				return nil, fmt.Errorf("read retired key directory: %w", err)
			} else if !fi.Mode().IsRegular() {
				continue
			}
			key, err := ReadKeyFile(path)
			if err != nil {
				return nil, err
			}
			retired = append(retired, key)
		}
	}
	return New(active, retired...)
}

// CheckSecretFileMode refuses a file of secret key material that group or others may read,
// with ReadKeyFile's one exception (a Kubernetes Secret volume read through the pod's fsGroup).
// Every key file of the region is checked by it.
func CheckSecretFileMode(path string) error {
	fi, err := os.Stat(path)
	if err != nil {
		return fmt.Errorf("read key file: %w", err)
	}
	if perm := fi.Mode().Perm(); perm&0o077 != 0 && !groupReadableSecret(fi) {
		return fmt.Errorf("key file %s has mode %04o; it must not be readable by group or others (chmod 600)", path, perm)
	}
	return nil
}

// groupReadableSecret: fi is another user's file that only its group may read (no group write,
// nothing for others), and that group is this process's primary group.
func groupReadableSecret(fi os.FileInfo) bool {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return false
	}
	perm := fi.Mode().Perm()
	return perm&0o037 == 0 && perm&0o040 != 0 &&
		int(st.Uid) != os.Getuid() && int(st.Gid) == os.Getgid()
}
