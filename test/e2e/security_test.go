package e2e

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"

	csv1 "github.com/openhcp/openhcp/cluster-service/api/v1"
	"github.com/openhcp/openhcp/dev-infrastructure/localregion"
	"github.com/openhcp/openhcp/internal/pki"
	"github.com/openhcp/openhcp/internal/tlsconfig"
)

// TestRegionIsSecured checks the running region's ARM → frontend and → Cluster Service hops
// from outside, as an attacker on the loopback network would try them, and that region.json
// gives a tool everything it needs to call them properly.
func TestRegionIsSecured(t *testing.T) {
	needsOwnRegion(t, "issues and renews identities of its PKI")
	fe, cs := region.Info.Frontend, region.Info.ClusterService
	t.Run("region_json_lists_the_TLS_files", func(t *testing.T) {
		if !strings.HasPrefix(fe.URL, "https://") {
			t.Fatalf("frontend URL %s is not https", fe.URL)
		}
		for name, c := range map[string]localregion.ClientTLS{"frontend": fe.ClientTLS, "clusterService": cs.ClientTLS} {
			for _, f := range []string{c.CAFile, c.ClientCertFile, c.ClientKeyFile} {
				if _, err := os.Stat(f); f == "" || err != nil {
					t.Errorf("%s: file %q: %v", name, f, err)
				}
			}
		}
		if c, err := pki.ReadCertificate(fe.ClientCertFile); err != nil || c.Subject.CommonName != pki.ARM {
			t.Errorf("frontend.clientCertFile is not ARM's identity: %v %v", c, err)
		}
		if st, err := os.Stat(fe.ClientKeyFile); err != nil || st.Mode().Perm() != 0o600 {
			t.Errorf("frontend.clientKeyFile mode: %v %v", st, err)
		}
	})

	sub := "/subscriptions/" + strings.Repeat("0", 8) + "-0000-0000-0000-" + strings.Repeat("0", 12) + "?api-version=2.0"
	t.Run("frontend_plaintext_is_not_served", func(t *testing.T) {
		resp, err := (&http.Client{Timeout: 10 * time.Second}).Get("http://" + strings.TrimPrefix(fe.URL, "https://") + sub)
		if err == nil {
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusBadRequest || !strings.Contains(string(b), "HTTPS") {
				t.Fatalf("plaintext got %d %s", resp.StatusCode, b)
			}
		}
	})
	get := func(t *testing.T, files tlsconfig.Files, path string) (*http.Response, error) {
		t.Helper()
		files.ServerName = fe.ServerName // the ARM API's certificate names only it
		cfg, err := files.Client(strings.TrimPrefix(fe.URL, "https://"))
		if err != nil {
			t.Fatal(err)
		}
		c := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: cfg, DisableKeepAlives: true}}
		resp, err := c.Get(fe.URL + path)
		if err == nil {
			resp.Body.Close()
		}
		return resp, err
	}
	identity := func(name string) tlsconfig.Files {
		f := region.PKI().MustFiles(name)
		return tlsconfig.Files{CA: fe.CAFile, Cert: f.Cert, Key: f.Key}
	}
	t.Run("frontend_refusals", func(t *testing.T) {
		if resp, err := get(t, tlsconfig.Files{CA: fe.CAFile}, sub); err != nil || resp.StatusCode != http.StatusUnauthorized {
			t.Errorf("no certificate: %v %v; want 401", resp, err)
		}
		if resp, err := get(t, tlsconfig.Files{CA: fe.CAFile}, "/healthz"); err != nil || resp.StatusCode != http.StatusOK {
			t.Errorf("healthz without a certificate: %v %v; want 200", resp, err)
		}
		// Another subject of ARM's CA is verified and refused; the workloads' and the SRE
		// persons' CAs are not trusted at all.
		if err := region.PKI().Add("not-arm", pki.Spec{CommonName: "not-arm", Usage: pki.Client}, pki.ARMCA); err != nil {
			t.Fatal(err)
		}
		if resp, err := get(t, identity("not-arm"), sub); err != nil || resp.StatusCode != http.StatusForbidden {
			t.Errorf("another ARM CA subject: %v %v; want 403", resp, err)
		}
		if resp, err := get(t, identity(pki.SRE), sub); err == nil {
			t.Errorf("the sre workload's certificate got %d; want a handshake failure", resp.StatusCode)
		}
		if resp, err := get(t, identity(pki.Backend), sub); err == nil {
			t.Errorf("the backend's certificate (service CA) got %d; want a handshake failure", resp.StatusCode)
		}
	})

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	t.Run("cluster_service_plaintext_fails", func(t *testing.T) {
		conn, err := grpc.NewClient(cs.GRPC, grpc.WithTransportCredentials(insecure.NewCredentials()))
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		_, err = csv1.NewClustersClient(conn).ListClusters(ctx, &csv1.ListClustersRequest{})
		if status.Code(err) != codes.Unavailable {
			t.Fatalf("plaintext ListClusters: %v; want Unavailable", err)
		}
	})
	t.Run("cluster_service_authorizes_per_identity", func(t *testing.T) {
		for _, tc := range []struct {
			identity string
			want     codes.Code
		}{
			{pki.Backend, codes.PermissionDenied},
			{pki.Frontend, codes.PermissionDenied},
			{pki.SRE, codes.OK},
		} {
			conn, err := region.DialClusterServiceAs(tc.identity)
			if err != nil {
				t.Fatal(err)
			}
			_, err = csv1.NewProvisionShardsClient(conn).ListShards(ctx, &csv1.ListShardsRequest{})
			conn.Close()
			if status.Code(err) != tc.want {
				t.Errorf("%s ListShards: %v; want %s", tc.identity, err, tc.want)
			}
		}
	})

	// Rotation under the running region: renewed ARM and frontend certificates are used by the
	// next connection, and the region keeps serving.
	t.Run("rotation_without_restart", func(t *testing.T) {
		if _, err := region.PKI().Renew(pki.ARM); err != nil {
			t.Fatal(err)
		}
		renewed, err := region.PKI().Renew(pki.Frontend)
		if err != nil {
			t.Fatal(err)
		}
		cfg, err := fe.ClientTLS.Files().Client(strings.TrimPrefix(fe.URL, "https://"))
		if err != nil {
			t.Fatal(err)
		}
		var served *tls.ConnectionState
		c := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: cfg, DisableKeepAlives: true}}
		resp, err := c.Get(fe.URL + "/subscriptions/" + strings.Repeat("1", 8) + "-0000-0000-0000-" + strings.Repeat("1", 12) + "?api-version=2.0")
		if err != nil {
			t.Fatal(err)
		}
		var body map[string]any
		_ = json.NewDecoder(resp.Body).Decode(&body)
		resp.Body.Close()
		served = resp.TLS
		if resp.StatusCode == http.StatusUnauthorized || resp.StatusCode == http.StatusForbidden {
			t.Fatalf("renewed ARM certificate refused: %d %v", resp.StatusCode, body)
		}
		if served.PeerCertificates[0].SerialNumber.Cmp(renewed.SerialNumber) != 0 {
			t.Fatalf("frontend served serial %s, want the renewed %s", served.PeerCertificates[0].SerialNumber, renewed.SerialNumber)
		}
	})
}
