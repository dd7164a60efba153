package tlsconfig

import (
	"crypto/tls"
	"io"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/openhcp/openhcp/internal/pki"
)

// visit is one request on a new connection: the server's certificate serial, what the server
// saw of the client ("<CN> <serial>", or the handler's refusal), the status, and whether the
// handshake resumed a session.
type visit struct {
	serverSerial *big.Int
	who          string
	status       int
	resumed      bool
}

func visitOnce(t *testing.T, cfg *tls.Config, url string) (visit, error) {
	t.Helper()
	tr := &http.Transport{TLSClientConfig: cfg, DisableKeepAlives: true}
	defer tr.CloseIdleConnections()
	resp, err := (&http.Client{Transport: tr, Timeout: 30 * time.Second}).Get(url)
	if err != nil {
		return visit{}, err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return visit{resp.TLS.PeerCertificates[0].SerialNumber, string(b), resp.StatusCode, resp.TLS.DidResume}, nil
}

// allowListServer serves like tlsServer, but answers 403 to a verified client whose common name
// is not allowed, as the frontend's ARM subject check and Cluster Service's per-method table do:
// per request, from the connection's verified chains.
func allowListServer(t *testing.T, cfg *tls.Config, allowed string) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	hs := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.TLS == nil || len(r.TLS.VerifiedChains) == 0 {
			http.Error(w, "no verified certificate", http.StatusUnauthorized)
			return
		}
		c := r.TLS.VerifiedChains[0][0]
		if c.Subject.CommonName != allowed {
			http.Error(w, "not allowed: "+c.Subject.CommonName, http.StatusForbidden)
			return
		}
		io.WriteString(w, c.Subject.CommonName+" "+c.SerialNumber.String())
	})}
	go hs.Serve(tls.NewListener(l, cfg))
	t.Cleanup(func() { hs.Close() })
	return "https://" + l.Addr().String()
}

// copyFiles copies an identity's files (and a CA file) to paths the test may overwrite.
func copyFiles(t *testing.T, ca string, f pki.Files) Files {
	t.Helper()
	dir := t.TempDir()
	out := Files{CA: filepath.Join(dir, "ca.crt"), Cert: filepath.Join(dir, "c.crt"), Key: filepath.Join(dir, "c.key")}
	for from, to := range map[string]string{ca: out.CA, f.Cert: out.Cert, f.Key: out.Key} {
		copyFile(t, from, to)
	}
	return out
}

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	b, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(to, b, 0o600); err != nil {
		t.Fatal(err)
	}
}

// TestSessionsResume: a client that reconnects to a server of this package resumes its session
// (no certificate chain is sent or verified again), and the server still sees the verified
// client of the first handshake, so per-request identity checks hold.
func TestSessionsResume(t *testing.T) {
	p, err := pki.Create(t.TempDir(), pki.Options{})
	if err != nil {
		t.Fatal(err)
	}
	srv, be := p.MustFiles(pki.ClusterService), p.MustFiles(pki.Backend)
	scfg, err := Files{CA: p.CAFile, Cert: srv.Cert, Key: srv.Key}.Server("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	url := tlsServer(t, scfg)
	ccfg, err := Files{CA: p.CAFile, Cert: be.Cert, Key: be.Key, PeerWorkload: "cluster-service"}.Client(url[len("https://"):])
	if err != nil {
		t.Fatal(err)
	}
	want := "backend " + serial(t, be.Cert).String()
	first, err := visitOnce(t, ccfg, url)
	if err != nil {
		t.Fatal(err)
	}
	if first.resumed || first.who != want {
		t.Fatalf("first connection: resumed=%v, server saw %q; want a full handshake seeing %q", first.resumed, first.who, want)
	}
	for i := range 3 {
		again, err := visitOnce(t, ccfg, url)
		if err != nil {
			t.Fatal(err)
		}
		if !again.resumed {
			t.Fatalf("reconnection %d did not resume the session", i+1)
		}
		if again.who != want {
			t.Fatalf("reconnection %d: server saw %q, want %q", i+1, again.who, want)
		}
	}
}

// TestResumedSessionKeepsEveryIdentityRule: resumption changes no answer. A refused subject is
// refused on a resumed connection too; a session never resumes under another certificate or CA
// bundle than it was made with, on either side; and tickets do not cross listeners.
func TestResumedSessionKeepsEveryIdentityRule(t *testing.T) {
	p, err := pki.Create(t.TempDir(), pki.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Add("not-arm", pki.Spec{CommonName: "not-arm", Usage: pki.Client}, pki.ARMCA); err != nil {
		t.Fatal(err)
	}
	if err := p.AddPerson("alice", "alice", "sre-admin"); err != nil {
		t.Fatal(err)
	}
	fe := p.MustFiles(pki.Frontend)
	frontendName := pki.ServerName(pki.Frontend)
	client := func(t *testing.T, f Files) *tls.Config {
		t.Helper()
		f.ServerName = frontendName
		c, err := f.Client("127.0.0.1:1")
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	as := func(identity string) Files {
		f := p.MustFiles(identity)
		return Files{CA: p.CAFile, Cert: f.Cert, Key: f.Key}
	}

	t.Run("a_refused_subject_is_refused_on_a_resumed_connection_too", func(t *testing.T) {
		scfg, err := Files{CA: p.ARMCAFile, Cert: fe.Cert, Key: fe.Key}.ServerClientAuth("127.0.0.1:0", tls.VerifyClientCertIfGiven)
		if err != nil {
			t.Fatal(err)
		}
		url := allowListServer(t, scfg, pki.ARM)
		for _, tc := range []struct {
			identity string
			status   int
		}{
			{"not-arm", http.StatusForbidden},
			{pki.ARM, http.StatusOK},
		} {
			cfg := client(t, as(tc.identity))
			for i, wantResumed := range []bool{false, true, true} {
				v, err := visitOnce(t, cfg, url)
				if err != nil {
					t.Fatal(err)
				}
				if v.resumed != wantResumed || v.status != tc.status {
					t.Fatalf("%s, connection %d: resumed=%v status %d (%s); want resumed=%v status %d", tc.identity, i, v.resumed, v.status, v.who, wantResumed, tc.status)
				}
			}
		}
	})

	t.Run("a_person_certificate_still_fails_a_service_listener", func(t *testing.T) {
		scfg, err := Files{CA: p.CAFile, Cert: fe.Cert, Key: fe.Key}.Server("127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		url := tlsServer(t, scfg)
		cfg := client(t, as("alice"))
		for i := range 2 {
			if v, err := visitOnce(t, cfg, url); err == nil {
				t.Fatalf("connection %d of a person certificate was served (%q)", i, v.who)
			}
		}
	})

	t.Run("a_renewed_client_certificate_is_presented_in_full", func(t *testing.T) {
		scfg, err := Files{CA: p.CAFile, Cert: fe.Cert, Key: fe.Key}.Server("127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		url := tlsServer(t, scfg)
		cfg := client(t, as(pki.Backend))
		if _, err := visitOnce(t, cfg, url); err != nil {
			t.Fatal(err)
		}
		if v, err := visitOnce(t, cfg, url); err != nil || !v.resumed {
			t.Fatalf("no resumption before the renewal: %+v %v", v, err)
		}
		if _, err := p.Renew(pki.Backend); err != nil {
			t.Fatal(err)
		}
		v, err := visitOnce(t, cfg, url)
		if err != nil {
			t.Fatal(err)
		}
		if want := "backend " + serial(t, p.MustFiles(pki.Backend).Cert).String(); v.resumed || v.who != want {
			t.Fatalf("after the client's renewal: resumed=%v, server saw %q; want a full handshake seeing %q", v.resumed, v.who, want)
		}
	})

	t.Run("a_session_of_one_identity_never_resumes_as_another", func(t *testing.T) {
		scfg, err := Files{CA: p.CAFile, Cert: fe.Cert, Key: fe.Key}.Server("127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		url := allowListServer(t, scfg, pki.Backend)
		// One client whose files are replaced by another workload's: the backend's session must
		// not carry the SRE workload's connections.
		files := copyFiles(t, p.CAFile, p.MustFiles(pki.Backend))
		cfg := client(t, files)
		for range 2 {
			if v, err := visitOnce(t, cfg, url); err != nil || v.status != http.StatusOK {
				t.Fatalf("backend: %+v %v", v, err)
			}
		}
		sre := p.MustFiles(pki.SRE)
		copyFile(t, sre.Cert, files.Cert)
		copyFile(t, sre.Key, files.Key)
		v, err := visitOnce(t, cfg, url)
		if err != nil {
			t.Fatal(err)
		}
		if v.resumed || v.status != http.StatusForbidden {
			t.Fatalf("after the files became sre's: resumed=%v status %d (%s); want a full handshake and 403", v.resumed, v.status, v.who)
		}
	})

	t.Run("a_renewed_server_certificate_is_presented_in_full", func(t *testing.T) {
		files := copyFiles(t, p.CAFile, p.MustFiles(pki.Frontend))
		scfg, err := files.Server("127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		url := tlsServer(t, scfg)
		// A client with a plain session cache, so only the server's binding can refuse.
		cfg := client(t, as(pki.Backend))
		cfg.ClientSessionCache = tls.NewLRUClientSessionCache(4)
		for range 2 {
			if _, err := visitOnce(t, cfg, url); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := p.Renew(pki.Frontend); err != nil {
			t.Fatal(err)
		}
		copyFile(t, p.MustFiles(pki.Frontend).Cert, files.Cert)
		copyFile(t, p.MustFiles(pki.Frontend).Key, files.Key)
		v, err := visitOnce(t, cfg, url)
		if err != nil {
			t.Fatal(err)
		}
		if want := serial(t, files.Cert); v.resumed || v.serverSerial.Cmp(want) != 0 {
			t.Fatalf("after the server's renewal: resumed=%v, serial %s; want a full handshake with %s", v.resumed, v.serverSerial, want)
		}
	})

	t.Run("tickets_do_not_cross_listeners", func(t *testing.T) {
		// Two listeners with the same files and name: a ticket of one is no ticket of the other.
		var urls []string
		for range 2 {
			scfg, err := Files{CA: p.CAFile, Cert: fe.Cert, Key: fe.Key}.Server("127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			urls = append(urls, tlsServer(t, scfg))
		}
		cfg := client(t, as(pki.Backend))
		for i, tc := range []struct {
			url     string
			resumed bool
		}{{urls[0], false}, {urls[0], true}, {urls[1], false}} {
			v, err := visitOnce(t, cfg, tc.url)
			if err != nil {
				t.Fatal(err)
			}
			if v.resumed != tc.resumed {
				t.Fatalf("connection %d: resumed=%v, want %v", i, v.resumed, tc.resumed)
			}
		}
	})
}

// TestCARolloverEndsResumption: a client of the old CA whose session was made while the server
// trusted both CAs neither resumes nor completes a handshake once the old CA is dropped, even
// though its session cache still holds that session and the server's certificate is unchanged.
func TestCARolloverEndsResumption(t *testing.T) {
	p, err := pki.Create(t.TempDir(), pki.Options{})
	if err != nil {
		t.Fatal(err)
	}
	oldCA, err := pki.Create(t.TempDir(), pki.Options{})
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	serverTrusts := filepath.Join(dir, "client-ca.crt")
	both := append(mustRead(t, oldCA.CAFile), mustRead(t, p.CAFile)...)
	if err := os.WriteFile(serverTrusts, both, 0o644); err != nil {
		t.Fatal(err)
	}
	fe := p.MustFiles(pki.Frontend)
	scfg, err := Files{CA: serverTrusts, Cert: fe.Cert, Key: fe.Key}.Server("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var handshakes, resumed atomic.Int64
	CountHandshakes(scfg, func(r bool) {
		handshakes.Add(1)
		if r {
			resumed.Add(1)
		}
	})
	url := tlsServer(t, scfg)
	old := oldCA.MustFiles(pki.Backend)
	cfg, err := Files{CA: p.CAFile, Cert: old.Cert, Key: old.Key, ServerName: pki.ServerName(pki.Frontend)}.Client("127.0.0.1:1")
	if err != nil {
		t.Fatal(err)
	}
	for i, want := range []bool{false, true} {
		v, err := visitOnce(t, cfg, url)
		if err != nil || v.resumed != want {
			t.Fatalf("connection %d while both CAs are trusted: %+v %v; want resumed=%v", i, v, err, want)
		}
	}
	if h, r := handshakes.Load(), resumed.Load(); h != 2 || r != 1 {
		t.Fatalf("counted %d handshakes, %d resumed; want 2 and 1", h, r)
	}
	if err := os.WriteFile(serverTrusts, mustRead(t, p.CAFile), 0o644); err != nil {
		t.Fatal(err)
	}
	if v, err := visitOnce(t, cfg, url); err == nil {
		t.Fatalf("a client of the dropped CA was served after the rollover (resumed=%v, %q)", v.resumed, v.who)
	}
	if r := resumed.Load(); r != 1 {
		t.Fatalf("%d resumed handshakes after the rollover, want still 1", r)
	}
	// The region's own clients go on: a client of the new CA makes a full handshake, then resumes.
	be := p.MustFiles(pki.Backend)
	cur, err := Files{CA: p.CAFile, Cert: be.Cert, Key: be.Key, ServerName: pki.ServerName(pki.Frontend)}.Client("127.0.0.1:1")
	if err != nil {
		t.Fatal(err)
	}
	for i, want := range []bool{false, true} {
		if v, err := visitOnce(t, cur, url); err != nil || v.resumed != want {
			t.Fatalf("new-CA client, connection %d: %+v %v; want resumed=%v", i, v, err, want)
		}
	}
}

func mustRead(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// fakeClock is a clock a test moves.
type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) add(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

// TestTicketKeysExpire: a session resumes after one key rotation, and not once its key is
// TicketKeyLifetime old.
func TestTicketKeysExpire(t *testing.T) {
	p, err := pki.Create(t.TempDir(), pki.Options{})
	if err != nil {
		t.Fatal(err)
	}
	fe, be := p.MustFiles(pki.Frontend), p.MustFiles(pki.Backend)
	pair, err := tls.LoadX509KeyPair(fe.Cert, fe.Key)
	if err != nil {
		t.Fatal(err)
	}
	clock := &fakeClock{now: time.Now()}
	keys := newTicketKeys(clock.Now)
	scfg := &tls.Config{Certificates: []tls.Certificate{pair}, MinVersion: tls.VersionTLS12}
	keys.resumeWith(scfg, [32]byte{1})
	url := tlsServer(t, scfg)
	cfg, err := Files{CA: p.CAFile, Cert: be.Cert, Key: be.Key, ServerName: pki.ServerName(pki.Frontend)}.Client("127.0.0.1:1")
	if err != nil {
		t.Fatal(err)
	}
	for i, step := range []struct {
		advance time.Duration
		resumed bool
	}{
		{0, false},
		{0, true},
		{TicketKeyRotation + time.Minute, true},  // the key that sealed the last ticket is the previous one now
		{TicketKeyLifetime + time.Minute, false}, // every key that sealed a ticket is gone
		{0, true},
	} {
		clock.add(step.advance)
		v, err := visitOnce(t, cfg, url)
		if err != nil {
			t.Fatal(err)
		}
		if v.resumed != step.resumed {
			t.Fatalf("step %d (+%s): resumed=%v, want %v", i, step.advance, v.resumed, step.resumed)
		}
	}
}
