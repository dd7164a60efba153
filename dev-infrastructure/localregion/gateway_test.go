package localregion

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/openhcp/openhcp/admin/pkg/access"
	"github.com/openhcp/openhcp/admin/pkg/audit"
	"github.com/openhcp/openhcp/admin/pkg/revocation"
	"github.com/openhcp/openhcp/admin/pkg/session"
	"github.com/openhcp/openhcp/internal/identity"
	"github.com/openhcp/openhcp/internal/pgserver"
	"github.com/openhcp/openhcp/internal/tlsconfig"
)

// TestGatewayReplicasRunOnTheAdminDatabase starts the region's gateway replicas as Up does, on
// a real locked-down PostgreSQL with the admin database's tables and grants: both become ready,
// each serves its workload certificate to SREs only, and each answers a request for an unknown
// session with the gateway's refusal (read from the database, audited, counted) and proxies a
// live session of the shared database with the credential the region's key opens, so each is
// wired to the database, the session key and the person CA.
func TestGatewayReplicasRunOnTheAdminDatabase(t *testing.T) {
	if testing.Short() {
		t.Skip("starts PostgreSQL and builds the gateway")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	r, pg := regionWithDatabase(ctx, t, "./admin/cmd/gateway")
	password, err := pgserver.NewPassword()
	if err != nil {
		t.Fatal(err)
	}
	if err := pg.CreateLoginRole(ctx, adminRole, password, ""); err != nil {
		t.Fatal(err)
	}
	if err := pg.CreateOwnedDatabase(ctx, adminDB, "postgres"); err != nil {
		t.Fatal(err)
	}
	conn, err := pgx.Connect(ctx, pg.AdminDSN(adminDB))
	if err != nil {
		t.Fatal(err)
	}
	// What prepareAdminDatabase installs in the admin database (the document store's grants,
	// which need the frontend's migrations, are the admin API's only).
	for _, install := range []func(context.Context, *pgx.Conn, string) error{audit.Install, revocation.Install, session.Install} {
		if err := install(ctx, conn, adminRole); err != nil {
			t.Fatal(err)
		}
	}
	conn.Close(ctx)
	passFile := filepath.Join(r.secretsDir(), adminRole+".pgpass")
	if err := pg.WritePassFile(passFile, adminRole, "*", password); err != nil {
		t.Fatal(err)
	}
	db := PostgresRoleInfo{Service: "admin", Role: adminRole, Database: adminDB, DSN: pg.RoleDSN(adminRole, adminDB, r.pki.CAFile), PassFile: passFile}

	if err := r.startGateways(ctx, db); err != nil {
		t.Fatal(err)
	}
	gw := r.Info.Gateway
	if len(gw.URLs) != gatewayReplicas || len(gw.MetricsURLs) != gatewayReplicas || gw.URLs[0] == gw.URLs[1] {
		t.Fatalf("region.json's gateway: %+v, want %d replicas at different addresses", gw, gatewayReplicas)
	}
	if fi, err := os.Stat(gw.SessionKeyFile); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("session key file %s: %v, %v; want mode 0600", gw.SessionKeyFile, fi, err)
	}
	if err := r.pki.AddPerson("sre-admin-alice", "alice", access.GroupAdmin); err != nil {
		t.Fatal(err)
	}
	alice := r.pki.MustFiles("sre-admin-alice")
	wantID, _ := identity.Of(identity.Gateway, r.pki.TrustDomain)

	// A live session of alice's, sealed with the region's session key as the admin API seals
	// it, whose credential names a hosted API server that is not there: a replica that reads the
	// session from the shared database and opens its credential with the same key proxies, and
	// answers 502 from the missing server (a wrong key would be 503, a wrong database 404).
	pool, err := pgxpool.New(ctx, db.DSN+"&password="+password)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	key, err := session.ReadKeyFile(gw.SessionKeyFile)
	if err != nil {
		t.Fatal(err)
	}
	closed := freeClosedPort(t)
	kubeconfig := fmt.Sprintf("apiVersion: v1\nkind: Config\nclusters: [{name: c, cluster: {server: \"https://127.0.0.1:%d\"}}]\n"+
		"users: [{name: u, user: {}}]\ncontexts: [{name: c, context: {cluster: c, user: u}}]\ncurrent-context: c\n", closed)
	const sessionID = "11111111-1111-4111-8111-111111111111"
	if _, err := session.New(pool, key).Open(ctx, session.Session{ID: sessionID, ClusterID: "c1", Person: "alice", Group: access.GroupAdmin,
		Access: session.AccessReadOnly, Reason: "wiring test", TTLSeconds: 3600, Expires: time.Now().Add(time.Hour)}, []byte(kubeconfig)); err != nil {
		t.Fatal(err)
	}
	for i, u := range gw.URLs {
		addr := strings.TrimPrefix(u, "https://")
		t.Run(fmt.Sprintf("replica_%d", i+1), func(t *testing.T) {
			noCert, err := tlsconfig.Files{CA: gw.CAFile, ServerName: gw.ServerName}.Client(addr)
			if err != nil {
				t.Fatal(err)
			}
			c, err := tls.Dial("tcp", addr, noCert)
			if err == nil {
				// TLS 1.3: the refusal of a missing client certificate arrives on the first read.
				_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
				_, err = c.Read(make([]byte, 1))
				c.Close()
			}
			if err == nil || !strings.Contains(err.Error(), "certificate required") {
				t.Fatalf("a caller without a certificate: %v, want the handshake refused (certificate required)", err)
			}

			cfg, err := tlsconfig.Files{CA: gw.CAFile, Cert: alice.Cert, Key: alice.Key, ServerName: gw.ServerName}.Client(addr)
			if err != nil {
				t.Fatal(err)
			}
			var served []string
			cfg.VerifyConnection = chainVerify(cfg.VerifyConnection, func(cs tls.ConnectionState) {
				for _, u := range cs.PeerCertificates[0].URIs {
					served = append(served, u.String())
				}
			})
			client := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{TLSClientConfig: cfg}}
			resp, err := client.Get(u + "/sessions/00000000-0000-0000-0000-000000000000/api/v1/secrets")
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusNotFound || !strings.Contains(string(body), "no break-glass session") {
				t.Fatalf("an unknown session: %d %.200s, want 404 no break-glass session", resp.StatusCode, body)
			}
			if len(served) != 1 || served[0] != wantID.String() {
				t.Fatalf("the gateway's certificate carries %v, want the gateway workload's %s", served, wantID)
			}
			resp, err = client.Get(u + "/sessions/" + sessionID + "/api/v1/namespaces")
			if err != nil {
				t.Fatal(err)
			}
			body, _ = io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusBadGateway || !strings.Contains(string(body), "did not answer") {
				t.Fatalf("alice's live session: %d %.300s, want 502 from the missing hosted API server", resp.StatusCode, body)
			}
			resp, err = http.Get(gw.MetricsURLs[i])
			if err != nil {
				t.Fatal(err)
			}
			metrics, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			for _, want := range []string{`gateway_refusals_total{reason="unknown-session"} 1`, `gateway_proxied_requests_total{code="502"} 1`} {
				if !strings.Contains(string(metrics), want) {
					t.Fatalf("replica %d's metrics lack %s:\n%.2000s", i+1, want, metrics)
				}
			}
		})
	}
}

// freeClosedPort is a loopback port nothing listens on.
func freeClosedPort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	return port
}

// chainVerify runs seen and then next (which may be nil) as a tls.Config.VerifyConnection.
func chainVerify(next func(tls.ConnectionState) error, seen func(tls.ConnectionState)) func(tls.ConnectionState) error {
	return func(cs tls.ConnectionState) error {
		seen(cs)
		if next != nil {
			return next(cs)
		}
		return nil
	}
}
