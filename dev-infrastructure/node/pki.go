package node

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"time"

	"github.com/openhcp/openhcp/internal/pki"
)

// pkiLifetime covers any development session; the node's PKI is made fresh at every start.
const pkiLifetime = 7 * 24 * time.Hour

// NodeName is the name the kubelet registers; the Node authorizer ties its client certificate to it.
const NodeName = "openhcp-node"

// kubeIdentity is one client identity of the node's components: its certificate's subject is the
// user and group the apiserver's Node and RBAC authorizers check.
type kubeIdentity struct {
	file, commonName, group string
}

var kubeIdentities = []kubeIdentity{
	{"admin", "openhcp-admin", "system:masters"},
	{"apiserver-kubelet-client", "kube-apiserver-kubelet-client", "system:masters"},
	{"kubelet", "system:node:" + NodeName, "system:nodes"},
	{"kube-scheduler", "system:kube-scheduler", ""},
	{"kube-controller-manager", "system:kube-controller-manager", ""},
	{"kube-proxy", "system:kube-proxy", ""},
}

// writePKI writes the node's CA, the apiserver's serving certificate (node IP, loopback, the
// kubernetes Service's first address and its DNS names), one client certificate per identity and
// the ServiceAccount signing key pair under dir as <name>.crt / <name>.key.
func writePKI(dir string, nodeIP, kubernetesServiceIP netip.Addr) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("node PKI directory: %w", err)
	}
	ca, err := pki.NewAuthority("openhcp-node-ca", pkiLifetime)
	if err != nil {
		return fmt.Errorf("node CA: %w", err)
	}
	files := map[string][]byte{"ca.crt": ca.PEM}
	caKey, err := x509.MarshalPKCS8PrivateKey(ca.Key)
	if err != nil {
		return fmt.Errorf("encoding the node CA key: %w", err)
	}
	// kube-controller-manager signs the kubelet's serving certificate requests with the CA.
	files["ca.key"] = pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: caKey})
	serving, err := ca.Issue(pki.Spec{
		CommonName: "kube-apiserver",
		Usage:      pki.Server,
		DNSNames:   []string{"kubernetes", "kubernetes.default", "kubernetes.default.svc", "kubernetes.default.svc.cluster.local", "localhost"},
		IPs:        []net.IP{net.IP(nodeIP.AsSlice()), net.IP(kubernetesServiceIP.AsSlice()), net.IPv4(127, 0, 0, 1)},
		Lifetime:   pkiLifetime,
	})
	if err != nil {
		return fmt.Errorf("apiserver serving certificate: %w", err)
	}
	files["apiserver.crt"], files["apiserver.key"] = serving.CertPEM, serving.KeyPEM
	for _, id := range kubeIdentities {
		s := pki.Spec{CommonName: id.commonName, Usage: pki.Client, Lifetime: pkiLifetime}
		if id.group != "" {
			s.Organization = []string{id.group}
		}
		c, err := ca.Issue(s)
		if err != nil {
			return fmt.Errorf("client certificate %s: %w", id.file, err)
		}
		files[id.file+".crt"], files[id.file+".key"] = c.CertPEM, c.KeyPEM
	}
	if err := addEtcdPKI(files); err != nil {
		return err
	}
	saKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return fmt.Errorf("ServiceAccount signing key: %w", err)
	}
	saPriv, err := x509.MarshalPKCS8PrivateKey(saKey)
	if err != nil {
		return fmt.Errorf("encoding the ServiceAccount signing key: %w", err)
	}
	saPub, err := x509.MarshalPKIXPublicKey(&saKey.PublicKey)
	if err != nil {
		return fmt.Errorf("encoding the ServiceAccount public key: %w", err)
	}
	files["sa.key"] = pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: saPriv})
	files["sa.pub"] = pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: saPub})
	for name, data := range files {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o600); err != nil {
			return fmt.Errorf("writing %s: %w", name, err)
		}
	}
	return nil
}

// addEtcdPKI adds etcd's own CA (etcd-ca.crt), its serving and peer certificate (etcd-server, for
// the loopback addresses it listens on) and the kube-apiserver's client certificate for it
// (apiserver-etcd-client) to files. The CA is etcd's own, not the Kubernetes CA: etcd has no
// authorization, so every certificate it admits reads and writes everything, and the admin's or a
// kubelet's certificate must not be one of them. Its key is not kept: nothing else is ever issued.
func addEtcdPKI(files map[string][]byte) error {
	ca, err := pki.NewAuthority("openhcp-node-etcd-ca", pkiLifetime)
	if err != nil {
		return fmt.Errorf("node etcd CA: %w", err)
	}
	files["etcd-ca.crt"] = ca.PEM
	for _, c := range []struct {
		name string
		spec pki.Spec
	}{
		// One certificate serves clients and peers; as a peer it is presented as a client too.
		{"etcd-server", pki.Spec{CommonName: "etcd", Usage: pki.Server | pki.Client}},
		{"apiserver-etcd-client", pki.Spec{CommonName: "kube-apiserver-etcd-client", Usage: pki.Client}},
	} {
		c.spec.Lifetime, c.spec.NoOrganization = pkiLifetime, true
		iss, err := ca.Issue(c.spec)
		if err != nil {
			return fmt.Errorf("etcd certificate %s: %w", c.name, err)
		}
		files[c.name+".crt"], files[c.name+".key"] = iss.CertPEM, iss.KeyPEM
	}
	return nil
}

// writeKubeconfig writes a kubeconfig for identity (a name in kubeIdentities) against server,
// referring to the PEM files in pkiDir.
func writeKubeconfig(path, server, pkiDir, identity string) error {
	const tmpl = `apiVersion: v1
kind: Config
clusters:
- name: node
  cluster:
    server: %[1]s
    certificate-authority: %[2]s
users:
- name: %[3]s
  user:
    client-certificate: %[4]s
    client-key: %[5]s
contexts:
- name: node
  context: {cluster: node, user: %[3]s}
current-context: node
`
	data := fmt.Sprintf(tmpl, server, filepath.Join(pkiDir, "ca.crt"), identity,
		filepath.Join(pkiDir, identity+".crt"), filepath.Join(pkiDir, identity+".key"))
	if err := os.WriteFile(path, []byte(data), 0o600); err != nil {
		return fmt.Errorf("writing kubeconfig %s: %w", path, err)
	}
	return nil
}

// WriteClientCertificate issues a client certificate of the node's CA for user, in no group,
// and writes it into dir as <base>.crt and <base>.key with the CA as <base>-ca.crt (which also
// verifies the apiserver's serving certificate). The user has what RBAC grants every
// authenticated user and nothing more, unless a binding names it.
func (n *Node) WriteClientCertificate(dir, base, user string) (cert, key, ca string, err error) {
	pkiDir := filepath.Join(n.Dir, "pki")
	caPEM, err := os.ReadFile(filepath.Join(pkiDir, "ca.crt"))
	if err != nil {
		return "", "", "", fmt.Errorf("node CA: %w", err)
	}
	caKey, err := os.ReadFile(filepath.Join(pkiDir, "ca.key"))
	if err != nil {
		return "", "", "", fmt.Errorf("node CA: %w", err)
	}
	authority, err := pki.LoadAuthority(caPEM, caKey)
	if err != nil {
		return "", "", "", fmt.Errorf("node CA: %w", err)
	}
	issued, err := authority.Issue(pki.Spec{CommonName: user, Usage: pki.Client, NoOrganization: true, Lifetime: pkiLifetime})
	if err != nil {
		return "", "", "", fmt.Errorf("client certificate for %s: %w", user, err)
	}
	return pki.WriteClientFiles(dir, base, issued.CertPEM, issued.KeyPEM, caPEM)
}
