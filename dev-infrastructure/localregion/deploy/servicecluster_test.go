package deploy

import (
	"os"
	"path/filepath"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/openhcp/openhcp/cluster-service/pkg/srestatement"
	"github.com/openhcp/openhcp/dev-infrastructure/localregion"
	"github.com/openhcp/openhcp/dev-infrastructure/mgmtcluster"
	"github.com/openhcp/openhcp/internal/pki"
)

// TestStatementSecretsAreTheOnesTheRenderedValuesName: the admin chart's signing key Secret and
// Cluster Service's and the maintenance service's public key Secrets, as config/rendered names
// them, are made by the deployer from the launcher's one key pair.
func TestStatementSecretsAreTheOnesTheRenderedValuesName(t *testing.T) {
	root, err := mgmtcluster.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	p, err := pki.Create(filepath.Join(dir, "pki"), pki.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range []struct {
		name string
		by   pki.Issuer
	}{{"admin", pki.ServiceCA}, {pki.SRE, pki.ServiceCA}, {pki.ClusterService, pki.ServiceCA}, {pki.Maintenance, pki.ServiceCA}} {
		if _, err := p.Files(id.name); err == nil {
			continue
		}
		if err := p.Add(id.name, pki.Spec{CommonName: id.name, Usage: pki.Server | pki.Client}, id.by); err != nil {
			t.Fatal(err)
		}
	}
	key, pub := filepath.Join(dir, "stmt.key"), filepath.Join(dir, "stmt.pub")
	if err := srestatement.WriteKeyPair(key, pub); err != nil {
		t.Fatal(err)
	}
	sealing := filepath.Join(dir, "sealing")
	if err := os.MkdirAll(sealing, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(sealing, "mgmt-1.pub"), []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	env := localregion.ServiceEnv{PKI: p, SREStatementKeyFile: key, SREStatementPublicKeyFile: pub, SealingKeysDir: sealing,
		DBPasswords: map[string]string{"admin": "a", "cluster-service": "c", "maintenance": "m"}}
	s := &ServiceCluster{Dir: filepath.Join(dir, "secrets")}
	if err := os.MkdirAll(s.Dir, 0o700); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		chart, valuesKey, file, want string
	}{
		{"admin", "keySecret", "sre-statement.key", key},
		{"cluster-service", "publicKeySecret", "sre-statement.pub", pub},
		{"maintenance", "publicKeySecret", "sre-statement.pub", pub},
	} {
		b, err := os.ReadFile(filepath.Join(root, "config", "rendered", "dev-local", tc.chart+".yaml"))
		if err != nil {
			t.Fatal(err)
		}
		var values struct {
			SREStatement map[string]string `json:"sreStatement"`
		}
		if err := yaml.Unmarshal(b, &values); err != nil {
			t.Fatal(err)
		}
		name := values.SREStatement[tc.valuesKey]
		if name == "" {
			t.Errorf("%s: rendered values set no sreStatement.%s", tc.chart, tc.valuesKey)
			continue
		}
		secrets, err := s.secrets(env, tc.chart)
		if err != nil {
			t.Fatalf("%s: %v", tc.chart, err)
		}
		if got := secrets[name][tc.file]; got != tc.want {
			t.Errorf("%s: Secret %s key %s from %q, want %q (Secrets %v)", tc.chart, name, tc.file, got, tc.want, secrets)
		}
	}
}
