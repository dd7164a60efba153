package e2e

import (
	"context"
	"crypto/tls"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	pbv1 "open-cluster-management.io/sdk-go/pkg/cloudevents/generic/options/grpc/protobuf/v1"

	"github.com/openhcp/openhcp/dev-infrastructure/localregion"
	"github.com/openhcp/openhcp/internal/pki"
	"github.com/openhcp/openhcp/internal/tlsconfig"
)

// The hops behind Cluster Service, checked against the running region's real Maestro and
// PostgreSQL as an attacker on the loopback network would try them. The broker's refusals and
// the MQTT isolation of management clusters are in dev-infrastructure/localregion
// (TestRegionBrokerRefusesAndIsolates), with the region's broker configuration and identities.

// strangerPKI is a PKI the region does not trust, with the same identity names.
func strangerPKI(t *testing.T) *pki.Region {
	t.Helper()
	p, err := pki.Create(filepath.Join(t.TempDir(), "stranger"), pki.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// TestMaestroAdmitsOnlyClusterService checks the Cluster Service → Maestro hop: the gRPC source
// API refuses plaintext, a missing certificate and one from another CA at the handshake; a
// region certificate of another identity (the frontend, an agent), or Cluster Service's own
// publishing as another source, is refused by Maestro's authorizer; Cluster Service as its own
// source gets through. The REST API is HTTPS only, verifiable with the region CA, and behind the
// gate: Cluster Service reads and writes, the admin API only reads, everyone else is refused.
func TestMaestroAdmitsOnlyClusterService(t *testing.T) {
	needsOwnRegion(t, "presents identities of its PKI that region.json does not name")
	m := region.Info.Maestro
	stranger := strangerPKI(t)
	clientTLS := func(p *pki.Region, identity string) *tls.Config {
		t.Helper()
		files := tlsconfig.Files{CA: m.CAFile, ServerName: m.ServerName}
		if identity != "" {
			f := p.MustFiles(identity)
			files.Cert, files.Key = f.Cert, f.Key
		}
		cfg, err := files.Client(m.GRPC)
		if err != nil {
			t.Fatal(err)
		}
		return cfg
	}
	dial := func(creds grpc.DialOption) pbv1.CloudEventServiceClient {
		t.Helper()
		conn, err := grpc.NewClient(m.GRPC, creds)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { conn.Close() })
		return pbv1.NewCloudEventServiceClient(conn)
	}
	// publish sends an event that Maestro cannot act on (its type does not parse), so an
	// identity that passes the authorizer gets that error and nothing changes.
	publish := func(c pbv1.CloudEventServiceClient, source string) error {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_, err := c.Publish(ctx, &pbv1.PublishRequest{Event: &pbv1.CloudEvent{
			Id: "e2e-authz-probe", Source: source, SpecVersion: "1.0", Type: "e2e.authz.probe",
			// sdk-go reads the spec version only from an event with attributes.
			Attributes: map[string]*pbv1.CloudEventAttributeValue{
				"e2eprobe": {Attr: &pbv1.CloudEventAttributeValue_CeString{CeString: "1"}}},
		}})
		return err
	}
	// subscribe returns nil once Maestro has accepted the subscription (it sends the
	// subscription ID header first thing), or the refusal.
	subscribe := func(c pbv1.CloudEventServiceClient, source string) error {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		stream, err := c.Subscribe(ctx, &pbv1.SubscriptionRequest{Source: source, ClusterName: "mgmt-1",
			DataType: "io.open-cluster-management.works.v1alpha1.manifestbundles"})
		if err != nil {
			return err
		}
		var md metadata.MD
		if md, err = stream.Header(); err != nil {
			return err
		}
		if len(md) == 0 {
			// No header: the stream ended; Recv has the reason.
			_, err = stream.Recv()
			return err
		}
		return nil
	}

	t.Run("refused_at_the_handshake", func(t *testing.T) {
		for _, tc := range []struct {
			name  string
			creds grpc.DialOption
		}{
			{"plaintext", grpc.WithTransportCredentials(insecure.NewCredentials())},
			{"no_client_certificate", grpc.WithTransportCredentials(credentials.NewTLS(clientTLS(nil, "")))},
			{"certificate_from_an_unknown_ca", grpc.WithTransportCredentials(credentials.NewTLS(clientTLS(stranger, pki.ClusterService)))},
		} {
			t.Run(tc.name, func(t *testing.T) {
				err := publish(dial(tc.creds), "cluster-service")
				if err == nil || strings.Contains(err.Error(), "cloud event type") {
					t.Fatalf("publish got through the transport: %v", err)
				}
			})
		}
	})

	as := func(identity string) pbv1.CloudEventServiceClient {
		return dial(grpc.WithTransportCredentials(credentials.NewTLS(clientTLS(region.PKI(), identity))))
	}
	for _, tc := range []struct {
		name, identity, source string
		allowed                bool
	}{
		{"frontend_identity_refused", pki.Frontend, "cluster-service", false},
		{"agent_identity_refused", pki.MaestroAgent("mgmt-1"), "cluster-service", false},
		{"cluster_service_as_another_source_refused", pki.ClusterService, "intruder", false},
		{"cluster_service_as_itself_admitted", pki.ClusterService, "cluster-service", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := as(tc.identity)
			pubErr, subErr := publish(c, tc.source), subscribe(c, tc.source)
			if tc.allowed {
				if pubErr == nil || !strings.Contains(pubErr.Error(), "cloud event type") {
					t.Errorf("publish: %v; want the authorizer passed (an error about the probe's event type)", pubErr)
				}
				if subErr != nil {
					t.Errorf("subscribe: %v", subErr)
				}
				return
			}
			if pubErr == nil || !strings.Contains(pubErr.Error(), "unauthorized to publish") {
				t.Errorf("publish: %v; want unauthorized", pubErr)
			}
			if subErr == nil || !strings.Contains(subErr.Error(), "unauthorized to subscribe") {
				t.Errorf("subscribe: %v; want unauthorized", subErr)
			}
		})
	}

	t.Run("rest_is_https_only", func(t *testing.T) {
		if !strings.HasPrefix(m.REST, "https://") {
			t.Fatalf("REST %s is not https", m.REST)
		}
		path := "/api/maestro/v1/consumers?size=1"
		plain, err := (&http.Client{Timeout: 10 * time.Second}).Get("http://" + strings.TrimPrefix(m.REST, "https://") + path)
		if err == nil {
			b, _ := io.ReadAll(plain.Body)
			plain.Body.Close()
			if plain.StatusCode != http.StatusBadRequest || !strings.Contains(string(b), "HTTPS") {
				t.Fatalf("plaintext got %d %s", plain.StatusCode, b)
			}
		}
		call := func(caFile string, p *pki.Region, identity, method string) (*http.Response, error) {
			files := tlsconfig.Files{CA: caFile, ServerName: m.ServerName}
			if identity != "" {
				f := p.MustFiles(identity)
				files.Cert, files.Key = f.Cert, f.Key
			}
			cfg, err := files.Client(strings.TrimPrefix(m.REST, "https://"))
			if err != nil {
				t.Fatal(err)
			}
			req, err := http.NewRequest(method, m.REST+path, nil)
			if err != nil {
				t.Fatal(err)
			}
			return (&http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: cfg}}).Do(req)
		}
		if resp, err := call(stranger.CAFile, region.PKI(), pki.ClusterService, http.MethodGet); err == nil {
			resp.Body.Close()
			t.Fatal("a client trusting another CA accepted Maestro's certificate")
		}
		// The gate in front of Maestro's REST API (docs/security.md): a region-CA client
		// certificate is required, and only Cluster Service and the admin API are admitted.
		for _, tc := range []struct {
			name, identity, method string
			want                   int // 0: refused at the handshake
		}{
			{"no_client_certificate_refused", "", http.MethodGet, 0},
			{"frontend_refused", pki.Frontend, http.MethodGet, http.StatusForbidden},
			{"agent_refused", pki.MaestroAgent("mgmt-1"), http.MethodGet, http.StatusForbidden},
			{"admin_reads", "admin", http.MethodGet, http.StatusOK},
			{"admin_may_not_write", "admin", http.MethodPost, http.StatusForbidden},
			{"cluster_service_reads", pki.ClusterService, http.MethodGet, http.StatusOK},
		} {
			t.Run(tc.name, func(t *testing.T) {
				resp, err := call(m.CAFile, region.PKI(), tc.identity, tc.method)
				if tc.want == 0 {
					if err == nil {
						resp.Body.Close()
						t.Fatalf("served %d without a client certificate", resp.StatusCode)
					}
					return
				}
				if err != nil {
					t.Fatal(err)
				}
				resp.Body.Close()
				if resp.StatusCode != tc.want {
					t.Fatalf("%s consumers as %q: %d, want %d", tc.method, tc.identity, resp.StatusCode, tc.want)
				}
			})
		}
	})
}

// TestDatabaseLoginsAreConfined checks the services → PostgreSQL hop of the running region: no
// plaintext, no server from another CA, and each service's login opens its own database only.
// The Maestro server's hop leads through the region's PgBouncer, which holds to the same rules
// and knows only Maestro's login and database.
func TestDatabaseLoginsAreConfined(t *testing.T) {
	pg := region.Info.Postgres
	stranger := strangerPKI(t)
	password := func(l string) string {
		t.Helper()
		b, err := os.ReadFile(l)
		if err != nil {
			t.Fatal(err)
		}
		// host:port:db:user:password (the region's passwords have no ':' or '\').
		f := strings.Split(strings.TrimSpace(string(b)), ":")
		return f[len(f)-1]
	}
	if pg.Socket != "" {
		databaseLoginsOverTheSocket(t, pg, password)
		return
	}
	if l, err := pg.Role("maestro"); err != nil || !l.Pooled || pg.BouncerAddr == "" || !strings.Contains(l.DSN, "@"+pg.BouncerAddr+"/") {
		t.Fatalf("the Maestro server does not connect through the bouncer (%s): %+v, %v", pg.BouncerAddr, l, err)
	}
	connect := func(service, db, sslmode, caFile string, viaBouncer bool) error {
		t.Helper()
		l, err := pg.Role(service)
		if err != nil {
			t.Fatal(err)
		}
		dsn := strings.Replace(l.DSN, "/"+l.Database+"?", "/"+db+"?", 1)
		if viaBouncer && !l.Pooled {
			dsn = strings.Replace(dsn, "@"+pg.Addr+"/", "@"+pg.BouncerAddr+"/", 1)
		}
		dsn = strings.Replace(dsn, "sslmode=verify-full", "sslmode="+sslmode, 1)
		cfg, err := pgx.ParseConfig(dsn)
		if err != nil {
			t.Fatal(err)
		}
		if caFile != "" {
			c, err := tlsconfig.Files{CA: caFile}.Client(pg.Addr)
			if err != nil {
				t.Fatal(err)
			}
			cfg.TLSConfig = c
			cfg.TLSConfig.ServerName = "127.0.0.1"
		}
		cfg.Password = password(l.PassFile)
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		conn, err := pgx.ConnectConfig(ctx, cfg)
		if err != nil {
			return err
		}
		defer conn.Close(ctx)
		return conn.Ping(ctx)
	}
	for _, tc := range []struct {
		name, service, db, sslmode, caFile, wantErr string
		viaBouncer                                  bool
	}{
		{"plaintext_refused", "cluster-service", "clusterservice", "disable", "", "no encryption", false},
		{"server_from_an_unknown_ca_refused", "cluster-service", "clusterservice", "verify-full", stranger.CAFile, "certificate", false},
		{"cluster_service_refused_on_the_document_store", "cluster-service", "resourceprovider", "verify-full", "", "permission denied for database", false},
		{"frontend_refused_on_cluster_service_database", "frontend", "clusterservice", "verify-full", "", "permission denied for database", false},
		{"backend_refused_on_maestro_database", "backend", "maestro", "verify-full", "", "permission denied for database", false},
		{"cluster_service_on_its_own_database", "cluster-service", "clusterservice", "verify-full", "", "", false},
		{"backend_on_the_document_store", "backend", "resourceprovider", "verify-full", "", "", false},
		// Through the bouncer (the Maestro server's DSN).
		{"plaintext_to_the_bouncer_refused", "maestro", "maestro", "disable", "", "SSL required", true},
		{"bouncer_from_an_unknown_ca_refused", "maestro", "maestro", "verify-full", stranger.CAFile, "certificate", true},
		{"maestro_refused_on_the_document_store", "maestro", "resourceprovider", "verify-full", "", "no such database", true},
		{"bouncer_refuses_a_login_not_given_to_it", "cluster-service", "clusterservice", "verify-full", "", "SASL authentication failed", true},
		{"maestro_on_its_own_database_through_the_bouncer", "maestro", "maestro", "verify-full", "", "", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			wantLoginOutcome(t, connect(tc.service, tc.db, tc.sslmode, tc.caFile, tc.viaBouncer), tc.wantErr)
		})
	}
	t.Run("no_service_logs_in_as_the_superuser", func(t *testing.T) { noServiceLogsInAsTheSuperuser(t, pg) })
}

// wantLoginOutcome fails t unless err is nil when wantErr is empty, or an error containing
// wantErr otherwise.
func wantLoginOutcome(t *testing.T, err error, wantErr string) {
	t.Helper()
	if wantErr == "" {
		if err != nil {
			t.Fatal(err)
		}
		return
	}
	if err == nil || !strings.Contains(err.Error(), wantErr) {
		t.Fatalf("err %v, want one containing %q", err, wantErr)
	}
}

// noServiceLogsInAsTheSuperuser fails t if a service's login is PostgreSQL's superuser.
func noServiceLogsInAsTheSuperuser(t *testing.T, pg localregion.PostgresInfo) {
	for _, l := range pg.Roles {
		if l.Role == "postgres" || strings.Contains(l.DSN, "postgres@") {
			t.Errorf("%s logs in as the superuser: %s", l.Service, l.DSN)
		}
	}
}

// databaseLoginsOverTheSocket is TestDatabaseLoginsAreConfined for a region whose PostgreSQL
// and PgBouncer have no TCP port (the region runs its services itself): each is reached over a
// Unix socket in a directory no other local user may enter, with a SCRAM password, and each
// login still opens its own database only.
func databaseLoginsOverTheSocket(t *testing.T, pg localregion.PostgresInfo, password func(string) string) {
	if l, err := pg.Role("maestro"); err != nil || !l.Pooled || pg.BouncerSocket == "" || !strings.Contains(l.DSN, url.QueryEscape(pg.BouncerSocket)) {
		t.Fatalf("the Maestro server does not connect through the bouncer's socket (%s): %+v, %v", pg.BouncerSocket, l, err)
	}
	for _, dir := range []string{pg.Socket, pg.BouncerSocket} {
		fi, err := os.Stat(dir)
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode().Perm()&0o077 != 0 {
			t.Errorf("socket directory %s is %v: others may enter it", dir, fi.Mode().Perm())
		}
	}
	connect := func(service, db string, viaBouncer bool) error {
		t.Helper()
		l, err := pg.Role(service)
		if err != nil {
			t.Fatal(err)
		}
		dsn := strings.Replace(l.DSN, "/"+l.Database+"?", "/"+db+"?", 1)
		cfg, err := pgx.ParseConfig(dsn)
		if err != nil {
			t.Fatal(err)
		}
		if viaBouncer && !l.Pooled {
			// The bouncer's socket (the Maestro server's host and port).
			m, _ := pg.Role("maestro")
			mc, err := pgx.ParseConfig(m.DSN)
			if err != nil {
				t.Fatal(err)
			}
			cfg.Host, cfg.Port = mc.Host, mc.Port
		}
		if !strings.HasPrefix(cfg.Host, "/") {
			t.Fatalf("%s's DSN leads to %s, not a Unix socket", service, cfg.Host)
		}
		// Nothing listens on the port the socket is named after.
		if c, err := net.DialTimeout("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(int(cfg.Port))), 2*time.Second); err == nil {
			c.Close()
			t.Errorf("something listens on TCP port %d (the port of %s's socket)", cfg.Port, service)
		}
		cfg.Password = password(l.PassFile)
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		conn, err := pgx.ConnectConfig(ctx, cfg)
		if err != nil {
			return err
		}
		defer conn.Close(ctx)
		return conn.Ping(ctx)
	}
	for _, tc := range []struct {
		name, service, db, wantErr string
		viaBouncer                 bool
	}{
		{"cluster_service_refused_on_the_document_store", "cluster-service", "resourceprovider", "permission denied for database", false},
		{"frontend_refused_on_cluster_service_database", "frontend", "clusterservice", "permission denied for database", false},
		{"backend_refused_on_maestro_database", "backend", "maestro", "permission denied for database", false},
		{"cluster_service_on_its_own_database", "cluster-service", "clusterservice", "", false},
		{"backend_on_the_document_store", "backend", "resourceprovider", "", false},
		// Through the bouncer (the Maestro server's DSN).
		{"maestro_refused_on_the_document_store", "maestro", "resourceprovider", "no such database", true},
		{"bouncer_refuses_a_login_not_given_to_it", "cluster-service", "clusterservice", "SASL authentication failed", true},
		{"maestro_on_its_own_database_through_the_bouncer", "maestro", "maestro", "", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			wantLoginOutcome(t, connect(tc.service, tc.db, tc.viaBouncer), tc.wantErr)
		})
	}
	t.Run("no_service_logs_in_as_the_superuser", func(t *testing.T) { noServiceLogsInAsTheSuperuser(t, pg) })
}
