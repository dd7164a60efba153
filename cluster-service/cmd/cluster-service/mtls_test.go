package main

import (
	"bytes"
	"context"
	"math/big"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/peer"
	"google.golang.org/grpc/status"

	csv1 "github.com/openhcp/openhcp/cluster-service/api/v1"
	"github.com/openhcp/openhcp/internal/pgserver/pgservertest"
	"github.com/openhcp/openhcp/internal/pki"
	"github.com/openhcp/openhcp/internal/tlsconfig"
)

// syncBuf collects the child's output while the test reads it.
type syncBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuf) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuf) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestBinaryMutualTLS runs the real binary over a real database with the region's PKI, as the
// local region does, and checks who gets in and what each identity may call: plaintext, no
// certificate and a certificate of an unknown CA fail the handshake; a verified certificate
// of the wrong identity gets PermissionDenied and changes nothing; the right identity works;
// and a renewed server certificate is served without a restart.
func TestBinaryMutualTLS(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	bin := filepath.Join(t.TempDir(), "cluster-service")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	p, err := pki.Create(t.TempDir(), pki.Options{})
	if err != nil {
		t.Fatal(err)
	}
	stranger, err := pki.Create(t.TempDir(), pki.Options{})
	if err != nil {
		t.Fatal(err)
	}
	pg := pgservertest.Start(t)
	dsn := pgservertest.NewDatabase(t, pg)
	listen, metrics := freeAddr(t), freeAddr(t)
	srvFiles := p.MustFiles(pki.ClusterService)
	kek := kekFile(t)

	t.Run("tls_without_client_CA_refuses_to_start", func(t *testing.T) {
		out, err := exec.Command(bin, "--db-dsn", dsn, "--secret-kek-file", kek, "--maestro-grpc", "127.0.0.1:1", "--maestro-rest", "http://127.0.0.1:2",
			"--tls-cert", srvFiles.Cert, "--tls-key", srvFiles.Key).CombinedOutput()
		if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 2 || !bytes.Contains(out, []byte("--tls-client-ca")) {
			t.Fatalf("err %v, output %s", err, out)
		}
	})
	t.Run("non_loopback_without_tls_refuses_to_start", func(t *testing.T) {
		out, err := exec.Command(bin, "--db-dsn", dsn, "--secret-kek-file", kek, "--maestro-grpc", "127.0.0.1:1", "--maestro-rest", "http://127.0.0.1:2",
			"--listen", "0.0.0.0:0").CombinedOutput()
		if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 2 || !bytes.Contains(out, []byte("--tls-cert")) {
			t.Fatalf("err %v, output %s", err, out)
		}
	})

	logs := &syncBuf{}
	cmd := exec.Command(bin, "--listen", listen, "--metrics-listen", metrics, "--db-dsn", dsn, "--secret-kek-file", kek,
		"--maestro-grpc", freeAddr(t), "--maestro-rest", "http://"+freeAddr(t), "--shutdown-timeout", "1s",
		"--tls-cert", srvFiles.Cert, "--tls-key", srvFiles.Key, "--tls-client-ca", p.CAFile)
	cmd.Stdout, cmd.Stderr = logs, logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-exited
	})
	deadline := time.Now().Add(60 * time.Second)
	for {
		if c, err := net.Dial("tcp", listen); err == nil {
			c.Close()
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("not listening after 60s; logs:\n%s", logs.String())
		}
		time.Sleep(100 * time.Millisecond)
	}

	// dial connects as one identity of a PKI; a zero Files means plaintext.
	dial := func(t *testing.T, files tlsconfig.Files) *grpc.ClientConn {
		t.Helper()
		creds := insecure.NewCredentials()
		if files.Enabled() {
			cfg, err := files.Client(listen)
			if err != nil {
				t.Fatal(err)
			}
			creds = credentials.NewTLS(cfg)
		}
		conn, err := grpc.NewClient(listen, grpc.WithTransportCredentials(creds))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { conn.Close() })
		return conn
	}
	as := func(pk *pki.Region, identity string) tlsconfig.Files {
		f := pk.MustFiles(identity)
		return tlsconfig.Files{CA: p.CAFile, Cert: f.Cert, Key: f.Key, ServerName: pki.ServerName(pki.ClusterService)}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	register := func(conn *grpc.ClientConn, name string) error {
		_, err := csv1.NewProvisionShardsClient(conn).RegisterShard(ctx, &csv1.RegisterShardRequest{Shard: &csv1.ProvisionShard{Name: name, MaxClusters: 3}})
		return err
	}
	list := func(conn *grpc.ClientConn) error {
		_, err := csv1.NewClustersClient(conn).ListClusters(ctx, &csv1.ListClustersRequest{})
		return err
	}

	for _, tc := range []struct {
		name  string
		files tlsconfig.Files
	}{
		{"plaintext", tlsconfig.Files{}},
		{"no_client_certificate", tlsconfig.Files{CA: p.CAFile, ServerName: pki.ServerName(pki.ClusterService)}},
		{"certificate_of_an_unknown_CA", as(stranger, pki.SRE)},
		// ARM's and the SRE persons' CAs are not trusted here: only workloads call Cluster Service.
		{"arm_certificate", as(p, pki.ARM)},
		{"person_certificate_named_like_a_service", issued(t, p, pki.PersonCA, pki.Spec{CommonName: pki.SRE, Organization: []string{"sre-admin"}, Usage: pki.Client})},
	} {
		t.Run(tc.name+"_fails_the_handshake", func(t *testing.T) {
			err := list(dial(t, tc.files))
			if status.Code(err) != codes.Unavailable {
				t.Fatalf("ListClusters: %v; want Unavailable (no connection)", err)
			}
		})
	}
	for _, tc := range []struct {
		name     string
		identity string
		call     func(*grpc.ClientConn) error
	}{
		{"backend_registers_a_shard", pki.Backend, func(c *grpc.ClientConn) error { return register(c, "by-backend") }},
		{"frontend_registers_a_shard", pki.Frontend, func(c *grpc.ClientConn) error { return register(c, "by-frontend") }},
		{"maestro_server_lists_clusters", pki.MaestroServer, list},
		{"backend_creates_a_cluster", pki.Backend, func(c *grpc.ClientConn) error {
			_, err := csv1.NewClustersClient(c).CreateCluster(ctx, &csv1.CreateClusterRequest{})
			return err
		}},
		{"sre_deletes_a_cluster", pki.SRE, func(c *grpc.ClientConn) error {
			_, err := csv1.NewClustersClient(c).DeleteCluster(ctx, &csv1.DeleteClusterRequest{Id: strings.Repeat("a", 32)})
			return err
		}},
	} {
		t.Run(tc.name+"_is_permission_denied", func(t *testing.T) {
			err := tc.call(dial(t, as(p, tc.identity)))
			if status.Code(err) != codes.PermissionDenied {
				t.Fatalf("err %v; want PermissionDenied", err)
			}
		})
	}
	// A service CA certificate is a workload only through its SPIFFE ID: the common name counts
	// for nothing, and an ID of another trust domain is no workload of this region.
	sreID, _ := p.WorkloadID(pki.SRE)
	otherDomain := sreID
	otherDomain.TrustDomain = "elsewhere.example"
	for _, tc := range []struct {
		name string
		spec pki.Spec
	}{
		{"service_certificate_named_sre_without_an_ID", pki.Spec{CommonName: pki.SRE, Usage: pki.Client, URIs: nil}},
		{"sre_ID_of_another_trust_domain", pki.Spec{CommonName: pki.SRE, Usage: pki.Client, URIs: []*url.URL{otherDomain.URL()}}},
	} {
		t.Run(tc.name+"_is_permission_denied", func(t *testing.T) {
			err := register(dial(t, issued(t, p, pki.ServiceCA, tc.spec)), "by-"+tc.name)
			if status.Code(err) != codes.PermissionDenied {
				t.Fatalf("RegisterShard: %v; want PermissionDenied", err)
			}
		})
	}
	t.Run("right_identities_are_served", func(t *testing.T) {
		sre := dial(t, as(p, pki.SRE))
		if err := register(sre, "by-sre"); err != nil {
			t.Fatalf("sre RegisterShard: %v", err)
		}
		shards, err := csv1.NewProvisionShardsClient(sre).ListShards(ctx, &csv1.ListShardsRequest{})
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, s := range shards.GetShards() {
			names = append(names, s.GetName())
		}
		if strings.Join(names, ",") != "by-sre" {
			t.Fatalf("shards %v; the refused calls must have changed nothing", names)
		}
		if err := list(dial(t, as(p, pki.Frontend))); err != nil {
			t.Fatalf("frontend ListClusters: %v", err)
		}
		watch, err := csv1.NewClustersClient(dial(t, as(p, pki.Backend))).WatchClusters(ctx, &csv1.WatchClustersRequest{})
		if err != nil {
			t.Fatal(err)
		}
		if ev, err := watch.Recv(); err != nil || ev.GetType() != csv1.EventType_EVENT_TYPE_BOOKMARK {
			t.Fatalf("backend WatchClusters first event %v, %v", ev, err)
		}
	})
	t.Run("message_over_the_limit_is_resource_exhausted", func(t *testing.T) {
		// serverlimits.GRPCDefaults: 4 MiB per request message.
		conn := dial(t, as(p, pki.Frontend))
		_, err := csv1.NewClustersClient(conn).CreateCluster(ctx, &csv1.CreateClusterRequest{
			Cluster: &csv1.Cluster{ArmResourceId: strings.Repeat("x", 5<<20)}})
		if status.Code(err) != codes.ResourceExhausted {
			t.Fatalf("a 5 MiB CreateCluster: %v; want ResourceExhausted", err)
		}
		if err := list(conn); err != nil {
			t.Fatalf("the same connection afterwards: %v", err)
		}
	})
	t.Run("renewed_server_certificate_is_served_without_a_restart", func(t *testing.T) {
		served := func() *big.Int {
			var pr peer.Peer
			if _, err := csv1.NewClustersClient(dial(t, as(p, pki.Frontend))).ListClusters(ctx, &csv1.ListClustersRequest{}, grpc.Peer(&pr)); err != nil {
				t.Fatal(err)
			}
			return pr.AuthInfo.(credentials.TLSInfo).State.PeerCertificates[0].SerialNumber
		}
		before := served()
		renewed, err := p.Renew(pki.ClusterService)
		if err != nil {
			t.Fatal(err)
		}
		if renewed.SerialNumber.Cmp(before) == 0 {
			t.Fatal("renew kept the serial")
		}
		if got := served(); got.Cmp(renewed.SerialNumber) != 0 {
			t.Fatalf("new connection got serial %s, want the renewed %s", got, renewed.SerialNumber)
		}
	})
	if !strings.Contains(logs.String(), "PermissionDenied") {
		t.Errorf("refusals are not logged:\n%s", logs.String())
	}
}

// issued writes a certificate the PKI's CA signed without the PKI's rules (an attacker's, or a
// misissued one) and returns it as a client's files, verifying servers with the service CA.
func issued(t *testing.T, p *pki.Region, by pki.Issuer, s pki.Spec) tlsconfig.Files {
	t.Helper()
	iss, err := p.IssueUnchecked(by, s)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	f := tlsconfig.Files{CA: p.CAFile, Cert: filepath.Join(dir, "c.crt"), Key: filepath.Join(dir, "c.key"), ServerName: pki.ServerName(pki.ClusterService)}
	if err := os.WriteFile(f.Cert, iss.CertPEM, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(f.Key, iss.KeyPEM, 0o600); err != nil {
		t.Fatal(err)
	}
	return f
}
