package server

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"log/slog"
	"net"
	"path/filepath"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/prometheus/client_golang/prometheus"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	grpccreds "google.golang.org/grpc/credentials"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	csv1 "github.com/openhcp/openhcp/cluster-service/api/v1"
	"github.com/openhcp/openhcp/cluster-service/pkg/authz"
	"github.com/openhcp/openhcp/cluster-service/pkg/srestatement"
	"github.com/openhcp/openhcp/cluster-service/pkg/store"
	"github.com/openhcp/openhcp/internal/envelope/envelopetest"
	"github.com/openhcp/openhcp/internal/identity"
	"github.com/openhcp/openhcp/internal/pgserver/pgservertest"
	"github.com/openhcp/openhcp/internal/pki"
	"github.com/openhcp/openhcp/internal/tlsconfig"
)

// mtlsEnv is Cluster Service as it runs in the region: mutual TLS with the region's PKI and
// authz.Table enforced, over real PostgreSQL; one client connection per identity.
type mtlsEnv struct {
	st  *store.Store
	dsn string
	// as holds a connection per identity (pki.Frontend, pki.Backend, pki.SRE, pki.Maintenance).
	as map[string]*grpc.ClientConn
	// statementKey signs statements as the admin API does.
	statementKey ed25519.PrivateKey
}

func startMTLS(t *testing.T) *mtlsEnv {
	t.Helper()
	pg := pgservertest.Start(t)
	dsn := pgservertest.NewDatabase(t, pg)
	st, err := store.Open(context.Background(), dsn, slog.Default(), envelopetest.Keyring(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(st.Close)
	pub, key, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	p, err := pki.Create(filepath.Join(t.TempDir(), "pki"), pki.Options{})
	if err != nil {
		t.Fatal(err)
	}
	sf := p.MustFiles(pki.ClusterService)
	serverTLS, err := tlsconfig.Files{Cert: sf.Cert, Key: sf.Key, CA: p.CAFile}.Server("127.0.0.1:0", "h2")
	if err != nil {
		t.Fatal(err)
	}
	srv := New(st, Config{Log: slog.Default(), Registerer: prometheus.NewRegistry(), KeepAlive: 200 * time.Millisecond, SREStatementKey: pub})
	g := grpc.NewServer(append(append(srv.ServerOptions(), grpc.Creds(grpccreds.NewTLS(serverTLS))), authz.ServerOptions(identity.DefaultTrustDomain)...)...)
	srv.Register(g)
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go g.Serve(lis) //nolint:errcheck
	t.Cleanup(g.Stop)
	e := &mtlsEnv{st: st, dsn: dsn, as: map[string]*grpc.ClientConn{}, statementKey: key}
	for _, id := range []string{pki.Frontend, pki.Backend, pki.SRE, pki.Maintenance} {
		f := p.MustFiles(id)
		cfg, err := tlsconfig.Files{CA: p.CAFile, Cert: f.Cert, Key: f.Key, ServerName: pki.ServerName(pki.ClusterService)}.Client(lis.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		conn, err := grpc.NewClient(lis.Addr().String(), grpc.WithTransportCredentials(grpccreds.NewTLS(cfg)))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { conn.Close() })
		e.as[id] = conn
	}
	return e
}

func (e *mtlsEnv) creds(identity string) csv1.CredentialsClient {
	return csv1.NewCredentialsClient(e.as[identity])
}

// requestReadOnlySRE asks, as the sre identity, for alice's read-only SRE credential credID on
// cluster with a statement the admin API's key signed for it now. It returns the credential asked
// for, its statement and Cluster Service's answer.
func (e *mtlsEnv) requestReadOnlySRE(t *testing.T, cluster, credID string) (*csv1.SRECredential, *csv1.SignedSREStatement, error) {
	t.Helper()
	sre := &csv1.SRECredential{Person: "alice", Access: csv1.SREAccess_SRE_ACCESS_READ_ONLY, ValiditySeconds: 3600, Reason: "look"}
	signed, err := srestatement.Sign(e.statementKey, &csv1.SREStatement{Person: "alice", ClusterId: cluster, CredentialId: credID,
		Access: sre.Access, ValiditySeconds: sre.ValiditySeconds, Reason: sre.Reason}, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	_, err = e.creds(pki.SRE).RequestCredential(context.Background(), &csv1.RequestCredentialRequest{Id: credID, ClusterId: cluster, Sre: sre, SreStatement: signed})
	return sre, signed, err
}

// customerAndSRECredentials issues one credential of each kind on cluster: customerID through the
// frontend and the read-only SRE credential sreID through the sre identity. It returns the SRE
// credential asked for and its signed statement, for tests that present it again.
func (e *mtlsEnv) customerAndSRECredentials(t *testing.T, cluster, customerID, sreID string) (*csv1.SRECredential, *csv1.SignedSREStatement) {
	t.Helper()
	if _, err := e.creds(pki.Frontend).RequestCredential(context.Background(), &csv1.RequestCredentialRequest{Id: customerID, ClusterId: cluster}); err != nil {
		t.Fatal(err)
	}
	sre, signed, err := e.requestReadOnlySRE(t, cluster, sreID)
	if err != nil {
		t.Fatal(err)
	}
	return sre, signed
}

// readyCluster creates cluster n through the frontend and marks it READY, as the controller
// would once its control plane runs.
func (e *mtlsEnv) readyCluster(t *testing.T, n int) string {
	t.Helper()
	ctx := context.Background()
	if n == 1 {
		if _, err := csv1.NewProvisionShardsClient(e.as[pki.SRE]).RegisterShard(ctx, &csv1.RegisterShardRequest{Shard: &csv1.ProvisionShard{Name: "mc-1", MaxClusters: 10}}); err != nil {
			t.Fatal(err)
		}
	}
	c, err := csv1.NewClustersClient(e.as[pki.Frontend]).CreateCluster(ctx, &csv1.CreateClusterRequest{Cluster: validCluster(n, "c"+id(n)[28:])})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.st.UpdateStatus(ctx, c.GetId(), c.GetRevision(), &csv1.ClusterStatus{State: csv1.ClusterState_CLUSTER_STATE_READY}); err != nil {
		t.Fatal(err)
	}
	return c.GetId()
}

// auditRows reads Cluster Service's credential audit of a cluster straight from the table.
func (e *mtlsEnv) auditRows(t *testing.T, cluster string) []store.CredentialAudit {
	t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, e.dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	rows, err := conn.Query(ctx, `SELECT credential_id, identity, for_whom, kind, validity_seconds, reason, approver FROM credential_audit WHERE cluster_id = $1 ORDER BY id`, cluster)
	if err != nil {
		t.Fatalf("read credential_audit: %v", err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (store.CredentialAudit, error) {
		var a store.CredentialAudit
		return a, r.Scan(&a.CredentialID, &a.Identity, &a.ForWhom, &a.Kind, &a.ValiditySeconds, &a.Reason, &a.Approver)
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestSRECredentialNeedsSignedStatement: the sre identity gets an SRE credential only for a
// statement the admin API signed that names this very request; anything else is
// PermissionDenied, issues nothing and writes no audit record. A valid one issues the
// credential and writes one audit record naming the person.
func TestSRECredentialNeedsSignedStatement(t *testing.T) {
	e := startMTLS(t)
	ctx := context.Background()
	cluster, other := e.readyCluster(t, 1), e.readyCluster(t, 2)
	sre := &csv1.SRECredential{Person: "alice", Access: csv1.SREAccess_SRE_ACCESS_ADMIN, ValiditySeconds: 3600, Reason: "INC-1: etcd", Approver: "carol"}
	statement := func(credID, clusterID string, mutate func(*csv1.SREStatement)) *csv1.SREStatement {
		st := &csv1.SREStatement{Person: "alice", Group: "sre-admin", ClusterId: clusterID, CredentialId: credID, Access: sre.Access,
			ValiditySeconds: sre.ValiditySeconds, Reason: sre.Reason, Approver: "carol", RequestId: "req-1"}
		if mutate != nil {
			mutate(st)
		}
		return st
	}
	sign := func(st *csv1.SREStatement, key ed25519.PrivateKey, at time.Time) *csv1.SignedSREStatement {
		s, err := srestatement.Sign(key, st, at)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	_, strangerKey, _ := ed25519.GenerateKey(rand.Reader)
	now := time.Now()
	for n, tc := range []struct {
		name   string
		sre    *csv1.SRECredential
		signed func(credID string) *csv1.SignedSREStatement
	}{
		{"bare_person_field_without_statement", sre, func(string) *csv1.SignedSREStatement { return nil }},
		{"bare_person_nobody", &csv1.SRECredential{Person: "nobody", Access: csv1.SREAccess_SRE_ACCESS_ADMIN, ValiditySeconds: 3600},
			func(string) *csv1.SignedSREStatement { return nil }},
		{"statement_for_another_cluster", sre, func(c string) *csv1.SignedSREStatement { return sign(statement(c, other, nil), e.statementKey, now) }},
		{"statement_for_another_credential_replayed", sre, func(string) *csv1.SignedSREStatement {
			return sign(statement(id(999), cluster, nil), e.statementKey, now)
		}},
		{"statement_for_read_only_used_for_admin", sre, func(c string) *csv1.SignedSREStatement {
			return sign(statement(c, cluster, func(s *csv1.SREStatement) { s.Access = csv1.SREAccess_SRE_ACCESS_READ_ONLY }), e.statementKey, now)
		}},
		{"statement_for_another_person", sre, func(c string) *csv1.SignedSREStatement {
			return sign(statement(c, cluster, func(s *csv1.SREStatement) { s.Person = "bob" }), e.statementKey, now)
		}},
		{"expired_statement", sre, func(c string) *csv1.SignedSREStatement {
			return sign(statement(c, cluster, nil), e.statementKey, now.Add(-10*time.Minute))
		}},
		{"statement_signed_by_another_key", sre, func(c string) *csv1.SignedSREStatement { return sign(statement(c, cluster, nil), strangerKey, now) }},
		{"tampered_statement", sre, func(c string) *csv1.SignedSREStatement {
			s := sign(statement(c, cluster, nil), e.statementKey, now)
			st := &csv1.SREStatement{}
			if err := proto.Unmarshal(s.Statement, st); err != nil {
				t.Fatal(err)
			}
			st.ValiditySeconds = 8 * 3600
			s.Statement, _ = proto.MarshalOptions{Deterministic: true}.Marshal(st)
			return s
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			credID := id(100 + n)
			_, err := e.creds(pki.SRE).RequestCredential(ctx, &csv1.RequestCredentialRequest{Id: credID, ClusterId: cluster, Sre: tc.sre, SreStatement: tc.signed(credID)})
			if status.Code(err) != codes.PermissionDenied {
				t.Fatalf("err = %v, want PermissionDenied", err)
			}
			if _, err := e.st.GetCredential(ctx, credID); err == nil {
				t.Fatal("a refused request stored a credential")
			}
		})
	}
	if rows := e.auditRows(t, cluster); len(rows) != 0 {
		t.Fatalf("refused requests were audited as issued: %+v", rows)
	}

	t.Run("valid_statement_issues_one_credential_and_one_audit_record", func(t *testing.T) {
		credID := id(200)
		signed := sign(statement(credID, cluster, nil), e.statementKey, now)
		c, err := e.creds(pki.SRE).RequestCredential(ctx, &csv1.RequestCredentialRequest{Id: credID, ClusterId: cluster, Sre: sre, SreStatement: signed})
		if err != nil {
			t.Fatal(err)
		}
		if c.GetStatus().GetUsername() != "system:sre-break-glass:alice" || c.GetSre().GetPerson() != "alice" {
			t.Fatalf("credential %v", c)
		}
		// The same statement again is the same request: the same credential, no second record.
		if again, err := e.creds(pki.SRE).RequestCredential(ctx, &csv1.RequestCredentialRequest{Id: credID, ClusterId: cluster, Sre: sre, SreStatement: signed}); err != nil || again.GetId() != credID {
			t.Fatalf("retry: %v %v", again, err)
		}
		rows := e.auditRows(t, cluster)
		if len(rows) != 1 {
			t.Fatalf("audit rows %+v, want one", rows)
		}
		if a := rows[0]; a.CredentialID != credID || a.Identity != "sre" || a.ForWhom != "alice" || a.Kind != store.AuditKindSREAdmin ||
			a.ValiditySeconds != 3600 || a.Reason != "INC-1: etcd" || a.Approver != "carol" {
			t.Fatalf("audit record %+v", a)
		}
	})

	t.Run("customer_credential_is_audited_too", func(t *testing.T) {
		credID := id(300)
		if _, err := e.creds(pki.Frontend).RequestCredential(ctx, &csv1.RequestCredentialRequest{Id: credID, ClusterId: other}); err != nil {
			t.Fatal(err)
		}
		rows := e.auditRows(t, other)
		if len(rows) != 1 || rows[0].CredentialID != credID || rows[0].Identity != "frontend" || rows[0].Kind != store.AuditKindCustomer ||
			rows[0].ForWhom != "system:customer-break-glass:"+credID {
			t.Fatalf("audit rows %+v", rows)
		}
	})

	t.Run("audit_record_cannot_be_changed_or_deleted", func(t *testing.T) {
		conn, err := pgx.Connect(ctx, e.dsn)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close(ctx)
		for _, q := range []string{`UPDATE credential_audit SET for_whom = 'nobody'`, `DELETE FROM credential_audit`, `TRUNCATE credential_audit`} {
			if _, err := conn.Exec(ctx, q); err == nil {
				t.Errorf("%s succeeded", q)
			}
		}
		if rows := e.auditRows(t, cluster); len(rows) != 1 || rows[0].ForWhom != "alice" {
			t.Fatalf("after the attempts: %+v", rows)
		}
	})
}

// TestCredentialKindsPerIdentity: each identity is answered only for the credential kinds it
// owns (authz.CredentialKinds); another kind is NotFound, as an unknown credential, kubeconfig
// or not, and is left out of lists.
func TestCredentialKindsPerIdentity(t *testing.T) {
	e := startMTLS(t)
	ctx := context.Background()
	cluster := e.readyCluster(t, 1)
	customerID, sreID := id(10), id(11)
	sre, signed := e.customerAndSRECredentials(t, cluster, customerID, sreID)
	for _, tc := range []struct {
		identity, credential string
		want                 codes.Code
	}{
		{pki.Frontend, customerID, codes.OK},
		{pki.Frontend, sreID, codes.NotFound},
		{pki.Backend, customerID, codes.OK},
		{pki.Backend, sreID, codes.NotFound},
		{pki.SRE, sreID, codes.OK},
		{pki.SRE, customerID, codes.NotFound},
	} {
		for _, kubeconfig := range []bool{false, true} {
			name := tc.identity + "_gets_" + map[string]string{customerID: "customer", sreID: "sre"}[tc.credential] + map[bool]string{true: "_with_kubeconfig"}[kubeconfig]
			want := tc.want
			if tc.identity == pki.SRE && tc.credential == sreID && kubeconfig {
				want = codes.PermissionDenied // an SRE's kubeconfig needs the admin API's statement (below)
			}
			t.Run(name, func(t *testing.T) {
				c, err := e.creds(tc.identity).GetCredential(ctx, &csv1.GetCredentialRequest{Id: tc.credential, IncludeKubeconfig: kubeconfig})
				if status.Code(err) != want {
					t.Fatalf("err = %v, want %s", err, want)
				}
				if tc.want != codes.OK && c != nil {
					t.Fatalf("answered %v", c)
				}
			})
		}
	}
	t.Run("sre_kubeconfig_needs_the_statement_for_that_credential", func(t *testing.T) {
		if _, err := e.creds(pki.SRE).GetCredential(ctx, &csv1.GetCredentialRequest{Id: sreID, IncludeKubeconfig: true, SreStatement: signed}); err != nil {
			t.Fatalf("with its statement: %v", err)
		}
		other, err := srestatement.Sign(e.statementKey, &csv1.SREStatement{Person: "mallory", ClusterId: cluster, CredentialId: sreID,
			Access: sre.Access, ValiditySeconds: sre.ValiditySeconds, Reason: sre.Reason}, time.Now())
		if err != nil {
			t.Fatal(err)
		}
		if _, err := e.creds(pki.SRE).GetCredential(ctx, &csv1.GetCredentialRequest{Id: sreID, IncludeKubeconfig: true, SreStatement: other}); status.Code(err) != codes.PermissionDenied {
			t.Fatalf("with a statement for another person: %v, want PermissionDenied", err)
		}
	})
	t.Run("request_with_the_id_of_the_other_kind_is_refused", func(t *testing.T) {
		// A request naming an existing credential of the other kind is not answered with it:
		// the frontend would read an SRE's person, access and reason, which GetCredential hides.
		c, err := e.creds(pki.Frontend).RequestCredential(ctx, &csv1.RequestCredentialRequest{Id: sreID, ClusterId: cluster})
		if status.Code(err) != codes.AlreadyExists || c != nil {
			t.Fatalf("frontend requesting the SRE credential's ID: %v %v, want AlreadyExists and no credential", c, err)
		}
		forCustomerID, err := srestatement.Sign(e.statementKey, &csv1.SREStatement{Person: sre.Person, ClusterId: cluster, CredentialId: customerID,
			Access: sre.Access, ValiditySeconds: sre.ValiditySeconds, Reason: sre.Reason}, time.Now())
		if err != nil {
			t.Fatal(err)
		}
		c, err = e.creds(pki.SRE).RequestCredential(ctx, &csv1.RequestCredentialRequest{Id: customerID, ClusterId: cluster, Sre: sre, SreStatement: forCustomerID})
		if status.Code(err) != codes.AlreadyExists || c != nil {
			t.Fatalf("admin API requesting the customer credential's ID: %v %v, want AlreadyExists and no credential", c, err)
		}
	})
	t.Run("backend_watch_carries_no_sre_credential", func(t *testing.T) {
		sreCred, err := e.st.GetCredential(ctx, sreID)
		if err != nil {
			t.Fatal(err)
		}
		wctx, cancel := context.WithTimeout(ctx, time.Minute)
		defer cancel()
		w, err := e.creds(pki.Backend).WatchCredentials(wctx, &csv1.WatchCredentialsRequest{})
		if err != nil {
			t.Fatal(err)
		}
		sawCustomer := false
		for {
			ev, err := w.Recv()
			if err != nil {
				t.Fatalf("watch: %v", err)
			}
			if c := ev.GetCredential(); c != nil {
				if c.GetSre() != nil || c.GetId() == sreID {
					t.Fatalf("the backend's watch carries the SRE credential %v", c)
				}
				sawCustomer = sawCustomer || c.GetId() == customerID
			}
			if ev.GetType() == csv1.EventType_EVENT_TYPE_BOOKMARK && ev.GetRevision() >= sreCred.Revision {
				break
			}
		}
		if !sawCustomer {
			t.Fatal("the backend's watch did not carry the customer's credential")
		}
	})
	for _, tc := range []struct {
		identity string
		req      *csv1.ListCredentialsRequest
		want     []string
	}{
		{pki.Frontend, &csv1.ListCredentialsRequest{ClusterId: cluster}, []string{customerID}},
		{pki.SRE, &csv1.ListCredentialsRequest{ClusterId: cluster}, []string{sreID}},
		{pki.SRE, &csv1.ListCredentialsRequest{ClusterId: cluster, SreOnly: true}, []string{sreID}},
	} {
		resp, err := e.creds(tc.identity).ListCredentials(ctx, tc.req)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, c := range resp.GetCredentials() {
			got = append(got, c.GetId())
		}
		if len(got) != len(tc.want) || (len(got) > 0 && got[0] != tc.want[0]) {
			t.Errorf("%s lists %v with %v, want %v", tc.identity, got, tc.req, tc.want)
		}
	}
}

// TestRevocationsAreSeparatePerKind: the frontend revokes the customer's credentials and the sre
// identity the SRE credentials, each through its own signer; a revocation of one kind leaves the
// other kind's credentials as they were and does not block new ones of the other kind.
func TestRevocationsAreSeparatePerKind(t *testing.T) {
	e := startMTLS(t)
	ctx := context.Background()
	cluster := e.readyCluster(t, 1)
	requestSRE := func(t *testing.T, credID string) error {
		_, _, err := e.requestReadOnlySRE(t, cluster, credID)
		return err
	}
	customerID, sreID := id(20), id(21)
	if _, err := e.creds(pki.Frontend).RequestCredential(ctx, &csv1.RequestCredentialRequest{Id: customerID, ClusterId: cluster}); err != nil {
		t.Fatal(err)
	}
	if err := requestSRE(t, sreID); err != nil {
		t.Fatal(err)
	}
	state := func(credID string) csv1.CredentialState {
		c, err := e.st.GetCredential(ctx, credID)
		if err != nil {
			t.Fatal(err)
		}
		return c.Status.GetState()
	}
	for _, tc := range []struct {
		name, identity string
		sre            bool
	}{
		{"frontend_may_not_revoke_sre_credentials", pki.Frontend, true},
		{"sre_may_not_revoke_customer_credentials", pki.SRE, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := e.creds(tc.identity).RevokeCredentials(ctx, &csv1.RevokeCredentialsRequest{Id: id(30), ClusterId: cluster, Sre: tc.sre})
			if status.Code(err) != codes.PermissionDenied {
				t.Fatalf("err = %v, want PermissionDenied", err)
			}
		})
	}
	t.Run("revoking_sre_keeps_customer", func(t *testing.T) {
		rev, err := e.creds(pki.SRE).RevokeCredentials(ctx, &csv1.RevokeCredentialsRequest{Id: id(31), ClusterId: cluster, Sre: true})
		if err != nil || !rev.GetSre() {
			t.Fatalf("revoke: %v %v", rev, err)
		}
		if got := state(sreID); got != csv1.CredentialState_CREDENTIAL_STATE_REVOKING {
			t.Errorf("SRE credential %s, want REVOKING", got)
		}
		if got := state(customerID); got != csv1.CredentialState_CREDENTIAL_STATE_PENDING {
			t.Errorf("customer credential %s, want PENDING (untouched)", got)
		}
		// The customer's signer is not rotating: the customer may still ask for credentials.
		if _, err := e.creds(pki.Frontend).RequestCredential(ctx, &csv1.RequestCredentialRequest{Id: id(22), ClusterId: cluster}); err != nil {
			t.Errorf("customer credential during an SRE revocation: %v", err)
		}
		if err := requestSRE(t, id(23)); status.Code(err) != codes.FailedPrecondition {
			t.Errorf("SRE credential during an SRE revocation: %v, want FailedPrecondition", err)
		}
		if _, err := e.creds(pki.Frontend).GetRevocation(ctx, &csv1.GetRevocationRequest{Id: id(31)}); status.Code(err) != codes.NotFound {
			t.Errorf("frontend reads the SRE revocation: %v, want NotFound", err)
		}
	})
	t.Run("revoking_customer_keeps_sre", func(t *testing.T) {
		if _, err := e.creds(pki.Frontend).RevokeCredentials(ctx, &csv1.RevokeCredentialsRequest{Id: id(32), ClusterId: cluster}); err != nil {
			t.Fatal(err)
		}
		for _, c := range []string{customerID, id(22)} {
			if got := state(c); got != csv1.CredentialState_CREDENTIAL_STATE_REVOKING {
				t.Errorf("customer credential %s: %s, want REVOKING", c, got)
			}
		}
		if got := state(sreID); got != csv1.CredentialState_CREDENTIAL_STATE_REVOKING {
			t.Errorf("SRE credential %s, want still REVOKING by the SRE revocation", got)
		}
		c, _ := e.st.GetCredential(ctx, sreID)
		if c.Status.GetRevocationId() != id(31) {
			t.Errorf("SRE credential revoked by %s, want the SRE revocation %s", c.Status.GetRevocationId(), id(31))
		}
	})
}
