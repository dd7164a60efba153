// Package breakglass owns the key material of break-glass credentials inside Cluster Service:
// it generates a credential's key pair and certificate request, checks a customer's request, checks
// the certificate the signer returned against the request, and assembles the kubeconfig. The
// private key never leaves Cluster Service except inside that kubeconfig.
package breakglass

import (
	"bytes"
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"strings"

	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	csv1 "github.com/openhcp/openhcp/cluster-service/api/v1"
	"github.com/openhcp/openhcp/internal/identity"
)

// Subject rules of HyperShift's customer break-glass signer.
const (
	UserPrefix = "system:customer-break-glass:"
	Group      = "system:masters"
)

// SRE break-glass subjects. An SRE's credential is signed by HyperShift's separate SRE
// break-glass signer (signer class sre-break-glass), which signs only common names under
// SREUserPrefix: system:sre-break-glass:<person>, so the hosted cluster's audit log names the
// SRE and revoking SRE credentials never touches the customer's signer. Its organisation is the
// kube group of the access asked for; SREGroups is the one owner of that mapping
// (docs/sre.md#break-glass).
const SREUserPrefix = "system:sre-break-glass:"

// SREGroups maps an SRE credential's access to the certificate's organisation (kube group).
// Neither is system:masters: SRE certificates are held by the break-glass gateway only, and
// their groups are bound to nothing but impersonation, of the SRE person with the matching
// SREImpersonatedGroups group (docs/sre.md#break-glass).
var SREGroups = map[csv1.SREAccess]string{
	csv1.SREAccess_SRE_ACCESS_READ_ONLY: SREBreakGlassReadOnlyGroup,
	csv1.SREAccess_SRE_ACCESS_ADMIN:     SREBreakGlassAdminGroup,
}

// The kube groups the gateway impersonates for an SRE session (Impersonate-Group), by access:
// admin is bound to cluster-admin, read-only to get/list/watch on everything but secrets.
const (
	SREImpersonatedGroupReadOnly = SREReadOnlyGroup
	SREImpersonatedGroupAdmin    = SREAdminGroup
)

// SREImpersonatedGroups maps an SRE session's access to the group the gateway impersonates.
var SREImpersonatedGroups = map[csv1.SREAccess]string{
	csv1.SREAccess_SRE_ACCESS_READ_ONLY: SREImpersonatedGroupReadOnly,
	csv1.SREAccess_SRE_ACCESS_ADMIN:     SREImpersonatedGroupAdmin,
}

// NewSRERequest generates a key and a certificate request naming the SRE person with the kube
// group of access.
func NewSRERequest(person string, access csv1.SREAccess) (keyDER, csrPEM []byte, err error) {
	group, ok := SREGroups[access]
	if !ok {
		return nil, nil, fmt.Errorf("SRE access %s has no kube group", access)
	}
	if err := identity.ValidPerson(person); err != nil {
		return nil, nil, fmt.Errorf("SRE person %q cannot name a certificate subject: %w", person, err)
	}
	return newRequest(pkix.Name{CommonName: SREUserPrefix + person, Organization: []string{group}})
}

// NewRequest generates a P-256 key and a certificate request for user (the part after
// UserPrefix). It returns the key as PKCS#8 DER and the request as PEM.
func NewRequest(user string) (keyDER, csrPEM []byte, err error) {
	return newRequest(pkix.Name{CommonName: UserPrefix + user, Organization: []string{Group}})
}

func newRequest(subject pkix.Name) (keyDER, csrPEM []byte, err error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, fmt.Errorf("generate break-glass key: %w", err)
	}
	keyDER, err = x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return nil, nil, fmt.Errorf("encode break-glass key: %w", err)
	}
	der, err := x509.CreateCertificateRequest(rand.Reader, &x509.CertificateRequest{Subject: subject}, key)
	if err != nil {
		return nil, nil, fmt.Errorf("create break-glass certificate request: %w", err)
	}
	return keyDER, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: der}), nil
}

// ParseRequest decodes a PEM certificate request and checks its self-signature. It does not
// judge the subject: that is the signer's decision, reported back as the CSR's Failed condition.
func ParseRequest(csrPEM []byte) (*x509.CertificateRequest, error) {
	block, rest := pem.Decode(csrPEM)
	if block == nil || block.Type != "CERTIFICATE REQUEST" {
		return nil, errors.New("is not a PEM CERTIFICATE REQUEST")
	}
	if len(bytes.TrimSpace(rest)) != 0 {
		return nil, errors.New("holds more than one PEM block")
	}
	req, err := x509.ParseCertificateRequest(block.Bytes)
	if err != nil {
		return nil, fmt.Errorf("cannot be parsed: %w", err)
	}
	if err := req.CheckSignature(); err != nil {
		return nil, fmt.Errorf("has an invalid signature: %w", err)
	}
	return req, nil
}

// CheckIssued parses the PEM certificate the signer issued for csrPEM and checks that it certifies
// the request's public key for client authentication. It returns the leaf.
func CheckIssued(csrPEM, certPEM []byte) (*x509.Certificate, error) {
	req, err := ParseRequest(csrPEM)
	if err != nil {
		return nil, fmt.Errorf("certificate request %w", err)
	}
	block, _ := pem.Decode(certPEM)
	if block == nil || block.Type != "CERTIFICATE" {
		return nil, errors.New("issued certificate is not PEM")
	}
	cert, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		return nil, fmt.Errorf("parse issued certificate: %w", err)
	}
	pub, ok := cert.PublicKey.(interface{ Equal(crypto.PublicKey) bool })
	if !ok || !pub.Equal(req.PublicKey) {
		return nil, errors.New("issued certificate does not certify the requested key")
	}
	clientAuth := false
	for _, u := range cert.ExtKeyUsage {
		clientAuth = clientAuth || u == x509.ExtKeyUsageClientAuth
	}
	if !clientAuth {
		return nil, errors.New("issued certificate is not for client authentication")
	}
	return cert, nil
}

// Kubeconfig assembles a kubeconfig for server, trusting caPEM, with the client certificate and,
// when keyDER is set, its private key (a customer who sent their own request adds theirs).
func Kubeconfig(clusterName, server string, caPEM, certPEM, keyDER []byte) (string, error) {
	user := "break-glass"
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters[clusterName] = &clientcmdapi.Cluster{Server: server, CertificateAuthorityData: caPEM}
	auth := &clientcmdapi.AuthInfo{ClientCertificateData: certPEM}
	if len(keyDER) > 0 {
		auth.ClientKeyData = pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER})
	}
	cfg.AuthInfos[user] = auth
	ctxName := user + "@" + clusterName
	cfg.Contexts[ctxName] = &clientcmdapi.Context{Cluster: clusterName, AuthInfo: user}
	cfg.CurrentContext = ctxName
	b, err := clientcmd.Write(*cfg)
	if err != nil {
		return "", fmt.Errorf("write kubeconfig: %w", err)
	}
	return string(b), nil
}

// Username is the common name of a request, for the credential's status.
func Username(csrPEM []byte) string {
	req, err := ParseRequest(csrPEM)
	if err != nil {
		return ""
	}
	return req.Subject.CommonName
}

// ValidUser reports whether cn is a break-glass user name as one of HyperShift's signers
// requires (the customer's or the SRE's).
func ValidUser(cn string) bool {
	for _, prefix := range []string{UserPrefix, SREUserPrefix} {
		if strings.HasPrefix(cn, prefix) && len(cn) > len(prefix) {
			return true
		}
	}
	return false
}
