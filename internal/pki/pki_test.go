package pki

import (
	"crypto/x509"
	"slices"
	"testing"
	"time"
)

func TestLoadAuthority(t *testing.T) {
	ca, err := NewAuthority("test-ca", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	keyPEM, err := ca.KeyPEM()
	if err != nil {
		t.Fatal(err)
	}
	other, err := NewAuthority("other-ca", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	otherKey, err := other.KeyPEM()
	if err != nil {
		t.Fatal(err)
	}
	leaf, err := ca.Issue(Spec{CommonName: "leaf", Usage: Client, Lifetime: time.Hour})
	if err != nil {
		t.Fatal(err)
	}

	t.Run("a_kept_CA_issues_certificates_its_certificate_verifies", func(t *testing.T) {
		loaded, err := LoadAuthority(ca.PEM, keyPEM)
		if err != nil {
			t.Fatal(err)
		}
		iss, err := loaded.Issue(Spec{CommonName: "again", Usage: Client, Lifetime: time.Hour})
		if err != nil {
			t.Fatal(err)
		}
		roots := x509.NewCertPool()
		roots.AddCert(ca.Cert)
		if _, err := iss.Cert.Verify(x509.VerifyOptions{Roots: roots, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}); err != nil {
			t.Fatalf("certificate of the loaded CA does not verify against the original: %v", err)
		}
	})
	for _, tc := range []struct {
		name      string
		cert, key []byte
	}{
		{"a_key_of_another_CA_is_refused", ca.PEM, otherKey},
		{"a_leaf_certificate_is_refused", leaf.CertPEM, leaf.KeyPEM},
		{"a_missing_key_is_refused", ca.PEM, nil},
		{"a_missing_certificate_is_refused", nil, keyPEM},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if a, err := LoadAuthority(tc.cert, tc.key); err == nil {
				t.Fatalf("loaded %s", a.Cert.Subject.CommonName)
			}
		})
	}
}

func TestIssueOrganization(t *testing.T) {
	ca, err := NewAuthority("test-ca", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		spec Spec
		want []string
	}{
		{"no_organization_given_is_the_local_region", Spec{}, []string{"OpenHCP local region"}},
		{"groups_are_the_organizations", Spec{Organization: []string{"system:masters"}}, []string{"system:masters"}},
		{"NoOrganization_leaves_a_kubernetes_user_without_groups", Spec{NoOrganization: true}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := tc.spec
			s.CommonName, s.Usage, s.Lifetime = "user", Client, time.Hour
			iss, err := ca.Issue(s)
			if err != nil {
				t.Fatal(err)
			}
			if got := iss.Cert.Subject.Organization; !slices.Equal(got, tc.want) {
				t.Fatalf("organization %q, want %q", got, tc.want)
			}
		})
	}
}
