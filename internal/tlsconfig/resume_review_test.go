package tlsconfig

import (
	"bufio"
	"crypto/tls"
	"fmt"
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/openhcp/openhcp/internal/pki"
)

// ticketServer serves from a config whose tickets are sealed under keys on clock, and returns
// its URL and a maker of client configs (backend's files) for it.
func ticketServer(t *testing.T) (*fakeClock, string, func() *tls.Config) {
	t.Helper()
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
	return clock, url, func() *tls.Config {
		cfg, err := Files{CA: p.CAFile, Cert: be.Cert, Key: be.Key, ServerName: pki.ServerName(pki.Frontend)}.Client("127.0.0.1:1")
		if err != nil {
			t.Fatal(err)
		}
		return cfg
	}
}

// TestResumedTicketsKeepTheFullHandshakeTime: a resumed handshake is issued a new ticket, and
// that ticket still counts from the full handshake, so a client reconnecting every 50 minutes
// makes a full handshake again once TicketKeyLifetime has passed since the last full one.
func TestResumedTicketsKeepTheFullHandshakeTime(t *testing.T) {
	clock, url, client := ticketServer(t)
	cfg := client()
	for i, step := range []struct {
		advance time.Duration
		resumed bool
	}{
		{0, false},                // full handshake at 0
		{50 * time.Minute, true},  // 50m
		{50 * time.Minute, true},  // 1h40m
		{50 * time.Minute, false}, // 2h30m: past the lifetime of the full handshake at 0
		{50 * time.Minute, true},  // 50m after the new full handshake
		{50 * time.Minute, true},  // 1h40m
		{50 * time.Minute, false}, // 2h30m again
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

// TestTicketKeysExpireWithoutARotation: a key is dropped once TicketKeyLifetime old even when no
// new key is due, so a ticket sealed at 0 does not open at 2h58m after a rotation at 1h59m.
func TestTicketKeysExpireWithoutARotation(t *testing.T) {
	clock := &fakeClock{now: time.Now()}
	keys := newTicketKeys(clock.Now)
	start := clock.Now()
	for _, advance := range []time.Duration{0, 119 * time.Minute, 59 * time.Minute} {
		clock.add(advance)
		if _, err := keys.current(); err != nil {
			t.Fatal(err)
		}
	}
	now := clock.Now()
	for _, k := range keys.keys {
		if age := now.Sub(k.made); age >= TicketKeyLifetime {
			t.Fatalf("at +%s a key made at +%s (%s old) still opens tickets", now.Sub(start), k.made.Sub(start), age)
		}
	}
}

// TestSessionIsCachedUnderTheFilesOfItsHandshake: the client's files become another identity's
// between its handshake and the server's ticket; that session must not be offered under the new
// files, so the next connections present the new identity (and are refused by the allow-list).
func TestSessionIsCachedUnderTheFilesOfItsHandshake(t *testing.T) {
	p, err := pki.Create(t.TempDir(), pki.Options{})
	if err != nil {
		t.Fatal(err)
	}
	srv := p.MustFiles(pki.ClusterService)
	scfg, err := Files{CA: p.CAFile, Cert: srv.Cert, Key: srv.Key}.Server("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	url := allowListServer(t, scfg, pki.Backend)
	be, fe := p.MustFiles(pki.Backend), p.MustFiles(pki.Frontend)
	files := copyFiles(t, p.CAFile, be) // the client starts as backend
	cfg, err := Files{CA: files.CA, Cert: files.Cert, Key: files.Key, ServerName: pki.ServerName(pki.ClusterService)}.Client("127.0.0.1:1")
	if err != nil {
		t.Fatal(err)
	}
	conn, err := tls.Dial("tcp", url[len("https://"):], cfg)
	if err != nil {
		t.Fatal(err)
	}
	// The handshake was made as backend; now the files become the frontend's, before the
	// client reads the server's ticket.
	copyFile(t, fe.Cert, files.Cert)
	copyFile(t, fe.Key, files.Key)
	fmt.Fprintf(conn, "GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	conn.Close()
	for i := 0; i < 2; i++ {
		v, err := visitOnce(t, cfg, url)
		if err != nil {
			t.Fatal(err)
		}
		if v.status != http.StatusForbidden {
			t.Fatalf("connection %d after the files became the frontend's: status %d, server saw %q (resumed=%v); want the frontend refused", i, v.status, v.who, v.resumed)
		}
	}
}

// TestSessionsAreCachedAgainAfterAFilesChange: after the client's files change, sessions to a
// server it talked to before are not cached for sessionPutWindow, and are again after it.
func TestSessionsAreCachedAgainAfterAFilesChange(t *testing.T) {
	p, err := pki.Create(t.TempDir(), pki.Options{})
	if err != nil {
		t.Fatal(err)
	}
	srv := p.MustFiles(pki.ClusterService)
	scfg, err := Files{CA: p.CAFile, Cert: srv.Cert, Key: srv.Key}.Server("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	url := allowListServer(t, scfg, pki.Backend)
	be, fe := p.MustFiles(pki.Backend), p.MustFiles(pki.Frontend)
	files := copyFiles(t, p.CAFile, be)
	files.ServerName = pki.ServerName(pki.ClusterService)
	cfg, err := files.Client("127.0.0.1:1")
	if err != nil {
		t.Fatal(err)
	}
	src, err := newSource(files)
	if err != nil {
		t.Fatal(err)
	}
	clock := &fakeClock{now: time.Now()}
	cfg.ClientSessionCache = newFilesSessionCache(src, clock.Now)
	for i, step := range []struct {
		advance   time.Duration
		becomeFE  bool
		resumed   bool
		wantState int
	}{
		{0, false, false, http.StatusOK},
		{0, false, true, http.StatusOK},
		{time.Minute, true, false, http.StatusForbidden},       // the files are the frontend's now
		{time.Minute, false, false, http.StatusForbidden},      // its session was not cached
		{sessionPutWindow, false, false, http.StatusForbidden}, // past the window: cached again
		{time.Minute, false, true, http.StatusForbidden},       // and resumed, as the frontend
	} {
		clock.add(step.advance)
		if step.becomeFE {
			copyFile(t, fe.Cert, files.Cert)
			copyFile(t, fe.Key, files.Key)
		}
		v, err := visitOnce(t, cfg, url)
		if err != nil {
			t.Fatal(err)
		}
		if v.resumed != step.resumed || v.status != step.wantState {
			t.Fatalf("step %d: resumed=%v status=%d (%q), want resumed=%v status=%d", i, v.resumed, v.status, v.who, step.resumed, step.wantState)
		}
	}
}
