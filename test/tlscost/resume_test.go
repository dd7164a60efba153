package tlscost

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/peer"

	"github.com/openhcp/openhcp/dev-infrastructure/mgmtcluster"
	"github.com/openhcp/openhcp/internal/pgserver/pgservertest"
	"github.com/openhcp/openhcp/internal/pki"
)

const (
	resumeRounds   = 6   // rounds alternating full and resumed, so drift hits both alike
	connsPerRound  = 150 // sequential new connections per hop, mode and round
	burstClients   = 50  // clients reconnecting at once
	burstsPerRound = 2
)

// BenchmarkTLSResumption measures what a new connection costs on the two hops a burst of
// reconnections hits, ARM → frontend (HTTPS, one GET /healthz per connection) and frontend →
// Cluster Service (gRPC, one health check per connection), with a full mutual-TLS handshake
// (the client keeps no session) and with a resumed session, in the same run against the same
// real binaries: the server's CPU per connection (its /proc/<pid>/stat), the client's (this
// process's rusage), the wall time, and a burst of burstClients connections at once.
// Run: go test ./test/tlscost -run '^$' -bench TLSResumption -benchtime 1x
func BenchmarkTLSResumption(b *testing.B) {
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
	s := &setup{name: "mtls", pki: p}
	s.start(b, bin, pgservertest.Start(b))

	hops := []*hop{
		newARMHop(b, s),
		newClusterServiceHop(b, s),
	}
	type key struct{ hop, mode string }
	seq := map[key]*cost{}
	burst := map[key]*cost{}
	for i := 0; i < b.N; i++ {
		for r := 0; r < resumeRounds; r++ {
			for _, h := range hops {
				for _, mode := range []string{"full", "resumed"} {
					k := key{h.name, mode}
					if seq[k] == nil {
						seq[k], burst[k] = &cost{}, &cost{}
					}
					seq[k].add(h.measure(b, mode, connsPerRound, 1))
					for range burstsPerRound {
						burst[k].add(h.measure(b, mode, burstClients, burstClients))
					}
				}
			}
		}
	}
	// Printed, not logged: a benchmark's log is cut after a few lines.
	fmt.Printf("New connection each time (%d per hop and mode, sequential), CPU per connection:\n", resumeRounds*connsPerRound)
	fmt.Printf("| hop | handshake | resumed | server CPU | client CPU | wall p50 | wall p99 |\n")
	fmt.Printf("|---|---|---|---|---|---|---|\n")
	for _, h := range hops {
		for _, mode := range []string{"full", "resumed"} {
			c := seq[key{h.name, mode}]
			fmt.Printf("| %s | %s | %d/%d | %s | %s | %s | %s |\n", h.name, mode, c.resumed, c.conns,
				usPer(c.server, c.conns), usPer(c.client, c.conns), ms(pct(sorted(c.walls), 50)), ms(pct(sorted(c.walls), 99)))
			b.ReportMetric(float64(c.server.Microseconds())/float64(c.conns), strings.ReplaceAll(h.name, " ", "")+"-"+mode+"-server-µs/conn")
		}
	}
	fmt.Printf("Burst: %d clients reconnect at once (%d bursts per hop and mode):\n", burstClients, resumeRounds*burstsPerRound)
	fmt.Printf("| hop | handshake | resumed | server CPU per burst | client CPU per burst | burst wall p50 |\n")
	fmt.Printf("|---|---|---|---|---|---|\n")
	for _, h := range hops {
		for _, mode := range []string{"full", "resumed"} {
			c := burst[key{h.name, mode}]
			n := len(c.walls)
			fmt.Printf("| %s | %s | %d/%d | %s | %s | %s |\n", h.name, mode, c.resumed, c.conns,
				msPer(c.server, n), msPer(c.client, n), ms(pct(sorted(c.walls), 50)))
		}
	}
	for _, h := range hops {
		fmt.Printf("%s: %s\n", h.name, h.metrics(b))
	}
}

// cost sums one hop's and mode's measurements; walls holds one sample per measure call's unit
// (a connection in sequence, a whole burst).
type cost struct {
	conns, resumed int
	server, client time.Duration
	walls          []time.Duration
}

func (c *cost) add(o cost) {
	c.conns += o.conns
	c.resumed += o.resumed
	c.server += o.server
	c.client += o.client
	c.walls = append(c.walls, o.walls...)
}

// hop is one client → server hop: connect makes one new connection with the given TLS config,
// makes its one request and closes it, saying whether the handshake resumed.
type hop struct {
	name      string
	serverPID int
	full      *tls.Config // no session cache
	resumed   *tls.Config // the config as the services build it (tlsconfig.Files.Client)
	connect   func(cfg *tls.Config) (bool, error)
	metrics   func(b *testing.B) string
}

// measure makes n new connections, parallel at a time (1: in sequence, each timed; n: all at
// once, the burst timed as one).
func (h *hop) measure(b *testing.B, mode string, n, parallel int) cost {
	cfg := h.full
	if mode == "resumed" {
		cfg = h.resumed
		if _, err := h.connect(cfg); err != nil { // make sure a session is cached
			b.Fatalf("%s: %v", h.name, err)
		}
	}
	srv0, cli0 := procCPU(b, h.serverPID), selfCPU(b)
	start := time.Now()
	var out cost
	var mu sync.Mutex
	if parallel == 1 {
		for range n {
			t := time.Now()
			r, err := h.connect(cfg)
			if err != nil {
				b.Fatalf("%s %s: %v", h.name, mode, err)
			}
			out.walls = append(out.walls, time.Since(t))
			if r {
				out.resumed++
			}
		}
	} else {
		var wg sync.WaitGroup
		gate := make(chan struct{})
		errs := make(chan error, n)
		for range n {
			wg.Go(func() {
				<-gate
				r, err := h.connect(cfg)
				if err != nil {
					errs <- err
					return
				}
				if r {
					mu.Lock()
					out.resumed++
					mu.Unlock()
				}
			})
		}
		start = time.Now()
		close(gate)
		wg.Wait()
		close(errs)
		for err := range errs {
			b.Fatalf("%s %s burst: %v", h.name, mode, err)
		}
		out.walls = append(out.walls, time.Since(start))
	}
	out.conns = n
	out.server, out.client = procCPU(b, h.serverPID)-srv0, selfCPU(b)-cli0
	if mode == "full" && out.resumed != 0 || mode == "resumed" && out.resumed < n*9/10 {
		b.Fatalf("%s %s: %d of %d connections resumed", h.name, mode, out.resumed, n)
	}
	return out
}

func newARMHop(b *testing.B, s *setup) *hop {
	resumed := s.as(pki.ARM, pki.Frontend).cfg(b, s.feAddr)
	full := resumed.Clone()
	full.ClientSessionCache = nil
	url := "https://" + s.feAddr + "/healthz"
	return &hop{
		name: "ARM → frontend", serverPID: s.fePID, full: full, resumed: resumed,
		connect: func(cfg *tls.Config) (bool, error) {
			tr := &http.Transport{TLSClientConfig: cfg, DisableKeepAlives: true}
			defer tr.CloseIdleConnections()
			resp, err := (&http.Client{Transport: tr, Timeout: 60 * time.Second}).Get(url)
			if err != nil {
				return false, err
			}
			defer resp.Body.Close()
			if _, err := io.Copy(io.Discard, resp.Body); err != nil {
				return false, err
			}
			if resp.StatusCode != http.StatusOK {
				return false, fmt.Errorf("GET /healthz: %s", resp.Status)
			}
			return resp.TLS.DidResume, nil
		},
		metrics: func(b *testing.B) string {
			return scrape(b, "http://"+s.feMetrics+"/metrics", "frontend_tls_handshakes_total")
		},
	}
}

func newClusterServiceHop(b *testing.B, s *setup) *hop {
	resumed := s.as(pki.Frontend, pki.ClusterService).cfg(b, s.csAddr)
	full := resumed.Clone()
	full.ClientSessionCache = nil
	return &hop{
		name: "frontend → Cluster Service", serverPID: s.csPID, full: full, resumed: resumed,
		connect: func(cfg *tls.Config) (bool, error) {
			conn, err := grpc.NewClient(s.csAddr, grpc.WithTransportCredentials(credentials.NewTLS(cfg)))
			if err != nil {
				return false, err
			}
			defer conn.Close()
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			var pr peer.Peer
			if _, err := healthpb.NewHealthClient(conn).Check(ctx, &healthpb.HealthCheckRequest{}, grpc.Peer(&pr)); err != nil {
				return false, err
			}
			ti, ok := pr.AuthInfo.(credentials.TLSInfo)
			return ok && ti.State.DidResume, nil
		},
		metrics: func(b *testing.B) string {
			return scrape(b, "http://"+s.csMetrics+"/metrics", "cluster_service_tls_handshakes_total")
		},
	}
}

// scrape returns the lines of a metric family from a plaintext metrics endpoint.
func scrape(b *testing.B, url, family string) string {
	resp, err := http.Get(url)
	if err != nil {
		b.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	var lines []string
	for _, l := range strings.Split(string(raw), "\n") {
		if strings.HasPrefix(l, family+"{") {
			lines = append(lines, l)
		}
	}
	sort.Strings(lines)
	return strings.Join(lines, "; ")
}

// procCPU is a process's user and system CPU time so far, from /proc/<pid>/stat (clock ticks).
func procCPU(b *testing.B, pid int) time.Duration {
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		b.Fatal(err)
	}
	// Fields after the command name, which is in parentheses and may hold spaces.
	f := strings.Fields(string(raw[strings.LastIndexByte(string(raw), ')')+2:]))
	utime, err1 := strconv.ParseInt(f[11], 10, 64)
	stime, err2 := strconv.ParseInt(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		b.Fatalf("parse /proc/%d/stat: %v %v", pid, err1, err2)
	}
	const ticksPerSecond = 100 // USER_HZ on Linux
	return time.Duration(utime+stime) * time.Second / ticksPerSecond
}

// selfCPU is this process's user and system CPU time so far.
func selfCPU(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func usPer(d time.Duration, n int) string {
	return fmt.Sprintf("%.0f µs", float64(d.Microseconds())/float64(n))
}

func msPer(d time.Duration, n int) string {
	return fmt.Sprintf("%.1f ms", float64(d.Microseconds())/1000/float64(n))
}
