package tlscost

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"

	csv1 "github.com/openhcp/openhcp/cluster-service/api/v1"
	"github.com/openhcp/openhcp/dev-infrastructure/mgmtcluster"
	"github.com/openhcp/openhcp/internal/envelope"
	"github.com/openhcp/openhcp/internal/pgserver"
	"github.com/openhcp/openhcp/internal/pgserver/pgservertest"
	"github.com/openhcp/openhcp/internal/pki"
	"github.com/openhcp/openhcp/internal/tlsconfig"
)

// Samples per measurement and setup; the setups alternate in rounds so drift on a shared
// machine hits both alike.
const (
	rounds       = 10
	putsPerRound = 40
	getsPerRound = 100
	warmup       = 20
)

// BenchmarkTLSCost reports, for plaintext and for mutual TLS in the same run, the latency of a
// cluster PUT and GET through the frontend (ARM → frontend → Cluster Service → PostgreSQL; the
// GET on a kept-alive connection and on a new connection each time) and of a Cluster Service
// GetCluster called directly, as p50/p99 and the secured/plaintext ratio of each.
// Run: go test ./test/tlscost -run '^$' -bench TLSCost -benchtime 1x
func BenchmarkTLSCost(b *testing.B) {
	root, err := mgmtcluster.RepoRoot()
	if err != nil {
		b.Fatal(err)
	}
	bin := b.TempDir()
	build := exec.Command("go", "build", "-o", bin+"/", "./frontend/cmd/frontend", "./cluster-service/cmd/cluster-service")
	build.Dir = root
	if out, err := build.CombinedOutput(); err != nil {
		b.Fatalf("go build: %v\n%s", err, out)
	}
	p, err := pki.Create(b.TempDir(), pki.Options{})
	if err != nil {
		b.Fatal(err)
	}
	pg := pgservertest.Start(b)
	setups := []*setup{{name: "plaintext"}, {name: "mtls", pki: p}}
	for _, s := range setups {
		s.start(b, bin, pg)
	}
	for i := 0; i < b.N; i++ {
		for _, s := range setups {
			s.samples = map[string][]time.Duration{}
			s.measure(b, warmup, warmup, true)
		}
		for r := 0; r < rounds; r++ {
			for _, s := range setups {
				s.measure(b, putsPerRound, getsPerRound, false)
			}
		}
	}
	kinds := []string{"frontend PUT cluster", "frontend GET cluster (kept-alive)", "frontend GET cluster (new connection)", "Cluster Service GetCluster"}
	b.Logf("| call | n | plaintext p50 | plaintext p99 | mTLS p50 | mTLS p99 | ratio p50 | ratio p99 |")
	b.Logf("|---|---|---|---|---|---|---|---|")
	for _, k := range kinds {
		pl, tl := sorted(setups[0].samples[k]), sorted(setups[1].samples[k])
		r50 := float64(pct(tl, 50)) / float64(pct(pl, 50))
		r99 := float64(pct(tl, 99)) / float64(pct(pl, 99))
		b.Logf("| %s | %d | %s | %s | %s | %s | %.2f | %.2f |", k, len(tl), ms(pct(pl, 50)), ms(pct(pl, 99)), ms(pct(tl, 50)), ms(pct(tl, 99)), r50, r99)
		key := strings.NewReplacer(" ", "-", "(", "", ")", "").Replace(k)
		b.ReportMetric(r50, key+"-ratio-p50")
	}
}

type setup struct {
	name string
	pki  *pki.Region // nil: plaintext

	feURL        string
	feAddr       string
	feMetrics    string
	csMetrics    string
	csAddr       string
	fePID, csPID int
	client       *http.Client // kept-alive
	fresh        *http.Client // a new connection per request
	cs           csv1.ClustersClient
	sub          string
	cluster      string // a cluster's ARM path, for GETs
	csID         string
	seq          int

	samples map[string][]time.Duration
}

func (s *setup) start(b *testing.B, bin string, pg *pgserver.Server) {
	b.Helper()
	csAddr, csMetrics, feAddr, feMetrics := freeAddr(b), freeAddr(b), freeAddr(b), freeAddr(b)
	kek := filepath.Join(b.TempDir(), "kek")
	if _, err := envelope.WriteKeyFile(kek); err != nil {
		b.Fatal(err)
	}
	csArgs := []string{"--listen", csAddr, "--metrics-listen", csMetrics, "--db-dsn", pgservertest.NewDatabase(b, pg), "--secret-kek-file", kek,
		"--maestro-grpc", freeAddr(b), "--maestro-rest", "http://" + freeAddr(b), "--workers", "1", "--resync-period", "1h",
		"--dev-workload-identity-client-id", uuid.NewString()}
	feArgs := []string{"--listen", feAddr, "--metrics-listen", feMetrics, "--db-dsn", pgservertest.NewDatabase(b, pg),
		"--cluster-service", csAddr, "--location", "westus3"}
	s.feURL, s.csAddr, s.feAddr, s.feMetrics, s.csMetrics = "http://"+feAddr, csAddr, feAddr, feMetrics, csMetrics
	var feTLS, csTLS, sreTLS *tlsconfigPair
	if s.pki != nil {
		cs, fe := s.pki.MustFiles(pki.ClusterService), s.pki.MustFiles(pki.Frontend)
		csArgs = append(csArgs, "--tls-cert", cs.Cert, "--tls-key", cs.Key, "--tls-client-ca", s.pki.CAFile)
		feArgs = append(feArgs, "--tls-cert", fe.Cert, "--tls-key", fe.Key, "--tls-client-ca", s.pki.ARMCAFile, "--arm-client-subjects", pki.ARM,
			"--cluster-service-ca", s.pki.CAFile, "--cluster-service-cert", fe.Cert, "--cluster-service-key", fe.Key)
		s.feURL = "https://" + feAddr
		feTLS, csTLS, sreTLS = s.as(pki.ARM, pki.Frontend), s.as(pki.Frontend, pki.ClusterService), s.as(pki.SRE, pki.ClusterService)
	}
	s.csPID = run(b, filepath.Join(bin, "cluster-service"), s.name+"-cluster-service", csArgs)
	waitTCP(b, csAddr)
	sre := dial(b, csAddr, sreTLS)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := csv1.NewProvisionShardsClient(sre).RegisterShard(ctx, &csv1.RegisterShardRequest{Shard: &csv1.ProvisionShard{
		Name: "bench", MaxClusters: 100000, Status: csv1.ShardStatus_SHARD_STATUS_ACTIVE}}); err != nil {
		b.Fatalf("%s: register shard: %v", s.name, err)
	}
	s.cs = csv1.NewClustersClient(dial(b, csAddr, csTLS))

	s.fePID = run(b, filepath.Join(bin, "frontend"), s.name+"-frontend", feArgs)
	s.client = &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{TLSClientConfig: feTLS.cfg(b, feAddr), MaxIdleConnsPerHost: 4}}
	// A full handshake per request, as before session resumption (BenchmarkTLSResumption
	// measures the resumed one): no session cache.
	freshTLS := feTLS.cfg(b, feAddr)
	if freshTLS != nil {
		freshTLS.ClientSessionCache = nil
	}
	s.fresh = &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{TLSClientConfig: freshTLS, DisableKeepAlives: true}}
	deadline := time.Now().Add(60 * time.Second)
	for {
		if resp, err := s.client.Get(s.feURL + "/healthz"); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				break
			}
		}
		if time.Now().After(deadline) {
			b.Fatalf("%s: frontend not healthy after 60s", s.name)
		}
		time.Sleep(100 * time.Millisecond)
	}
	s.sub = uuid.NewString()
	if code, body := s.do(b, s.client, http.MethodPut, "/subscriptions/"+s.sub+"?api-version=2.0", map[string]any{
		"state": "Registered", "registrationDate": "2024-01-01T00:00:00Z",
		"properties": map[string]any{"tenantId": uuid.NewString()},
	}); code != http.StatusOK {
		b.Fatalf("%s: register subscription: %d %s", s.name, code, body)
	}
	s.cluster = s.put(b)
	resp, err := s.cs.ListClusters(ctx, &csv1.ListClustersRequest{PageSize: 1})
	if err != nil || len(resp.GetClusters()) == 0 {
		b.Fatalf("%s: list clusters: %v %v", s.name, resp, err)
	}
	s.csID = resp.GetClusters()[0].GetId()
}

// tlsconfigPair is one identity's client files; nil means plaintext.
type tlsconfigPair struct{ files tlsconfig.Files }

func (s *setup) as(identity, server string) *tlsconfigPair {
	f := s.pki.MustFiles(identity)
	return &tlsconfigPair{tlsconfig.Files{CA: s.pki.CAFile, Cert: f.Cert, Key: f.Key, ServerName: pki.ServerName(server)}}
}

func (p *tlsconfigPair) cfg(b *testing.B, addr string) *tls.Config {
	if p == nil {
		return nil
	}
	c, err := p.files.Client(addr)
	if err != nil {
		b.Fatal(err)
	}
	return c
}

func dial(b *testing.B, addr string, p *tlsconfigPair) *grpc.ClientConn {
	creds := insecure.NewCredentials()
	if c := p.cfg(b, addr); c != nil {
		creds = credentials.NewTLS(c)
	}
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(creds))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { conn.Close() })
	return conn
}

// put creates one cluster through the frontend and returns its ARM path.
func (s *setup) put(b *testing.B) string {
	s.seq++
	rg := fmt.Sprintf("rg%d", s.seq)
	path := "/subscriptions/" + s.sub + "/resourceGroups/" + rg + "/providers/Microsoft.RedHatOpenShift/hcpOpenShiftClusters/c"
	if code, body := s.do(b, s.client, http.MethodPut, path+"?api-version=2024-06-10-preview", clusterBody(s.sub, rg)); code != http.StatusCreated && code != http.StatusOK {
		b.Fatalf("%s: PUT cluster: %d %s", s.name, code, body)
	}
	return path
}

func (s *setup) measure(b *testing.B, puts, gets int, discard bool) {
	rec := func(kind string, f func()) {
		start := time.Now()
		f()
		if !discard {
			s.samples[kind] = append(s.samples[kind], time.Since(start))
		}
	}
	for i := 0; i < puts; i++ {
		rec("frontend PUT cluster", func() { s.put(b) })
	}
	get := func(c *http.Client) func() {
		return func() {
			if code, body := s.do(b, c, http.MethodGet, s.cluster+"?api-version=2024-06-10-preview", nil); code != http.StatusOK {
				b.Fatalf("%s: GET cluster: %d %s", s.name, code, body)
			}
		}
	}
	for i := 0; i < gets; i++ {
		rec("frontend GET cluster (kept-alive)", get(s.client))
	}
	for i := 0; i < gets/2; i++ {
		rec("frontend GET cluster (new connection)", get(s.fresh))
	}
	for i := 0; i < gets; i++ {
		rec("Cluster Service GetCluster", func() {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			if _, err := s.cs.GetCluster(ctx, &csv1.GetClusterRequest{Id: s.csID}); err != nil {
				b.Fatalf("%s: GetCluster: %v", s.name, err)
			}
		})
	}
}

func (s *setup) do(b *testing.B, c *http.Client, method, path string, body any) (int, string) {
	var rd io.Reader
	if body != nil {
		raw, _ := json.Marshal(body)
		rd = bytes.NewReader(raw)
	}
	req, err := http.NewRequest(method, s.feURL+path, rd)
	if err != nil {
		b.Fatal(err)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := c.Do(req)
	if err != nil {
		b.Fatalf("%s: %s %s: %v", s.name, method, path, err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(raw)
}

func clusterBody(sub, rg string) map[string]any {
	net := "/subscriptions/" + sub + "/resourceGroups/" + rg + "/providers/Microsoft.Network"
	mi := "/subscriptions/" + sub + "/resourceGroups/" + rg + "/providers/Microsoft.ManagedIdentity/userAssignedIdentities/"
	return map[string]any{
		"location": "westus3",
		"properties": map[string]any{
			"version": map[string]any{"id": "4.19", "channelGroup": "stable"},
			"network": map[string]any{"networkType": "OVNKubernetes", "podCidr": "10.128.0.0/14", "serviceCidr": "172.30.0.0/16",
				"machineCidr": "10.0.0.0/16", "hostPrefix": 23},
			"api": map[string]any{"visibility": "Public"},
			"platform": map[string]any{
				"managedResourceGroup": "managed-" + rg, "subnetId": net + "/virtualNetworks/vnet/subnets/workers",
				"networkSecurityGroupId": net + "/networkSecurityGroups/nsg", "outboundType": "LoadBalancer",
				"operatorsAuthentication": map[string]any{"userAssignedIdentities": map[string]any{
					"controlPlaneOperators":  map[string]string{"cluster-api-azure": mi + "capz"},
					"dataPlaneOperators":     map[string]string{"disk-csi-driver": mi + "disk"},
					"serviceManagedIdentity": mi + "service",
				}},
			},
		},
		"identity": map[string]any{"type": "UserAssigned",
			"userAssignedIdentities": map[string]any{mi + "service": map[string]any{}, mi + "capz": map[string]any{}}},
	}
}

// run starts a binary for the benchmark's life and returns its PID.
func run(b *testing.B, path, name string, args []string) int {
	logPath := filepath.Join(b.TempDir(), name+".log")
	f, err := os.Create(logPath)
	if err != nil {
		b.Fatal(err)
	}
	cmd := exec.Command(path, args...)
	cmd.Stdout, cmd.Stderr = f, f
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); f.Close(); close(done) }()
	b.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-done
		if b.Failed() {
			if out, err := os.ReadFile(logPath); err == nil {
				b.Logf("%s log tail:\n%s", name, tail(out, 3000))
			}
		}
	})
	return cmd.Process.Pid
}

func tail(b []byte, n int) []byte {
	if len(b) > n {
		return b[len(b)-n:]
	}
	return b
}

func waitTCP(b *testing.B, addr string) {
	deadline := time.Now().Add(60 * time.Second)
	for {
		if c, err := net.Dial("tcp", addr); err == nil {
			c.Close()
			return
		}
		if time.Now().After(deadline) {
			b.Fatalf("%s not listening after 60s", addr)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func freeAddr(b *testing.B) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

func sorted(d []time.Duration) []time.Duration {
	out := append([]time.Duration(nil), d...)
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out
}

func pct(sorted []time.Duration, p int) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	i := (len(sorted)*p + 99) / 100
	return sorted[max(i-1, 0)]
}

func ms(d time.Duration) string { return fmt.Sprintf("%.2f ms", float64(d.Microseconds())/1000) }
