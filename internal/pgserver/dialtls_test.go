package pgserver_test

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/openhcp/openhcp/internal/pgserver"
	"github.com/openhcp/openhcp/internal/pki"
)

// TestDialTLS: the SSLRequest and handshake every PostgreSQL-protocol probe of the region uses
// verifies the server by the CA it is given and refuses a server that will not speak TLS.
func TestDialTLS(t *testing.T) {
	c := startSecure(t)
	pool := func(file string) *x509.CertPool {
		pem, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		p := x509.NewCertPool()
		p.AppendCertsFromPEM(pem)
		return p
	}
	want, err := pki.ReadCertificate(c.pki.MustFiles(pki.Postgres).Cert)
	if err != nil {
		t.Fatal(err)
	}
	// refusing answers an SSLRequest with 'N', as a server without TLS does.
	refusing, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer refusing.Close()
	go func() {
		for {
			conn, err := refusing.Accept()
			if err != nil {
				return
			}
			_, _ = conn.Read(make([]byte, 8))
			_, _ = conn.Write([]byte{'N'})
			conn.Close()
		}
	}()
	pgAddr := fmt.Sprintf("127.0.0.1:%d", c.pg.Port)
	for _, tc := range []struct {
		name, addr string
		cfg        *tls.Config
		wantErr    string
	}{
		{"postgres_is_verified_by_the_service_ca", pgAddr, &tls.Config{RootCAs: pool(c.pki.CAFile), ServerName: "127.0.0.1"}, ""},
		{"postgres_fails_verification_by_another_ca", pgAddr, &tls.Config{RootCAs: pool(c.pki.PersonCAFile), ServerName: "127.0.0.1"}, "certificate signed by unknown authority"},
		{"postgres_fails_verification_by_another_name", pgAddr, &tls.Config{RootCAs: pool(c.pki.CAFile), ServerName: "cluster-service.example"}, "certificate is valid for"},
		{"a_server_that_refuses_tls_is_an_error", refusing.Addr().String(), &tls.Config{RootCAs: pool(c.pki.CAFile), ServerName: "127.0.0.1"}, "SSLRequest"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			conn, err := pgserver.DialTLS(ctx, tc.addr, tc.cfg)
			if tc.wantErr != "" {
				if err == nil {
					conn.Close()
					t.Fatalf("handshake succeeded, want an error with %q", tc.wantErr)
				}
				if !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error %v, want one with %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			if got := conn.ConnectionState().PeerCertificates[0].SerialNumber; got.Cmp(want.SerialNumber) != 0 {
				t.Fatalf("serves serial %s, want %s", got, want.SerialNumber)
			}
		})
	}
	t.Run("a_server_that_never_answers_is_left_when_the_context_ends", func(t *testing.T) {
		silent, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer silent.Close()
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() {
			_, err := pgserver.DialTLS(ctx, silent.Addr().String(), &tls.Config{RootCAs: pool(c.pki.CAFile), ServerName: "127.0.0.1"})
			done <- err
		}()
		cancel()
		select {
		case err := <-done:
			if err == nil {
				t.Fatal("a server that never answered gave a connection")
			}
		case <-time.After(60 * time.Second):
			t.Fatal("DialTLS did not return after its context ended")
		}
	})
}
