// Package encryptionconfig owns the kube-apiserver EncryptionConfiguration every local
// apiserver (the management clusters', the hosted ones, the deploy node's) seals Secrets with.
package encryptionconfig

import (
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"os"
	"path/filepath"

	"github.com/openhcp/openhcp/internal/atomicfile"
)

// FileName is the configuration's name in the directory given to LoadOrCreate.
const FileName = "encryption-config.yaml"

// Prefix starts every Secret the configuration seals, as stored in etcd: the provider and the key
// name. A value without it was stored in the clear.
const Prefix = "k8s:enc:secretbox:v1:key1:"

// LoadOrCreate returns dir/encryption-config.yaml, a kube-apiserver EncryptionConfiguration:
// Secrets sealed with secretbox (XSalsa20-Poly1305) under a random 32-byte key made on first
// start and kept (mode 0600) with the cluster's state, so a restart reads what the last run
// wrote. identity comes last only to read Secrets written before encryption was on; every write
// uses the first provider.
func LoadOrCreate(dir string) (string, error) {
	path := filepath.Join(dir, FileName)
	if _, err := os.Stat(path); err == nil {
		return path, os.Chmod(path, 0o600)
	}
	key := make([]byte, 32)
	if _, err := rand.Read(key); err != nil {
		return "", fmt.Errorf("encryption key: %w", err)
	}
	cfg := fmt.Sprintf(`apiVersion: apiserver.config.k8s.io/v1
kind: EncryptionConfiguration
resources:
  - resources: [secrets]
    providers:
      - secretbox:
          keys:
            - name: key1
              secret: %s
      - identity: {}
`, base64.StdEncoding.EncodeToString(key))
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", fmt.Errorf("create %s: %w", dir, err)
	}
	if err := atomicfile.Write(path, []byte(cfg), 0o600); err != nil {
		return "", fmt.Errorf("encryption config: %w", err)
	}
	return path, nil
}
