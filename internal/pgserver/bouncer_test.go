package pgserver_test

import (
	"context"
	"fmt"
	"io"
	"net"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/openhcp/openhcp/internal/pgserver"
	"github.com/openhcp/openhcp/internal/pki"
	"github.com/openhcp/openhcp/internal/tlsconfig"
)

// startBouncer puts a bouncer for othersvc and frontend, each on its own database, in front of c.
func startBouncer(t *testing.T, c *secureCluster) *pgserver.Bouncer {
	t.Helper()
	b, err := c.pg.StartBouncer(context.Background(), pgserver.BouncerOptions{
		Dir: filepath.Join(c.pg.Dir, "..", "bouncer"), CAFile: c.pki.CAFile,
		Logins:   []pgserver.BouncerLogin{{Role: "othersvc", Database: "other"}, {Role: "frontend", Database: "docs"}},
		PoolSize: 4,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(b.Stop)
	return b
}

// connectVia opens role's connection to db through the bouncer, as a service would.
func connectVia(ctx context.Context, b *pgserver.Bouncer, role, password, db, sslmode, caFile string) (*pgx.Conn, error) {
	return connectDSN(ctx, b.RoleDSN(role, db, caFile), password, sslmode)
}

// sessions is pg_stat_database.sessions of db: the sessions PostgreSQL has started for it.
func sessions(t *testing.T, c *secureCluster, db string) int64 {
	t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, c.pg.AdminDSN("postgres"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	// The statistics of a session that just ended reach the view after a moment.
	if _, err := conn.Exec(ctx, "SELECT pg_stat_force_next_flush()"); err != nil {
		t.Fatal(err)
	}
	var n int64
	if err := conn.QueryRow(ctx, "SELECT sessions FROM pg_stat_database WHERE datname = $1", db).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// TestBouncerKeepsServerSessionsWhileClientsComeAndGo: twenty connect-query-close cycles
// through the bouncer start at most one PostgreSQL session; the same cycles made directly start
// twenty. This is what the bouncer is for (the pinned Maestro server's connection churn).
func TestBouncerKeepsServerSessionsWhileClientsComeAndGo(t *testing.T) {
	c := startSecure(t)
	b := startBouncer(t, c)
	ctx := context.Background()
	const cycles = 20
	count := func(connect func() (*pgx.Conn, error)) int64 {
		t.Helper()
		// The sessions counter moves when a session ends; wait for the last one's statistics.
		time.Sleep(200 * time.Millisecond)
		before := sessions(t, c, "other")
		for range cycles {
			conn, err := connect()
			if err != nil {
				t.Fatal(err)
			}
			var one int
			if err := conn.QueryRow(ctx, "SELECT 1").Scan(&one); err != nil {
				t.Fatal(err)
			}
			conn.Close(ctx)
		}
		time.Sleep(200 * time.Millisecond)
		return sessions(t, c, "other") - before
	}
	pw := c.passwords["othersvc"]
	direct := count(func() (*pgx.Conn, error) {
		return c.connect(ctx, "othersvc", pw, "other", "verify-full", c.pki.CAFile)
	})
	pooled := count(func() (*pgx.Conn, error) {
		return connectVia(ctx, b, "othersvc", pw, "other", "verify-full", c.pki.CAFile)
	})
	if direct < cycles {
		t.Fatalf("direct connections started %d sessions, want %d (is the counter read right?)", direct, cycles)
	}
	// The bouncer's one kept session is counted when it ends, so it may not show yet: 0 or 1.
	if pooled > 1 {
		t.Fatalf("%d connections through the bouncer started %d PostgreSQL sessions, want at most 1", cycles, pooled)
	}
}

// TestBouncerAdmitsOnlyTLSAndItsOwnLogins checks the bouncer's refusals against the real
// PgBouncer, and that the admitted login gets a verified TLS session as itself.
func TestBouncerAdmitsOnlyTLSAndItsOwnLogins(t *testing.T) {
	c := startSecure(t)
	b := startBouncer(t, c)
	ctx := context.Background()
	for _, tc := range []struct {
		name              string
		role, db, sslmode string
		password          string // default: the role's own
		wantErr           string
	}{
		{name: "plaintext_refused", role: "othersvc", db: "other", sslmode: "disable", wantErr: "SSL required"},
		{name: "wrong_password_refused", role: "othersvc", db: "other", sslmode: "verify-full", password: "not-the-password-at-all", wantErr: "SASL authentication failed"},
		{name: "role_not_given_to_the_bouncer_refused", role: "backend", db: "docs", sslmode: "verify-full", wantErr: "SASL authentication failed"},
		{name: "role_refused_on_another_logins_database", role: "frontend", db: "other", sslmode: "verify-full", wantErr: "permission denied for database"},
		{name: "database_not_given_to_the_bouncer_refused", role: "othersvc", db: "postgres", sslmode: "verify-full", wantErr: "no such database"},
		{name: "superuser_refused", role: "postgres", db: "postgres", sslmode: "verify-full", password: "anything-at-all-xx", wantErr: "SASL authentication failed"},
		{name: "its_login_over_verified_tls", role: "othersvc", db: "other", sslmode: "verify-full"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pw := tc.password
			if pw == "" {
				pw = c.passwords[tc.role]
			}
			conn, err := connectVia(ctx, b, tc.role, pw, tc.db, tc.sslmode, c.pki.CAFile)
			if !connectedOverTLS(t, conn, err, tc.wantErr) {
				return
			}
			defer conn.Close(ctx)
			var user string
			var ssl bool
			if err := conn.QueryRow(ctx, "SELECT session_user, ssl FROM pg_stat_ssl JOIN pg_stat_activity USING (pid) WHERE pid = pg_backend_pid()").Scan(&user, &ssl); err != nil {
				t.Fatal(err)
			}
			if user != "othersvc" || !ssl {
				t.Fatalf("server session is user %q, TLS %v; want othersvc over TLS (bouncer to PostgreSQL)", user, ssl)
			}
		})
	}
}

// TestBouncerCarriesListenNotify: a LISTEN through the bouncer hears a NOTIFY sent through it
// by another client (session pooling; Maestro's listeners rely on it).
func TestBouncerCarriesListenNotify(t *testing.T) {
	c := startSecure(t)
	b := startBouncer(t, c)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	pw := c.passwords["othersvc"]
	listener, err := connectVia(ctx, b, "othersvc", pw, "other", "verify-full", c.pki.CAFile)
	if err != nil {
		t.Fatal(err)
	}
	defer listener.Close(ctx)
	if _, err := listener.Exec(ctx, "LISTEN events"); err != nil {
		t.Fatal(err)
	}
	sender, err := connectVia(ctx, b, "othersvc", pw, "other", "verify-full", c.pki.CAFile)
	if err != nil {
		t.Fatal(err)
	}
	defer sender.Close(ctx)
	if _, err := sender.Exec(ctx, "SELECT pg_notify('events', 'resource-1')"); err != nil {
		t.Fatal(err)
	}
	n, err := listener.WaitForNotification(ctx)
	if err != nil {
		t.Fatalf("no notification through the bouncer: %v", err)
	}
	if n.Channel != "events" || n.Payload != "resource-1" {
		t.Fatalf("notification %s %q, want events %q", n.Channel, n.Payload, "resource-1")
	}
}

// servedSerial is the serial of the certificate a PostgreSQL-protocol server at port presents
// after an SSLRequest, verified by the region's service CA.
func servedSerial(c *secureCluster, port int) (string, error) {
	files := tlsconfig.Files{CA: c.pki.CAFile}
	cfg, err := files.Client("127.0.0.1")
	if err != nil {
		return "", err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	tc, err := pgserver.DialTLS(ctx, fmt.Sprintf("127.0.0.1:%d", port), cfg)
	if err != nil {
		return "", err
	}
	defer tc.Close()
	return tc.ConnectionState().PeerCertificates[0].SerialNumber.String(), nil
}

// TestRenewedCertificateIsServedWithoutARestart: after PostgreSQL's certificate is renewed,
// ReloadTLS on the server and then on the bouncer makes both present the new one, and the
// bouncer still verifies PostgreSQL and serves logins.
func TestRenewedCertificateIsServedWithoutARestart(t *testing.T) {
	c := startSecure(t)
	b := startBouncer(t, c)
	before, err := servedSerial(c, b.Port)
	if err != nil {
		t.Fatal(err)
	}
	renewed, err := c.pki.Renew(pki.Postgres)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := c.pg.ReloadTLS(ctx); err != nil {
		t.Fatal(err)
	}
	if err := b.ReloadTLS(); err != nil {
		t.Fatal(err)
	}
	want := renewed.SerialNumber.String()
	deadline := time.Now().Add(60 * time.Second)
	for {
		got, err := servedSerial(c, b.Port)
		if err == nil && got == want {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the bouncer serves serial %s (%v), want the renewed %s (before: %s)", got, err, want, before)
		}
		time.Sleep(200 * time.Millisecond)
	}
	if got, err := servedSerial(c, c.pg.Port); err != nil || got != want {
		t.Fatalf("PostgreSQL serves %s (%v), want %s", got, err, want)
	}
	conn, err := connectVia(ctx, b, "othersvc", c.passwords["othersvc"], "other", "verify-full", c.pki.CAFile)
	if err != nil {
		t.Fatalf("login through the reloaded bouncer: %v", err)
	}
	conn.Close(ctx)
}

// TestBouncerAdmitsItsLoginsWhileStrangersHoldSockets: connections that never log in (any local
// process can open them, no credential needed) neither lock a service's own login out nor stay
// for long: the bouncer leaves room for them beyond its logins' own connections, and closes each
// that has not logged in within its login timeout.
func TestBouncerAdmitsItsLoginsWhileStrangersHoldSockets(t *testing.T) {
	c := startSecure(t)
	b := startBouncer(t, c)
	ctx := context.Background()
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(b.Port))
	// 100 strangers: more than the logins' own connections (2 logins × 2 × pool size 4).
	var held []net.Conn
	t.Cleanup(func() {
		for _, s := range held {
			s.Close()
		}
	})
	// Each asks for TLS (an SSLRequest) and goes no further; its answer shows the bouncer has
	// taken it (an 'S', or a refusal once the bouncer is full), so the login below comes after all.
	sslRequest := []byte{0, 0, 0, 8, 0x04, 0xd2, 0x16, 0x2f}
	for range 100 {
		s, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		held = append(held, s)
		if _, err := s.Write(sslRequest); err != nil {
			t.Fatal(err)
		}
	}
	accepted := 0
	for _, s := range held {
		if err := s.SetReadDeadline(time.Now().Add(30 * time.Second)); err != nil {
			t.Fatal(err)
		}
		answer := make([]byte, 1)
		if n, err := s.Read(answer); err == nil && n == 1 && answer[0] == 'S' {
			accepted++
		}
	}
	t.Logf("%d of %d strangers taken in", accepted, len(held))
	deadline := time.Now().Add(20 * time.Second)
	var err error
	for time.Now().Before(deadline) {
		var conn *pgx.Conn
		if conn, err = connectVia(ctx, b, "othersvc", c.passwords["othersvc"], "other", "verify-full", c.pki.CAFile); err == nil {
			conn.Close(ctx)
			break
		}
		if !strings.Contains(err.Error(), "no more connections allowed") {
			t.Fatalf("login through the bouncer: %v", err)
		}
		time.Sleep(200 * time.Millisecond)
	}
	if err != nil {
		t.Fatalf("the service's login was locked out while strangers held sockets: %v", err)
	}
	// A stranger that never logs in is closed within the login timeout (PgBouncer's default
	// would keep it a minute).
	s := held[len(held)-1]
	if err := s.SetReadDeadline(time.Now().Add(30 * time.Second)); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	if _, err := s.Read(make([]byte, 1)); err != io.EOF {
		t.Fatalf("a connection that never logged in: read %v after %s, want EOF (closed by the bouncer)", err, time.Since(start).Round(time.Millisecond))
	}
}
