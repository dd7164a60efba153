package pgserver_test

import (
	"context"
	"crypto/tls"
	"io"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/openhcp/openhcp/internal/pgserver"
	"github.com/openhcp/openhcp/internal/pki"
)

// secureCluster is a locked-down cluster with the region's layout: a document store shared by
// two login roles through a group role, and a database of its own for a third.
type secureCluster struct {
	pg        *pgserver.Server
	pki       *pki.Region
	passwords map[string]string
}

func startSecure(t *testing.T) *secureCluster {
	t.Helper()
	return startSecureWith(t, false)
}

// startSecureWith is startSecure, without a TCP port when socketOnly (Options.SocketOnly).
func startSecureWith(t *testing.T, socketOnly bool) *secureCluster {
	t.Helper()
	dir, err := os.MkdirTemp("", "openhcp-pg-secure-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	// Under root the server runs as postgres and must traverse the directory.
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	p, err := pki.Create(filepath.Join(dir, "pki"), pki.Options{})
	if err != nil {
		t.Fatal(err)
	}
	f := p.MustFiles(pki.Postgres)
	ctx := context.Background()
	pg, err := pgserver.Start(ctx, pgserver.Options{Dir: filepath.Join(dir, "pg"), SocketOnly: socketOnly, TLS: &pgserver.TLSFiles{CertFile: f.Cert, KeyFile: f.Key}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pg.Stop)
	c := &secureCluster{pg: pg, pki: p, passwords: map[string]string{}}
	if err := pg.CreateGroupRole(ctx, "docs"); err != nil {
		t.Fatal(err)
	}
	if err := pg.CreateOwnedDatabase(ctx, "docs", "docs"); err != nil {
		t.Fatal(err)
	}
	if err := pg.CreateOwnedDatabase(ctx, "other", "postgres"); err != nil {
		t.Fatal(err)
	}
	for role, group := range map[string]string{"frontend": "docs", "backend": "docs", "othersvc": ""} {
		pw, err := pgserver.NewPassword()
		if err != nil {
			t.Fatal(err)
		}
		if err := pg.CreateLoginRole(ctx, role, pw, group); err != nil {
			t.Fatal(err)
		}
		c.passwords[role] = pw
	}
	if err := pg.CreateOwnedDatabase(ctx, "other", "othersvc"); err != nil {
		t.Fatal(err)
	}
	return c
}

// connect opens role's connection to db with the password given (not the role's own unless
// asked) and sslmode/CA as a service would.
func (c *secureCluster) connect(ctx context.Context, role, password, db, sslmode, caFile string) (*pgx.Conn, error) {
	return connectDSN(ctx, c.pg.RoleDSN(role, db, caFile), password, sslmode)
}

// connectDSN opens a connection to a RoleDSN with password, and sslmode instead of verify-full.
func connectDSN(ctx context.Context, dsn, password, sslmode string) (*pgx.Conn, error) {
	if sslmode != "verify-full" {
		dsn = strings.Replace(dsn, "sslmode=verify-full", "sslmode="+sslmode, 1)
	}
	cfg, err := pgx.ParseConfig(dsn)
	if err != nil {
		return nil, err
	}
	cfg.Password = password
	return pgx.ConnectConfig(ctx, cfg)
}

// TestSecureClusterAdmitsOnlyTLSAndEachRoleToItsOwnDatabase checks every refusal of a locked-down
// cluster against the real server, and that the right role over verified TLS gets in.
func TestSecureClusterAdmitsOnlyTLSAndEachRoleToItsOwnDatabase(t *testing.T) {
	c := startSecure(t)
	ctx := context.Background()
	otherCA, err := pki.Create(t.TempDir(), pki.Options{})
	if err != nil {
		t.Fatal(err)
	}
	ca := c.pki.CAFile
	for _, tc := range []struct {
		name              string
		role, db, sslmode string
		password          string // default: the role's own
		caFile            string // default: the region CA
		wantErr           string // empty: the connection works
	}{
		{name: "plaintext_refused", role: "frontend", db: "docs", sslmode: "disable", wantErr: "no encryption"},
		{name: "server_from_unknown_ca_refused_by_client", role: "frontend", db: "docs", sslmode: "verify-full", caFile: otherCA.CAFile, wantErr: "certificate signed by unknown authority"},
		{name: "wrong_password_refused", role: "frontend", db: "docs", sslmode: "verify-full", password: "not-the-password-at-all", wantErr: "password authentication failed"},
		{name: "superuser_over_tcp_refused", role: "postgres", db: "postgres", sslmode: "verify-full", password: "anything-at-all-xx", wantErr: "rejects connection"},
		{name: "role_refused_on_another_services_database", role: "frontend", db: "other", sslmode: "verify-full", wantErr: "permission denied for database"},
		{name: "other_role_refused_on_the_document_store", role: "othersvc", db: "docs", sslmode: "verify-full", wantErr: "permission denied for database"},
		{name: "role_refused_on_the_maintenance_database", role: "othersvc", db: "postgres", sslmode: "verify-full", wantErr: "permission denied for database"},
		{name: "frontend_on_its_database_over_verified_tls", role: "frontend", db: "docs", sslmode: "verify-full"},
		{name: "backend_on_the_shared_database", role: "backend", db: "docs", sslmode: "verify-full"},
		{name: "othersvc_on_its_database", role: "othersvc", db: "other", sslmode: "verify-full"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pw := tc.password
			if pw == "" {
				pw = c.passwords[tc.role]
			}
			caFile := tc.caFile
			if caFile == "" {
				caFile = ca
			}
			conn, err := c.connect(ctx, tc.role, pw, tc.db, tc.sslmode, caFile)
			if !connectedOverTLS(t, conn, err, tc.wantErr) {
				return
			}
			defer conn.Close(ctx)
			var super bool
			if err := conn.QueryRow(ctx, "SELECT rolsuper FROM pg_roles WHERE rolname = session_user").Scan(&super); err != nil || super {
				t.Fatalf("session user is a superuser (%v, %v)", super, err)
			}
		})
	}
}

// connectedOverTLS checks a connection attempt against wantErr (empty: it must work): it fails
// the test on a mismatch, closes a connection that should not have been made, and reports
// whether conn is open (and over TLS) for further checks.
func connectedOverTLS(t *testing.T, conn *pgx.Conn, err error, wantErr string) bool {
	t.Helper()
	if wantErr != "" {
		if err == nil {
			conn.Close(context.Background())
			t.Fatalf("connected; want an error containing %q", wantErr)
		}
		if !strings.Contains(err.Error(), wantErr) {
			t.Fatalf("error %q, want one containing %q", err, wantErr)
		}
		return false
	}
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := conn.PgConn().Conn().(*tls.Conn); !ok {
		conn.Close(context.Background())
		t.Fatalf("connection is not TLS: %T", conn.PgConn().Conn())
	}
	return true
}

// TestSecureClusterSharesTheDocumentStoreThroughTheGroup: what one member creates, the other
// may use and change (it belongs to the group), and the group owns it.
func TestSecureClusterSharesTheDocumentStoreThroughTheGroup(t *testing.T) {
	c := startSecure(t)
	ctx := context.Background()
	fe, err := c.connect(ctx, "frontend", c.passwords["frontend"], "docs", "verify-full", c.pki.CAFile)
	if err != nil {
		t.Fatal(err)
	}
	defer fe.Close(ctx)
	if _, err := fe.Exec(ctx, "CREATE TABLE t (x int); INSERT INTO t VALUES (1)"); err != nil {
		t.Fatal(err)
	}
	be, err := c.connect(ctx, "backend", c.passwords["backend"], "docs", "verify-full", c.pki.CAFile)
	if err != nil {
		t.Fatal(err)
	}
	defer be.Close(ctx)
	if _, err := be.Exec(ctx, "ALTER TABLE t ADD COLUMN y int; UPDATE t SET y = 2"); err != nil {
		t.Fatalf("backend cannot change the frontend's table: %v", err)
	}
	var owner string
	if err := be.QueryRow(ctx, "SELECT tableowner FROM pg_tables WHERE tablename = 't'").Scan(&owner); err != nil || owner != "docs" {
		t.Fatalf("table owner %q (%v), want the group role docs", owner, err)
	}
}

// TestSecureClusterReloadsItsCertificate: after a renewal and ReloadTLS, a new connection sees
// the new certificate, without a restart.
func TestSecureClusterReloadsItsCertificate(t *testing.T) {
	c := startSecure(t)
	ctx := context.Background()
	serial := func() string {
		t.Helper()
		cfg, err := pgx.ParseConfig(c.pg.RoleDSN("frontend", "docs", c.pki.CAFile))
		if err != nil {
			t.Fatal(err)
		}
		cfg.Password = c.passwords["frontend"]
		var mu sync.Mutex
		var seen string
		verify := cfg.TLSConfig.VerifyConnection
		cfg.TLSConfig.VerifyConnection = func(cs tls.ConnectionState) error {
			mu.Lock()
			seen = cs.PeerCertificates[0].SerialNumber.String()
			mu.Unlock()
			if verify != nil {
				return verify(cs)
			}
			return nil
		}
		conn, err := pgx.ConnectConfig(ctx, cfg)
		if err != nil {
			t.Fatal(err)
		}
		conn.Close(ctx)
		mu.Lock()
		defer mu.Unlock()
		return seen
	}
	before := serial()
	renewed, err := c.pki.Renew(pki.Postgres)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.pg.ReloadTLS(ctx); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		after := serial()
		if after == renewed.SerialNumber.String() && after != before {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("server still presents serial %s after reload; renewed is %s", after, renewed.SerialNumber)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// TestSilentConnectionIsClosedWithinTheLoginTimeout: PostgreSQL forks a process for every
// connection before it reads a byte, and those count against its limit of children; a
// connection that sends nothing is closed within the login timeout (5 s), not PostgreSQL's
// default minute, with which about 900 silent sockets from any local process held every
// service's next login at "sorry, too many clients already" (a probe). Seen failing with the
// default: the read waited out its 30 s.
func TestSilentConnectionIsClosedWithinTheLoginTimeout(t *testing.T) {
	c := startSecure(t)
	s, err := net.Dial("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(c.pg.Port)))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := s.SetReadDeadline(time.Now().Add(30 * time.Second)); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	if _, err := s.Read(make([]byte, 1)); err != io.EOF {
		t.Fatalf("a connection that sent nothing: read %v after %s, want EOF (closed by PostgreSQL within its login timeout)", err, time.Since(start).Round(time.Millisecond))
	}
	t.Logf("closed after %s", time.Since(start).Round(time.Millisecond))
}
