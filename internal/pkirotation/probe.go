package pkirotation

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"os"
	"sync"
	"time"

	"github.com/openhcp/openhcp/internal/pgserver"
)

// Served is what one listener serves.
type Served struct {
	Listener Listener
	Cert     *x509.Certificate
	// Err says why the listener's certificate could not be read or does not verify.
	Err error
}

// probeTimeout bounds one listener's handshake.
const probeTimeout = 5 * time.Second

// ReadCAFile reads a CA bundle (the region's CA file as it is now) into a pool.
func ReadCAFile(path string) (*x509.CertPool, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read CA file: %w", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(b) {
		return nil, fmt.Errorf("no certificate in CA file %s", path)
	}
	return pool, nil
}

// Probe reads the certificate each listener serves by a TLS handshake that presents no
// certificate of its own, and verifies it against roots and the listener's server name; all
// listeners at once. A server that requires a client certificate still shows its own first
// (the probe reads it while the handshake is under way), so the probe needs no identity and
// cannot be mistaken for one.
func Probe(ctx context.Context, ls []Listener, roots *x509.CertPool) []Served {
	out := make([]Served, len(ls))
	var wg sync.WaitGroup
	for i, l := range ls {
		wg.Go(func() {
			cert, err := probeOne(ctx, l)
			if err == nil {
				err = verify(cert.chain, l.ServerName, roots)
			}
			out[i] = Served{Listener: l, Cert: cert.leaf(), Err: err}
		})
	}
	wg.Wait()
	return out
}

type presented struct{ chain []*x509.Certificate }

func (p presented) leaf() *x509.Certificate {
	if len(p.chain) == 0 {
		return nil
	}
	return p.chain[0]
}

func probeOne(ctx context.Context, l Listener) (presented, error) {
	ctx, cancel := context.WithTimeout(ctx, probeTimeout)
	defer cancel()
	var got presented
	var mu sync.Mutex
	cfg := &tls.Config{
		MinVersion: tls.VersionTLS12,
		ServerName: l.ServerName,
		// Verified below, against the CA file of the moment; the chain is kept here because a
		// server that wants a client certificate may end the handshake after showing it.
		InsecureSkipVerify: true,
		VerifyPeerCertificate: func(raw [][]byte, _ [][]*x509.Certificate) error {
			var chain []*x509.Certificate
			for _, r := range raw {
				c, err := x509.ParseCertificate(r)
				if err != nil {
					return err
				}
				chain = append(chain, c)
			}
			mu.Lock()
			got.chain = chain
			mu.Unlock()
			return nil
		},
	}
	var conn *tls.Conn
	var err error
	switch l.Protocol {
	case ProtocolPostgres:
		conn, err = pgserver.DialTLS(ctx, l.Address, cfg)
	case ProtocolTLS:
		d := tls.Dialer{Config: cfg}
		var c net.Conn
		c, err = d.DialContext(ctx, "tcp", l.Address)
		if err == nil {
			conn = c.(*tls.Conn)
		}
	default:
		return presented{}, fmt.Errorf("listener %s: unknown protocol %q", l.Name, l.Protocol)
	}
	if conn != nil {
		conn.Close()
	}
	mu.Lock()
	defer mu.Unlock()
	if len(got.chain) == 0 {
		if err == nil {
			err = errors.New("no certificate presented")
		}
		return presented{}, fmt.Errorf("listener %s at %s: %w", l.Name, l.Address, err)
	}
	return got, nil
}

func verify(chain []*x509.Certificate, name string, roots *x509.CertPool) error {
	inter := x509.NewCertPool()
	for _, c := range chain[1:] {
		inter.AddCert(c)
	}
	if _, err := chain[0].Verify(x509.VerifyOptions{Roots: roots, Intermediates: inter, DNSName: name,
		KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}); err != nil {
		return fmt.Errorf("serial %s does not verify against the current CA file as %s: %w", chain[0].SerialNumber, name, err)
	}
	return nil
}
