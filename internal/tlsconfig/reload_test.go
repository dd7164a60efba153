package tlsconfig

import (
	"crypto/tls"
	"fmt"
	"io"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"testing"

	"github.com/openhcp/openhcp/internal/pki"
)

// tlsServer serves, over a listener wrapped with cfg, the subject CN and serial of the client
// certificate it verified.
func tlsServer(t *testing.T, cfg *tls.Config) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	hs := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.TLS != nil && len(r.TLS.VerifiedChains) > 0 {
			c := r.TLS.VerifiedChains[0][0]
			io.WriteString(w, c.Subject.CommonName+" "+c.SerialNumber.String())
		}
	})}
	go hs.Serve(tls.NewListener(l, cfg))
	t.Cleanup(func() { hs.Close() })
	return "https://" + l.Addr().String()
}

// get makes one request on a new connection and returns the server's certificate serial and
// what the server saw of ours.
func get(t *testing.T, cfg *tls.Config, url string) (*big.Int, string, error) {
	t.Helper()
	tr := &http.Transport{TLSClientConfig: cfg, DisableKeepAlives: true}
	defer tr.CloseIdleConnections()
	resp, err := (&http.Client{Transport: tr}).Get(url)
	if err != nil {
		return nil, "", err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.TLS.PeerCertificates[0].SerialNumber, string(b), nil
}

func serial(t *testing.T, path string) *big.Int {
	t.Helper()
	c, err := pki.ReadCertificate(path)
	if err != nil {
		t.Fatal(err)
	}
	return c.SerialNumber
}

// TestRotationUnderARunningServer renews the server's and the client's certificates, and then
// swaps CAs, under a server that keeps running, and checks that each new connection uses the
// files of the moment.
func TestRotationUnderARunningServer(t *testing.T) {
	p, err := pki.Create(t.TempDir(), pki.Options{})
	if err != nil {
		t.Fatal(err)
	}
	srvFiles, cliFiles := p.MustFiles(pki.Frontend), p.MustFiles(pki.Backend)
	// Copies of the CA file that the test may overwrite for the CA rotation.
	dir := t.TempDir()
	serverCA, clientCA := dir+"/server-trusts.crt", dir+"/client-trusts.crt"
	regionCA, _ := os.ReadFile(p.CAFile)
	for _, f := range []string{serverCA, clientCA} {
		if err := os.WriteFile(f, regionCA, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	scfg, err := Files{CA: serverCA, Cert: srvFiles.Cert, Key: srvFiles.Key}.Server("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ccfg, err := Files{CA: clientCA, Cert: cliFiles.Cert, Key: cliFiles.Key, ServerName: pki.ServerName(pki.Frontend)}.Client("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	url := tlsServer(t, scfg)

	check := func(t *testing.T) {
		t.Helper()
		gotSrv, gotCli, err := get(t, ccfg, url)
		if err != nil {
			t.Fatal(err)
		}
		if want := serial(t, srvFiles.Cert); gotSrv.Cmp(want) != 0 {
			t.Fatalf("server presented serial %s, the file holds %s", gotSrv, want)
		}
		if want := "backend " + serial(t, cliFiles.Cert).String(); gotCli != want {
			t.Fatalf("server saw client %q, want %q", gotCli, want)
		}
	}
	t.Run("initial_certificates", check)
	t.Run("renewed_server_certificate_is_used_by_the_next_connection", func(t *testing.T) {
		before := serial(t, srvFiles.Cert)
		if _, err := p.Renew(pki.Frontend); err != nil {
			t.Fatal(err)
		}
		if serial(t, srvFiles.Cert).Cmp(before) == 0 {
			t.Fatal("renew kept the serial")
		}
		check(t)
	})
	t.Run("renewed_client_certificate_is_used_by_the_next_connection", func(t *testing.T) {
		if _, err := p.Renew(pki.Backend); err != nil {
			t.Fatal(err)
		}
		check(t)
	})
	t.Run("half_written_pair_keeps_the_previous_certificate", func(t *testing.T) {
		want := serial(t, srvFiles.Cert)
		keep, _ := os.ReadFile(srvFiles.Key)
		other, _ := os.ReadFile(p.MustFiles(pki.Broker).Key)
		if err := os.WriteFile(srvFiles.Key, other, 0o600); err != nil {
			t.Fatal(err)
		}
		got, _, err := get(t, ccfg, url)
		if err != nil {
			t.Fatal(err)
		}
		if got.Cmp(want) != 0 {
			t.Fatalf("server presented %s during a half rotation, want the previous %s", got, want)
		}
		if err := os.WriteFile(srvFiles.Key, keep, 0o600); err != nil {
			t.Fatal(err)
		}
		check(t)
	})
	other, err := pki.Create(t.TempDir(), pki.Options{})
	if err != nil {
		t.Fatal(err)
	}
	otherCA, _ := os.ReadFile(other.CAFile)
	t.Run("server_CA_replaced_refuses_the_old_client", func(t *testing.T) {
		if err := os.WriteFile(serverCA, otherCA, 0o644); err != nil {
			t.Fatal(err)
		}
		if _, _, err := get(t, ccfg, url); err == nil {
			t.Fatal("client of the old CA was admitted after the server's CA file changed")
		}
		if err := os.WriteFile(serverCA, regionCA, 0o644); err != nil {
			t.Fatal(err)
		}
		check(t)
	})
	t.Run("client_CA_replaced_refuses_the_old_server", func(t *testing.T) {
		if err := os.WriteFile(clientCA, otherCA, 0o644); err != nil {
			t.Fatal(err)
		}
		if _, _, err := get(t, ccfg, url); err == nil {
			t.Fatal("client accepted a server of a CA no longer in its file")
		}
		// A bundle of both CAs, as during a CA rotation, trusts either.
		if err := os.WriteFile(clientCA, append(append([]byte{}, otherCA...), regionCA...), 0o644); err != nil {
			t.Fatal(err)
		}
		check(t)
	})
}

// TestRefusals checks the handshake refusals every secured port relies on.
func TestRefusals(t *testing.T) {
	p, err := pki.Create(t.TempDir(), pki.Options{})
	if err != nil {
		t.Fatal(err)
	}
	other, err := pki.Create(t.TempDir(), pki.Options{})
	if err != nil {
		t.Fatal(err)
	}
	fe := p.MustFiles(pki.Frontend)
	scfg, err := Files{CA: p.CAFile, Cert: fe.Cert, Key: fe.Key}.Server("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	url := tlsServer(t, scfg)
	be, stranger, ext := p.MustFiles(pki.Backend), other.MustFiles(pki.Backend), p.MustFiles(pki.ARM)
	for _, tc := range []struct {
		name  string
		files Files
		ok    bool
	}{
		{"right_CA_is_admitted", Files{CA: p.CAFile, Cert: be.Cert, Key: be.Key}, true},
		{"no_client_certificate_fails_the_handshake", Files{CA: p.CAFile}, false},
		{"client_of_an_unknown_CA_fails_the_handshake", Files{CA: p.CAFile, Cert: stranger.Cert, Key: stranger.Key}, false},
		{"client_of_the_other_region_CA_fails_the_handshake", Files{CA: p.CAFile, Cert: ext.Cert, Key: ext.Key}, false},
		{"server_of_an_unknown_CA_is_refused_by_the_client", Files{CA: other.CAFile, Cert: stranger.Cert, Key: stranger.Key}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.files.ServerName = pki.ServerName(pki.Frontend) // the server's certificate names only it
			ccfg, err := tc.files.Client("127.0.0.1:1")
			if err != nil {
				t.Fatal(err)
			}
			_, who, err := get(t, ccfg, url)
			if (err == nil) != tc.ok {
				t.Fatalf("err %v, want ok=%v", err, tc.ok)
			}
			if tc.ok && who == "" {
				t.Fatal("server saw no verified client certificate")
			}
		})
	}
	t.Run("plaintext_is_not_served", func(t *testing.T) {
		resp, err := http.Get("http://" + url[len("https://"):])
		if err == nil {
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusBadRequest || len(b) > 0 && string(b) != "Client sent an HTTP request to an HTTPS server.\n" {
				t.Fatalf("plaintext request got %d %q", resp.StatusCode, b)
			}
		}
	})
	t.Run("wrong_host_name_is_refused", func(t *testing.T) {
		ccfg, err := Files{CA: p.CAFile, Cert: be.Cert, Key: be.Key, ServerName: pki.ServerName(pki.Frontend)}.Client("127.0.0.1:1")
		if err != nil {
			t.Fatal(err)
		}
		ccfg.ServerName = "frontend.elsewhere.example"
		if _, _, err := get(t, ccfg, url); err == nil {
			t.Fatal("server certificate accepted for a name it does not carry")
		}
	})
}

// TestServerIPIsVerified: TLS carries no server name for an IP address, so the client checks
// the certificate against the dialled address itself.
func TestServerIPIsVerified(t *testing.T) {
	p, err := pki.Create(t.TempDir(), pki.Options{})
	if err != nil {
		t.Fatal(err)
	}
	// The broker's certificate names 127.0.0.1 (pki.KeepsLoopbackNames); one for localhost only,
	// served on 127.0.0.1, does not.
	if err := p.Add("named-only", pki.Spec{CommonName: "named-only", Usage: pki.Server, DNSNames: []string{"localhost"}}, pki.ServiceCA); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		identity string
		ok       bool
	}{
		{pki.Broker, true},
		{"named-only", false},
	} {
		t.Run(tc.identity, func(t *testing.T) {
			f := p.MustFiles(tc.identity)
			scfg, err := Files{Cert: f.Cert, Key: f.Key}.Server("127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			url := tlsServer(t, scfg)
			ccfg, err := Files{CA: p.CAFile}.Client(url[len("https://"):])
			if err != nil {
				t.Fatal(err)
			}
			if _, _, err := get(t, ccfg, url); (err == nil) != tc.ok {
				t.Fatalf("err %v, want ok=%v", err, tc.ok)
			}
		})
	}
}

func TestOptionalClientCertificate(t *testing.T) {
	p, err := pki.Create(t.TempDir(), pki.Options{})
	if err != nil {
		t.Fatal(err)
	}
	other, err := pki.Create(t.TempDir(), pki.Options{})
	if err != nil {
		t.Fatal(err)
	}
	fe := p.MustFiles(pki.Frontend)
	scfg, err := Files{CA: p.ARMCAFile, Cert: fe.Cert, Key: fe.Key}.ServerClientAuth("127.0.0.1:0", tls.VerifyClientCertIfGiven)
	if err != nil {
		t.Fatal(err)
	}
	url := tlsServer(t, scfg)
	arm, stranger := p.MustFiles(pki.ARM), other.MustFiles(pki.ARM)
	for _, tc := range []struct {
		name  string
		files Files
		ok    bool
		who   string
	}{
		{"no_certificate_reaches_the_handler_unidentified", Files{CA: p.CAFile}, true, ""},
		{"verified_certificate_is_identified", Files{CA: p.CAFile, Cert: arm.Cert, Key: arm.Key}, true, "arm"},
		{"certificate_of_another_CA_still_fails_the_handshake", Files{CA: p.CAFile, Cert: stranger.Cert, Key: stranger.Key}, false, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.files.ServerName = pki.ServerName(pki.Frontend) // the server's certificate names only it
			ccfg, err := tc.files.Client("127.0.0.1:1")
			if err != nil {
				t.Fatal(err)
			}
			_, who, err := get(t, ccfg, url)
			if (err == nil) != tc.ok {
				t.Fatalf("err %v, want ok=%v", err, tc.ok)
			}
			if len(who) > 0 {
				who = who[:len(tc.who)]
			}
			if who != tc.who {
				t.Fatalf("server saw %q, want %q", who, tc.who)
			}
		})
	}
}

func TestMetricsPlaintextOnlyOnLoopback(t *testing.T) {
	p, err := pki.Create(t.TempDir(), pki.Options{})
	if err != nil {
		t.Fatal(err)
	}
	fe := p.MustFiles(pki.Frontend)
	withCert := Files{CA: p.ARMCAFile, Cert: fe.Cert, Key: fe.Key}
	if cfg, err := withCert.Metrics("127.0.0.1:9"); err != nil || cfg != nil {
		t.Fatalf("loopback metrics: %v %v; want plaintext", cfg, err)
	}
	cfg, err := withCert.Metrics("0.0.0.0:9")
	if err != nil || cfg == nil {
		t.Fatalf("non-loopback metrics with a certificate: %v %v; want TLS", cfg, err)
	}
	if cfg.ClientAuth != tls.NoClientCert {
		t.Fatalf("metrics ask scrapers for a client certificate (%v)", cfg.ClientAuth)
	}
	if _, err := (Files{}).Metrics("0.0.0.0:9"); err == nil {
		t.Fatal("non-loopback plaintext metrics accepted")
	}
}

// TestPeerWorkloadIsVerified: every server certificate of the region chains to the service CA
// and answers to the loopback names, so a client that must reach Cluster Service also checks
// the server's SPIFFE ID; the broker's, the Maestro server's or an ID-less certificate is refused.
func TestPeerWorkloadIsVerified(t *testing.T) {
	p, err := pki.Create(t.TempDir(), pki.Options{})
	if err != nil {
		t.Fatal(err)
	}
	me := p.MustFiles(pki.Frontend)
	if _, err := (Files{CA: p.CAFile, PeerWorkload: "cluster-service"}).Client("127.0.0.1:1"); err == nil {
		t.Fatal("a peer workload check without the client's own certificate was accepted")
	}
	for _, tc := range []struct {
		server string
		ok     bool
	}{
		{pki.ClusterService, true},
		{pki.Broker, false},
		{pki.MaestroServer, false},
		{pki.Postgres, false},
	} {
		t.Run(tc.server, func(t *testing.T) {
			f := p.MustFiles(tc.server)
			scfg, err := Files{Cert: f.Cert, Key: f.Key}.Server("127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			url := tlsServer(t, scfg)
			ccfg, err := Files{CA: p.CAFile, Cert: me.Cert, Key: me.Key, PeerWorkload: "cluster-service"}.Client(url[len("https://"):])
			if err != nil {
				t.Fatal(err)
			}
			if _, _, err := get(t, ccfg, url); (err == nil) != tc.ok {
				t.Fatalf("err %v, want ok=%v", err, tc.ok)
			}
		})
	}
}

// TestCARolloverWithoutABrokenConnection rolls the service CA under a running server and client
// that re-read their files: at every step of the rollover a new connection works, and at the
// end a certificate of the old CA no longer does.
func TestCARolloverWithoutABrokenConnection(t *testing.T) {
	p, err := pki.Create(t.TempDir(), pki.Options{})
	if err != nil {
		t.Fatal(err)
	}
	srv, cli := p.MustFiles(pki.ClusterService), p.MustFiles(pki.Frontend)
	scfg, err := Files{CA: p.CAFile, Cert: srv.Cert, Key: srv.Key}.Server("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	url := tlsServer(t, scfg)
	ccfg, err := Files{CA: p.CAFile, Cert: cli.Cert, Key: cli.Key, PeerWorkload: "cluster-service"}.Client(url[len("https://"):])
	if err != nil {
		t.Fatal(err)
	}
	// A copy of the frontend's certificate under the old CA, to show it is refused at the end.
	dir := t.TempDir()
	old := Files{CA: filepath.Join(dir, "ca.crt"), Cert: filepath.Join(dir, "c.crt"), Key: filepath.Join(dir, "c.key")}
	for from, to := range map[string]string{p.CAFile: old.CA, cli.Cert: old.Cert, cli.Key: old.Key} {
		b, err := os.ReadFile(from)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(to, b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	before := serial(t, srv.Cert)
	var steps []string
	err = p.RollCA(pki.ServiceCA, func(step string) error {
		steps = append(steps, step)
		if _, _, err := get(t, ccfg, url); err != nil {
			return fmt.Errorf("new connection during %q: %w", step, err)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(steps) != 3 {
		t.Fatalf("reload steps %v, want 3", steps)
	}
	if serial(t, srv.Cert).Cmp(before) == 0 {
		t.Fatal("the server's certificate was not renewed under the new CA")
	}
	oldCfg, err := Files{CA: p.CAFile, Cert: old.Cert, Key: old.Key, ServerName: pki.ServerName(pki.ClusterService)}.Client(url[len("https://"):])
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := get(t, oldCfg, url); err == nil {
		t.Fatal("a certificate of the dropped CA was still accepted")
	}
	// And a client that trusts only the old CA no longer verifies the renewed server (on a
	// server that asks for no client certificate, so only the client's check can fail).
	open, err := Files{Cert: srv.Cert, Key: srv.Key}.Server("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	openURL := tlsServer(t, open)
	for ca, want := range map[string]bool{old.CA: false, p.CAFile: true} {
		cfg, err := Files{CA: ca, ServerName: pki.ServerName(pki.ClusterService)}.Client(openURL[len("https://"):])
		if err != nil {
			t.Fatal(err)
		}
		if _, _, err := get(t, cfg, openURL); (err == nil) != want {
			t.Fatalf("client trusting %s: err %v, want ok=%v", ca, err, want)
		}
	}
}

// TestServerNameIsWhatTheClientAsksFor: a client dialing 127.0.0.1 that names the service it
// means (ServerName, or the PeerWorkload's name) accepts only that service's certificate,
// without a SPIFFE check; one that names nothing verifies the address, which Cluster Service's
// certificate no longer carries.
func TestServerNameIsWhatTheClientAsksFor(t *testing.T) {
	p, err := pki.Create(t.TempDir(), pki.Options{})
	if err != nil {
		t.Fatal(err)
	}
	me := p.MustFiles(pki.Frontend)
	for _, tc := range []struct {
		name   string
		server string
		client Files
		ok     bool
	}{
		{"server_name_admits_its_service", pki.ClusterService, Files{CA: p.CAFile, ServerName: pki.ServerName(pki.ClusterService)}, true},
		{"server_name_refuses_the_broker", pki.Broker, Files{CA: p.CAFile, ServerName: pki.ServerName(pki.ClusterService)}, false},
		{"server_name_refuses_the_maestro_server", pki.MaestroServer, Files{CA: p.CAFile, ServerName: pki.ServerName(pki.ClusterService)}, false},
		{"peer_workload_asks_for_its_name", pki.ClusterService, Files{CA: p.CAFile, Cert: me.Cert, Key: me.Key, PeerWorkload: "cluster-service"}, true},
		{"no_name_verifies_the_address_cluster_service_does_not_carry", pki.ClusterService, Files{CA: p.CAFile}, false},
		{"no_name_verifies_the_address_the_broker_still_carries", pki.Broker, Files{CA: p.CAFile}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := p.MustFiles(tc.server)
			scfg, err := Files{Cert: f.Cert, Key: f.Key}.Server("127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			url := tlsServer(t, scfg)
			ccfg, err := tc.client.Client(url[len("https://"):])
			if err != nil {
				t.Fatal(err)
			}
			if _, _, err := get(t, ccfg, url); (err == nil) != tc.ok {
				t.Fatalf("err %v, want ok=%v", err, tc.ok)
			}
		})
	}
}
