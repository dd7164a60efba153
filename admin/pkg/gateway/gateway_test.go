package gateway

import (
	"bufio"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"log/slog"
	"math/big"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/prometheus/client_golang/prometheus/testutil"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/openhcp/openhcp/admin/pkg/approval"
	"github.com/openhcp/openhcp/admin/pkg/audit"
	"github.com/openhcp/openhcp/admin/pkg/revocation"
	"github.com/openhcp/openhcp/admin/pkg/session"
	"github.com/openhcp/openhcp/cluster-service/pkg/breakglass"
	"github.com/openhcp/openhcp/dev-infrastructure/mgmtcluster"
	"github.com/openhcp/openhcp/internal/hostedrbac"
	"github.com/openhcp/openhcp/internal/pgserver/pgservertest"
)

// env is a gateway in front of a real kube-apiserver (the hosted cluster's stand-in, with the
// contract's RBAC: the SRE certificates may only impersonate), on a real admin database.
type env struct {
	gw        *Gateway
	srv       *httptest.Server
	sessions  *session.Store
	revoked   *revocation.List
	audit     *audit.Log
	kube      *kubernetes.Clientset
	kubeconfs map[string][]byte // SRE certificate kubeconfigs by access
	persons   map[string]tls.Certificate
	personCA  *x509.CertPool
	// serviceDSN is the admin database as the service's login.
	serviceDSN string
}

// newEnv starts the environment; each of with may change the gateway's Config before it starts.
func newEnv(t *testing.T, with ...func(*Config)) *env {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	t.Cleanup(cancel)
	apiserverPath, etcdPath, err := mgmtcluster.KubeBinaries(ctx)
	if err != nil {
		t.Skipf("kube-apiserver and etcd binaries: %v", err)
	}
	dir := t.TempDir()
	mc, err := mgmtcluster.StartManagementCluster(ctx, mgmtcluster.ManagementClusterOptions{Name: "hosted", Dir: dir, LogDir: dir,
		APIServerPath: apiserverPath, EtcdPath: etcdPath, SkipCRDs: true, ReadyTimeout: 3 * time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(mc.Stop)
	kube, err := kubernetes.NewForConfig(mc.RESTConfig())
	if err != nil {
		t.Fatal(err)
	}
	installRBAC(t, ctx, kube)
	e := &env{kube: kube, kubeconfs: map[string][]byte{}, persons: map[string]tls.Certificate{}}
	for acc, cs := range map[string]string{session.AccessReadOnly: "openhcp:sre-break-glass:read-only", session.AccessAdmin: "openhcp:sre-break-glass:admin"} {
		p := filepath.Join(dir, acc+".kubeconfig")
		if err := mc.WriteClientKubeconfig(p, breakglass.SREUserPrefix+"gateway-test", []string{cs}); err != nil {
			t.Fatal(err)
		}
		if e.kubeconfs[acc], err = os.ReadFile(p); err != nil {
			t.Fatal(err)
		}
	}

	pg := pgservertest.Start(t)
	superDSN := pgservertest.NewDatabase(t, pg)
	c, err := pgx.Connect(ctx, superDSN)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close(ctx)
	if _, err := c.Exec(ctx, "DO $$ BEGIN IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'adminsvc') THEN CREATE ROLE adminsvc LOGIN; END IF; END $$"); err != nil {
		t.Fatal(err)
	}
	for _, install := range []func(context.Context, *pgx.Conn, string) error{audit.Install, revocation.Install, approval.Install, session.Install} {
		if err := install(ctx, c, "adminsvc"); err != nil {
			t.Fatal(err)
		}
	}
	e.serviceDSN = strings.Replace(superDSN, "postgres://postgres@", "postgres://adminsvc@", 1)
	e.audit, err = audit.Open(ctx, e.serviceDSN)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(e.audit.Close)
	raw := make([]byte, 32)
	_, _ = rand.Read(raw)
	key, err := session.NewKey(raw)
	if err != nil {
		t.Fatal(err)
	}
	e.sessions, e.revoked = session.New(e.audit.Pool(), key), revocation.New(e.audit.Pool())
	if err := e.sessions.Check(ctx); err != nil {
		t.Fatal(err)
	}

	personCA, personKey := newCA(t)
	for person, group := range map[string]string{"alice": "sre-admin", "bob": "sre-admin", "carol": "sre-readonly", "dave": "sre-readonly"} {
		e.persons[person] = issue(t, personCA, personKey, person, group)
	}
	// alice, moved to sre-readonly by a new certificate without a revocation.
	e.persons["alice/sre-readonly"] = issue(t, personCA, personKey, "alice", "sre-readonly")
	cfg := Config{Sessions: e.sessions, Revocations: e.revoked, Audit: e.audit, Poll: 200 * time.Millisecond,
		Logger: slog.New(slog.NewTextHandler(testWriter{t}, nil))}
	for _, f := range with {
		f(&cfg)
	}
	e.gw, err = New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	runCtx, stop := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { e.gw.Run(runCtx); close(done) }()
	t.Cleanup(func() { stop(); <-done })
	e.srv = httptest.NewUnstartedServer(e.gw.Handler())
	e.personCA = x509.NewCertPool()
	e.personCA.AddCert(personCA)
	e.srv.TLS = &tls.Config{ClientCAs: e.personCA, ClientAuth: tls.RequireAndVerifyClientCert}
	e.srv.StartTLS()
	t.Cleanup(e.srv.Close)
	return e
}

// installRBAC creates the contract's bindings: the SRE certificates' groups may impersonate
// users and their one group; openhcp:sre:admin is cluster-admin; openhcp:sre:read-only may
// get, list and watch configmaps (enough for the test).
func installRBAC(t *testing.T, ctx context.Context, kube *kubernetes.Clientset) {
	t.Helper()
	roles := []rbacv1.ClusterRole{
		{ObjectMeta: metav1.ObjectMeta{Name: "openhcp:sre-break-glass:impersonate-read-only"}, Rules: []rbacv1.PolicyRule{
			{APIGroups: []string{""}, Resources: []string{"users"}, Verbs: []string{"impersonate"}},
			{APIGroups: []string{""}, Resources: []string{"groups"}, Verbs: []string{"impersonate"}, ResourceNames: []string{breakglass.SREImpersonatedGroupReadOnly}}}},
		{ObjectMeta: metav1.ObjectMeta{Name: "openhcp:sre-break-glass:impersonate-admin"}, Rules: []rbacv1.PolicyRule{
			{APIGroups: []string{""}, Resources: []string{"users"}, Verbs: []string{"impersonate"}},
			{APIGroups: []string{""}, Resources: []string{"groups"}, Verbs: []string{"impersonate"},
				ResourceNames: []string{breakglass.SREImpersonatedGroupAdmin, breakglass.SREImpersonatedGroupReadOnly}}}},
		{ObjectMeta: metav1.ObjectMeta{Name: "openhcp:sre:read-only"}, Rules: []rbacv1.PolicyRule{
			{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: []string{"get", "list", "watch"}}}},
	}
	bindings := map[string][2]string{ // binding: role, group
		"openhcp:sre-break-glass:impersonate-read-only": {"openhcp:sre-break-glass:impersonate-read-only", "openhcp:sre-break-glass:read-only"},
		"openhcp:sre-break-glass:impersonate-admin":     {"openhcp:sre-break-glass:impersonate-admin", "openhcp:sre-break-glass:admin"},
		"openhcp:sre:admin":                             {"cluster-admin", breakglass.SREImpersonatedGroupAdmin},
		"openhcp:sre:read-only":                         {"openhcp:sre:read-only", breakglass.SREImpersonatedGroupReadOnly},
	}
	for _, r := range roles {
		if _, err := kube.RbacV1().ClusterRoles().Create(ctx, &r, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	for name, rg := range bindings {
		b := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: name}, RoleRef: rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: rg[0]},
			Subjects: []rbacv1.Subject{{APIGroup: "rbac.authorization.k8s.io", Kind: "Group", Name: rg[1]}}}
		if _, err := kube.RbacV1().ClusterRoleBindings().Create(ctx, b, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
}

// open opens and activates a session of person on the test cluster, until expires.
func (e *env) open(t *testing.T, person, access string, expires time.Time) session.Session {
	t.Helper()
	ctx := context.Background()
	id := newID()[:32]
	s, err := e.sessions.Open(ctx, session.Session{ID: id, ClusterID: "c1", Person: person, Group: "sre-admin", Access: access, Reason: "test", TTLSeconds: 3600}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if expires.IsZero() {
		return s
	}
	// Activate as an approval does (the read-only path opens active at once: session tests).
	s, err = e.sessions.Activate(ctx, id, e.kubeconfs[access], expires)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// client is an HTTP client presenting person's certificate.
func (e *env) client(person string) *http.Client {
	c := e.srv.Client()
	tr := c.Transport.(*http.Transport).Clone()
	tr.TLSClientConfig.Certificates = []tls.Certificate{e.persons[person]}
	return &http.Client{Transport: tr}
}

// reviewSelf asks the apiserver, through session id as person, who it sees.
func (e *env) reviewSelf(t *testing.T, person, id string, header http.Header) (int, map[string]any) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, e.srv.URL+"/sessions/"+id+"/apis/authentication.k8s.io/v1/selfsubjectreviews",
		strings.NewReader(`{"apiVersion":"authentication.k8s.io/v1","kind":"SelfSubjectReview"}`))
	req.Header.Set("Content-Type", "application/json")
	for k, v := range header {
		req.Header[k] = v
	}
	resp, err := e.client(person).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var body map[string]any
	_ = json.NewDecoder(resp.Body).Decode(&body)
	return resp.StatusCode, body
}

func TestGatewayProxiesAsThePerson(t *testing.T) {
	e := newEnv(t)
	now := time.Now()

	t.Run("proxied_request_is_seen_as_the_person_with_the_session's_group", func(t *testing.T) {
		for _, tc := range []struct{ access, group string }{
			{session.AccessAdmin, breakglass.SREImpersonatedGroupAdmin},
			{session.AccessReadOnly, breakglass.SREImpersonatedGroupReadOnly},
		} {
			s := e.open(t, "alice", tc.access, now.Add(time.Hour))
			code, body := e.reviewSelf(t, "alice", s.ID, nil)
			user := userInfo(body)
			if code != http.StatusCreated || user.Username != hostedrbac.SREImpersonatedUser("alice") || !slices.Contains(user.Groups, tc.group) {
				t.Fatalf("%s: answer %d %v, want 201 from alice in %s", tc.access, code, body, tc.group)
			}
		}
	})

	t.Run("client_authorization_and_impersonation_headers_are_not_passed", func(t *testing.T) {
		s := e.open(t, "alice", session.AccessReadOnly, now.Add(time.Hour))
		code, body := e.reviewSelf(t, "alice", s.ID, http.Header{
			"Impersonate-User": {"mallory"}, "Impersonate-Group": {"system:masters"}, "Impersonate-Uid": {"u-1"},
			"Impersonate-Extra-Scopes": {"everything"}, "Authorization": {"Bearer stolen"},
		})
		user := userInfo(body)
		if code != http.StatusCreated || user.Username != hostedrbac.SREImpersonatedUser("alice") || slices.Contains(user.Groups, "system:masters") || user.UID != "" || len(user.Extra) != 0 {
			t.Fatalf("answer %d %v: the client's own impersonation reached the apiserver", code, body)
		}
	})

	t.Run("every_request_is_audited_with_session_cluster_verb_path_and_code", func(t *testing.T) {
		s := e.open(t, "alice", session.AccessAdmin, now.Add(time.Hour))
		e.reviewSelf(t, "alice", s.ID, nil)
		got, _, err := e.audit.Query(context.Background(), audit.Filter{Target: s.ID})
		if err != nil || len(got) != 2 {
			t.Fatalf("audit records of session %s: %v, %v; want two (allowed, then completed)", s.ID, got, err)
		}
		// Newest first: the answer's record, then the one written before the request was sent.
		for i, want := range []struct {
			outcome string
			status  int
		}{{audit.Completed, http.StatusCreated}, {audit.Allowed, 0}} {
			r := got[i]
			if r.Person != "alice" || r.Method != "create" || r.Route != Route("c1") || r.Path != "/apis/authentication.k8s.io/v1/selfsubjectreviews" ||
				r.Status != want.status || r.Outcome != want.outcome || r.RequestID != got[0].RequestID {
				t.Fatalf("audit record %d %+v, want outcome %s status %d", i, r, want.outcome, want.status)
			}
		}
	})

	t.Run("a_session_ID_with_NUL_or_invalid_UTF-8_is_no_such_session_and_audited", func(t *testing.T) {
		// PostgreSQL refused such an ID in the session lookup: a 503 "cannot be read".
		for _, tc := range []struct{ id, stored string }{
			{"a%00b", `a\x00b`}, {"%ff", `\xff`}, {"%ff%fe", `\xff\xfe`},
		} {
			code, body := e.reviewSelf(t, "alice", tc.id, nil)
			if code != http.StatusNotFound || body["kind"] != "Status" {
				t.Fatalf("session %s: answer %d %v, want 404", tc.id, code, body)
			}
			raw, _ := url.PathUnescape(tc.id)
			got, _, err := e.audit.Query(context.Background(), audit.Filter{Target: raw})
			if err != nil || len(got) != 1 || got[0].Target != tc.stored || got[0].Status != http.StatusNotFound {
				t.Fatalf("audit records of session %s: %+v, %v; want one 404 with target %q", tc.id, got, err, tc.stored)
			}
		}
	})

	for _, tc := range []struct {
		name, owner, caller, access string
		activate, revoke            bool
		wantCode                    int
		wantRefusal                 string
	}{
		{"another_person's_certificate_is_refused", "alice", "bob", session.AccessReadOnly, true, false, http.StatusForbidden, "not-owner"},
		{"admin_session_without_approval_is_refused", "alice", "alice", session.AccessAdmin, false, false, http.StatusForbidden, "session-awaiting-approval"},
		{"revoked_person_is_refused", "carol", "carol", session.AccessReadOnly, true, true, http.StatusForbidden, "revoked-person"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var expires time.Time
			if tc.activate {
				expires = now.Add(time.Hour)
			}
			s := e.open(t, tc.owner, tc.access, expires)
			if tc.revoke {
				if _, err := e.revoked.Revoke(context.Background(), tc.owner, "bob", "leaked"); err != nil {
					t.Fatal(err)
				}
			}
			before := testutil.ToFloat64(e.gw.metrics.refusals.WithLabelValues(tc.wantRefusal))
			code, body := e.reviewSelf(t, tc.caller, s.ID, nil)
			if code != tc.wantCode || body["kind"] != "Status" || body["message"] == "" {
				t.Fatalf("answer %d %v, want %d with a Status naming why", code, body, tc.wantCode)
			}
			if after := testutil.ToFloat64(e.gw.metrics.refusals.WithLabelValues(tc.wantRefusal)); after != before+1 {
				t.Fatalf("gateway_refusals_total{reason=%q} went %v -> %v", tc.wantRefusal, before, after)
			}
			got, _, err := e.audit.Query(context.Background(), audit.Filter{Target: s.ID})
			if err != nil || len(got) != 1 || got[0].Outcome != audit.Forbidden || got[0].Status != tc.wantCode || got[0].Person != tc.caller {
				t.Fatalf("audit records %+v, %v: want one forbidden record naming %s", got, err, tc.caller)
			}
		})
	}

	t.Run("a_certificate_of_another_group_than_the_session's_is_refused", func(t *testing.T) {
		// alice opened an admin session as sre-admin; her sre-readonly certificate cannot drive it.
		s := e.open(t, "alice", session.AccessAdmin, now.Add(time.Hour))
		before := testutil.ToFloat64(e.gw.metrics.refusals.WithLabelValues("not-group"))
		code, body := e.reviewSelf(t, "alice/sre-readonly", s.ID, nil)
		if code != http.StatusForbidden || body["kind"] != "Status" || !strings.Contains(fmt.Sprint(body["message"]), "sre-readonly") {
			t.Fatalf("answer %d %v, want 403 with a Status naming the certificate's group", code, body)
		}
		if after := testutil.ToFloat64(e.gw.metrics.refusals.WithLabelValues("not-group")); after != before+1 {
			t.Fatalf("gateway_refusals_total{reason=\"not-group\"} went %v -> %v", before, after)
		}
		got, _, err := e.audit.Query(context.Background(), audit.Filter{Target: s.ID})
		if err != nil || len(got) != 1 || got[0].Outcome != audit.Forbidden || got[0].Person != "alice" {
			t.Fatalf("audit records %+v, %v: want one forbidden record naming alice", got, err)
		}
		if code, body := e.reviewSelf(t, "alice", s.ID, nil); code != http.StatusCreated {
			t.Fatalf("the session's own group: answer %d %v, want 201", code, body)
		}
	})

	t.Run("no_audit_record_no_answer", func(t *testing.T) {
		// A gateway whose audit log is unreachable (its pool closed) withholds the answer.
		broken, err := audit.Open(context.Background(), e.serviceDSN)
		if err != nil {
			t.Fatal(err)
		}
		broken.Close()
		gw, err := New(Config{Sessions: e.sessions, Revocations: e.revoked, Audit: broken, Logger: slog.New(slog.NewTextHandler(testWriter{t}, nil))})
		if err != nil {
			t.Fatal(err)
		}
		srv := httptest.NewUnstartedServer(gw.Handler())
		srv.TLS = &tls.Config{ClientCAs: e.personCA, ClientAuth: tls.RequireAndVerifyClientCert}
		srv.StartTLS()
		defer srv.Close()
		s := e.open(t, "alice", session.AccessAdmin, now.Add(time.Hour))
		saved := e.srv
		e.srv = srv
		code, body := e.reviewSelf(t, "alice", s.ID, nil)
		if code != http.StatusServiceUnavailable || userInfo(body).Username != "" {
			e.srv = saved
			t.Fatalf("answer %d %v without an audit record, want 503 and no apiserver answer", code, body)
		}
		// Nor does the request reach the hosted cluster: a create that cannot be recorded is
		// not made (recorded only after the answer, it was made and went unrecorded).
		name := "unrecorded-" + s.ID[:8]
		req, err := http.NewRequest(http.MethodPost, srv.URL+"/sessions/"+s.ID+"/api/v1/namespaces/default/configmaps",
			strings.NewReader(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"`+name+`"}}`))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", "application/json")
		resp, err := e.client("alice").Do(req)
		e.srv = saved
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusServiceUnavailable {
			t.Fatalf("create without an audit record: %d, want 503", resp.StatusCode)
		}
		if n := testutil.ToFloat64(gw.metrics.refusals.WithLabelValues("audit-unavailable")); n < 1 {
			t.Fatalf("gateway_refusals_total{reason=\"audit-unavailable\"} = %v after a request not sent for want of a record", n)
		}
		if _, err := e.kube.CoreV1().ConfigMaps("default").Get(context.Background(), name, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			t.Fatalf("the create reached the hosted cluster with no audit record (get: %v)", err)
		}
	})

	t.Run("watch_streams_and_is_closed_when_the_session_is_closed", func(t *testing.T) {
		s := e.open(t, "alice", session.AccessAdmin, now.Add(time.Hour))
		proxied := func() float64 { return testutil.ToFloat64(e.gw.metrics.proxied.WithLabelValues("200")) }
		before := proxied()
		events := e.watch(t, "alice", s.ID)
		e.createConfigMap(t, "closed-"+s.ID[:8])
		waitEvent(t, events, "closed-"+s.ID[:8])
		if got := testutil.ToFloat64(e.gw.metrics.streams); got != 1 {
			t.Fatalf("gateway_streams_open = %v with one watch open", got)
		}
		if _, err := e.sessions.End(context.Background(), s.ID, session.Closed, "alice"); err != nil {
			t.Fatal(err)
		}
		waitClosed(t, events, 30*time.Second)
		// The cut watch is counted once its handler has returned.
		for deadline := time.Now().Add(30 * time.Second); proxied() != before+1 || testutil.ToFloat64(e.gw.metrics.streams) != 0; {
			if time.Now().After(deadline) {
				t.Fatalf("after the cut: gateway_proxied_requests_total{code=\"200\"} %v -> %v, gateway_streams_open %v", before, proxied(), testutil.ToFloat64(e.gw.metrics.streams))
			}
			time.Sleep(50 * time.Millisecond)
		}
		if code, body := e.reviewSelf(t, "alice", s.ID, nil); code != http.StatusForbidden || !strings.Contains(body["message"].(string), "closed") {
			t.Fatalf("after close: %d %v, want 403 saying the session is closed", code, body)
		}
	})

	t.Run("watch_is_closed_when_the_session_expires", func(t *testing.T) {
		s := e.open(t, "alice", session.AccessReadOnly, time.Now().Add(5*time.Second))
		events := e.watch(t, "alice", s.ID)
		e.createConfigMap(t, "expiring-"+s.ID[:8])
		waitEvent(t, events, "expiring-"+s.ID[:8])
		waitClosed(t, events, 40*time.Second)
		if code, body := e.reviewSelf(t, "alice", s.ID, nil); code != http.StatusForbidden || !strings.Contains(body["message"].(string), "expired") {
			t.Fatalf("after expiry: %d %v, want 403 saying the session expired", code, body)
		}
	})
}

// TestGatewayUpgradedStreamIsCutWhenTheSessionEnds: an upgraded stream (exec, attach,
// port-forward: SPDY or WebSocket) passes both ways through the gateway with the person's
// impersonation, and is closed within seconds of its session's close. No kubelet runs here to
// serve a real exec, so the upstream is a stand-in that upgrades and echoes, as a kubelet's
// stream does behind the kube-apiserver; the gateway's side is what is under test.
func TestGatewayUpgradedStreamIsCutWhenTheSessionEnds(t *testing.T) {
	e := newEnv(t)
	seen := make(chan http.Header, 1)
	standIn := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		seen <- r.Header.Clone()
		conn, rw, err := http.NewResponseController(w).Hijack()
		if err != nil {
			return
		}
		defer conn.Close()
		rw.WriteString("HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: SPDY/3.1\r\n\r\n")
		rw.Flush()
		_, _ = io.Copy(conn, rw) // echo until the gateway closes
	}))
	defer standIn.Close()
	kubeconfig := []byte(fmt.Sprintf("apiVersion: v1\nkind: Config\nclusters:\n- name: s\n  cluster:\n    server: %s\n    certificate-authority-data: %s\n"+
		"users:\n- name: u\n  user: {}\ncontexts:\n- name: c\n  context: {cluster: s, user: u}\ncurrent-context: c\n",
		standIn.URL, base64.StdEncoding.EncodeToString(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: standIn.Certificate().Raw}))))
	ctx := context.Background()
	id := newID()[:32]
	if _, err := e.sessions.Open(ctx, session.Session{ID: id, ClusterID: "c1", Person: "alice", Group: "sre-admin", Access: session.AccessAdmin,
		Reason: "exec", TTLSeconds: 3600, Expires: time.Now().Add(time.Hour)}, kubeconfig); err != nil {
		t.Fatal(err)
	}

	tlsCfg := e.client("alice").Transport.(*http.Transport).TLSClientConfig
	conn, err := tls.Dial("tcp", strings.TrimPrefix(e.srv.URL, "https://"), tlsCfg)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	fmt.Fprintf(conn, "POST /sessions/%s/api/v1/namespaces/default/pods/p/exec?command=sh HTTP/1.1\r\nHost: gateway\r\nConnection: Upgrade\r\nUpgrade: SPDY/3.1\r\n"+
		"Impersonate-User: mallory\r\nContent-Length: 0\r\n\r\n", id)
	br := bufio.NewReader(conn)
	resp, err := http.ReadResponse(br, nil)
	if err != nil || resp.StatusCode != http.StatusSwitchingProtocols {
		t.Fatalf("upgrade through the gateway: %v %v", resp, err)
	}
	if h := <-seen; h.Get("Impersonate-User") != hostedrbac.SREImpersonatedUser("alice") || h.Get("Impersonate-Group") != breakglass.SREImpersonatedGroupAdmin || h.Get("Upgrade") != "SPDY/3.1" {
		t.Fatalf("the upstream saw %v", h)
	}
	if _, err := conn.Write([]byte("ping\n")); err != nil {
		t.Fatal(err)
	}
	_ = conn.SetReadDeadline(time.Now().Add(30 * time.Second))
	if line, err := br.ReadString('\n'); err != nil || line != "ping\n" {
		t.Fatalf("echo through the upgraded stream: %q %v", line, err)
	}
	if got := testutil.ToFloat64(e.gw.metrics.streams); got != 1 {
		t.Fatalf("gateway_streams_open = %v with one stream open", got)
	}

	if _, err := e.sessions.End(ctx, id, session.Closed, "alice"); err != nil {
		t.Fatal(err)
	}
	_ = conn.SetReadDeadline(time.Now().Add(30 * time.Second))
	if _, err := io.ReadAll(br); err != nil {
		t.Fatalf("the upgraded stream is still open 30s after its session closed: %v", err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for testutil.ToFloat64(e.gw.metrics.streams) != 0 {
		if time.Now().After(deadline) {
			t.Fatal("gateway_streams_open stays 1 after the stream ended")
		}
		time.Sleep(50 * time.Millisecond)
	}
	got, _, err := e.audit.Query(ctx, audit.Filter{Target: id})
	// Newest first: the upgrade's answer, then the record written before it was sent.
	if err != nil || len(got) != 2 || got[0].Method != "connect" || got[0].Status != http.StatusSwitchingProtocols || got[1].Outcome != audit.Allowed {
		t.Fatalf("audit of the stream: %+v %v", got, err)
	}
	if n := testutil.ToFloat64(e.gw.metrics.proxied.WithLabelValues("101")); n != 1 {
		t.Fatalf("gateway_proxied_requests_total{code=\"101\"} = %v", n)
	}
}

type user struct {
	Username string              `json:"username"`
	UID      string              `json:"uid"`
	Groups   []string            `json:"groups"`
	Extra    map[string][]string `json:"extra"`
}

func userInfo(body map[string]any) user {
	var u user
	st, _ := body["status"].(map[string]any)
	b, _ := json.Marshal(st["userInfo"])
	_ = json.Unmarshal(b, &u)
	return u
}

// watch starts a watch of configmaps in default through session id; each line read is sent
// on the channel, which is closed when the stream ends.
func (e *env) watch(t *testing.T, person, id string) <-chan string {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, e.srv.URL+"/sessions/"+id+"/api/v1/namespaces/default/configmaps?watch=true", nil)
	resp, err := e.client(person).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		t.Fatalf("watch: %d %s", resp.StatusCode, b)
	}
	out := make(chan string, 100)
	go func() {
		defer close(out)
		defer resp.Body.Close()
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			out <- sc.Text()
		}
	}()
	return out
}

func (e *env) createConfigMap(t *testing.T, name string) {
	t.Helper()
	_, err := e.kube.CoreV1().ConfigMaps("default").Create(context.Background(), &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
}

func waitEvent(t *testing.T, events <-chan string, name string) {
	t.Helper()
	deadline := time.After(60 * time.Second)
	for {
		select {
		case line, ok := <-events:
			if !ok {
				t.Fatalf("watch ended before the event of %s", name)
			}
			if strings.Contains(line, `"name":"`+name+`"`) {
				return
			}
		case <-deadline:
			t.Fatalf("no watch event of %s within 60s: the watch does not stream", name)
		}
	}
}

func waitClosed(t *testing.T, events <-chan string, within time.Duration) {
	t.Helper()
	deadline := time.After(within)
	for {
		select {
		case _, ok := <-events:
			if !ok {
				return
			}
		case <-deadline:
			t.Fatalf("the watch is still open %s after its session ended", within)
		}
	}
}

func newCA(t *testing.T) (*x509.Certificate, *ecdsa.PrivateKey) {
	t.Helper()
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "person CA"}, IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageCertSign, NotBefore: time.Now().Add(-2 * time.Hour), NotAfter: time.Now().Add(time.Hour)}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, _ := x509.ParseCertificate(der)
	return cert, key
}

func issue(t *testing.T, ca *x509.Certificate, caKey *ecdsa.PrivateKey, person, group string) tls.Certificate {
	t.Helper()
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	serial, _ := rand.Int(rand.Reader, big.NewInt(1<<62))
	tmpl := &x509.Certificate{SerialNumber: serial, Subject: pkix.Name{CommonName: person, Organization: []string{group}},
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}, KeyUsage: x509.KeyUsageDigitalSignature,
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour)}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}
}

type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimSpace(string(p)))
	return len(p), nil
}
