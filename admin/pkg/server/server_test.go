package server

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/tls"
	"encoding/json"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"

	"github.com/openhcp/openhcp/admin/pkg/access"
	"github.com/openhcp/openhcp/admin/pkg/adminapi"
	"github.com/openhcp/openhcp/admin/pkg/approval"
	"github.com/openhcp/openhcp/admin/pkg/audit"
	"github.com/openhcp/openhcp/admin/pkg/revocation"
	"github.com/openhcp/openhcp/admin/pkg/session"
	csv1 "github.com/openhcp/openhcp/cluster-service/api/v1"
	"github.com/openhcp/openhcp/cluster-service/pkg/authz"
	csserver "github.com/openhcp/openhcp/cluster-service/pkg/server"
	csstore "github.com/openhcp/openhcp/cluster-service/pkg/store"
	"github.com/openhcp/openhcp/internal/docstore/postgres"
	"github.com/openhcp/openhcp/internal/envelope/envelopetest"
	"github.com/openhcp/openhcp/internal/identity"
	"github.com/openhcp/openhcp/internal/pgserver/pgservertest"
	"github.com/openhcp/openhcp/internal/pki"
	"github.com/openhcp/openhcp/internal/tlsconfig"
)

// env is the admin API over real parts: PostgreSQL (audit log and document store), an
// in-process Cluster Service with its own database, and a TLS listener that verifies client
// certificates against a real client CA.
type env struct {
	url    string
	pki    *pki.Region
	log    *audit.Log
	shards csv1.ProvisionShardsClient
	// clusters and pools call Cluster Service as the frontend, to seed what customers made.
	clusters csv1.ClustersClient
	pools    csv1.NodePoolsClient
	docs     *postgres.Store
	docsDSN  string // the document store's DSN as its superuser (the owner)
	logDir   string
	srv      *Server
	// csdb is Cluster Service's store, for tests that play its controller (status writes).
	csdb *csstore.Store
	// auditSU is the audit database's DSN as its superuser, for tests that break its grants.
	auditSU string
	// sessions is the break-glass session store, to read what a session holds.
	sessions *session.Store
	// statementPub verifies what the admin API signs (break-glass statements, maintenance requests).
	statementPub ed25519.PublicKey
}

// start starts the admin API over real parts; opts change its Config before New.
func start(t *testing.T, opts ...func(*Config)) *env {
	t.Helper()
	ctx := context.Background()
	pg := pgservertest.Start(t)

	// The audit log, installed by the superuser, appended to by a login that may do no more.
	auditDSN := pgservertest.NewDatabase(t, pg)
	su, err := pgx.Connect(ctx, auditDSN)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := su.Exec(ctx, "DO $$ BEGIN IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'adminsvc') THEN CREATE ROLE adminsvc LOGIN; END IF; END $$"); err != nil {
		t.Fatal(err)
	}
	if err := audit.Install(ctx, su, "adminsvc"); err != nil {
		t.Fatal(err)
	}
	if err := revocation.Install(ctx, su, "adminsvc"); err != nil {
		t.Fatal(err)
	}
	if err := approval.Install(ctx, su, "adminsvc"); err != nil {
		t.Fatal(err)
	}
	if err := session.Install(ctx, su, "adminsvc"); err != nil {
		t.Fatal(err)
	}
	su.Close(ctx)
	log, err := audit.Open(ctx, strings.Replace(auditDSN, "postgres://postgres@", "postgres://adminsvc@", 1))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(log.Close)

	docsDSN := pgservertest.NewDatabase(t, pg)
	docs, err := postgres.Open(ctx, docsDSN, postgres.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(docs.Close)

	csDB, err := csstore.Open(ctx, pgservertest.NewDatabase(t, pg), slog.Default(), envelopetest.Keyring(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(csDB.Close)
	// Cluster Service as in the region: mutual TLS, authz.Table enforced, the admin API calling
	// as sre and its statements verified with the admin API's public key.
	p, err := pki.Create(filepath.Join(t.TempDir(), "pki"), pki.Options{})
	if err != nil {
		t.Fatal(err)
	}
	statementPub, statementKey, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	csFiles := p.MustFiles(pki.ClusterService)
	csTLS, err := tlsconfig.Files{Cert: csFiles.Cert, Key: csFiles.Key, CA: p.CAFile}.Server("127.0.0.1:0", "h2")
	if err != nil {
		t.Fatal(err)
	}
	cs := csserver.New(csDB, csserver.Config{KeepAlive: 200 * time.Millisecond, SREStatementKey: statementPub})
	g := grpc.NewServer(append(append(cs.ServerOptions(), grpc.Creds(credentials.NewTLS(csTLS))), authz.ServerOptions(identity.DefaultTrustDomain)...)...)
	cs.Register(g)
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go g.Serve(lis) //nolint:errcheck
	t.Cleanup(g.Stop)
	sreFiles := p.MustFiles(pki.SRE)
	asSRE, err := tlsconfig.Files{CA: p.CAFile, Cert: sreFiles.Cert, Key: sreFiles.Key, ServerName: pki.ServerName(pki.ClusterService)}.Client(lis.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	conn, err := grpc.NewClient(lis.Addr().String(), grpc.WithTransportCredentials(credentials.NewTLS(asSRE)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	// Tests seed clusters and node pools as a customer would, through the frontend's identity.
	feFiles := p.MustFiles(pki.Frontend)
	asFrontend, err := tlsconfig.Files{CA: p.CAFile, Cert: feFiles.Cert, Key: feFiles.Key, ServerName: pki.ServerName(pki.ClusterService)}.Client(lis.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	feConn, err := grpc.NewClient(lis.Addr().String(), grpc.WithTransportCredentials(credentials.NewTLS(asFrontend)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { feConn.Close() })
	shards := csv1.NewProvisionShardsClient(conn)
	for _, name := range []string{"mgmt-1", "mgmt-2"} {
		if _, err := shards.RegisterShard(ctx, &csv1.RegisterShardRequest{Shard: &csv1.ProvisionShard{Name: name, MaxClusters: 4}}); err != nil {
			t.Fatal(err)
		}
	}

	logDir := t.TempDir()
	approvals := approval.New(log.Pool())
	if err := approvals.Check(ctx); err != nil {
		t.Fatal(err)
	}
	revs := revocation.New(log.Pool())
	if err := revs.Check(ctx); err != nil {
		t.Fatal(err)
	}
	sessionKey, err := session.NewKey(make([]byte, 32))
	if err != nil {
		t.Fatal(err)
	}
	sessions := session.New(log.Pool(), sessionKey)
	if err := sessions.Check(ctx); err != nil {
		t.Fatal(err)
	}
	cfg := Config{Audit: log, Revocations: revs, Store: docs, Sessions: sessions, GatewayURL: "https://gateway.test:8445", Clusters: csv1.NewClustersClient(conn), NodePools: csv1.NewNodePoolsClient(conn), Shards: shards,
		ExternalAuths: csv1.NewExternalAuthsClient(conn), UpgradePolicies: csv1.NewUpgradePoliciesClient(conn), LogDir: logDir,
		Credentials: csv1.NewCredentialsClient(conn), StatementKey: statementKey, Approvals: approvals}
	// The listener first: the admin API's own URL (its origin) is configured, as --url is.
	var handler http.Handler
	ts := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { handler.ServeHTTP(w, r) }))
	cfg.URLs = []string{"https://" + ts.Listener.Addr().String()}
	for _, o := range opts {
		o(&cfg)
	}
	srv, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	handler = srv.Handler()
	for name, group := range map[string]string{"alice": access.GroupAdmin, "bob": access.GroupReadOnly, "carol": access.GroupAdmin, "mallory": "sre-wannabe"} {
		if err := p.AddPerson(name, name, group); err != nil {
			t.Fatal(err)
		}
	}
	if err := p.Add("admin", pki.Spec{CommonName: "admin", Usage: pki.Server}, pki.ServiceCA); err != nil {
		t.Fatal(err)
	}
	sf := p.MustFiles("admin")
	ts.TLS, err = tlsconfig.Files{Cert: sf.Cert, Key: sf.Key, CA: p.PersonCAFile}.ServerClientAuth("127.0.0.1:0", tls.VerifyClientCertIfGiven)
	if err != nil {
		t.Fatal(err)
	}
	ts.StartTLS()
	t.Cleanup(ts.Close)
	return &env{url: ts.URL, sessions: sessions, pki: p, log: log, shards: shards, clusters: csv1.NewClustersClient(feConn), pools: csv1.NewNodePoolsClient(feConn), docs: docs, docsDSN: docsDSN, logDir: logDir, srv: srv, csdb: csDB, auditSU: auditDSN, statementPub: statementPub}
}

// as returns an HTTP client presenting identity's certificate ("" for none).
func (e *env) as(t *testing.T, identity string) *http.Client {
	t.Helper()
	f := tlsconfig.Files{CA: e.pki.CAFile, ServerName: pki.ServerName("admin")}
	if identity != "" {
		id := e.pki.MustFiles(identity)
		f.Cert, f.Key = id.Cert, id.Key
	}
	cfg, err := f.Client(strings.TrimPrefix(e.url, "https://"))
	if err != nil {
		t.Fatal(err)
	}
	return &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: cfg}}
}

func (e *env) call(t *testing.T, identity, method, path, body string, hdr ...string) (int, adminapi.Error, []byte) {
	t.Helper()
	req, err := http.NewRequest(method, e.url+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	// By default a mutating call is sent as hcpctl sends it (adminapi.Client); a header given
	// with an empty value is left out.
	if method != "GET" && method != "HEAD" {
		req.Header.Set(adminapi.HeaderClient, "server-test")
		if body != "" {
			req.Header.Set("Content-Type", "application/json")
		}
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		if http.CanonicalHeaderKey(hdr[i]) == "Host" {
			req.Host = hdr[i+1] // the name the caller's URL had (DNS rebinding: another's)
			continue
		}
		if hdr[i+1] == "" {
			req.Header.Del(hdr[i])
			continue
		}
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := e.as(t, identity).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	var ae adminapi.Error
	if resp.StatusCode >= 400 && !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/html") {
		if err := json.Unmarshal(b, &ae); err != nil || ae.Code == "" || ae.Message == "" {
			t.Fatalf("%s %s: error body is not {code,message}: %s", method, path, b)
		}
	}
	return resp.StatusCode, ae, b
}

func (e *env) shardStatus(t *testing.T, name string) csv1.ShardStatus {
	t.Helper()
	resp, err := e.shards.ListShards(context.Background(), &csv1.ListShardsRequest{})
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range resp.GetShards() {
		if s.GetName() == name {
			return s.GetStatus()
		}
	}
	t.Fatalf("no shard %s", name)
	return 0
}

func (e *env) lastAudit(t *testing.T, f audit.Filter) []audit.Entry {
	t.Helper()
	got, _, err := e.log.Query(context.Background(), f)
	if err != nil {
		t.Fatal(err)
	}
	return got
}

func TestIdentityAuthorizationAndAudit(t *testing.T) {
	e := start(t)
	// Only the SRE persons' CA is trusted: ARM's certificate and the workloads' (the sre workload
	// included) fail the handshake.
	for _, id := range []string{pki.ARM, pki.SRE} {
		t.Run(id+"_certificate_fails_the_handshake", func(t *testing.T) {
			req, _ := http.NewRequest(http.MethodGet, e.url+"/admin/v1/shards", nil)
			if resp, err := e.as(t, id).Do(req); err == nil {
				resp.Body.Close()
				t.Fatalf("%s got %d; want a handshake failure", id, resp.StatusCode)
			}
		})
	}
	cordon := `{"reason":"disk pressure on mgmt-1"}`
	for _, tc := range []struct {
		name, identity, method, path, body string
		want                               int
		wantCode                           string
		outcome                            string
		person                             string
	}{
		{"no_certificate_is_401", "", "GET", "/admin/v1/shards", "", 401, adminapi.CodeUnauthenticated, audit.Unauthenticated, ""},
		{"unknown_group_is_401", "mallory", "GET", "/admin/v1/shards", "", 401, adminapi.CodeUnauthenticated, audit.Unauthenticated, ""},
		{"readonly_may_not_cordon_403", "bob", "POST", "/admin/v1/shards/mgmt-1/cordon", cordon, 403, adminapi.CodeForbidden, audit.Forbidden, "bob"},
		{"no_certificate_cordon_is_401", "", "POST", "/admin/v1/shards/mgmt-1/cordon", cordon, 401, adminapi.CodeUnauthenticated, audit.Unauthenticated, ""},
		{"readonly_may_list_shards", "bob", "GET", "/admin/v1/shards", "", 200, "", audit.Completed, "bob"},
		{"unknown_route_is_404_and_audited", "bob", "GET", "/admin/v1/nothing", "", 404, adminapi.CodeNotFound, audit.Completed, "bob"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cid := "cid-" + tc.name
			code, ae, body := e.call(t, tc.identity, tc.method, tc.path, tc.body, adminapi.HeaderCorrelationID, cid)
			if code != tc.want || ae.Code != tc.wantCode {
				t.Fatalf("status %d code %q, want %d %q: %s", code, ae.Code, tc.want, tc.wantCode, body)
			}
			if code >= 400 && code < 404 && (strings.Contains(string(body), "mgmt-2") || strings.Contains(string(body), "maxClusters")) {
				t.Fatalf("a refused call got data: %s", body)
			}
			recs := e.lastAudit(t, audit.Filter{CorrelationID: cid})
			if len(recs) == 0 || recs[0].Outcome != tc.outcome || recs[0].Person != tc.person || recs[len(recs)-1].Path != tc.path {
				t.Fatalf("audit records %+v, want newest outcome %s by %q", recs, tc.outcome, tc.person)
			}
			if tc.outcome == audit.Completed && (len(recs) != 2 || recs[1].Outcome != audit.Allowed || recs[0].Status != tc.want) {
				t.Fatalf("an allowed call has an Allowed record before a Completed one with its status: %+v", recs)
			}
		})
	}
	if got := e.shardStatus(t, "mgmt-1"); got != csv1.ShardStatus_SHARD_STATUS_ACTIVE {
		t.Fatalf("refused cordons changed the shard: %s", got)
	}
	t.Run("refused_callers_are_named_by_their_subject", func(t *testing.T) {
		recs := e.lastAudit(t, audit.Filter{CorrelationID: "cid-unknown_group_is_401"})
		if len(recs) != 1 || !strings.Contains(recs[0].Subject, "CN=mallory") {
			t.Fatalf("records %+v", recs)
		}
	})
}

func TestShardChanges(t *testing.T) {
	e := start(t)
	t.Run("cordon_needs_a_reason_400_naming_it", func(t *testing.T) {
		for _, body := range []string{"", `{}`, `{"reason":"  "}`} {
			code, ae, _ := e.call(t, "alice", "POST", "/admin/v1/shards/mgmt-1/cordon", body)
			if code != 400 || ae.Target != "reason" {
				t.Fatalf("body %q: %d %+v", body, code, ae)
			}
		}
	})
	t.Run("cordon_of_an_unknown_shard_is_400_naming_it", func(t *testing.T) {
		code, ae, _ := e.call(t, "alice", "POST", "/admin/v1/shards/mgmt-9/cordon", `{"reason":"x"}`)
		if code != 400 || ae.Target != "name" || !strings.Contains(ae.Message, `"mgmt-9"`) {
			t.Fatalf("%d %+v", code, ae)
		}
	})
	t.Run("bad_status_is_400_naming_it", func(t *testing.T) {
		code, ae, _ := e.call(t, "alice", "PUT", "/admin/v1/shards/mgmt-1/status", `{"reason":"x","status":"Drained"}`)
		if code != 400 || ae.Target != "status" {
			t.Fatalf("%d %+v", code, ae)
		}
	})
	t.Run("cordon_by_admin_changes_the_shard_and_is_audited_with_its_reason", func(t *testing.T) {
		code, _, body := e.call(t, "alice", "POST", "/admin/v1/shards/mgmt-1/cordon", `{"reason":"disk pressure"}`, adminapi.HeaderCorrelationID, "cid-cordon")
		var sh adminapi.Shard
		if code != 200 || json.Unmarshal(body, &sh) != nil || sh.Status != "maintenance" || sh.ETag != `"maintenance"` {
			t.Fatalf("%d %s", code, body)
		}
		if got := e.shardStatus(t, "mgmt-1"); got != csv1.ShardStatus_SHARD_STATUS_MAINTENANCE {
			t.Fatalf("shard is %s", got)
		}
		recs := e.lastAudit(t, audit.Filter{CorrelationID: "cid-cordon"})
		if len(recs) != 2 || recs[1].Outcome != audit.Allowed || recs[1].Reason != "disk pressure" || recs[1].Target != "mgmt-1" ||
			recs[1].Person != "alice" || recs[1].Group != access.GroupAdmin || recs[0].Status != 200 {
			t.Fatalf("audit %+v", recs)
		}
	})
	t.Run("stale_if_match_is_412_and_changes_nothing", func(t *testing.T) {
		code, ae, _ := e.call(t, "alice", "POST", "/admin/v1/shards/mgmt-1/uncordon", `{"reason":"x"}`, "If-Match", `"active"`)
		if code != 412 || ae.Target != "If-Match" {
			t.Fatalf("%d %+v", code, ae)
		}
		if got := e.shardStatus(t, "mgmt-1"); got != csv1.ShardStatus_SHARD_STATUS_MAINTENANCE {
			t.Fatalf("shard is %s", got)
		}
	})
	t.Run("matching_if_match_uncordons", func(t *testing.T) {
		code, _, body := e.call(t, "alice", "POST", "/admin/v1/shards/mgmt-1/uncordon", `{"reason":"disk replaced"}`, "If-Match", `"maintenance"`)
		if code != 200 || e.shardStatus(t, "mgmt-1") != csv1.ShardStatus_SHARD_STATUS_ACTIVE {
			t.Fatalf("%d %s", code, body)
		}
	})
	t.Run("no_audit_no_effect_503", func(t *testing.T) {
		e.log.Close() // the audit database is gone
		code, ae, _ := e.call(t, "alice", "POST", "/admin/v1/shards/mgmt-2/cordon", `{"reason":"x"}`)
		if code != 503 || ae.Code != adminapi.CodeAuditUnavailable {
			t.Fatalf("%d %+v", code, ae)
		}
		if got := e.shardStatus(t, "mgmt-2"); got != csv1.ShardStatus_SHARD_STATUS_ACTIVE {
			t.Fatalf("an unaudited call took effect: shard is %s", got)
		}
	})
}

func TestAuditRouteFilters(t *testing.T) {
	e := start(t)
	e.call(t, "bob", "GET", "/admin/v1/shards", "", adminapi.HeaderCorrelationID, "one")
	e.call(t, "", "GET", "/admin/v1/shards", "", adminapi.HeaderCorrelationID, "two")
	for _, tc := range []struct {
		query string
		want  int
		n     int
	}{
		{"?correlationId=one", 200, 2},
		{"?correlationId=two&outcome=unauthenticated", 200, 1},
		{"?person=bob&outcome=allowed&route=GET%20/admin/v1/shards", 200, 1},
		{"?outcome=maybe", 400, 0},
		{"?since=yesterday", 400, 0},
		{"?pageSize=0", 400, 0},
		{"?pageToken=zz", 400, 0},
		{"?colour=red", 400, 0},
	} {
		t.Run(tc.query, func(t *testing.T) {
			code, _, body := e.call(t, "bob", "GET", "/admin/v1/audit"+tc.query, "")
			if code != tc.want {
				t.Fatalf("%d %s", code, body)
			}
			if code != 200 {
				return
			}
			var l adminapi.AuditList
			if err := json.Unmarshal(body, &l); err != nil || len(l.Entries) != tc.n {
				t.Fatalf("%d entries, want %d: %s", len(l.Entries), tc.n, body)
			}
		})
	}
}

func TestMain(m *testing.M) {
	slog.SetDefault(slog.New(slog.NewTextHandler(io.Discard, nil)))
	os.Exit(m.Run())
}

func TestPortal(t *testing.T) {
	e := start(t)
	host := strings.TrimPrefix(e.url, "https://")
	form := "application/x-www-form-urlencoded"
	t.Run("pages_render_for_a_reader", func(t *testing.T) {
		for path, want := range map[string]string{"/portal/": "Shard capacity", "/portal/shards": "mgmt-2", "/portal/audit": "Audit log"} {
			code, _, body := e.call(t, "bob", "GET", path, "")
			if code != 200 || !strings.Contains(string(body), want) || !strings.Contains(string(body), "bob (sre-readonly)") {
				t.Errorf("%s: %d %.300s", path, code, body)
			}
		}
	})
	t.Run("pages_refuse_without_identity", func(t *testing.T) {
		// A page, not the API's JSON: a person in a browser reads what to do.
		if code, _, body := e.call(t, "", "GET", "/portal/", ""); code != 401 || strings.Contains(string(body), "mgmt-1") ||
			!strings.Contains(string(body), "The portal admits SREs only") || !strings.Contains(string(body), "not identified") {
			t.Fatalf("%d %s", code, body)
		}
	})
	t.Run("cross_site_form_is_refused_and_changes_nothing", func(t *testing.T) {
		for _, origin := range []string{"", "https://evil.example", "http://" + host} {
			code, _, body := e.call(t, "alice", "POST", "/portal/shards/mgmt-1/cordon", "reason=x", "Content-Type", form, "Origin", origin)
			if code != 403 || !strings.Contains(string(body), "(at <code>Origin</code>)") {
				t.Fatalf("Origin %q: %d %s", origin, code, body)
			}
		}
		if got := e.shardStatus(t, "mgmt-1"); got != csv1.ShardStatus_SHARD_STATUS_ACTIVE {
			t.Fatalf("shard is %s", got)
		}
	})
	t.Run("readonly_form_is_forbidden", func(t *testing.T) {
		code, _, body := e.call(t, "bob", "POST", "/portal/shards/mgmt-1/cordon", "reason=x", "Content-Type", form, "Origin", "https://"+host)
		if code != 403 || e.shardStatus(t, "mgmt-1") != csv1.ShardStatus_SHARD_STATUS_ACTIVE ||
			!strings.Contains(string(body), `group &#34;sre-readonly&#34; may not`) || !strings.Contains(string(body), "bob (sre-readonly)") {
			t.Fatalf("%d %s", code, body)
		}
	})
	token := e.portalToken(t, "alice")
	t.Run("stale_page_changes_nothing", func(t *testing.T) {
		code, _, body := e.call(t, "alice", "POST", "/portal/shards/mgmt-1/cordon", `reason=x&etag="maintenance"&csrf=`+token, "Content-Type", form, "Origin", "https://"+host)
		if code != 412 || !strings.Contains(string(body), "id=\"error\"") || e.shardStatus(t, "mgmt-1") != csv1.ShardStatus_SHARD_STATUS_ACTIVE {
			t.Fatalf("%d %s", code, body)
		}
	})
	t.Run("own_form_cordons_and_is_audited", func(t *testing.T) {
		code, _, body := e.call(t, "alice", "POST", "/portal/shards/mgmt-1/cordon", `reason=from+the+portal&etag="active"&csrf=`+token, "Content-Type", form, "Origin", "https://"+host, adminapi.HeaderCorrelationID, "portal-form")
		if code != 200 || !strings.Contains(string(body), "Shard mgmt-1 is now maintenance.") || e.shardStatus(t, "mgmt-1") != csv1.ShardStatus_SHARD_STATUS_MAINTENANCE {
			t.Fatalf("%d %s", code, body)
		}
		recs := e.lastAudit(t, audit.Filter{CorrelationID: "portal-form"})
		if len(recs) != 2 || recs[1].Reason != "from the portal" || recs[1].Route != "POST /portal/shards/{name}/cordon" {
			t.Fatalf("%+v", recs)
		}
	})
}

func TestRevocation(t *testing.T) {
	e := start(t)
	if code, _, _ := e.call(t, "bob", "GET", "/admin/v1/shards", ""); code != 200 {
		t.Fatalf("bob before: %d", code)
	}
	if code, ae, _ := e.call(t, "bob", "POST", "/admin/v1/revocations/alice", `{"reason":"x"}`); code != 403 {
		t.Fatalf("read-only revoking: %d %+v", code, ae)
	}
	if code, ae, _ := e.call(t, "alice", "POST", "/admin/v1/revocations/bob", `{}`); code != 400 || ae.Target != "reason" {
		t.Fatalf("no reason: %d %+v", code, ae)
	}
	// Only a name that access.Identify admits is revocable, and every such name is.
	for _, person := range []string{"b%20ob", "sre.", "SRE", "Cluster-Service", "a%E2%80%8Bdmin", "%D1%95re", "bob.", strings.Repeat("b", 129)} {
		if code, ae, _ := e.call(t, "alice", "POST", "/admin/v1/revocations/"+person, `{"reason":"x"}`); code != 400 || ae.Target != "person" {
			t.Fatalf("revoking %q, not a person's name: %d %+v", person, code, ae)
		}
	}
	code, ae, body := e.call(t, "alice", "POST", "/admin/v1/revocations/bob", `{"reason":"INC-7: laptop stolen"}`)
	if code != 200 || !strings.Contains(string(body), "INC-7: laptop stolen") || !strings.Contains(string(body), "alice (sre-admin)") {
		t.Fatalf("revoke: %d %+v %s", code, ae, body)
	}
	code, ae, body = e.call(t, "bob", "GET", "/admin/v1/shards", "", adminapi.HeaderCorrelationID, "after-revoke")
	if code != 401 || !strings.Contains(ae.Message, "revoked") || strings.Contains(string(body), "mgmt-1") {
		t.Fatalf("bob after revocation: %d %+v", code, ae)
	}
	recs := e.lastAudit(t, audit.Filter{CorrelationID: "after-revoke"})
	if len(recs) != 1 || recs[0].Outcome != audit.Unauthenticated || recs[0].Person != "bob" {
		t.Fatalf("the refused call of a revoked SRE is audited under their name: %+v", recs)
	}
	if code, _, body := e.call(t, "alice", "GET", "/admin/v1/revocations", ""); code != 200 || !strings.Contains(string(body), `"person": "bob"`) {
		t.Fatalf("list: %d %s", code, body)
	}
}

// TestUnreadableRevocationListIsAnAuditedRefusal takes the service's SELECT on the revocation
// list away (the audit log stays writable): the admin API cannot tell whether the caller was
// revoked, so it serves nothing — 503, no data — and records the refusal like every other.
func TestUnreadableRevocationListIsAnAuditedRefusal(t *testing.T) {
	e := start(t)
	ctx := context.Background()
	su, err := pgx.Connect(ctx, e.auditSU)
	if err != nil {
		t.Fatal(err)
	}
	defer su.Close(ctx)
	if _, err := su.Exec(ctx, "REVOKE SELECT ON admin_revocations FROM adminsvc"); err != nil {
		t.Fatal(err)
	}
	const cid = "cid-revocations-unreadable"
	code, ae, body := e.call(t, "alice", "GET", "/admin/v1/shards", "", adminapi.HeaderCorrelationID, cid)
	if code != http.StatusServiceUnavailable || strings.Contains(string(body), "mgmt-1") {
		t.Fatalf("status %d %+v, want 503 without data: %s", code, ae, body)
	}
	recs := e.lastAudit(t, audit.Filter{CorrelationID: cid})
	if len(recs) != 1 || recs[0].Outcome != audit.Unauthenticated || recs[0].Status != http.StatusServiceUnavailable || recs[0].Person != "alice" {
		t.Fatalf("audit records %+v, want one unauthenticated 503 by alice", recs)
	}
	if _, err := su.Exec(ctx, "GRANT SELECT ON admin_revocations TO adminsvc"); err != nil {
		t.Fatal(err)
	}
	if code, ae, _ := e.call(t, "alice", "GET", "/admin/v1/shards", ""); code != http.StatusOK {
		t.Fatalf("after the grant is back: status %d %+v, want 200", code, ae)
	}
}
