package server

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"google.golang.org/grpc"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/timestamppb"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/openhcp/openhcp/admin/pkg/access"
	"github.com/openhcp/openhcp/admin/pkg/adminapi"
	"github.com/openhcp/openhcp/admin/pkg/audit"
	"github.com/openhcp/openhcp/admin/pkg/session"
	csv1 "github.com/openhcp/openhcp/cluster-service/api/v1"
	"github.com/openhcp/openhcp/cluster-service/pkg/breakglass"
	csstore "github.com/openhcp/openhcp/cluster-service/pkg/store"
	"github.com/openhcp/openhcp/internal/identity"
)

// signPending plays the management cluster's break-glass signer, which no process runs in this
// in-process region: it signs every PENDING credential's CSR as HyperShift's signer does (the
// request's subject, the asked-for lifetime) and records it ISSUED, until ctx ends.
func signPending(ctx context.Context, t *testing.T, st *csstore.Store) {
	caKey, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	caTmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "customer-break-glass.test"}, IsCA: true,
		BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign, NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(48 * time.Hour)}
	caDER, _ := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	ca, _ := x509.ParseCertificate(caDER)
	caPEM := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER})
	for ctx.Err() == nil {
		cs, err := st.ListUnsettledCredentials(ctx)
		if err != nil {
			return
		}
		for _, c := range cs {
			if c.Status.GetState() != csv1.CredentialState_CREDENTIAL_STATE_PENDING {
				continue
			}
			req, err := breakglass.ParseRequest([]byte(c.CSR))
			if err != nil {
				t.Errorf("credential %s: CSR %v", c.ID, err)
				return
			}
			now := time.Now().Truncate(time.Second)
			notAfter := now.Add(time.Duration(c.SRE.GetValiditySeconds()) * time.Second)
			der, err := x509.CreateCertificate(rand.Reader, &x509.Certificate{SerialNumber: big.NewInt(now.UnixNano()), Subject: req.Subject,
				NotBefore: now, NotAfter: notAfter, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}, ca, req.PublicKey, caKey)
			if err != nil {
				t.Errorf("sign: %v", err)
				return
			}
			next := *c
			next.Certificate, next.CABundle, next.APIURL = string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})), string(caPEM), "https://api.test:6443"
			next.Status = &csv1.CredentialStatus{State: csv1.CredentialState_CREDENTIAL_STATE_ISSUED, Username: c.Status.GetUsername(),
				ExpirationTime: timestamppb.New(notAfter), IssueTime: timestamppb.New(now)}
			if _, err := st.UpdateCredential(ctx, &next); err != nil && ctx.Err() == nil {
				t.Errorf("issue %s: %v", c.ID, err)
			}
		}
		select {
		case <-ctx.Done():
		case <-time.After(50 * time.Millisecond):
		}
	}
}

func readyCluster(t *testing.T, e *env, id string) {
	t.Helper()
	ctx := context.Background()
	c, err := e.csdb.GetCluster(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.csdb.UpdateStatus(ctx, id, c.Revision, &csv1.ClusterStatus{State: csv1.ClusterState_CLUSTER_STATE_READY}); err != nil {
		t.Fatal(err)
	}
}

// sessionCredential opens what the session store keeps for session id: the sealed credential's
// certificate, which only the gateway ever opens.
func sessionCredential(t *testing.T, e *env, id string) *x509.Certificate {
	t.Helper()
	_, kubeconfig, err := e.sessions.Credential(context.Background(), id)
	if err != nil || kubeconfig == nil {
		t.Fatalf("credential of session %s: %v (none stored)", id, err)
	}
	cfg, err := clientcmd.Load(kubeconfig)
	if err != nil {
		t.Fatalf("kubeconfig: %v", err)
	}
	auth := cfg.AuthInfos[cfg.Contexts[cfg.CurrentContext].AuthInfo]
	pair, err := tls.X509KeyPair(auth.ClientCertificateData, auth.ClientKeyData)
	if err != nil {
		t.Fatal(err)
	}
	leaf, _ := x509.ParseCertificate(pair.Certificate[0])
	return leaf
}

// noCredentialIn fails if an answer carries key material or a kubeconfig.
func noCredentialIn(t *testing.T, b []byte) {
	t.Helper()
	for _, s := range []string{"PRIVATE KEY", "CERTIFICATE", "client-key-data", "kubeconfig", "LS0t"} {
		if strings.Contains(string(b), s) {
			t.Fatalf("an answer carries %q: %s", s, b)
		}
	}
}

func TestBreakGlass(t *testing.T) {
	e := start(t)
	clusterID, clusterARM, _ := seedCluster(t, e)
	readyCluster(t, e, clusterID)
	signInBackground(t, e)
	bg := "/admin/v1/breakglass/"

	for _, tc := range []struct {
		name, identity, path, body string
		want                       int
		code, target               string
	}{
		{"no_certificate_is_401", "", bg + clusterID, `{"reason":"r"}`, 401, adminapi.CodeUnauthenticated, ""},
		{"reason_is_required", "bob", bg + clusterID, `{"access":"read-only"}`, 400, adminapi.CodeInvalidRequest, "reason"},
		{"readonly_may_not_ask_for_admin_403", "bob", bg + clusterID, `{"access":"admin","reason":"r"}`, 403, adminapi.CodeForbidden, "access"},
		{"ttl_below_bounds_is_400_naming_ttl", "alice", bg + clusterID, `{"ttl":"1m","reason":"r"}`, 400, adminapi.CodeInvalidRequest, "ttl"},
		{"ttl_above_bounds_is_400_naming_ttl", "alice", bg + clusterID, `{"ttl":"9h","reason":"r"}`, 400, adminapi.CodeInvalidRequest, "ttl"},
		{"ttl_not_a_duration_is_400", "alice", bg + clusterID, `{"ttl":"forever","reason":"r"}`, 400, adminapi.CodeInvalidRequest, "ttl"},
		{"unknown_access_is_400", "alice", bg + clusterID, `{"access":"root","reason":"r"}`, 400, adminapi.CodeInvalidRequest, "access"},
		{"unknown_field_is_400", "alice", bg + clusterID, `{"group":"system:masters","reason":"r"}`, 400, adminapi.CodeInvalidRequest, "body"},
		{"unknown_cluster_is_404_naming_it", "alice", bg + "0000000000000000000000000000000v", `{"reason":"r"}`, 404, adminapi.CodeNotFound, "0000000000000000000000000000000v"},
		{"list_filter_typo_is_400", "bob", "/admin/v1/breakglass?persn=bob", "", 400, adminapi.CodeInvalidRequest, "persn"},
		{"readonly_may_not_revoke_403", "bob", "/admin/v1/breakglass-revoke", `{"person":"bob","reason":"r"}`, 403, adminapi.CodeForbidden, ""},
		{"revoke_needs_one_selector", "alice", "/admin/v1/breakglass-revoke", `{"reason":"r"}`, 400, adminapi.CodeInvalidRequest, "session"},
		{"revoke_unknown_session_is_404", "alice", "/admin/v1/breakglass-revoke", `{"session":"0000000000000000000000000000000v","reason":"r"}`, 404, adminapi.CodeNotFound, "0000000000000000000000000000000v"},
		{"close_unknown_session_is_404", "alice", "/admin/v1/breakglass-close/0000000000000000000000000000000v", `{"reason":"r"}`, 404, adminapi.CodeNotFound, "0000000000000000000000000000000v"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			method := "POST"
			if tc.body == "" {
				method = "GET"
			}
			code, ae, body := e.call(t, tc.identity, method, tc.path, tc.body)
			if code != tc.want || ae.Code != tc.code || (tc.target != "" && ae.Target != tc.target) {
				t.Fatalf("%d %+v %s", code, ae, body)
			}
		})
	}

	open := func(t *testing.T, who, cluster, body string) adminapi.BreakGlassSession {
		t.Helper()
		code, ae, b := e.call(t, who, "POST", bg+strings.TrimPrefix(cluster, "/"), body)
		noCredentialIn(t, b)
		var s adminapi.BreakGlassSession
		if code == http.StatusAccepted && json.Unmarshal(b, &s) == nil && s.State == adminapi.StateAwaitingApproval {
			// A body with more than the reason is refused, naming the body, and approves nothing.
			if code, ae, _ := e.call(t, "carol", "POST", "/admin/v1/breakglass-approve/"+s.ID, `{"reason":"confirmed","access":"admin"}`); code != http.StatusBadRequest || ae.Target != "body" {
				t.Fatalf("approve with an unknown field: %d %+v; want 400 on body", code, ae)
			}
			// Admin access: carol, a second sre-admin, approves; the session becomes active.
			code, ae, b := e.call(t, "carol", "POST", "/admin/v1/breakglass-approve/"+s.ID, `{"reason":"confirmed"}`)
			noCredentialIn(t, b)
			if code != http.StatusOK || json.Unmarshal(b, &s) != nil {
				t.Fatalf("approve: %d %+v %s", code, ae, b)
			}
			return s
		}
		if code != http.StatusCreated || json.Unmarshal(b, &s) != nil {
			t.Fatalf("open: %d %+v %s", code, ae, b)
		}
		return s
	}
	var bobs, alices adminapi.BreakGlassSession
	for _, tc := range []struct {
		name, who, cluster, body, certGroup, group string
		ttl                                        time.Duration
		out                                        *adminapi.BreakGlassSession
	}{
		{"readonly_default_ttl_by_cs_id", "bob", clusterID, `{"reason":"look at pods"}`, "openhcp:sre-break-glass:read-only", "openhcp:sre:read-only", time.Hour, &bobs},
		{"admin_2h_by_arm_id_is_not_system_masters", "alice", clusterARM, `{"access":"admin","ttl":"2h","reason":"fix etcd"}`, "openhcp:sre-break-glass:admin", "openhcp:sre:admin", 2 * time.Hour, &alices},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := open(t, tc.who, tc.cluster, tc.body)
			*tc.out = s
			leaf := sessionCredential(t, e, s.ID)
			wantCN := "system:sre-break-glass:" + tc.who
			if leaf.Subject.CommonName != wantCN || len(leaf.Subject.Organization) != 1 || leaf.Subject.Organization[0] != tc.certGroup {
				t.Fatalf("subject %s, want CN=%s O=%s", leaf.Subject, wantCN, tc.certGroup)
			}
			if life := leaf.NotAfter.Sub(leaf.NotBefore); life != tc.ttl {
				t.Fatalf("certificate lives %s, want %s", life, tc.ttl)
			}
			if s.Person != tc.who || s.Group != tc.group || s.State != adminapi.StateActive || s.TTLSeconds != int32(tc.ttl/time.Second) ||
				s.ExpirationTime == nil || !s.ExpirationTime.Equal(leaf.NotAfter) || s.ClusterID != clusterID || s.GatewayURL != "https://gateway.test:8445/sessions/"+s.ID {
				t.Fatalf("session %+v", s)
			}
		})
	}
	// The credential is sealed at rest: the database holds no certificate or key in the clear.
	var sealed []byte
	su, err := pgx.Connect(context.Background(), e.auditSU)
	if err != nil {
		t.Fatal(err)
	}
	defer su.Close(context.Background())
	if err := su.QueryRow(context.Background(), "SELECT credential FROM admin_breakglass_sessions WHERE id = $1", bobs.ID).Scan(&sealed); err != nil ||
		len(sealed) == 0 || strings.Contains(string(sealed), "BEGIN") || strings.Contains(string(sealed), "apiVersion") {
		t.Fatalf("stored credential of %s: %v %q", bobs.ID, err, sealed)
	}

	list := func(t *testing.T, query string) []adminapi.BreakGlassSession {
		t.Helper()
		code, ae, b := e.call(t, "bob", "GET", "/admin/v1/breakglass"+query, "")
		var l adminapi.BreakGlassSessions
		if code != 200 || json.Unmarshal(b, &l) != nil {
			t.Fatalf("list: %d %+v %s", code, ae, b)
		}
		noCredentialIn(t, b)
		return l.Sessions
	}
	ids := func(ss []adminapi.BreakGlassSession) string {
		var out []string
		for _, s := range ss {
			out = append(out, s.Person+":"+s.State)
		}
		return strings.Join(out, ",")
	}
	for _, tc := range []struct{ query, want string }{
		{"", "alice:active,bob:active"},
		{"?person=alice", "alice:active"},
		{"?cluster=" + clusterARM, "alice:active,bob:active"},
		{"?person=carol", ""},
	} {
		if got := ids(list(t, tc.query)); got != tc.want {
			t.Fatalf("list%s = %q, want %q", tc.query, got, tc.want)
		}
	}
	code, ae, _ := e.call(t, "bob", "GET", "/admin/v1/breakglass?cluster=0000000000000000000000000000000v", "")
	if code != 404 || ae.Target != "0000000000000000000000000000000v" {
		t.Fatalf("unknown cluster filter: %d %+v", code, ae)
	}

	// bob closes his own session; he may not close alice's.
	if code, ae, b := e.call(t, "bob", "POST", "/admin/v1/breakglass-close/"+alices.ID, `{"reason":"mine?"}`); code != http.StatusForbidden {
		t.Fatalf("bob closes alice's session: %d %+v %s", code, ae, b)
	}
	code, ae, b := e.call(t, "bob", "POST", "/admin/v1/breakglass-close/"+bobs.ID, `{"reason":"done"}`)
	var closed adminapi.BreakGlassSession
	if code != 200 || json.Unmarshal(b, &closed) != nil || closed.State != adminapi.StateClosed || closed.ClosedBy != "bob" || closed.CloseTime == nil {
		t.Fatalf("bob closes: %d %+v %s", code, ae, b)
	}
	if code, ae, _ := e.call(t, "bob", "POST", "/admin/v1/breakglass-close/"+bobs.ID, `{"reason":"again"}`); code != http.StatusConflict {
		t.Fatalf("second close: %d %+v, want 409", code, ae)
	}

	// Revoking alice's session revokes it and rotates the cluster's signer: every SRE
	// credential of the cluster is REVOKING at once.
	code, ae, b = e.call(t, "alice", "POST", "/admin/v1/breakglass-revoke", `{"session":"`+alices.ID+`","reason":"leaked in chat"}`,
		adminapi.HeaderCorrelationID, "cid-bg-revoke")
	var revs adminapi.BreakGlassRevocations
	if code != 200 || json.Unmarshal(b, &revs) != nil || len(revs.Revocations) != 1 || revs.Revocations[0].ClusterID != clusterID ||
		revs.Revocations[0].State != "revoking" || strings.Join(revs.Revocations[0].Sessions, ",") != alices.ID {
		t.Fatalf("revoke: %d %+v %s", code, ae, b)
	}
	if got := ids(list(t, "")); got != "" {
		t.Fatalf("live after revoke: %q", got)
	}
	if c, err := e.csdb.GetCredential(context.Background(), bobs.ID); err != nil || c.Status.GetState() != csv1.CredentialState_CREDENTIAL_STATE_REVOKING {
		t.Fatalf("bob's credential after the cluster's signer rotation: %v %v", c.Status.GetState(), err)
	}
	// The audit record names the session (the body's, as the route has no ID in its path).
	if recs := e.lastAudit(t, audit.Filter{CorrelationID: "cid-bg-revoke"}); len(recs) != 2 || recs[0].Target != alices.ID || recs[1].Target != alices.ID {
		t.Fatalf("audit of the revoke: %+v, want both records targeting %s", recs, alices.ID)
	}
	if got := ids(list(t, "?all=true")); got != "alice:revoked,bob:closed" {
		t.Fatalf("all after revoke: %q", got)
	}
	// Nothing left to revoke for bob: an empty answer, no revocation.
	code, _, b = e.call(t, "alice", "POST", "/admin/v1/breakglass-revoke", `{"person":"bob","reason":"offboarding"}`,
		adminapi.HeaderCorrelationID, "cid-bg-revoke-bob")
	if code != 200 || json.Unmarshal(b, &revs) != nil || len(revs.Revocations) != 0 {
		t.Fatalf("revoke person: %d %s", code, b)
	}
	if recs := e.lastAudit(t, audit.Filter{CorrelationID: "cid-bg-revoke-bob"}); len(recs) != 2 || recs[0].Target != "bob" {
		t.Fatalf("audit of the revoke by person: %+v, want target bob", recs)
	}
}

// TestBreakGlassTTLBounds: the bounds themselves are checked when the server starts.
func TestBreakGlassTTLBounds(t *testing.T) {
	for _, tc := range []struct {
		name string
		b    BreakGlassTTL
		ok   bool
	}{
		{"defaults", DefaultBreakGlassTTL(), true},
		{"min_below_csr_least", BreakGlassTTL{Min: time.Minute, Max: time.Hour, Default: 30 * time.Minute}, false},
		{"max_below_min", BreakGlassTTL{Min: time.Hour, Max: 30 * time.Minute, Default: time.Hour}, false},
		{"default_outside", BreakGlassTTL{Min: 10 * time.Minute, Max: time.Hour, Default: 2 * time.Hour}, false},
		{"read_only_max_above_max", BreakGlassTTL{Min: 10 * time.Minute, Max: time.Hour, Default: 30 * time.Minute, ReadOnlyMax: 2 * time.Hour}, false},
		{"read_only_max_below_min", BreakGlassTTL{Min: 10 * time.Minute, Max: time.Hour, Default: 30 * time.Minute, ReadOnlyMax: time.Minute}, false},
		{"read_only_max_within", BreakGlassTTL{Min: 10 * time.Minute, Max: time.Hour, Default: 30 * time.Minute, ReadOnlyMax: 20 * time.Minute}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := tc.b.Validate(); (err == nil) != tc.ok {
				t.Fatalf("Validate = %v", err)
			}
		})
	}
}

// FuzzBreakGlassRequest feeds arbitrary bodies to the break-glass request parser: no panic; an
// accepted body has a known access and a TTL within bounds; a refusal is a 400 naming a field.
func FuzzBreakGlassRequest(f *testing.F) {
	for _, s := range []string{`{}`, `{"access":"admin","ttl":"2h","reason":"r"}`, `{"ttl":"1m"}`, `{"ttl":"9h"}`, `{"ttl":"1h0.5s"}`,
		`{"access":"root"}`, `{"ttl":"-1h"}`, `{"ttl":"9999999999h"}`, `[1]`, `{"access":null}`, `{"group":"x"}`, ""} {
		f.Add(s)
	}
	bounds := DefaultBreakGlassTTL()
	f.Fuzz(func(t *testing.T, body string) {
		r := httptest.NewRequest(http.MethodPost, "/admin/v1/breakglass/x", strings.NewReader(body))
		acc, perm, ttl, err := parseBreakGlassRequest(r, bounds)
		if err != nil {
			ae, ok := err.(*apiError)
			if !ok || ae.status != http.StatusBadRequest || ae.body.Target == "" || ae.body.Message == "" {
				t.Fatalf("refusal %v of %q", err, body)
			}
			return
		}
		if _, ok := breakglass.SREGroups[acc]; !ok || perm == "" || ttl < bounds.Min || ttl > bounds.Max || ttl%time.Second != 0 {
			t.Fatalf("accepted %q as %s %s %s", body, acc, perm, ttl)
		}
	})
}

// TestBreakGlassPersonIsAPersonsName: the break-glass list and revoke take exactly the person
// names that access.Identify admits (identity.ValidPerson).
func TestBreakGlassPersonIsAPersonsName(t *testing.T) {
	for _, tc := range []struct {
		person string
		ok     bool
	}{
		{"alice", true}, {"alice.smith@example.com", true}, {strings.Repeat("a", 128), true},
		{"a b", false}, {"sre.", false}, {"SRE", false}, {"Admin", false}, {"maestro-agent-1", false},
		{"a\u200bdmin", false}, {"\u0455re", false}, {"alice.", false}, {"-alice", false}, {strings.Repeat("a", 129), false},
	} {
		t.Run(fmt.Sprintf("%q", tc.person), func(t *testing.T) {
			r := &http.Request{URL: &url.URL{Path: "/admin/v1/breakglass", RawQuery: url.Values{"person": {tc.person}}.Encode()}}
			_, err := parseBreakGlassQuery(r)
			if ae := (*apiError)(nil); tc.ok != (err == nil) || err != nil && (!errors.As(err, &ae) || ae.body.Target != "person") {
				t.Errorf("list ?person=%q: %v, want ok=%t", tc.person, err, tc.ok)
			}
			body, _ := json.Marshal(adminapi.BreakGlassRevoke{Person: tc.person, Reason: "r"})
			_, err = parseBreakGlassRevoke(httptest.NewRequest(http.MethodPost, "/admin/v1/breakglass-revoke", bytes.NewReader(body)))
			if ae := (*apiError)(nil); tc.ok != (err == nil) || err != nil && (!errors.As(err, &ae) || ae.body.Target != "person") {
				t.Errorf("revoke {\"person\":%q}: %v, want ok=%t", tc.person, err, tc.ok)
			}
		})
	}
}

// FuzzBreakGlassQuery feeds arbitrary query strings to the break-glass list's parser: no
// panic; a refusal is a 400 naming the parameter; an accepted person is a certificate's common
// name.
func FuzzBreakGlassQuery(f *testing.F) {
	for _, s := range []string{"", "all=true", "all=1", "person=alice&all=false", "person=a%20b", "cluster=x&person=", "colour=red", "all=%zz"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		r := &http.Request{URL: &url.URL{Path: "/admin/v1/breakglass", RawQuery: raw}}
		q, err := parseBreakGlassQuery(r)
		if refusedWith400(t, err, raw) {
			return
		}
		if q.person != "" && identity.ValidPerson(q.person) != nil {
			t.Fatalf("%q accepted with person %q", raw, q.person)
		}
	})
}

// FuzzBreakGlassRevoke feeds arbitrary bodies to the revoke parser: no panic; a refusal is a
// 400 naming its field; an accepted body has exactly one of a session ID and a person.
func FuzzBreakGlassRevoke(f *testing.F) {
	for _, s := range []string{`{}`, `{"session":"0123456789abcdefghijklmnopqrstuv","reason":"r"}`, `{"person":"alice"}`,
		`{"person":"alice","session":"0123456789abcdefghijklmnopqrstuv"}`, `{"person":"a b"}`, `{"session":"X"}`, `{"person":7}`, `[`, ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, body string) {
		r := httptest.NewRequest(http.MethodPost, "/admin/v1/breakglass-revoke", strings.NewReader(body))
		b, err := parseBreakGlassRevoke(r)
		if refusedWith400(t, err, body) {
			return
		}
		if (b.Session == "") == (b.Person == "") || (b.Person != "" && identity.ValidPerson(b.Person) != nil) || (b.Session != "" && !csIDRE.MatchString(b.Session)) {
			t.Fatalf("accepted %q as %+v", body, b)
		}
	})
}

// TestRevokingAPersonRevokesTheirBreakGlass: POST /admin/v1/revocations/{person} also revokes
// the person's live sessions and rotates their clusters' SRE signers, and says so in its answer.
func TestRevokingAPersonRevokesTheirBreakGlass(t *testing.T) {
	e := start(t)
	clusterID, _, _ := seedCluster(t, e)
	readyCluster(t, e, clusterID)
	signInBackground(t, e)

	code, ae, b := e.call(t, "bob", "POST", "/admin/v1/breakglass/"+clusterID, `{"reason":"look at pods"}`)
	var bobs adminapi.BreakGlassSession
	if code != http.StatusCreated || json.Unmarshal(b, &bobs) != nil || bobs.State != adminapi.StateActive {
		t.Fatalf("open: %d %+v %s", code, ae, b)
	}
	// A body with more than the reason is refused, naming the body, and revokes nothing (the
	// session stays active: the revocation below finds it).
	if code, ae, _ := e.call(t, "alice", "POST", "/admin/v1/revocations/bob", `{"reason":"INC-7","n":1}`); code != http.StatusBadRequest || ae.Target != "body" {
		t.Fatalf("revoke with an unknown field: %d %+v; want 400 on body", code, ae)
	}
	code, ae, b = e.call(t, "alice", "POST", "/admin/v1/revocations/bob", `{"reason":"INC-7: laptop stolen"}`)
	if code != 200 || !strings.Contains(string(b), bobs.ID) {
		t.Fatalf("revoke bob: %d %+v %s, want the answer to name session %s", code, ae, b, bobs.ID)
	}
	c, err := e.csdb.GetCredential(context.Background(), bobs.ID)
	if err != nil {
		t.Fatal(err)
	}
	if st := c.Status.GetState(); st != csv1.CredentialState_CREDENTIAL_STATE_REVOKING && st != csv1.CredentialState_CREDENTIAL_STATE_REVOKED {
		t.Fatalf("bob's credential after bob was revoked: %s", st)
	}
	if s, err := e.sessions.Get(context.Background(), bobs.ID); err != nil || s.State != "revoked" || s.ClosedBy != "alice" {
		t.Fatalf("bob's session after bob was revoked: %+v %v", s, err)
	}
}

// TestBreakGlassAdminNeedsASecondSRE: an admin session becomes active only once a different
// sre-admin approved it; until then the session holds no credential and Cluster Service has
// none. Both acts are audited, and Cluster Service's own record names the person and the
// approver. Neither SRE ever receives the credential.
func TestBreakGlassAdminNeedsASecondSRE(t *testing.T) {
	e := start(t)
	clusterID, _, _ := seedCluster(t, e)
	readyCluster(t, e, clusterID)
	signInBackground(t, e)

	for _, tc := range []struct {
		name, who, body string
		want            int
		target          string
	}{
		{"readonly_may_not_request_admin", "bob", `{"access":"admin","reason":"r"}`, 403, "access"},
		{"readonly_lifetime_is_short", "bob", `{"ttl":"2h","reason":"r"}`, 400, "ttl"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, ae, b := e.call(t, tc.who, "POST", "/admin/v1/breakglass/"+clusterID, tc.body)
			if code != tc.want || ae.Target != tc.target {
				t.Fatalf("%d %+v %s", code, ae, b)
			}
		})
	}

	// alice asks for admin: nothing is issued yet.
	code, ae, b := e.call(t, "alice", "POST", "/admin/v1/breakglass/"+clusterID, `{"access":"admin","ttl":"1h","reason":"INC-9: etcd defrag"}`,
		adminapi.HeaderCorrelationID, "cid-bg-admin-request")
	var req adminapi.BreakGlassSession
	if code != http.StatusAccepted || json.Unmarshal(b, &req) != nil || req.State != adminapi.StateAwaitingApproval || req.ID == "" || req.ApproveBefore == nil {
		t.Fatalf("admin request: %d %+v %s, want 202 awaiting approval", code, ae, b)
	}
	if _, err := e.csdb.GetCredential(context.Background(), req.ID); err == nil {
		t.Fatal("Cluster Service has the credential before any approval")
	}
	if s, _, err := e.sessions.Credential(context.Background(), req.ID); err != nil || s.HasCredential || s.Live(time.Now()) {
		t.Fatalf("session before approval: %+v %v", s, err)
	}
	if code, _, b := e.call(t, "bob", "GET", "/admin/v1/breakglass-pending", ""); code != 200 || !strings.Contains(string(b), req.ID) {
		t.Fatalf("pending list: %d %s", code, b)
	}
	approve := "/admin/v1/breakglass-approve/" + req.ID
	for _, tc := range []struct {
		name, who string
		want      int
	}{
		{"the_requester_cannot_approve", "alice", 403},
		{"a_readonly_member_cannot_approve", "bob", 403},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if code, ae, b := e.call(t, tc.who, "POST", approve, `{"reason":"ok"}`); code != tc.want {
				t.Fatalf("%d %+v %s", code, ae, b)
			}
			if _, err := e.csdb.GetCredential(context.Background(), req.ID); err == nil {
				t.Fatal("Cluster Service has the credential")
			}
		})
	}

	code, ae, b = e.call(t, "carol", "POST", approve, `{"reason":"INC-9 confirmed"}`, adminapi.HeaderCorrelationID, "cid-bg-approve")
	noCredentialIn(t, b)
	var approved adminapi.BreakGlassSession
	if code != http.StatusOK || json.Unmarshal(b, &approved) != nil || approved.Person != "alice" || approved.Approver != "carol" ||
		approved.Group != "openhcp:sre:admin" || approved.State != adminapi.StateActive {
		t.Fatalf("carol approves: %d %+v %s", code, ae, b)
	}
	if code, ae, _ := e.call(t, "carol", "POST", approve, `{"reason":"again"}`); code != http.StatusConflict {
		t.Fatalf("second approval: %d %+v, want 409", code, ae)
	}
	code, ae, b = e.call(t, "alice", "GET", "/admin/v1/breakglass-sessions/"+req.ID, "")
	noCredentialIn(t, b)
	var mine adminapi.BreakGlassSession
	if code != 200 || json.Unmarshal(b, &mine) != nil || mine.State != adminapi.StateActive || mine.Approver != "carol" {
		t.Fatalf("alice reads her session: %d %+v %s", code, ae, b)
	}
	leaf := sessionCredential(t, e, req.ID)
	if leaf.Subject.CommonName != "system:sre-break-glass:alice" || leaf.Subject.Organization[0] != "openhcp:sre-break-glass:admin" {
		t.Fatalf("certificate %v", leaf.Subject)
	}
	// Both acts are in the admin audit log under the session's ID, and Cluster Service's
	// record names alice with carol as approver.
	for _, cid := range []string{"cid-bg-admin-request", "cid-bg-approve"} {
		if recs := e.lastAudit(t, audit.Filter{CorrelationID: cid}); len(recs) != 2 || recs[0].Status == 0 && recs[1].Status == 0 {
			t.Fatalf("audit of %s: %+v", cid, recs)
		}
	}
	if recs := e.lastAudit(t, audit.Filter{CorrelationID: "cid-bg-approve"}); recs[0].Person != "carol" || recs[0].Target != req.ID {
		t.Fatalf("approval audited as %+v", recs[0])
	}
	rows, err := e.csdb.CredentialAudits(context.Background(), clusterID)
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 1 || rows[0].CredentialID != req.ID || rows[0].ForWhom != "alice" || rows[0].Approver != "carol" || rows[0].Kind != csstore.AuditKindSREAdmin {
		t.Fatalf("Cluster Service audit %+v", rows)
	}
}

// TestDeletedClusterEndsItsBreakGlassSessions: once Cluster Service removed a cluster, its
// break-glass sessions, active or awaiting approval, are revoked by the admin service itself
// with a reason naming the deletion: no list, page or revocation shows them live.
func TestDeletedClusterEndsItsBreakGlassSessions(t *testing.T) {
	e := start(t)
	clusterID, _, _ := seedCluster(t, e)
	readyCluster(t, e, clusterID)
	signInBackground(t, e)

	code, ae, b := e.call(t, "bob", "POST", "/admin/v1/breakglass/"+clusterID, `{"reason":"look at pods"}`)
	var bobs adminapi.BreakGlassSession
	if code != http.StatusCreated || json.Unmarshal(b, &bobs) != nil || bobs.State != adminapi.StateActive {
		t.Fatalf("open: %d %+v %s", code, ae, b)
	}
	code, ae, b = e.call(t, "alice", "POST", "/admin/v1/breakglass/"+clusterID, `{"access":"admin","reason":"fix etcd"}`)
	var alices adminapi.BreakGlassSession
	if code != http.StatusAccepted || json.Unmarshal(b, &alices) != nil || alices.State != adminapi.StateAwaitingApproval {
		t.Fatalf("open admin: %d %+v %s", code, ae, b)
	}

	// Cluster Service removes the cluster (its controller's last step), which revokes bob's
	// credential.
	removeCluster(t, e, clusterID)

	code, ae, b = e.call(t, "bob", "GET", "/admin/v1/breakglass", "")
	var live adminapi.BreakGlassSessions
	if code != 200 || json.Unmarshal(b, &live) != nil || len(live.Sessions) != 0 {
		t.Fatalf("live sessions after the cluster was removed: %d %+v %s", code, ae, b)
	}
	code, ae, b = e.call(t, "bob", "GET", "/admin/v1/breakglass-pending", "")
	if code != 200 || json.Unmarshal(b, &live) != nil || len(live.Sessions) != 0 {
		t.Fatalf("pending sessions after the cluster was removed: %d %+v %s", code, ae, b)
	}
	for _, id := range []string{bobs.ID, alices.ID} {
		code, ae, b := e.call(t, "bob", "GET", "/admin/v1/breakglass-sessions/"+id, "")
		var s adminapi.BreakGlassSession
		if code != 200 || json.Unmarshal(b, &s) != nil || s.State != adminapi.StateRevoked || s.ClosedBy != deletedClusterCloser ||
			!strings.Contains(s.CloseReason, "cluster "+clusterID+" was deleted") || s.CloseTime == nil {
			t.Fatalf("session %s after its cluster was removed: %d %+v %s", id, code, ae, b)
		}
	}
	// Revoking bob finds nothing live to revoke (no rotation on a cluster that is gone).
	code, ae, b = e.call(t, "alice", "POST", "/admin/v1/breakglass-revoke", `{"person":"bob","reason":"offboarding"}`)
	var revs adminapi.BreakGlassRevocations
	if code != 200 || json.Unmarshal(b, &revs) != nil || len(revs.Revocations) != 0 {
		t.Fatalf("revoke bob after the cluster was removed: %d %+v %s", code, ae, b)
	}
}

// TestDeletedClusterLeavesItsExpiredSessionsExpired: ending a deleted cluster's live sessions
// does not rewrite the record of one that had expired before: it stays expired, closed by
// no one, not revoked by the admin service at the time of the read that ended the others.
func TestDeletedClusterLeavesItsExpiredSessionsExpired(t *testing.T) {
	e := start(t)
	clusterID, _, _ := seedCluster(t, e)
	ctx := context.Background()
	expired, err := e.sessions.Open(ctx, session.Session{ID: newCredentialID(), ClusterID: clusterID, Person: "bob", Group: access.GroupReadOnly,
		Access: session.AccessReadOnly, Reason: "looked", TTLSeconds: 60, Expires: time.Now().Add(-time.Hour)}, []byte("kubeconfig"))
	if err != nil {
		t.Fatal(err)
	}
	live, err := e.sessions.Open(ctx, session.Session{ID: newCredentialID(), ClusterID: clusterID, Person: "alice", Group: access.GroupAdmin,
		Access: session.AccessAdmin, Reason: "fix etcd", TTLSeconds: 600}, nil)
	if err != nil {
		t.Fatal(err)
	}
	removeCluster(t, e, clusterID)
	if code, ae, b := e.call(t, "bob", "GET", "/admin/v1/breakglass?all=true", ""); code != 200 {
		t.Fatalf("list: %d %+v %s", code, ae, b)
	}
	for _, tc := range []struct {
		id, state, closedBy string
	}{
		{live.ID, adminapi.StateRevoked, deletedClusterCloser},
		{expired.ID, adminapi.StateExpired, ""},
	} {
		code, ae, b := e.call(t, "bob", "GET", "/admin/v1/breakglass-sessions/"+tc.id, "")
		var s adminapi.BreakGlassSession
		if code != 200 || json.Unmarshal(b, &s) != nil || s.State != tc.state || s.ClosedBy != tc.closedBy {
			t.Errorf("session %s after its cluster was removed: %d %+v %s; want %s closed by %q", tc.id, code, ae, b, tc.state, tc.closedBy)
		}
	}
}

// hangingClusters is Cluster Service's clusters client whose GetCluster, once hang is set,
// answers only when its caller gives up (a Cluster Service that does not answer), counting calls.
type hangingClusters struct {
	csv1.ClustersClient
	hang  atomic.Bool
	calls atomic.Int32
	// listed counts ListClusters calls that name clusters, hanging or not.
	listed atomic.Int32
}

// ListClusters hangs, once hang is set, the calls that name clusters (the sessions' check);
// every call naming clusters is counted in listed.
func (c *hangingClusters) ListClusters(ctx context.Context, in *csv1.ListClustersRequest, opts ...grpc.CallOption) (*csv1.ListClustersResponse, error) {
	if len(in.GetIds()) == 0 {
		return c.ClustersClient.ListClusters(ctx, in, opts...)
	}
	c.listed.Add(1)
	if !c.hang.Load() {
		return c.ClustersClient.ListClusters(ctx, in, opts...)
	}
	c.calls.Add(1)
	<-ctx.Done()
	return nil, status.FromContextError(ctx.Err()).Err()
}

func (c *hangingClusters) GetCluster(ctx context.Context, in *csv1.GetClusterRequest, opts ...grpc.CallOption) (*csv1.Cluster, error) {
	if !c.hang.Load() {
		return c.ClustersClient.GetCluster(ctx, in, opts...)
	}
	c.calls.Add(1)
	<-ctx.Done()
	return nil, status.FromContextError(ctx.Err()).Err()
}

// TestPendingListAsksClusterServiceOncePerCluster: the pending list checks the cluster of its
// sessions as every other read does, once per cluster within one call timeout, however many
// sessions await an approval: a Cluster Service that does not answer costs the list one
// timeout, not one per pending session, and leaves the sessions as they are.
func TestPendingListAsksClusterServiceOncePerCluster(t *testing.T) {
	const timeout = time.Second
	hc := &hangingClusters{}
	e := start(t, func(c *Config) {
		hc.ClustersClient = c.Clusters
		c.Clusters, c.Timeout = hc, timeout
	})
	clusterID, _, _ := seedCluster(t, e)
	readyCluster(t, e, clusterID)
	const pending = 4
	for i := 0; i < pending; i++ {
		code, ae, b := e.call(t, "alice", "POST", "/admin/v1/breakglass/"+clusterID, `{"access":"admin","reason":"fix etcd"}`)
		if code != http.StatusAccepted {
			t.Fatalf("open admin: %d %+v %s", code, ae, b)
		}
	}
	hc.hang.Store(true)
	began := time.Now()
	code, ae, b := e.call(t, "bob", "GET", "/admin/v1/breakglass-pending", "")
	took := time.Since(began)
	var list adminapi.BreakGlassSessions
	if code != 200 || json.Unmarshal(b, &list) != nil || len(list.Sessions) != pending {
		t.Fatalf("pending list with Cluster Service hanging: %d %+v %s; want the %d sessions as stored", code, ae, b, pending)
	}
	if n := hc.calls.Load(); n != 1 || took > 2*timeout+timeout/2 {
		t.Fatalf("pending list of %d sessions of one cluster: %d calls to Cluster Service, %v; want 1 call, within about one timeout (%v)", pending, n, took, timeout)
	}
}

// TestSessionsEndWhileClusterServiceHangs: closing and revoking a session do not wait on the
// check of its cluster: with Cluster Service's GetCluster not answering, the check gives up
// within part of the call's timeout and the session still ends (before, the check took the
// whole timeout and the session's End failed on the expired deadline: nobody could end a
// session while Cluster Service hung).
func TestSessionsEndWhileClusterServiceHangs(t *testing.T) {
	const timeout = 3 * time.Second
	hc := &hangingClusters{}
	e := start(t, func(c *Config) {
		hc.ClustersClient = c.Clusters
		c.Clusters, c.Timeout = hc, timeout
	})
	clusterID, _, _ := seedCluster(t, e)
	readyCluster(t, e, clusterID)
	signInBackground(t, e)
	open := func() string {
		t.Helper()
		code, ae, b := e.call(t, "bob", "POST", "/admin/v1/breakglass/"+clusterID, `{"reason":"look at pods"}`)
		var s adminapi.BreakGlassSession
		if code != http.StatusCreated || json.Unmarshal(b, &s) != nil || s.State != adminapi.StateActive {
			t.Fatalf("open: %d %+v %s", code, ae, b)
		}
		return s.ID
	}
	closed, revoked := open(), open()
	hc.hang.Store(true)
	code, ae, b := e.call(t, "bob", "POST", "/admin/v1/breakglass-close/"+closed, `{"reason":"done"}`)
	if code != 200 {
		t.Errorf("close with Cluster Service hanging: %d %+v %s", code, ae, b)
	}
	code, ae, b = e.call(t, "alice", "POST", "/admin/v1/breakglass-revoke", `{"session":"`+revoked+`","reason":"leaked"}`)
	if code != 200 {
		t.Errorf("revoke with Cluster Service hanging: %d %+v %s", code, ae, b)
	}
	for id, want := range map[string]string{closed: session.Closed, revoked: session.Revoked} {
		if s, err := e.sessions.Get(context.Background(), id); err != nil || s.State != want {
			t.Errorf("session %s: %s, %v; want %s", id, s.State, err, want)
		}
	}
}

// TestOneCallChecksTheClustersOfEverySession: a read of sessions on several clusters asks
// Cluster Service about all their clusters in one call, and ends the sessions of exactly the
// clusters it no longer holds.
func TestOneCallChecksTheClustersOfEverySession(t *testing.T) {
	hc := &hangingClusters{}
	e := start(t, func(c *Config) {
		hc.ClustersClient = c.Clusters
		c.Clusters = hc
	})
	signInBackground(t, e)
	var clusters []string
	for i := 0; i < 3; i++ {
		id := strings.Repeat("0", 31) + strconv.Itoa(i+1)
		_, err := e.clusters.CreateCluster(context.Background(), &csv1.CreateClusterRequest{Cluster: &csv1.Cluster{Id: id,
			ArmResourceId: "/subscriptions/" + testSub + "/resourceGroups/rg/providers/Microsoft.RedHatOpenShift/hcpOpenShiftClusters/bg" + strconv.Itoa(i),
			Spec: &csv1.ClusterSpec{VersionId: "4.19.17", Azure: &csv1.AzureSpec{Location: "eastus", SubscriptionId: testSub, ManagedResourceGroup: "mrg" + strconv.Itoa(i),
				SubnetId:               "/subscriptions/" + testSub + "/resourceGroups/rg/providers/Microsoft.Network/virtualNetworks/vnet/subnets/s",
				NetworkSecurityGroupId: "/subscriptions/" + testSub + "/resourceGroups/rg/providers/Microsoft.Network/networkSecurityGroups/nsg"}}}})
		if err != nil {
			t.Fatal(err)
		}
		readyCluster(t, e, id)
		clusters = append(clusters, id)
		if code, ae, b := e.call(t, "bob", "POST", "/admin/v1/breakglass/"+id, `{"reason":"look at pods"}`); code != http.StatusCreated {
			t.Fatalf("open on %s: %d %+v %s", id, code, ae, b)
		}
	}
	for _, id := range clusters[:2] {
		removeCluster(t, e, id)
	}
	before := hc.listed.Load()
	code, ae, b := e.call(t, "bob", "GET", "/admin/v1/breakglass", "")
	var live adminapi.BreakGlassSessions
	if code != 200 || json.Unmarshal(b, &live) != nil {
		t.Fatalf("list: %d %+v %s", code, ae, b)
	}
	if n := hc.listed.Load() - before; n != 1 {
		t.Errorf("a list of sessions on %d clusters asked Cluster Service %d times, want once", len(clusters), n)
	}
	if len(live.Sessions) != 1 || live.Sessions[0].ClusterID != clusters[2] {
		t.Errorf("live sessions after two of three clusters were removed: %+v, want only the one on %s", live.Sessions, clusters[2])
	}
}

// TestASessionOfAnUnknownShapeDoesNotKeepOthersLive: Cluster Service refuses a whole
// ListClusters naming an ID that is not a cluster ID; a stored session with such an ID (a row
// of another shape) must not keep a deleted cluster's sessions live: the batch is asked again
// ID by ID.
func TestASessionOfAnUnknownShapeDoesNotKeepOthersLive(t *testing.T) {
	e := start(t)
	clusterID, _, _ := seedCluster(t, e)
	ctx := context.Background()
	odd, err := e.sessions.Open(ctx, session.Session{ID: newCredentialID(), ClusterID: "not-a-cluster-id", Person: "bob", Group: access.GroupAdmin,
		Access: session.AccessAdmin, Reason: "odd row", TTLSeconds: 600}, nil)
	if err != nil {
		t.Fatal(err)
	}
	live, err := e.sessions.Open(ctx, session.Session{ID: newCredentialID(), ClusterID: clusterID, Person: "alice", Group: access.GroupAdmin,
		Access: session.AccessAdmin, Reason: "fix etcd", TTLSeconds: 600}, nil)
	if err != nil {
		t.Fatal(err)
	}
	removeCluster(t, e, clusterID)
	if code, ae, b := e.call(t, "bob", "GET", "/admin/v1/breakglass", ""); code != 200 {
		t.Fatalf("list: %d %+v %s", code, ae, b)
	}
	if s, err := e.sessions.Get(ctx, live.ID); err != nil || s.State != session.Revoked || s.ClosedBy != deletedClusterCloser {
		t.Errorf("the deleted cluster's session beside an odd one: %s by %q, %v; want revoked by %s", s.State, s.ClosedBy, err, deletedClusterCloser)
	}
	if s, err := e.sessions.Get(ctx, odd.ID); err != nil || s.State != session.AwaitingApproval {
		t.Errorf("the odd session: %s, %v; want it left as it was (nothing decides about its cluster)", s.State, err)
	}
}

// removeCluster has Cluster Service remove cluster id as its controller's last step does (marked
// deleting, then removed), which revokes its credentials.
func removeCluster(t *testing.T, e *env, id string) {
	t.Helper()
	c, err := e.csdb.MarkDeleting(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	if err := e.csdb.RemoveCluster(context.Background(), id, c.Revision); err != nil {
		t.Fatal(err)
	}
}

// signInBackground signs the test's pending break-glass credentials as the management cluster
// would (signPending) until the test ends.
func signInBackground(t *testing.T, e *env) {
	ctx, cancel := context.WithCancel(context.Background())
	signed := make(chan struct{})
	go func() { defer close(signed); signPending(ctx, t, e.csdb) }()
	t.Cleanup(func() { cancel(); <-signed })
}
