// Package tlsconfig turns TLS flags into tls.Config values for our servers and clients. The
// configs read their files again when they change (compared on every handshake), so a rotated
// certificate or CA is used by the next connection without a restart. An empty set of files
// means plaintext, which is allowed only on loopback addresses.
package tlsconfig

import (
	"bytes"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"sync"
	"time"

	"github.com/openhcp/openhcp/internal/identity"
)

// Files names the PEM files of one side of a connection.
type Files struct {
	// CA verifies the peer: the server's CA for a client, the client CA for a server (which
	// then requires client certificates). A file may hold several CAs (a bundle).
	CA   string
	Cert string
	Key  string
	// PeerWorkload, on a client, is the workload (internal/identity) the server must be: its
	// certificate must carry that workload's SPIFFE ID in the trust domain of the client's own
	// certificate. Every server certificate of the region chains to the same service CA and
	// answers to the same loopback names, so without it any workload's key could pose as any
	// server. It needs Cert (the client's own ID names the trust domain).
	PeerWorkload string
	// ServerName, on a client, is the name the server's certificate must carry
	// (identity.ServerName of the service meant), whatever address is dialed. Empty: the
	// PeerWorkload's server name if that is set, else the dialed host.
	ServerName string
}

// Expecting is f with PeerWorkload set to workload when f has a client certificate: a client
// that presents no certificate cannot reach a mutual-TLS server of the region anyway.
func (f Files) Expecting(workload string) Files {
	if f.Cert != "" {
		f.PeerWorkload = workload
	}
	return f
}

// Enabled reports whether any TLS file is set.
func (f Files) Enabled() bool { return f.CA != "" || f.Cert != "" || f.Key != "" }

// Client returns the client config, or nil for plaintext (loopback only). The client
// certificate, if any, and the CA are read again when their files change. Without a CA the
// system roots verify the server.
//
// The server's chain is verified by VerifyConnection against the CA file's current contents
// (InsecureSkipVerify only turns off the standard library's check against a pool fixed at
// start). The server's name is checked as the standard library would: against the config's
// ServerName (Files.ServerName, or the PeerWorkload's identity.ServerName; otherwise HTTP and
// gRPC clients set it from the address they dial), or, for an IP address (which TLS does not
// carry as a server name), against addr's host.
func (f Files) Client(addr string) (*tls.Config, error) {
	if !f.Enabled() {
		return nil, RequireLoopback(addr)
	}
	if (f.Cert == "") != (f.Key == "") {
		return nil, fmt.Errorf("TLS client for %s needs both a certificate and a key, or neither", addr)
	}
	src, err := newSource(f)
	if err != nil {
		return nil, err
	}
	// Sessions are cached per server and per the client's own files, so a reconnection resumes
	// (resume.go) unless either side's files changed.
	cfg := &tls.Config{MinVersion: tls.VersionTLS12, ServerName: f.ServerName, ClientSessionCache: newFilesSessionCache(src, nil)}
	if cfg.ServerName == "" && f.PeerWorkload != "" {
		cfg.ServerName = identity.ServerName(f.PeerWorkload)
	}
	if f.Cert != "" {
		cfg.GetClientCertificate = func(*tls.CertificateRequestInfo) (*tls.Certificate, error) {
			cert, _ := src.current()
			return cert, nil
		}
	}
	if f.PeerWorkload != "" && f.Cert == "" {
		return nil, fmt.Errorf("TLS client for %s: checking the server is %s needs the client's own certificate (its trust domain)", addr, f.PeerWorkload)
	}
	if f.CA != "" {
		// Only we verify, against the pool of the moment.
		cfg.InsecureSkipVerify = true
		host := addr
		if h, _, err := net.SplitHostPort(addr); err == nil {
			host = h
		}
		// It runs on every handshake, resumed ones included: the server's chain and identity
		// are checked against the files of the moment either way.
		cfg.VerifyConnection = func(cs tls.ConnectionState) error {
			own, pool := src.current()
			name := cs.ServerName
			if name == "" {
				name = host
			}
			if name == "" {
				return errors.New("tls: no server name to verify the server certificate against")
			}
			if err := verifyServer(cs, name, pool); err != nil {
				return err
			}
			if f.PeerWorkload == "" {
				return nil
			}
			return verifyPeerWorkload(cs, own, f.PeerWorkload)
		}
	}
	return cfg, nil
}

// verifyServer does what crypto/tls does for a client with RootCAs set.
func verifyServer(cs tls.ConnectionState, name string, roots *x509.CertPool) error {
	if len(cs.PeerCertificates) == 0 {
		return errors.New("tls: server presented no certificate")
	}
	inter := x509.NewCertPool()
	for _, c := range cs.PeerCertificates[1:] {
		inter.AddCert(c)
	}
	_, err := cs.PeerCertificates[0].Verify(x509.VerifyOptions{
		Roots:         roots,
		Intermediates: inter,
		DNSName:       name,
		KeyUsages:     []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	})
	if err != nil {
		return fmt.Errorf("tls: verify server certificate: %w", err)
	}
	return nil
}

// verifyPeerWorkload checks that the server's certificate carries the SPIFFE ID of workload in
// the trust domain of the client's own certificate.
func verifyPeerWorkload(cs tls.ConnectionState, own *tls.Certificate, workload string) error {
	if own == nil || own.Leaf == nil {
		return errors.New("tls: no client certificate to take the trust domain from")
	}
	mine, err := identity.FromCertificate(own.Leaf)
	if err != nil {
		return fmt.Errorf("tls: the client's own certificate: %w", err)
	}
	want, ok := identity.Of(workload, mine.TrustDomain)
	if !ok {
		return fmt.Errorf("tls: %q is no workload", workload)
	}
	got, err := identity.FromCertificate(cs.PeerCertificates[0])
	if err != nil {
		return fmt.Errorf("tls: the server is not %s: %w", want, err)
	}
	if got != want {
		return fmt.Errorf("tls: the server is %s, not %s", got, want)
	}
	return nil
}

// Server returns the server config, or nil for plaintext (loopback only). A CA makes client
// certificates mandatory: connections without one that the CA verifies fail the handshake.
// nextProtos are the ALPN protocols offered ("h2" for gRPC, which insists on it). Certificate,
// key and CA are read again when their files change.
func (f Files) Server(addr string, nextProtos ...string) (*tls.Config, error) {
	return f.ServerClientAuth(addr, tls.RequireAndVerifyClientCert, nextProtos...)
}

// ServerClientAuth is Server with another client authentication policy when a CA is set:
// tls.VerifyClientCertIfGiven lets a request without a certificate through to a handler that
// answers it (a health probe, or a refusal in the API's own error format), while a
// certificate that does not chain to the CA still fails the handshake.
func (f Files) ServerClientAuth(addr string, clientAuth tls.ClientAuthType, nextProtos ...string) (*tls.Config, error) {
	if !f.Enabled() {
		return nil, RequireLoopback(addr)
	}
	if f.Cert == "" || f.Key == "" {
		return nil, fmt.Errorf("TLS for %s needs both a certificate and a key", addr)
	}
	src, err := newSource(f)
	if err != nil {
		return nil, err
	}
	// Each handshake gets a config built from the files of the moment. The outer config also
	// carries a certificate callback so that code inspecting it sees a usable server config.
	// Session tickets are sealed under this config's own keys and bound to the files they were
	// issued under (resume.go).
	keys := newTicketKeys(nil)
	perConn := func() *tls.Config {
		m := src.state()
		c := &tls.Config{
			MinVersion:   tls.VersionTLS12,
			Certificates: []tls.Certificate{*m.cert},
			NextProtos:   nextProtos,
		}
		if m.pool != nil {
			c.ClientCAs, c.ClientAuth = m.pool, clientAuth
		}
		keys.resumeWith(c, m.sum)
		return c
	}
	cfg := perConn()
	cfg.Certificates = nil
	cfg.GetCertificate = func(*tls.ClientHelloInfo) (*tls.Certificate, error) {
		cert, _ := src.current()
		return cert, nil
	}
	cfg.GetConfigForClient = func(*tls.ClientHelloInfo) (*tls.Config, error) { return perConn(), nil }
	return cfg, nil
}

// source holds the parsed files and parses them again when their contents change. It reads
// the (small) files on every handshake and compares bytes: a modification time can miss two
// writes within the file system's timestamp granularity, a comparison cannot, and a few reads
// cost little next to a handshake. A reload that fails (a key pair caught between its two
// renames, a truncated file) keeps the previous material and is tried again on the next
// handshake.
type source struct {
	files Files

	mu   sync.Mutex
	raw  [3][]byte
	cert *tls.Certificate
	pool *x509.CertPool
	sum  [32]byte // filesDigest(raw): what sessions are bound to (resume.go)
}

// material is the parsed files of one moment and the digest of their bytes.
type material struct {
	cert *tls.Certificate
	pool *x509.CertPool
	sum  [32]byte
}

func newSource(f Files) (*source, error) {
	s := &source{files: f}
	raw, err := s.read()
	if err != nil {
		return nil, err
	}
	cert, pool, err := parse(f, raw)
	if err != nil {
		return nil, err
	}
	s.raw, s.cert, s.pool, s.sum = raw, cert, pool, filesDigest(raw)
	return s, nil
}

// filesDigest is the SHA-256 of the certificate, key and CA files' bytes, each length-prefixed.
func filesDigest(raw [3][]byte) [32]byte {
	h := sha256.New()
	for _, b := range raw {
		var n [8]byte
		binary.BigEndian.PutUint64(n[:], uint64(len(b)))
		h.Write(n[:])
		h.Write(b)
	}
	var sum [32]byte
	h.Sum(sum[:0])
	return sum
}

func (s *source) read() ([3][]byte, error) {
	var raw [3][]byte
	for i, p := range []string{s.files.Cert, s.files.Key, s.files.CA} {
		if p == "" {
			continue
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return raw, fmt.Errorf("read TLS file: %w", err)
		}
		raw[i] = b
	}
	return raw, nil
}

// current returns the certificate (nil without one) and the CA pool (nil without a CA).
func (s *source) current() (*tls.Certificate, *x509.CertPool) {
	m := s.state()
	return m.cert, m.pool
}

// state returns the files of the moment, parsed, with their digest.
func (s *source) state() material {
	s.mu.Lock()
	defer s.mu.Unlock()
	raw, err := s.read()
	if err == nil && bytes.Equal(raw[0], s.raw[0]) && bytes.Equal(raw[1], s.raw[1]) && bytes.Equal(raw[2], s.raw[2]) {
		return material{s.cert, s.pool, s.sum}
	}
	var cert *tls.Certificate
	var pool *x509.CertPool
	if err == nil {
		cert, pool, err = parse(s.files, raw)
	}
	if err != nil {
		slog.Warn("TLS files changed but do not load; keeping the previous ones", "cert", s.files.Cert, "ca", s.files.CA, "error", err)
		return material{s.cert, s.pool, s.sum}
	}
	if cert != nil && cert.Leaf != nil {
		slog.Info("TLS files reloaded", "cert", s.files.Cert, "subject", cert.Leaf.Subject.CommonName,
			"notAfter", cert.Leaf.NotAfter.Format(time.RFC3339), "ca", s.files.CA)
	} else {
		slog.Info("TLS files reloaded", "ca", s.files.CA)
	}
	s.raw, s.cert, s.pool, s.sum = raw, cert, pool, filesDigest(raw)
	return material{cert, pool, s.sum}
}

func parse(f Files, raw [3][]byte) (*tls.Certificate, *x509.CertPool, error) {
	var cert *tls.Certificate
	if f.Cert != "" || f.Key != "" {
		kp, err := tls.X509KeyPair(raw[0], raw[1])
		if err != nil {
			return nil, nil, fmt.Errorf("load key pair %s/%s: %w", f.Cert, f.Key, err)
		}
		cert = &kp
	}
	var pool *x509.CertPool
	if f.CA != "" {
		pool = x509.NewCertPool()
		if !pool.AppendCertsFromPEM(raw[2]) {
			return nil, nil, fmt.Errorf("no certificates in CA file %s", f.CA)
		}
	}
	return cert, pool, nil
}

// Metrics returns the config of a metrics endpoint on addr: nil (plaintext) on loopback, where
// only the node's own scraper reaches it; elsewhere TLS with the service's certificate (f.CA is
// ignored: scrapers present no client certificate). Without a certificate a non-loopback
// address is an error.
func (f Files) Metrics(addr string) (*tls.Config, error) {
	if RequireLoopback(addr) == nil {
		return nil, nil
	}
	if f.Cert == "" || f.Key == "" {
		return nil, fmt.Errorf("metrics on %s: %w", addr, RequireLoopback(addr))
	}
	return Files{Cert: f.Cert, Key: f.Key}.Server(addr)
}

// RequireLoopback fails unless addr (host:port or URL host) is a loopback address.
func RequireLoopback(addr string) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		host = addr
	}
	if host == "localhost" {
		return nil
	}
	if ip := net.ParseIP(host); ip != nil && ip.IsLoopback() {
		return nil
	}
	return fmt.Errorf("plaintext is allowed only on loopback, not %q: set the TLS certificate flags", addr)
}
