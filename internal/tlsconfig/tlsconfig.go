// Package tlsconfig turns TLS flags into tls.Config values for our servers and clients. An empty
// set of files means plaintext, which is allowed only on loopback addresses: the local region
// runs that way until mutual TLS is mandatory, and nothing else may.
package tlsconfig

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net"
	"os"
)

// Files names the PEM files of one side of a connection.
type Files struct {
	// CA verifies the peer: the server's CA for a client, the client CA for a server (which
	// then requires client certificates).
	CA   string
	Cert string
	Key  string
}

// Enabled reports whether any TLS file is set.
func (f Files) Enabled() bool { return f.CA != "" || f.Cert != "" || f.Key != "" }

// Client returns the client config, or nil for plaintext (loopback only).
func (f Files) Client(addr string) (*tls.Config, error) {
	if !f.Enabled() {
		return nil, RequireLoopback(addr)
	}
	cfg := &tls.Config{MinVersion: tls.VersionTLS12}
	if err := f.load(cfg); err != nil {
		return nil, err
	}
	if cfg.ClientCAs != nil {
		cfg.RootCAs, cfg.ClientCAs = cfg.ClientCAs, nil
	}
	return cfg, nil
}

// Server returns the server config, or nil for plaintext (loopback only). A CA makes client
// certificates mandatory.
func (f Files) Server(addr string) (*tls.Config, error) {
	if !f.Enabled() {
		return nil, RequireLoopback(addr)
	}
	if f.Cert == "" || f.Key == "" {
		return nil, fmt.Errorf("TLS for %s needs both a certificate and a key", addr)
	}
	cfg := &tls.Config{MinVersion: tls.VersionTLS12}
	if err := f.load(cfg); err != nil {
		return nil, err
	}
	if cfg.ClientCAs != nil {
		cfg.ClientAuth = tls.RequireAndVerifyClientCert
	}
	return cfg, nil
}

func (f Files) load(cfg *tls.Config) error {
	if f.Cert != "" || f.Key != "" {
		kp, err := tls.LoadX509KeyPair(f.Cert, f.Key)
		if err != nil {
			return fmt.Errorf("load key pair %s/%s: %w", f.Cert, f.Key, err)
		}
		cfg.Certificates = []tls.Certificate{kp}
	}
	if f.CA != "" {
		pem, err := os.ReadFile(f.CA)
		if err != nil {
			return fmt.Errorf("read CA %s: %w", f.CA, err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return fmt.Errorf("no certificates in CA file %s", f.CA)
		}
		cfg.ClientCAs = pool
	}
	return nil
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
