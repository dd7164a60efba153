package pki

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestCreateIssuesEveryIdentityFromTheRightCA(t *testing.T) {
	r, err := Create(t.TempDir(), Options{MaestroConsumers: []string{"mgmt-1", "mgmt-2"}})
	if err != nil {
		t.Fatal(err)
	}
	pools := map[Issuer]*x509.CertPool{ServiceCA: poolOf(t, r.CAFile), ARMCA: poolOf(t, r.ARMCAFile), PersonCA: poolOf(t, r.PersonCAFile)}
	if err := r.AddPerson("alice", "alice", "sre-admin"); err != nil {
		t.Fatal(err)
	}
	const ns = "spiffe://cluster.local/ns/"
	for _, tc := range []struct {
		name   string
		cn     string
		server bool
		client bool
		issuer Issuer
		spiffe string
	}{
		{Frontend, "frontend", true, true, ServiceCA, ns + "openhcp-frontend/sa/frontend"},
		{ARM, "arm", false, true, ARMCA, ""},
		{SRE, "sre", false, true, ServiceCA, ns + "openhcp-admin/sa/admin"},
		{Backend, "backend", false, true, ServiceCA, ns + "openhcp-backend/sa/backend"},
		{ClusterService, "cluster-service", true, true, ServiceCA, ns + "openhcp-cluster-service/sa/cluster-service"},
		{MaestroServer, "maestro-server", true, true, ServiceCA, ns + "openhcp-maestro/sa/maestro-server"},
		{Broker, "broker", true, false, ServiceCA, ""},
		{Postgres, "postgres", true, false, ServiceCA, ""},
		{MaestroAgent("mgmt-1"), "mgmt-1", false, true, ServiceCA, ns + "maestro/sa/maestro-agent"},
		{MaestroAgent("mgmt-2"), "mgmt-2", false, true, ServiceCA, ns + "maestro/sa/maestro-agent"},
		{"alice", "alice", false, true, PersonCA, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := r.MustFiles(tc.name)
			if _, err := tls.LoadX509KeyPair(f.Cert, f.Key); err != nil {
				t.Fatalf("key pair does not load: %v", err)
			}
			st, err := os.Stat(f.Key)
			if err != nil {
				t.Fatal(err)
			}
			if st.Mode().Perm() != 0o600 {
				t.Fatalf("key mode %v, want 0600", st.Mode().Perm())
			}
			c, err := ReadCertificate(f.Cert)
			if err != nil {
				t.Fatal(err)
			}
			if c.Subject.CommonName != tc.cn {
				t.Fatalf("CN %q, want %q", c.Subject.CommonName, tc.cn)
			}
			var uris []string
			for _, u := range c.URIs {
				uris = append(uris, u.String())
			}
			if want := []string{tc.spiffe}; tc.spiffe == "" && len(uris) != 0 || tc.spiffe != "" && !slices.Equal(uris, want) {
				t.Fatalf("URI SANs %v, want %q", uris, tc.spiffe)
			}
			if life := time.Until(c.NotAfter); life > DefaultLifetime || life < DefaultLifetime-time.Minute {
				t.Fatalf("lifetime %s, want about %s", life, DefaultLifetime)
			}
			for usage, want := range map[x509.ExtKeyUsage]bool{x509.ExtKeyUsageServerAuth: tc.server, x509.ExtKeyUsageClientAuth: tc.client} {
				_, err := c.Verify(x509.VerifyOptions{Roots: pools[tc.issuer], KeyUsages: []x509.ExtKeyUsage{usage}})
				if (err == nil) != want {
					t.Errorf("verify for usage %v: err %v, want ok=%v", usage, err, want)
				}
			}
			for other, pool := range pools {
				if other == tc.issuer {
					continue
				}
				if _, err := c.Verify(x509.VerifyOptions{Roots: pool, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageAny}}); err == nil {
					t.Errorf("certificate also verifies against the %s", other)
				}
			}
			if tc.server {
				if err := c.VerifyHostname(ServerName(tc.name)); err != nil {
					t.Error(err)
				}
				keep, _ := KeepsLoopbackNames(tc.name)
				if err := c.VerifyHostname("127.0.0.1"); (err == nil) != keep {
					t.Errorf("answers to 127.0.0.1: %v, want %v", err == nil, keep)
				}
			}
		})
	}
	if st, _ := os.Stat(r.Dir); st.Mode().Perm() != 0o700 {
		t.Errorf("PKI directory mode %v, want 0700", st.Mode().Perm())
	}
	if !slices.Contains(r.Names(), MaestroAgent("mgmt-2")) {
		t.Error("Names misses an agent")
	}
	if _, err := r.Files("nobody"); err == nil {
		t.Error("unknown identity has files")
	}
	// The CA keys never reach the disk.
	ents, _ := os.ReadDir(r.Dir)
	for _, e := range ents {
		if slices.Contains([]string{"region-ca.key", "arm-ca.key", "person-ca.key"}, e.Name()) {
			t.Errorf("CA key written: %s", e.Name())
		}
	}
}

func TestRenewReplacesKeyAndCertificate(t *testing.T) {
	r, err := Create(t.TempDir(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	f := r.MustFiles(Frontend)
	before, _ := ReadCertificate(f.Cert)
	keyBefore, _ := os.ReadFile(f.Key)
	after, err := r.Renew(Frontend)
	if err != nil {
		t.Fatal(err)
	}
	keyAfter, _ := os.ReadFile(f.Key)
	if before.SerialNumber.Cmp(after.SerialNumber) == 0 || string(keyBefore) == string(keyAfter) {
		t.Fatal("renew kept the serial or the key")
	}
	if after.Subject.CommonName != Frontend {
		t.Fatalf("renewed CN %q", after.Subject.CommonName)
	}
	if _, err := tls.LoadX509KeyPair(f.Cert, f.Key); err != nil {
		t.Fatalf("renewed pair does not load: %v", err)
	}
	if st, _ := os.Stat(f.Key); st.Mode().Perm() != 0o600 {
		t.Fatalf("renewed key mode %v", st.Mode().Perm())
	}
	if leftovers, _ := filepath.Glob(filepath.Join(r.Dir, ".*")); len(leftovers) > 0 {
		t.Fatalf("temporary files left: %v", leftovers)
	}
}

func TestLeafNeverOutlivesItsCA(t *testing.T) {
	if _, err := Create(t.TempDir(), Options{Lifetime: 3 * time.Hour, CALifetime: time.Hour}); err == nil {
		t.Fatal("a leaf lifetime beyond the CA's was accepted")
	}
	ca, err := NewAuthority("short", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	iss, err := ca.Issue(Spec{CommonName: "x", Usage: Client, Lifetime: 5 * time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	if iss.Cert.NotAfter.After(ca.Cert.NotAfter) {
		t.Fatal("leaf outlives its CA")
	}
}

func poolOf(t *testing.T, path string) *x509.CertPool {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	p := x509.NewCertPool()
	if !p.AppendCertsFromPEM(data) {
		t.Fatalf("no certificates in %s", path)
	}
	return p
}

func TestAPersonCanNeverHoldAServiceName(t *testing.T) {
	r, err := Create(t.TempDir(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	// A service's name in any letter case, and every name that is no person's
	// (identity.ValidPerson): a name the admin API would not admit, or could not revoke.
	for i, cn := range []string{SRE, Frontend, Backend, ClusterService, MaestroServer, ARM, "admin", "system:masters", "Cluster-Service", "ADMIN",
		"sre.", "admin.", "a\u200bdmin", "\u0455re", "Alice Smith", "alice+ops", "zoë", "alice.", "-alice", "", strings.Repeat("a", 129)} {
		if err := r.AddPerson(fmt.Sprintf("p-%d", i), cn, "sre-admin"); err == nil {
			t.Errorf("the person CA issued %q", cn)
		}
	}
	if err := r.Add("p-uri", Spec{CommonName: "carol", Usage: Client, URIs: r.MustWorkloadURIs(t, Backend)}, PersonCA); err == nil {
		t.Error("the person CA issued a certificate carrying a workload's SPIFFE ID")
	}
	if err := r.AddPerson("dave", "dave", "sre-readonly"); err != nil {
		t.Fatalf("an ordinary person: %v", err)
	}
}

func (r *Region) MustWorkloadURIs(t *testing.T, name string) []*url.URL {
	t.Helper()
	id, ok := r.WorkloadID(name)
	if !ok {
		t.Fatalf("no workload %s", name)
	}
	return []*url.URL{id.URL()}
}

// TestEachServerCertificateNamesOnlyItsOwnService: a client that dials 127.0.0.1 and asks for
// one service's name must be refused by every other server's key. So a server certificate
// carries its own service's name and no other's, and the loopback names only where a client we
// did not write dials by address (the broker, PostgreSQL).
func TestEachServerCertificateNamesOnlyItsOwnService(t *testing.T) {
	r, err := Create(t.TempDir(), Options{MaestroConsumers: []string{"mgmt-1"}})
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Add(MaestroServer+"-1", Spec{CommonName: MaestroServer + "-1", Usage: Server | Client}, ServiceCA); err != nil {
		t.Fatal(err)
	}
	servers := []struct {
		identity string
		name     string
		loopback bool
	}{
		{Frontend, "frontend.openhcp.local", false},
		{ClusterService, "cluster-service.openhcp.local", false},
		{MaestroServer, "maestro-server.openhcp.local", false},
		{MaestroServer + "-1", "maestro-server.openhcp.local", false},
		{Prometheus, "prometheus.openhcp.local", false},
		{Broker, "broker.openhcp.local", true},
		{Postgres, "postgres.openhcp.local", true},
	}
	pool := poolOf(t, r.CAFile)
	for _, s := range servers {
		t.Run(s.identity, func(t *testing.T) {
			c, err := ReadCertificate(r.MustFiles(s.identity).Cert)
			if err != nil {
				t.Fatal(err)
			}
			verify := func(name string) error {
				_, err := c.Verify(x509.VerifyOptions{Roots: pool, DNSName: name, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}})
				return err
			}
			if err := verify(s.name); err != nil {
				t.Errorf("does not answer to its own name %s: %v", s.name, err)
			}
			for _, other := range servers {
				if other.name != s.name && verify(other.name) == nil {
					t.Errorf("answers to %s, another service's name", other.name)
				}
			}
			for _, lo := range []string{"127.0.0.1", "localhost", "::1"} {
				if got := verify(lo) == nil; got != s.loopback {
					t.Errorf("answers to %s: %v, want %v", lo, got, s.loopback)
				}
			}
		})
	}
}
