// Package pki makes the local region's development PKI: a service CA for the workloads' own
// certificates (each carrying its SPIFFE ID), an ARM CA for ARM's client certificate, a person
// CA for the SREs, and one short-lived certificate per identity, written as PEM files. In Azure, Key Vault
// certificates replace it (docs/security.md); the services only ever see files, so they do not
// know which one made them.
package pki

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"time"

	"github.com/openhcp/openhcp/internal/atomicfile"
)

// Usage says what a certificate may be used for.
type Usage int

const (
	// Server certificates carry the loopback SANs and the serverAuth extended key usage.
	Server Usage = 1 << iota
	// Client certificates carry the clientAuth extended key usage.
	Client
)

// Authority is a certificate authority held in memory.
type Authority struct {
	Cert *x509.Certificate
	Key  crypto.Signer
	// PEM is Cert encoded as PEM.
	PEM []byte
}

// Backdate is how long before its issue a certificate's NotBefore lies, for clock skew between
// hosts. A person's revocation refuses every certificate whose NotBefore is before it, so a
// replacement issued less than Backdate after a revocation is refused too, for its whole life.
const Backdate = 5 * time.Minute

// NewAuthority makes a self-signed CA valid for lifetime.
func NewAuthority(commonName string, lifetime time.Duration) (*Authority, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("generate key of CA %s: %w", commonName, err)
	}
	serial, err := newSerial()
	if err != nil {
		return nil, err
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber:          serial,
		Subject:               pkix.Name{CommonName: commonName, Organization: []string{"OpenHCP local region"}},
		NotBefore:             now.Add(-Backdate),
		NotAfter:              now.Add(lifetime),
		IsCA:                  true,
		BasicConstraintsValid: true,
		MaxPathLenZero:        true,
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, fmt.Errorf("create CA %s: %w", commonName, err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, fmt.Errorf("parse CA %s: %w", commonName, err)
	}
	return &Authority{Cert: cert, Key: key, PEM: pemBlock("CERTIFICATE", der)}, nil
}

// LoadAuthority reads a CA kept as PEM: its certificate and its PKCS #8 private key (as
// KeyPEM writes it).
func LoadAuthority(certPEM, keyPEM []byte) (*Authority, error) {
	block, _ := pem.Decode(certPEM)
	if block == nil || block.Type != "CERTIFICATE" {
		return nil, errors.New("load CA: no PEM certificate")
	}
	cert, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		return nil, fmt.Errorf("load CA: parse certificate: %w", err)
	}
	if !cert.IsCA {
		return nil, fmt.Errorf("load CA %s: not a CA certificate", cert.Subject.CommonName)
	}
	kb, _ := pem.Decode(keyPEM)
	if kb == nil {
		return nil, fmt.Errorf("load CA %s: no PEM key", cert.Subject.CommonName)
	}
	k, err := x509.ParsePKCS8PrivateKey(kb.Bytes)
	if err != nil {
		return nil, fmt.Errorf("load CA %s: parse key: %w", cert.Subject.CommonName, err)
	}
	signer, ok := k.(crypto.Signer)
	if !ok {
		return nil, fmt.Errorf("load CA %s: the key cannot sign", cert.Subject.CommonName)
	}
	pub, ok := signer.Public().(interface{ Equal(crypto.PublicKey) bool })
	if !ok || !pub.Equal(cert.PublicKey) {
		return nil, fmt.Errorf("load CA %s: the key does not match the certificate", cert.Subject.CommonName)
	}
	return &Authority{Cert: cert, Key: signer, PEM: pemBlock("CERTIFICATE", block.Bytes)}, nil
}

// KeyPEM is the CA's private key as PKCS #8 PEM, for a caller that keeps the CA to issue more
// certificates later (LoadAuthority reads it back).
func (a *Authority) KeyPEM() ([]byte, error) {
	der, err := x509.MarshalPKCS8PrivateKey(a.Key)
	if err != nil {
		return nil, fmt.Errorf("encode key of CA %s: %w", a.Cert.Subject.CommonName, err)
	}
	return pemBlock("PRIVATE KEY", der), nil
}

// Spec describes one certificate to issue.
type Spec struct {
	// CommonName is the identity: services authorize callers by the subject common name of
	// the verified client certificate.
	CommonName string
	Usage      Usage
	// DNSNames and IPs are the SANs of a server certificate (default: localhost and the
	// loopback addresses).
	DNSNames []string
	IPs      []net.IP
	// URIs are URI SANs: a workload's SPIFFE ID (Region.Add sets it for service identities).
	URIs     []*url.URL
	Lifetime time.Duration
	// Organization is the subject's organisation (default "OpenHCP local region"). The admin
	// API reads an SRE's group from it (admin/pkg/access).
	Organization []string
	// NoOrganization leaves the subject without the default organisation: a Kubernetes client
	// certificate's organisations are its groups, so one with no groups must carry none.
	NoOrganization bool
}

// Issued is a certificate and its key, both PEM.
type Issued struct {
	Cert    *x509.Certificate
	CertPEM []byte
	KeyPEM  []byte
}

// Issue signs a new certificate with a new key.
func (a *Authority) Issue(s Spec) (*Issued, error) {
	if s.CommonName == "" {
		return nil, errors.New("issue certificate: empty common name")
	}
	if s.Usage&(Server|Client) == 0 {
		return nil, fmt.Errorf("issue certificate %s: no usage", s.CommonName)
	}
	if s.Lifetime <= 0 {
		return nil, fmt.Errorf("issue certificate %s: lifetime %s", s.CommonName, s.Lifetime)
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("generate key of %s: %w", s.CommonName, err)
	}
	serial, err := newSerial()
	if err != nil {
		return nil, err
	}
	now := time.Now()
	notAfter := now.Add(s.Lifetime)
	if notAfter.After(a.Cert.NotAfter) {
		notAfter = a.Cert.NotAfter
	}
	org := s.Organization
	if len(org) == 0 && !s.NoOrganization {
		org = []string{"OpenHCP local region"}
	}
	tmpl := &x509.Certificate{
		SerialNumber: serial,
		Subject:      pkix.Name{CommonName: s.CommonName, Organization: org},
		NotBefore:    now.Add(-Backdate),
		NotAfter:     notAfter,
		KeyUsage:     x509.KeyUsageDigitalSignature,
	}
	if s.Usage&Server != 0 {
		tmpl.ExtKeyUsage = append(tmpl.ExtKeyUsage, x509.ExtKeyUsageServerAuth)
		tmpl.DNSNames, tmpl.IPAddresses = s.DNSNames, s.IPs
		if len(tmpl.DNSNames) == 0 && len(tmpl.IPAddresses) == 0 {
			tmpl.DNSNames = []string{"localhost"}
			tmpl.IPAddresses = []net.IP{net.IPv4(127, 0, 0, 1), net.IPv6loopback}
		}
	}
	tmpl.URIs = s.URIs
	if s.Usage&Client != 0 {
		tmpl.ExtKeyUsage = append(tmpl.ExtKeyUsage, x509.ExtKeyUsageClientAuth)
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, a.Cert, &key.PublicKey, a.Key)
	if err != nil {
		return nil, fmt.Errorf("sign certificate %s: %w", s.CommonName, err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, fmt.Errorf("parse certificate %s: %w", s.CommonName, err)
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return nil, fmt.Errorf("encode key of %s: %w", s.CommonName, err)
	}
	return &Issued{Cert: cert, CertPEM: pemBlock("CERTIFICATE", der), KeyPEM: pemBlock("PRIVATE KEY", keyDER)}, nil
}

func newSerial() (*big.Int, error) {
	s, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	if err != nil {
		return nil, fmt.Errorf("serial number: %w", err)
	}
	return s, nil
}

func pemBlock(typ string, der []byte) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der})
}

// WriteClientFiles writes a client's PEM files into dir (made 0700 if absent) as <base>.crt,
// <base>.key (0600) and <base>-ca.crt, for a client that takes files rather than a kubeconfig,
// and returns their paths. Each file is replaced atomically.
func WriteClientFiles(dir, base string, certPEM, keyPEM, caPEM []byte) (cert, key, ca string, err error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", "", "", fmt.Errorf("client files %s in %s: %w", base, dir, err)
	}
	cert, key, ca = filepath.Join(dir, base+".crt"), filepath.Join(dir, base+".key"), filepath.Join(dir, base+"-ca.crt")
	for _, f := range []struct {
		path string
		data []byte
		mode os.FileMode
	}{{key, keyPEM, 0o600}, {cert, certPEM, 0o644}, {ca, caPEM, 0o644}} {
		if err := atomicfile.Write(f.path, f.data, f.mode); err != nil {
			return "", "", "", fmt.Errorf("client files %s in %s: %w", base, dir, err)
		}
	}
	return cert, key, ca, nil
}
