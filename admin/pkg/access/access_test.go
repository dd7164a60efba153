package access

import (
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"net/url"
	"os"
	"slices"
	"strings"
	"testing"
	"time"
)

func conn(cn string, orgs ...string) *tls.ConnectionState {
	now := time.Now()
	return &tls.ConnectionState{VerifiedChains: [][]*x509.Certificate{{{
		Subject:   pkix.Name{CommonName: cn, Organization: orgs},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(time.Hour),
	}}}}
}

func withURI(cs *tls.ConnectionState, uri string) *tls.ConnectionState {
	u, err := url.Parse(uri)
	if err != nil {
		panic(err)
	}
	cs.VerifiedChains[0][0].URIs = []*url.URL{u}
	return cs
}

// twoCommonNames is cs with a subject that carries a second common name, as the certificate's
// parser would give it (Go keeps the last in CommonName, Names holds both).
func twoCommonNames(cs *tls.ConnectionState, second string) *tls.ConnectionState {
	s := &cs.VerifiedChains[0][0].Subject
	s.Names = []pkix.AttributeTypeAndValue{{Type: oidCommonName, Value: s.CommonName}, {Type: oidCommonName, Value: second}}
	s.CommonName = second
	return cs
}

// expired is cs with its leaf's NotAfter a second ago.
func expired(cs *tls.ConnectionState) *tls.ConnectionState {
	cs.VerifiedChains[0][0].NotAfter = time.Now().Add(-time.Second)
	return cs
}

func TestIdentify(t *testing.T) {
	for _, tc := range []struct {
		name string
		cs   *tls.ConnectionState
		want Identity
		ok   bool
	}{
		{"no_tls", nil, Identity{}, false},
		{"no_verified_chain", &tls.ConnectionState{}, Identity{}, false},
		{"sre_admin", conn("alice", GroupAdmin), Identity{"alice", GroupAdmin}, true},
		{"sre_readonly", conn("bob", GroupReadOnly), Identity{"bob", GroupReadOnly}, true},
		{"unknown_group", conn("mallory", "sre-root"), Identity{}, false},
		{"service_certificate", conn("arm", "OpenHCP local region"), Identity{}, false},
		{"two_groups_is_ambiguous", conn("eve", GroupReadOnly, GroupAdmin), Identity{}, false},
		{"no_person", conn("", GroupAdmin), Identity{}, false},
		// A person is never named like a workload, and never carries a workload's SPIFFE ID: the
		// person CA refuses to issue either, and the admin API refuses them if one was issued.
		{"person_named_like_a_service", conn("sre", GroupAdmin), Identity{}, false},
		{"person_named_like_a_service_in_capitals", conn("Cluster-Service", GroupAdmin), Identity{}, false},
		{"two_common_names", twoCommonNames(conn("alice", GroupAdmin), "bob"), Identity{}, false},
		{"sre_admin_certificate_expired_since_the_handshake", expired(conn("alice", GroupAdmin)), Identity{}, false},
		{"certificate_carrying_a_workload_id", withURI(conn("carol", GroupAdmin), "spiffe://cluster.local/ns/openhcp-admin/sa/admin"), Identity{}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Identify(tc.cs)
			if tc.ok != (err == nil) || got != tc.want {
				t.Fatalf("Identify = %+v, %v", got, err)
			}
			if err != nil && !errors.Is(err, ErrNoIdentity) {
				t.Fatalf("error does not wrap ErrNoIdentity: %v", err)
			}
		})
	}
	if (Identity{"bob", GroupReadOnly}).May(WriteShards) || !(Identity{"alice", GroupAdmin}).May(WriteShards) {
		t.Fatal("shards.write: read-only may, or admin may not")
	}
}

// TestIdentifyAdmitsOnlyValidPersonNames: a certificate whose common name is not a person's name
// (identity.ValidPerson) names no person, so no one is admitted whom the revocation route
// could not revoke. The names are ones a person CA could be asked to sign.
func TestIdentifyAdmitsOnlyValidPersonNames(t *testing.T) {
	refused := []string{
		"Alice Smith", "alice ", " alice", "alice+ops", "x/y", "zoë", "ālice", "alice\n", "alice\x00",
		"sre.", "admin.", "alice.", ".alice", "-alice", "@alice", "a\u200bdmin", "\u0455re", "\u0430dmin",
		"system:masters", "SYSTEM:masters", "Maestro-agent-mgmt-1", "MAESTRO-x",
		strings.Repeat("a", 129),
	}
	for _, name := range []string{"sre", "frontend", "cluster-service", "maestro-agent", "admin", "arm", "broker", "postgres", "system", "root"} {
		refused = append(refused, name, strings.ToUpper(name), strings.ToUpper(name[:1])+name[1:])
	}
	for _, cn := range refused {
		t.Run("refused/"+cn, func(t *testing.T) {
			got, err := Identify(conn(cn, GroupAdmin))
			if err == nil || !errors.Is(err, ErrNoIdentity) {
				t.Fatalf("Identify(CN %q) = %+v, %v; want an ErrNoIdentity", cn, got, err)
			}
		})
	}
	for _, cn := range []string{"alice", "Alice", "alice.smith", "alice@example.com", "a-b_c", "7", strings.Repeat("a", 128)} {
		t.Run("admitted/"+cn, func(t *testing.T) {
			got, err := Identify(conn(cn, GroupReadOnly))
			if err != nil || got != (Identity{cn, GroupReadOnly}) {
				t.Fatalf("Identify(CN %q) = %+v, %v; want the person", cn, got, err)
			}
		})
	}
}

// TestGroupsTableIsDocumented keeps docs/sre.md's group table equal to Groups, its one owner.
func TestGroupsTableIsDocumented(t *testing.T) {
	b, err := os.ReadFile("../../../docs/sre.md")
	if err != nil {
		t.Fatal(err)
	}
	doc := string(b)
	start, end := strings.Index(doc, "<!-- groups-table"), strings.Index(doc, "<!-- /groups-table -->")
	if start < 0 || end < start {
		t.Fatal("docs/sre.md has no groups-table markers")
	}
	var header []string
	got := map[string][]Permission{}
	for _, line := range strings.Split(doc[start:end], "\n") {
		cells := strings.Split(line, "|")
		if len(cells) < 3 {
			continue
		}
		cells = cells[1 : len(cells)-1]
		for i := range cells {
			cells[i] = strings.TrimSpace(cells[i])
		}
		switch {
		case cells[0] == "group":
			header = cells[1:]
		case strings.HasPrefix(cells[0], "`"):
			g := strings.Trim(cells[0], "`")
			got[g] = []Permission{}
			for i, c := range cells[1:] {
				if c != "" {
					got[g] = append(got[g], Permission(header[i]))
				}
			}
		}
	}
	if len(got) != len(Groups) {
		t.Fatalf("docs/sre.md lists %d groups, the code %d", len(got), len(Groups))
	}
	for g, want := range Groups {
		w, d := slices.Clone(want), slices.Clone(got[g])
		slices.Sort(w)
		slices.Sort(d)
		if !slices.Equal(w, d) {
			t.Errorf("group %s: docs/sre.md %v, code %v", g, d, w)
		}
	}
}
