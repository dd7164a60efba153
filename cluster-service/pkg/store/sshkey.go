package store

import (
	"crypto/ed25519"
	"crypto/rand"
	"encoding/base64"
	"encoding/binary"
	"fmt"
)

// newSSHPublicKey makes a fresh ed25519 key and returns its public half in authorized_keys
// format. HyperShift requires an SSH key secret for the nodes; ARO HCP gives customers no SSH
// access, so the private half is discarded on purpose.
func newSSHPublicKey() (string, error) {
	pub, _, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		return "", fmt.Errorf("generate ssh key: %w", err)
	}
	const algo = "ssh-ed25519"
	// RFC 4253 §6.6 wire format: string(algo) string(key).
	var b []byte
	b = binary.BigEndian.AppendUint32(b, uint32(len(algo)))
	b = append(b, algo...)
	b = binary.BigEndian.AppendUint32(b, uint32(len(pub)))
	b = append(b, pub...)
	return algo + " " + base64.StdEncoding.EncodeToString(b) + " openhcp-cluster", nil
}

// NewSSHPublicKey is the key Cluster Service generates for each cluster at create, for callers
// that build a cluster's ManifestWork outside the store (the P4 benchmark's bare-Maestro works).
func NewSSHPublicKey() (string, error) { return newSSHPublicKey() }
