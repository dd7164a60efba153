package mgmtcluster

import (
	"bytes"
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/openhcp/openhcp/dev-infrastructure/mgmtcluster/maestrogate"
	"github.com/openhcp/openhcp/internal/identity"
	"github.com/openhcp/openhcp/internal/pki"
	"github.com/openhcp/openhcp/internal/tlsconfig"
)

// TestMaestroRESTAdmitsOnlyItsClients starts the real Maestro server as the region does (TLS,
// gRPC authorizer) and probes its REST API with every kind of caller: only Cluster Service may
// write, the admin API may only read, every other identity and a caller without a certificate
// are refused, and the server's own REST port is not on the host's loopback at all.
func TestMaestroRESTAdmitsOnlyItsClients(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	m := startSecureMaestro(ctx, t, secureMaestroOptions{consumers: []string{"mgmt-1"}, admin: true,
		rest: map[string]maestrogate.Access{identity.ClusterService: maestrogate.ReadWrite, identity.SRE: maestrogate.ReadOnly}})
	region, stranger, srv := m.region, m.stranger, m.srv
	cs := region.MustFiles(pki.ClusterService)
	if err := srv.REST().RegisterConsumer(ctx, "mgmt-1"); err != nil {
		t.Fatalf("register consumer as the launcher (cluster-service): %v", err)
	}

	as := func(p *pki.Region, identity string) *http.Client {
		t.Helper()
		files := tlsconfig.Files{CA: region.CAFile, ServerName: pki.ServerName(pki.MaestroServer)}
		if identity != "" {
			f := p.MustFiles(identity)
			files.Cert, files.Key = f.Cert, f.Key
		}
		cfg, err := files.Client("127.0.0.1")
		if err != nil {
			t.Fatal(err)
		}
		return &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{TLSClientConfig: cfg}}
	}
	call := func(c *http.Client, method, path, body string) (int, string, error) {
		req, err := http.NewRequestWithContext(ctx, method, srv.RESTURL+path, strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		if body != "" {
			req.Header.Set("Content-Type", "application/json")
		}
		resp, err := c.Do(req)
		if err != nil {
			return 0, "", err
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		return resp.StatusCode, string(bytes.TrimSpace(b)), nil
	}

	// Certificates of the region CA named like Cluster Service without its workload identity:
	// the gate admits SPIFFE IDs, not common names.
	frontendID, _ := identity.Of(identity.Frontend, region.TrustDomain)
	for name, uris := range map[string][]*url.URL{"cs-cn-without-id": nil, "cs-cn-with-frontend-id": {frontendID.URL()}} {
		if err := region.Add(name, pki.Spec{CommonName: pki.ClusterService, Usage: pki.Client, URIs: uris}, pki.ServiceCA); err != nil {
			t.Fatal(err)
		}
	}

	const bundles = "/api/maestro/v1/resource-bundles"
	const consumers = "/api/maestro/v1/consumers"
	for _, tc := range []struct {
		name               string
		pki                *pki.Region
		identity           string
		method, path, body string
		want               int // 0: refused at the handshake
	}{
		{"no_certificate_refused_at_the_handshake", region, "", http.MethodGet, bundles, "", 0},
		{"another_CA_refused_at_the_handshake", stranger, pki.ClusterService, http.MethodGet, bundles, "", 0},
		{"frontend_refused", region, pki.Frontend, http.MethodGet, bundles, "", http.StatusForbidden},
		{"agent_refused", region, pki.MaestroAgent("mgmt-1"), http.MethodGet, bundles, "", http.StatusForbidden},
		{"backend_refused", region, pki.Backend, http.MethodGet, consumers, "", http.StatusForbidden},
		{"maestro_server_itself_refused", region, pki.MaestroServer, http.MethodGet, consumers, "", http.StatusForbidden},
		{"admin_reads_bundles", region, "admin", http.MethodGet, bundles, "", http.StatusOK},
		{"admin_reads_consumers", region, "admin", http.MethodGet, consumers, "", http.StatusOK},
		{"admin_delete_bundle_refused", region, "admin", http.MethodDelete, bundles + "/00000000-0000-0000-0000-000000000000", "", http.StatusForbidden},
		{"admin_create_consumer_refused", region, "admin", http.MethodPost, consumers, `{"name":"admin-made"}`, http.StatusForbidden},
		{"admin_patch_consumer_refused", region, "admin", http.MethodPatch, consumers + "/x", `{"labels":{}}`, http.StatusForbidden},
		{"cluster_service_common_name_without_its_id_refused", region, "cs-cn-without-id", http.MethodGet, bundles, "", http.StatusForbidden},
		{"cluster_service_common_name_with_another_id_refused", region, "cs-cn-with-frontend-id", http.MethodPost, consumers, `{"name":"cn-made"}`, http.StatusForbidden},
		{"cluster_service_reads_bundles", region, pki.ClusterService, http.MethodGet, bundles, "", http.StatusOK},
		{"cluster_service_creates_consumer", region, pki.ClusterService, http.MethodPost, consumers, `{"name":"cs-made"}`, http.StatusCreated},
	} {
		t.Run(tc.name, func(t *testing.T) {
			status, body, err := call(as(tc.pki, tc.identity), tc.method, tc.path, tc.body)
			if tc.want == 0 {
				if err == nil {
					t.Fatalf("%s %s served (%d %s); want the handshake refused", tc.method, tc.path, status, body)
				}
				return
			}
			if err != nil {
				t.Fatalf("%s %s: %v", tc.method, tc.path, err)
			}
			if status != tc.want {
				t.Fatalf("%s %s as %q: %d %s; want %d", tc.method, tc.path, tc.identity, status, body, tc.want)
			}
		})
	}

	t.Run("grpc_is_forwarded_to_maestro", func(t *testing.T) {
		// A TLS 1.3 handshake with Maestro's gRPC server (its certificate, h2) through the
		// host's forwarder, as Cluster Service.
		cfg, err := tlsconfig.Files{CA: region.CAFile, Cert: cs.Cert, Key: cs.Key, ServerName: pki.ServerName(pki.MaestroServer)}.Client(srv.GRPCAddr)
		if err != nil {
			t.Fatal(err)
		}
		cfg.NextProtos = []string{"h2"}
		conn, err := tls.DialWithDialer(&net.Dialer{Timeout: 10 * time.Second}, "tcp", srv.GRPCAddr, cfg)
		if err != nil {
			t.Fatalf("TLS to Maestro's gRPC port: %v", err)
		}
		defer conn.Close()
		st := conn.ConnectionState()
		if st.NegotiatedProtocol != "h2" || len(st.PeerCertificates) == 0 || st.PeerCertificates[0].Subject.CommonName != pki.MaestroServer {
			t.Fatalf("gRPC port answered with protocol %q, certificate %v", st.NegotiatedProtocol, st.PeerCertificates)
		}
	})

	t.Run("maestro_listens_in_a_network_namespace_of_its_own", func(t *testing.T) {
		// The host's namespace as this goroutine's thread sees it. Not /proc/self: that shows
		// the main thread's, and the main thread may be the one the namespace holder locked
		// into Maestro's namespace (netns.NS), so the two would compare equal. A thread locked
		// to this goroutine is never the holder's.
		runtime.LockOSThread()
		own, err := os.Readlink("/proc/thread-self/ns/net")
		runtime.UnlockOSThread()
		if err != nil {
			t.Skipf("cannot read this process's network namespace: %v", err)
		}
		theirs, err := os.Readlink(fmt.Sprintf("/proc/%d/ns/net", srv.Process().PID()))
		if err != nil {
			t.Fatal(err)
		}
		if own == theirs {
			t.Fatalf("maestro shares the host's network namespace (%s): its REST port is open to every local user", own)
		}
	})
}
