package pkirotation

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/openhcp/openhcp/internal/identity"
	"github.com/openhcp/openhcp/internal/pki"
	"github.com/openhcp/openhcp/internal/serverlimits"
	"github.com/openhcp/openhcp/internal/tlsconfig"
)

// holder is a rotation API served over real mutual TLS from a real region PKI, as the launcher
// serves it; its rotations renew every certificate of that PKI (pki.Region.RenewAll) and wait
// until release is closed when hold is set.
type holder struct {
	pki     *pki.Region
	addr    string
	rotated atomic.Int32
	hold    chan struct{}
	srv     *Server
}

func startHolder(t *testing.T, hold bool) *holder {
	t.Helper()
	return startHolderWith(t, hold, func(*ServerConfig) {})
}

// startHolderWith is startHolder with its server's configuration changed by set.
func startHolderWith(t *testing.T, hold bool, set func(*ServerConfig)) *holder {
	t.Helper()
	p, err := pki.Create(t.TempDir(), pki.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Add(ServerIdentity, pki.Spec{CommonName: ServerIdentity, Usage: pki.Server}, pki.ServiceCA); err != nil {
		t.Fatal(err)
	}
	h := &holder{pki: p}
	if hold {
		h.hold = make(chan struct{})
	}
	cfg := ServerConfig{TrustDomain: p.TrustDomain,
		Rotate: func(ctx context.Context, scope Scope) error {
			if h.hold != nil {
				select {
				case <-h.hold:
				case <-ctx.Done():
					return ctx.Err()
				}
			}
			h.rotated.Add(1)
			return p.RenewAll()
		},
		Region: func() Region {
			return Region{Name: "westus3", Listeners: []Listener{{Name: ServerIdentity, Address: h.addr, ServerName: identity.ServerName(ServerIdentity), Protocol: ProtocolTLS}}}
		},
	}
	set(&cfg)
	h.srv, err = NewServer(cfg)
	if err != nil {
		t.Fatal(err)
	}
	f := p.MustFiles(ServerIdentity)
	tlsCfg, err := tlsconfig.Files{CA: p.CAFile, Cert: f.Cert, Key: f.Key}.Server("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	hs := serverlimits.API().Server("127.0.0.1:0", h.srv.Handler(), tlsCfg)
	ln, err := serverlimits.API().Listen(hs)
	if err != nil {
		t.Fatal(err)
	}
	h.addr = ln.Addr().String()
	go func() { _ = hs.Serve(ln) }()
	t.Cleanup(func() {
		if h.hold != nil {
			select {
			case <-h.hold:
			default:
				close(h.hold)
			}
		}
		_ = hs.Close()
		h.srv.Close()
	})
	return h
}

// clientAs is a client presenting the certificate iss (written to files), verifying the
// holder with the service CA.
func (h *holder) clientAs(t *testing.T, certPEM, keyPEM []byte) *Client {
	t.Helper()
	dir := t.TempDir()
	cert, key := filepath.Join(dir, "c.crt"), filepath.Join(dir, "c.key")
	if err := os.WriteFile(cert, certPEM, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(key, keyPEM, 0o600); err != nil {
		t.Fatal(err)
	}
	c, err := NewClient(h.addr, tlsconfig.Files{CA: h.pki.CAFile, Cert: cert, Key: key})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func (h *holder) clientOf(t *testing.T, name string) *Client {
	t.Helper()
	f := h.pki.MustFiles(name)
	c, err := NewClient(h.addr, tlsconfig.Files{CA: h.pki.CAFile, Cert: f.Cert, Key: f.Key})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// TestRotationAPIAdmitsOnlyTheMaintenanceService: the API rotates the region's certificates, so
// it answers the maintenance workload alone; every other caller is refused before anything is
// rotated, at the handshake or with 403.
func TestRotationAPIAdmitsOnlyTheMaintenanceService(t *testing.T) {
	h := startHolder(t, false)
	ctx := context.Background()
	if err := h.pki.AddPerson("alice", "alice", "sre-admin"); err != nil {
		t.Fatal(err)
	}
	maintenanceID, _ := identity.Of(identity.Maintenance, h.pki.TrustDomain)
	foreignID := maintenanceID
	foreignID.TrustDomain = "other.example"
	unchecked := func(by pki.Issuer, s pki.Spec) func(t *testing.T) *Client {
		return func(t *testing.T) *Client {
			iss, err := h.pki.IssueUnchecked(by, s)
			if err != nil {
				t.Fatal(err)
			}
			return h.clientAs(t, iss.CertPEM, iss.KeyPEM)
		}
	}
	for _, tc := range []struct {
		name   string
		client func(t *testing.T) *Client
		// wantForbidden: refused with 403; otherwise the handshake fails.
		wantForbidden bool
	}{
		{name: "no_client_certificate_fails_the_handshake", client: func(t *testing.T) *Client {
			cfg, err := tlsconfig.Files{CA: h.pki.CAFile, ServerName: identity.ServerName(ServerIdentity)}.Client(h.addr)
			if err != nil {
				t.Fatal(err)
			}
			return &Client{base: "https://" + h.addr, hc: &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: cfg}}}
		}},
		{name: "another_workload_is_forbidden", client: func(t *testing.T) *Client { return h.clientOf(t, pki.Backend) }, wantForbidden: true},
		{name: "the_admin_apis_sre_identity_is_forbidden", client: func(t *testing.T) *Client { return h.clientOf(t, pki.SRE) }, wantForbidden: true},
		{name: "a_person_certificate_fails_the_handshake", client: func(t *testing.T) *Client { return h.clientOf(t, "alice") }},
		{name: "a_person_certificate_named_maintenance_fails_the_handshake",
			client: unchecked(pki.PersonCA, pki.Spec{CommonName: pki.Maintenance, Usage: pki.Client, URIs: []*url.URL{maintenanceID.URL()}})},
		{name: "a_service_certificate_named_maintenance_without_its_id_is_forbidden",
			client: unchecked(pki.ServiceCA, pki.Spec{CommonName: pki.Maintenance, Usage: pki.Client}), wantForbidden: true},
		{name: "the_maintenance_id_of_another_trust_domain_is_forbidden",
			client: unchecked(pki.ServiceCA, pki.Spec{CommonName: pki.Maintenance, Usage: pki.Client, URIs: []*url.URL{foreignID.URL()}}), wantForbidden: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := tc.client(t)
			for _, call := range []func() error{
				func() error {
					_, err := c.Request(ctx, "task-"+strings.ReplaceAll(tc.name, "_", "-"), ScopeCertificates)
					return err
				},
				func() error { _, err := c.Get(ctx, "any"); return err },
				func() error { _, err := c.Region(ctx); return err },
			} {
				err := call()
				switch {
				case err == nil:
					t.Fatal("answered; want refused")
				case tc.wantForbidden && !errors.Is(err, ErrForbidden):
					t.Fatalf("%v; want 403", err)
				case !tc.wantForbidden && errors.Is(err, ErrForbidden):
					t.Fatalf("%v; want the handshake to fail", err)
				}
			}
			if n := h.rotated.Load(); n != 0 {
				t.Fatalf("%d rotations after a refused caller", n)
			}
		})
	}
	t.Run("the_maintenance_service_is_admitted", func(t *testing.T) {
		c := h.clientOf(t, pki.Maintenance)
		reg, err := c.Region(ctx)
		if err != nil || reg.Name != "westus3" || len(reg.Listeners) != 1 {
			t.Fatalf("region %+v, %v", reg, err)
		}
		if _, err := c.Request(ctx, "task-1", ScopeCertificates); err != nil {
			t.Fatal(err)
		}
		waitRotation(t, c, "task-1", StateDone)
	})
	// The maintenance service keeps its connection alive; the handshake verified its
	// certificate once, and a request after the certificate's NotAfter is refused (a new
	// connection would fail the handshake instead, so a 403 is the kept connection's answer).
	t.Run("the_maintenance_service_is_refused_once_its_certificate_expires", func(t *testing.T) {
		iss, err := h.pki.IssueUnchecked(pki.ServiceCA, pki.Spec{CommonName: pki.Maintenance, Usage: pki.Client,
			URIs: []*url.URL{maintenanceID.URL()}, Lifetime: 2 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		c := h.clientAs(t, iss.CertPEM, iss.KeyPEM)
		if _, err := c.Region(ctx); err != nil {
			t.Fatalf("before expiry: %v", err)
		}
		// The condition is the clock passing NotAfter, not a tuned pause.
		for !time.Now().After(iss.Cert.NotAfter) {
			time.Sleep(time.Until(iss.Cert.NotAfter) + 10*time.Millisecond)
		}
		if _, err := c.Region(ctx); !errors.Is(err, ErrForbidden) {
			t.Fatalf("after expiry: %v; want 403 on the kept connection", err)
		}
	})
}

func waitRotation(t *testing.T, c *Client, key string, want State) *Rotation {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		r, err := c.Get(context.Background(), key)
		if err == nil && r.State == want {
			return r
		}
		if time.Now().After(deadline) {
			t.Fatalf("rotation %s: %+v, %v; want %s", key, r, err, want)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestRotationRequestsAreIdempotent: a key names one rotation however often it is asked for (a
// maintenance task asks again after a crash), a second key waits while one runs, and a key is
// not reused for another scope.
func TestRotationRequestsAreIdempotent(t *testing.T) {
	h := startHolder(t, true)
	ctx := context.Background()
	c := h.clientOf(t, pki.Maintenance)
	before, err := pki.ReadCertificate(h.pki.MustFiles(pki.Frontend).Cert)
	if err != nil {
		t.Fatal(err)
	}
	first, err := c.Request(ctx, "task-a", ScopeCertificates)
	if err != nil || first.State != StateRunning {
		t.Fatalf("first request: %+v, %v", first, err)
	}
	// Asked again many times at once while it runs: the same rotation.
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			again, err := c.Request(ctx, "task-a", ScopeCertificates)
			if err != nil || again.Key != "task-a" || !again.Requested.Equal(first.Requested) {
				t.Errorf("asked again: %+v, %v", again, err)
			}
		})
	}
	wg.Wait()
	if _, err := c.Request(ctx, "task-b", ScopeCertificates); !errors.Is(err, ErrBusy) {
		t.Fatalf("another key while task-a runs: %v; want busy", err)
	}
	if _, err := c.Request(ctx, "task-a", Scope("ca:service")); !errors.Is(err, ErrKeyReused) {
		t.Fatalf("task-a for another scope: %v; want the key refused", err)
	}
	close(h.hold)
	done := waitRotation(t, c, "task-a", StateDone)
	if again, err := c.Request(ctx, "task-a", ScopeCertificates); err != nil || again.State != StateDone || !again.Finished.Equal(done.Finished) {
		t.Fatalf("asked again after it ended: %+v, %v; want the same, Done", again, err)
	}
	if n := h.rotated.Load(); n != 1 {
		t.Fatalf("%d rotations; want 1", n)
	}
	after, err := pki.ReadCertificate(h.pki.MustFiles(pki.Frontend).Cert)
	if err != nil || after.SerialNumber.Cmp(before.SerialNumber) == 0 {
		t.Fatalf("the frontend's certificate was not renewed: %v", err)
	}
	if _, err := c.Get(ctx, "never-asked"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("unknown key: %v; want not found", err)
	}
	for _, bad := range []string{"UPPER", "ca:nope", "ca:", "certificate"} {
		if _, err := c.Request(ctx, "task-c", Scope(bad)); err == nil || !strings.Contains(err.Error(), "must be certificates or ca:") {
			t.Errorf("scope %q: %v; want it refused naming the scopes", bad, err)
		}
	}
	if n := h.rotated.Load(); n != 1 {
		t.Fatalf("%d rotations after refused scopes; want 1", n)
	}
}

// fakeClock is a clock a test moves by hand.
type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// TestRolloversOfOneCAAreSpacedApart: a second rollover of the same CA within the minimum
// spacing is refused with the time to retry, so the previous CA stays in the trust bundle
// while certificates chain to it; another CA, a renewal of certificates, and the same CA once
// the spacing has passed are carried out.
func TestRolloversOfOneCAAreSpacedApart(t *testing.T) {
	clock := &fakeClock{now: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)}
	h := startHolderWith(t, false, func(c *ServerConfig) { c.Now, c.MinSpacing = clock.Now, time.Hour })
	ctx := context.Background()
	c := h.clientOf(t, pki.Maintenance)
	request := func(key string, scope Scope) error {
		t.Helper()
		if _, err := c.Request(ctx, key, scope); err != nil {
			return err
		}
		waitRotation(t, c, key, StateDone)
		return nil
	}
	if err := request("roll-person-1", "ca:person"); err != nil {
		t.Fatal(err)
	}
	clock.Advance(59 * time.Minute)
	err := request("roll-person-2", "ca:person")
	if !errors.Is(err, ErrTooSoon) || !strings.Contains(err.Error(), "retry at or after 2026-01-02T04:04:05Z") {
		t.Fatalf("a second person CA rollover 59 minutes later: %v; want it refused until 04:04:05", err)
	}
	if _, err := c.Get(ctx, "roll-person-2"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("the refused rollover is remembered: %v", err)
	}
	for _, ok := range []struct {
		key   string
		scope Scope
	}{{"roll-arm", "ca:arm"}, {"renew-1", ScopeCertificates}, {"renew-2", ScopeCertificates}} {
		if err := request(ok.key, ok.scope); err != nil {
			t.Fatalf("%s within the person CA's spacing: %v", ok.scope, err)
		}
	}
	if n := h.rotated.Load(); n != 4 {
		t.Fatalf("%d rotations; want 4", n)
	}
	clock.Advance(time.Minute)
	if err := request("roll-person-2", "ca:person"); err != nil {
		t.Fatalf("the person CA rollover once the spacing has passed: %v", err)
	}
}

// TestFinishedRotationsAreForgottenByAgeAndCount: the holder remembers finished rotations for
// Keep and at most MaxRemembered of them, the newest; within that bound a key stays
// idempotent.
func TestFinishedRotationsAreForgottenByAgeAndCount(t *testing.T) {
	clock := &fakeClock{now: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)}
	h := startHolderWith(t, false, func(c *ServerConfig) { c.Now, c.Keep, c.MaxRemembered = clock.Now, 24*time.Hour, 3 })
	ctx := context.Background()
	c := h.clientOf(t, pki.Maintenance)
	for _, key := range []string{"renew-1", "renew-2", "renew-3", "renew-4"} {
		if _, err := c.Request(ctx, key, ScopeCertificates); err != nil {
			t.Fatal(err)
		}
		waitRotation(t, c, key, StateDone)
		clock.Advance(time.Minute)
	}
	if _, err := c.Get(ctx, "renew-1"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("the oldest of 4 rotations with room for 3: %v; want it forgotten", err)
	}
	for _, key := range []string{"renew-2", "renew-3", "renew-4"} {
		if again, err := c.Request(ctx, key, ScopeCertificates); err != nil || again.State != StateDone {
			t.Fatalf("%s asked again within the bound: %+v, %v; want it, Done", key, again, err)
		}
	}
	if n := h.rotated.Load(); n != 4 {
		t.Fatalf("%d rotations; want 4 (asking again started one)", n)
	}
	clock.Advance(25 * time.Hour)
	if _, err := c.Request(ctx, "renew-5", ScopeCertificates); err != nil {
		t.Fatal(err)
	}
	waitRotation(t, c, "renew-5", StateDone)
	for _, key := range []string{"renew-2", "renew-3", "renew-4"} {
		if _, err := c.Get(ctx, key); !errors.Is(err, ErrNotFound) {
			t.Fatalf("%s finished more than a day ago: %v; want it forgotten", key, err)
		}
	}
}

// TestProbeReadsWhatAListenerServes: the probe reads a listener's certificate without an
// identity of its own, even from a server that requires one, and tells a certificate that does
// not chain to the CA file of the moment.
func TestProbeReadsWhatAListenerServes(t *testing.T) {
	h := startHolder(t, false)
	ctx := context.Background()
	l := Listener{Name: ServerIdentity, Address: h.addr, ServerName: identity.ServerName(ServerIdentity), Protocol: ProtocolTLS}
	roots, err := ReadCAFile(h.pki.CAFile)
	if err != nil {
		t.Fatal(err)
	}
	got := Probe(ctx, []Listener{l}, roots)
	want, err := pki.ReadCertificate(h.pki.MustFiles(ServerIdentity).Cert)
	if err != nil {
		t.Fatal(err)
	}
	if got[0].Err != nil || got[0].Cert.SerialNumber.Cmp(want.SerialNumber) != 0 {
		t.Fatalf("probe: %+v; want serial %s", got[0], want.SerialNumber)
	}
	wrongName := l
	wrongName.ServerName = identity.ServerName("frontend")
	if got := Probe(ctx, []Listener{wrongName}, roots); got[0].Err == nil {
		t.Fatal("a certificate of another service's name verified")
	}
	other, err := pki.Create(t.TempDir(), pki.Options{})
	if err != nil {
		t.Fatal(err)
	}
	otherRoots, err := ReadCAFile(other.CAFile)
	if err != nil {
		t.Fatal(err)
	}
	if got := Probe(ctx, []Listener{l}, otherRoots); got[0].Err == nil || got[0].Cert == nil {
		t.Fatalf("probe against a foreign CA: %+v; want the certificate read and refused", got[0])
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	if got := Probe(ctx, []Listener{{Name: "gone", Address: addr, ServerName: "x", Protocol: ProtocolTLS}}, roots); got[0].Err == nil {
		t.Fatal("a closed port probed without an error")
	}
}
