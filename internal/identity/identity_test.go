package identity

import (
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

func TestParse(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want ID
		ok   bool
	}{
		{"spiffe://cluster.local/ns/openhcp-frontend/sa/frontend", ID{"cluster.local", "openhcp-frontend", "frontend"}, true},
		{"https://cluster.local/ns/a/sa/b", ID{}, false},
		{"spiffe://cluster.local:443/ns/a/sa/b", ID{}, false},
		{"spiffe://u@cluster.local/ns/a/sa/b", ID{}, false},
		{"spiffe://cluster.local/ns/a/sa/b?x=1", ID{}, false},
		{"spiffe://cluster.local/ns/a/sa/b#f", ID{}, false},
		{"spiffe://cluster.local/ns/a/sa/b/c", ID{}, false},
		{"spiffe://cluster.local/ns//sa/b", ID{}, false},
		{"spiffe://cluster.local/ns/A/sa/b", ID{}, false},
		{"spiffe://cluster.local/sa/b/ns/a", ID{}, false},
		{"spiffe:///ns/a/sa/b", ID{}, false},
		// Other spellings of a workload's ID: the URL parser would read each as canonical.
		{"spiffe://cluster.local/ns/openhcp-admin/sa/ad%6Din", ID{}, false},
		{"spiffe://cluster.local/ns/openhcp%2Dadmin/sa/admin", ID{}, false},
		{"SPIFFE://cluster.local/ns/openhcp-admin/sa/admin", ID{}, false},
		{"Spiffe://cluster.local/ns/openhcp-admin/sa/admin", ID{}, false},
		{"spiffe://cluster.local/ns/openhcp-admin/sa/admin/", ID{}, false},
	} {
		t.Run(tc.in, func(t *testing.T) {
			got, err := Parse(tc.in)
			if (err == nil) != tc.ok || got != tc.want {
				t.Fatalf("Parse = %+v, %v; want %+v ok=%v", got, err, tc.want, tc.ok)
			}
			if tc.ok && got.String() != tc.in {
				t.Fatalf("String() = %q", got.String())
			}
		})
	}
}

func TestNameOfRoundTripsAndChecksTheTrustDomain(t *testing.T) {
	for _, w := range Workloads() {
		id, ok := Of(w.Name, "region.example")
		if !ok {
			t.Fatalf("Of(%s)", w.Name)
		}
		if name, ok := NameOf(id, "region.example"); !ok || name != w.Name {
			t.Fatalf("NameOf(%s) = %q, %v", id, name, ok)
		}
		if _, ok := NameOf(id, "other.example"); ok {
			t.Fatalf("NameOf(%s) in another trust domain was accepted", id)
		}
	}
}

func TestReservedNames(t *testing.T) {
	for name, want := range map[string]bool{
		"sre": true, "SRE": true, "frontend": true, "cluster-service": true, "admin": true, "arm": true,
		"system:masters": true, "maestro-agent-mgmt-1": true,
		"alice": false, "bob": false,
	} {
		if got := Reserved(name); got != want {
			t.Errorf("Reserved(%q) = %v, want %v", name, got, want)
		}
	}
}

// TestValidPerson holds the one rule for a person's name: hostile names a person CA could be
// asked to sign are refused, and so is every reserved name in any letter case.
func TestValidPerson(t *testing.T) {
	refused := []string{
		"", "Alice Smith", "alice ", " alice", "alice\t", "alice\n", "alice\x00", "alice+ops", "x/y", "a:b", "a,b", "a=b",
		"zoë", "ālice", "alice\xff", "a\u200bdmin", "\u0455re" /* Cyrillic s */, "\u0430dmin" /* Cyrillic a */, "ａｄｍｉｎ",
		"sre.", "admin.", "alice.", ".alice", "-alice", "_alice", "@alice",
		"system:masters", "SYSTEM:masters", "maestro-agent-mgmt-1", "Maestro-x", "MAESTRO-",
		strings.Repeat("a", MaxPersonLen+1),
	}
	var reserved []string
	for _, w := range Workloads() {
		reserved = append(reserved, w.Name, w.ServiceAccount)
	}
	reserved = append(reserved, otherServiceNames...)
	for _, n := range reserved {
		refused = append(refused, n, strings.ToUpper(n), strings.ToUpper(n[:1])+n[1:])
	}
	for _, name := range refused {
		t.Run(fmt.Sprintf("refused/%q", name), func(t *testing.T) {
			if err := ValidPerson(name); !errors.Is(err, ErrNotPerson) {
				t.Fatalf("ValidPerson(%q) = %v, want ErrNotPerson", name, err)
			}
		})
	}
	for _, name := range []string{"alice", "Alice", "BOB", "alice.smith", "alice@example.com", "a-b_c", "7", "sre.alice", "admins", strings.Repeat("a", MaxPersonLen)} {
		t.Run("valid/"+name[:min(len(name), 20)], func(t *testing.T) {
			if err := ValidPerson(name); err != nil {
				t.Fatalf("ValidPerson(%q) = %v, want nil", name, err)
			}
		})
	}
}

func TestFromCertificateNeedsExactlyOneSPIFFEID(t *testing.T) {
	one, _ := url.Parse("spiffe://cluster.local/ns/openhcp-backend/sa/backend")
	two, _ := url.Parse("spiffe://cluster.local/ns/openhcp-frontend/sa/frontend")
	other, _ := url.Parse("https://example.com/")
	for _, tc := range []struct {
		name string
		uris []*url.URL
		ok   bool
	}{
		{"none", nil, false},
		{"one", []*url.URL{one}, true},
		{"one_and_a_non_spiffe_uri", []*url.URL{other, one}, true},
		{"two", []*url.URL{one, two}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := FromCertificate(&x509.Certificate{URIs: tc.uris})
			if (err == nil) != tc.ok {
				t.Fatalf("err %v, want ok=%v", err, tc.ok)
			}
		})
	}
	if _, err := FromVerifiedChains(nil); err == nil {
		t.Fatal("no verified chain gave an identity")
	}
}

// TestWorkloadsMatchConfig keeps Workloads in step with the region's configuration, where the
// charts and the mesh policy take the same namespaces and service accounts from.
func TestWorkloadsMatchConfig(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("..", "..", "config", "config.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	re := regexp.MustCompile(`(?m)^\s+(\w+): \{namespace: ([a-z0-9-]+), serviceAccount: ([a-z0-9-]+)\}`)
	inConfig := map[string]Workload{}
	for _, m := range re.FindAllStringSubmatch(string(data), -1) {
		inConfig[m[1]] = Workload{Namespace: m[2], ServiceAccount: m[3]}
	}
	for name, key := range map[string]string{
		Frontend: "frontend", Backend: "backend", ClusterService: "clusterService", SRE: "admin", MaestroServer: "maestro",
		Prometheus: "prometheus", Gateway: "gateway",
	} {
		id, _ := Of(name, DefaultTrustDomain)
		c, ok := inConfig[key]
		if !ok {
			t.Fatalf("config/config.yaml has no identity %q", key)
		}
		if c.Namespace != id.Namespace || c.ServiceAccount != id.ServiceAccount {
			t.Errorf("%s: config says %s/%s, identity.Workloads %s/%s", name, c.Namespace, c.ServiceAccount, id.Namespace, id.ServiceAccount)
		}
	}
	if !regexp.MustCompile(`(?m)^\s+trustDomain: ` + regexp.QuoteMeta(DefaultTrustDomain) + `$`).Match(data) {
		t.Errorf("config/config.yaml's trust domain is not %s", DefaultTrustDomain)
	}
}

func TestCheckValidAt(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	cert := func(cn string, from, to time.Duration) *x509.Certificate {
		return &x509.Certificate{Subject: pkix.Name{CommonName: cn}, NotBefore: now.Add(from), NotAfter: now.Add(to)}
	}
	leaf := cert("alice", -time.Hour, time.Hour)
	ca := cert("person CA", -time.Hour, 48*time.Hour)
	for _, tc := range []struct {
		name   string
		chains [][]*x509.Certificate
		valid  bool
	}{
		{"leaf_and_CA_within_their_validity", [][]*x509.Certificate{{leaf, ca}}, true},
		{"leaf_at_its_NotAfter_second_is_still_valid", [][]*x509.Certificate{{cert("alice", -time.Hour, 0), ca}}, true},
		{"leaf_at_its_NotBefore_second_is_valid", [][]*x509.Certificate{{cert("alice", 0, time.Hour), ca}}, true},
		{"leaf_expired", [][]*x509.Certificate{{cert("alice", -time.Hour, -time.Nanosecond), ca}}, false},
		{"leaf_not_yet_valid", [][]*x509.Certificate{{cert("alice", time.Second, time.Hour), ca}}, false},
		{"CA_expired", [][]*x509.Certificate{{leaf, cert("person CA", -48*time.Hour, -time.Second)}}, false},
		{"one_chain_through_an_expired_CA_and_one_through_a_valid_one", [][]*x509.Certificate{
			{leaf, cert("old person CA", -48*time.Hour, -time.Second)}, {leaf, ca}}, true},
		{"every_chain_expired", [][]*x509.Certificate{
			{leaf, cert("old person CA", -48*time.Hour, -time.Second)}, {leaf, cert("other CA", -48*time.Hour, -time.Minute)}}, false},
		{"no_chain", nil, false},
		{"empty_chain", [][]*x509.Certificate{{}}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := CheckValidAt(tc.chains, now)
			if tc.valid && err != nil {
				t.Fatalf("CheckValidAt = %v, want nil", err)
			}
			if !tc.valid && !errors.Is(err, ErrNotValidNow) {
				t.Fatalf("CheckValidAt = %v, want an error wrapping ErrNotValidNow", err)
			}
		})
	}
}
