package localregion

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/http"
	"syscall"
	"time"

	"github.com/openhcp/openhcp/dev-infrastructure/mgmtcluster"
	"github.com/openhcp/openhcp/internal/pgserver"
	"github.com/openhcp/openhcp/internal/pki"
	"github.com/openhcp/openhcp/internal/tlsconfig"
)

// certHolders are the processes we did not write that hold the region's certificates and read
// them only when told: PostgreSQL and PgBouncer reload on request, mosquitto on SIGHUP, the
// authorizer's kube-apiserver re-reads its client CA bundle by itself once it is rewritten,
// and the Maestro servers and agents read theirs only at start. Our own services re-read their
// files on every handshake (internal/tlsconfig) and need nothing.
type certHolders struct {
	postgres   *pgserver.Server
	bouncer    *pgserver.Bouncer
	broker     *mgmtcluster.Mosquitto
	authorizer *mgmtcluster.ManagementCluster
	agents     []*mgmtcluster.MaestroAgent
}

// holderReadyTimeout bounds the wait for one holder to serve what it was told to reload.
const holderReadyTimeout = 2 * time.Minute

// RotateCertificates renews every certificate of the region's PKI (a new key each) and makes
// every holder use it: our services on their next handshake, PostgreSQL, PgBouncer and
// mosquitto by a reload, the Maestro servers and agents by a restart, one at a time. No CA
// changes; see RollCA.
func (r *Region) RotateCertificates(ctx context.Context) error {
	if err := r.errIfAttached("rotate the region's certificates"); err != nil {
		return err
	}
	if err := r.pki.RenewAll(); err != nil {
		return fmt.Errorf("renew the region's certificates: %w", err)
	}
	return r.reloadHolders(ctx, "renewed certificates", false)
}

// RollCA replaces one of the region's CAs without a broken connection (pki.Region.RollCA): the
// new CA is trusted everywhere before anything it signs is used, every certificate of that CA is
// renewed under the new one, and the old CA is dropped last. The holders reload after each step.
func (r *Region) RollCA(ctx context.Context, by pki.Issuer) error {
	if err := r.errIfAttached("roll the " + by.String()); err != nil {
		return err
	}
	return r.pki.RollCA(by, func(step string) error {
		r.step("CA rollover: %s", step)
		return r.reloadHolders(ctx, step, true)
	})
}

// reloadHolders makes every certificate holder use the PKI's files as they are now, and returns
// once each serves them. caChanged says a CA file changed too: mosquitto then restarts, as it
// does not re-read its cafile on SIGHUP (seen with mosquitto 2.0.11).
func (r *Region) reloadHolders(ctx context.Context, why string, caChanged bool) error {
	r.mu.Lock()
	h := r.holders
	h.agents = append([]*mgmtcluster.MaestroAgent(nil), r.holders.agents...)
	extra := append([]*mgmtcluster.MaestroServer(nil), r.extraMaestro...)
	r.mu.Unlock()
	start := time.Now()
	if h.postgres != nil {
		if err := h.postgres.ReloadTLS(ctx); err != nil {
			return fmt.Errorf("%s: PostgreSQL: %w", why, err)
		}
		if err := r.waitServes(ctx, "PostgreSQL", pgTLS(h.postgres.Port), pki.Postgres, false); err != nil {
			return fmt.Errorf("%s: %w", why, err)
		}
	}
	if h.bouncer != nil {
		if err := h.bouncer.ReloadTLS(); err != nil {
			return fmt.Errorf("%s: PgBouncer: %w", why, err)
		}
		if err := r.waitServes(ctx, "PgBouncer", pgTLS(h.bouncer.Port), pki.Postgres, false); err != nil {
			return fmt.Errorf("%s: %w", why, err)
		}
	}
	if h.broker != nil {
		if caChanged {
			if err := h.broker.Restart(ctx); err != nil {
				return fmt.Errorf("%s: %w", why, err)
			}
			r.supervise(h.broker.Proc)
		} else if err := syscall.Kill(h.broker.Proc.PID(), syscall.SIGHUP); err != nil {
			return fmt.Errorf("%s: mosquitto: reload: %w", why, err)
		}
		if err := r.waitServes(ctx, "mosquitto", plainTLS(h.broker.Addr), pki.Broker, true); err != nil {
			return fmt.Errorf("%s: %w", why, err)
		}
	}
	if h.authorizer != nil {
		if err := h.authorizer.RefreshClientCA(); err != nil {
			return fmt.Errorf("%s: %w", why, err)
		}
		if err := r.waitAuthenticates(ctx, h.authorizer.Host, pki.MaestroServer); err != nil {
			return fmt.Errorf("%s: the Maestro authorizer: %w", why, err)
		}
	}
	// The Maestro servers and agents read their files only at start: restart them one at a
	// time, so the others go on (Cluster Service reconnects to the first; the agents' specs and
	// status wait in the broker's sessions).
	servers := extra
	if r.maestro != nil {
		servers = append([]*mgmtcluster.MaestroServer{r.maestro}, extra...)
	}
	for _, ms := range servers {
		if exited, _ := ms.Process().Exited(); exited && ms != r.maestro {
			continue // SetMaestroServers stopped it; it reads the files when started again
		}
		if err := ms.Restart(ctx); err != nil {
			return fmt.Errorf("%s: restart Maestro server: %w", why, err)
		}
		r.supervise(ms.Process())
	}
	for _, a := range h.agents {
		if err := a.Restart(ctx); err != nil {
			return fmt.Errorf("%s: restart the Maestro agent of %s: %w", why, a.ConsumerName, err)
		}
		r.supervise(a.Proc)
	}
	r.step("%s: every certificate holder reloaded in %s", why, time.Since(start).Round(time.Millisecond))
	return nil
}

// handshake dials a TLS server and returns the certificate it presents.
type handshake func(ctx context.Context, cfg *tls.Config) (*x509.Certificate, error)

func plainTLS(addr string) handshake {
	return func(ctx context.Context, cfg *tls.Config) (*x509.Certificate, error) {
		d := tls.Dialer{Config: cfg}
		c, err := d.DialContext(ctx, "tcp", addr)
		if err != nil {
			return nil, err
		}
		defer c.Close()
		tc := c.(*tls.Conn)
		if err := acceptedUs(tc); err != nil {
			return nil, err
		}
		return tc.ConnectionState().PeerCertificates[0], nil
	}
}

// acceptedUs tells a server that accepted our client certificate from one that refused it: in
// TLS 1.3 the client's handshake ends before the server has checked the client's certificate,
// and a refusal arrives as an alert on the first read. A server that waits for us to speak
// (MQTT's CONNECT, PostgreSQL's startup message) times the read out.
func acceptedUs(c *tls.Conn) error {
	_ = c.SetReadDeadline(time.Now().Add(500 * time.Millisecond))
	_, err := c.Read(make([]byte, 1))
	var ne net.Error
	if err == nil || errors.As(err, &ne) && ne.Timeout() {
		return nil
	}
	return fmt.Errorf("the server refused the client certificate: %w", err)
}

// pgTLS speaks PostgreSQL's SSLRequest before the handshake (pgserver.DialTLS).
func pgTLS(port int) handshake {
	return func(ctx context.Context, cfg *tls.Config) (*x509.Certificate, error) {
		ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		tc, err := pgserver.DialTLS(ctx, fmt.Sprintf("127.0.0.1:%d", port), cfg)
		if err != nil {
			return nil, err
		}
		defer tc.Close()
		if err := acceptedUs(tc); err != nil {
			return nil, err
		}
		return tc.ConnectionState().PeerCertificates[0], nil
	}
}

// waitServes waits until a holder presents identity's current certificate, verified by the
// service CA file of the moment; withClient presents the Maestro server's current certificate
// too, and waits until the holder accepts it (the broker requires a client certificate;
// PostgreSQL and PgBouncer authenticate logins by SCRAM and are not offered one).
func (r *Region) waitServes(ctx context.Context, what string, dial handshake, identity string, withClient bool) error {
	want, err := pki.ReadCertificate(r.pki.MustFiles(identity).Cert)
	if err != nil {
		return err
	}
	client := r.pki.MustFiles(pki.MaestroServer)
	deadline := time.Now().Add(holderReadyTimeout)
	for {
		files := tlsconfig.Files{CA: r.pki.CAFile}
		if withClient {
			files.Cert, files.Key = client.Cert, client.Key
		}
		cfg, err := files.Client("127.0.0.1")
		if err != nil {
			return err
		}
		got, err := dial(ctx, cfg)
		if err == nil && got.SerialNumber.Cmp(want.SerialNumber) == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			if err == nil {
				err = fmt.Errorf("serves serial %s, want %s", got.SerialNumber, want.SerialNumber)
			}
			return fmt.Errorf("%s does not serve its renewed certificate after %s: %w", what, holderReadyTimeout, err)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(250 * time.Millisecond):
		}
	}
}

// waitAuthenticates waits until a kube-apiserver authenticates identity's current certificate
// (anything but 401), as it does once it has re-read its client CA bundle.
func (r *Region) waitAuthenticates(ctx context.Context, host, identity string) error {
	f := r.pki.MustFiles(identity)
	deadline := time.Now().Add(holderReadyTimeout)
	for {
		cert, err := tls.LoadX509KeyPair(f.Cert, f.Key)
		if err != nil {
			return err
		}
		// What is checked is whether the apiserver takes our certificate, not who it is: its
		// serving certificate comes from its own dev PKI, which this wait does not need.
		tr := &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true, Certificates: []tls.Certificate{cert}}, DisableKeepAlives: true}
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, host+"/api/v1/namespaces/default", nil)
		resp, err := (&http.Client{Transport: tr, Timeout: 10 * time.Second}).Do(req)
		tr.CloseIdleConnections()
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode != http.StatusUnauthorized {
				return nil
			}
			err = errors.New("401 Unauthorized")
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s's certificate is not authenticated after %s: %w", identity, holderReadyTimeout, err)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(time.Second):
		}
	}
}
