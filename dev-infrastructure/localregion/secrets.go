package localregion

import (
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/openhcp/openhcp/cluster-service/pkg/srestatement"
	"github.com/openhcp/openhcp/internal/envelope"
	"github.com/openhcp/openhcp/internal/pprofmux"
	"github.com/openhcp/openhcp/internal/secretseal"
)

// devRegistry is the registry the local region's pull secret names; nothing serves it (the
// hosted clusters are simulated), but the secret travels the path a real one does: a 0600 file,
// Cluster Service, a ManifestWork, the management cluster.
const devRegistry = "registry.openhcp.invalid"

// clusterServiceSecretArgs writes Cluster Service's key-encryption key (envelope encryption of
// the secrets it stores) and the hosted clusters' pull secret into the secrets directory, each
// 0600, records them as the region's secrets, and returns the flags that name the files.
// The retired-key directory starts empty; a KEK rotation moves the old key there
// (docs/security.md).
func (r *Region) clusterServiceSecretArgs() ([]string, error) {
	kekFile, retired := r.ClusterServiceKEK()
	if err := os.MkdirAll(retired, 0o700); err != nil {
		return nil, fmt.Errorf("cluster service secrets: %w", err)
	}
	kek, err := envelope.WriteKeyFile(kekFile)
	if err != nil {
		return nil, fmt.Errorf("cluster service secrets: %w", err)
	}
	token := make([]byte, 24)
	if _, err := rand.Read(token); err != nil {
		return nil, fmt.Errorf("cluster service secrets: pull secret: %w", err)
	}
	password := base64.RawURLEncoding.EncodeToString(token)
	auth := base64.StdEncoding.EncodeToString([]byte("openhcp-dev:" + password))
	pull, err := json.Marshal(map[string]any{"auths": map[string]any{devRegistry: map[string]string{"auth": auth}}})
	if err != nil {
		return nil, err
	}
	pullFile := filepath.Join(r.secretsDir(), "pull-secret.json")
	if err := os.WriteFile(pullFile, pull, 0o600); err != nil {
		return nil, fmt.Errorf("cluster service secrets: pull secret: %w", err)
	}
	// The admin API's SRE statement key: the admin API signs with it, Cluster Service verifies
	// with its public half (docs/sre.md#break-glass).
	stmtKey, stmtPub := r.sreStatementKeyFiles()
	if err := srestatement.WriteKeyPair(stmtKey, stmtPub); err != nil {
		return nil, fmt.Errorf("cluster service secrets: %w", err)
	}
	stmtPEM, err := os.ReadFile(stmtKey)
	if err != nil {
		return nil, fmt.Errorf("cluster service secrets: %w", err)
	}
	r.mu.Lock()
	r.secrets = append(r.secrets, base64.StdEncoding.EncodeToString(kek), password, auth)
	if block, _ := pem.Decode(stmtPEM); block != nil {
		r.secrets = append(r.secrets, base64.StdEncoding.EncodeToString(block.Bytes))
	}
	r.mu.Unlock()
	pubDir, _ := r.sealingKeyFiles("")
	if err := os.MkdirAll(pubDir, 0o700); err != nil {
		return nil, fmt.Errorf("cluster service secrets: %w", err)
	}
	return []string{"--secret-kek-file", kekFile, "--secret-kek-retired-dir", retired, "--pull-secret-file", pullFile,
		"--sre-statement-public-key", stmtPub, "--sealing-keys-dir", pubDir}, nil
}

// sealingKeyFiles are the directory of the management clusters' public sealing keys (Cluster
// Service's --sealing-keys-dir) and consumer's private key file (its hypershift-sim's
// --unseal-key-file), kept apart so that Cluster Service is given no private key.
func (r *Region) sealingKeyFiles(consumer string) (pubDir, keyFile string) {
	return filepath.Join(r.secretsDir(), "sealing-public"), filepath.Join(r.secretsDir(), "sealing", consumer+".key")
}

// writeSealingKey makes consumer's sealing key pair, unless it exists (a restarted sim or
// Cluster Service keeps the key its Secrets are sealed to), records the private key as a
// secret of the region, and returns the private key file.
func (r *Region) writeSealingKey(consumer string) (string, error) {
	pubDir, keyFile := r.sealingKeyFiles(consumer)
	pubFile := filepath.Join(pubDir, consumer+".pub")
	for _, d := range []string{pubDir, filepath.Dir(keyFile)} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return "", fmt.Errorf("sealing key of %s: %w", consumer, err)
		}
	}
	if _, err := secretseal.ReadPrivateKey(keyFile); err != nil {
		if !errors.Is(err, os.ErrNotExist) {
			return "", fmt.Errorf("sealing key of %s: %w", consumer, err)
		}
		if _, err := secretseal.WriteKeyPair(keyFile, pubFile); err != nil {
			return "", fmt.Errorf("sealing key of %s: %w", consumer, err)
		}
	}
	raw, err := os.ReadFile(keyFile)
	if err != nil {
		return "", fmt.Errorf("sealing key of %s: %w", consumer, err)
	}
	r.mu.Lock()
	r.secrets = append(r.secrets, strings.TrimSpace(string(raw)))
	r.mu.Unlock()
	return keyFile, nil
}

// sreStatementKeyFiles are the admin API's statement signing key (0600) and its public key.
func (r *Region) sreStatementKeyFiles() (keyFile, pubFile string) {
	return filepath.Join(r.secretsDir(), "admin-sre-statement.key"), filepath.Join(r.secretsDir(), "admin-sre-statement.pub")
}

// ClusterServiceKEK returns Cluster Service's active key-encryption key file and the directory
// of retired ones, for a test (or an operator) that rotates the key: move the active file into
// the directory, write a new one, restart Cluster Service (docs/security.md).
func (r *Region) ClusterServiceKEK() (activeFile, retiredDir string) {
	return filepath.Join(r.secretsDir(), "cluster-service-kek"), filepath.Join(r.secretsDir(), "cluster-service-kek-retired")
}

// writePprofToken writes the token our services' profiles answer to (--pprof-token-file) into
// the secrets directory, 0600, records it as a secret of the region and names the file in
// region.json (pprofTokenFile), for benchmarks and operators that read profiles.
func (r *Region) writePprofToken() error {
	if err := os.MkdirAll(r.secretsDir(), 0o700); err != nil {
		return fmt.Errorf("profile token: %w", err)
	}
	path := filepath.Join(r.secretsDir(), "pprof-token")
	if err := pprofmux.WriteTokenFile(path); err != nil {
		return err
	}
	tok, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("profile token: %w", err)
	}
	r.mu.Lock()
	r.secrets = append(r.secrets, strings.TrimSpace(string(tok)))
	r.mu.Unlock()
	r.Info.PprofTokenFile = path
	return nil
}
