package hypershiftsim

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/openhcp/openhcp/dev-infrastructure/mgmtcluster"
)

// BenchmarkHostedControlPlane starts HOSTED_BENCH_CLUSTERS (default 2) hosted control planes
// as the sim does, each a kube-apiserver with an etcd of its own, and reports per control plane
// the resident memory of the two processes after all answer /readyz, and the time from starting
// its etcd to its apiserver's /readyz. Run it with `make bench-hostedapi`
// (go test -short -run '^$' -bench HostedControlPlane -benchtime 1x).
func BenchmarkHostedControlPlane(b *testing.B) {
	n := 2
	if v := os.Getenv("HOSTED_BENCH_CLUSTERS"); v != "" {
		var err error
		if n, err = strconv.Atoi(v); err != nil || n < 1 {
			b.Fatalf("HOSTED_BENCH_CLUSTERS=%q", v)
		}
	}
	apiserver, etcd, err := mgmtcluster.KubeBinaries(context.Background())
	if err != nil {
		b.Fatal(err)
	}
	for range b.N {
		apiserverRSS, etcdRSS, start := runControlPlanes(b, n, apiserver, etcd)
		b.ReportMetric(apiserverRSS/float64(n)/(1<<20), "MiB-RSS-apiserver/controlplane")
		b.ReportMetric(etcdRSS/float64(n)/(1<<20), "MiB-RSS-etcd/controlplane")
		b.ReportMetric(start.Seconds(), "s-to-readyz/controlplane")
	}
}

func runControlPlanes(b *testing.B, n int, apiserverPath, etcdPath string) (apiserverRSS, etcdRSS float64, meanStart time.Duration) {
	b.Helper()
	ctx := context.Background()
	dir := b.TempDir()
	h := newHostedAPIServers(HostedAPIOptions{Max: n, APIServerPath: apiserverPath, EtcdPath: etcdPath, Dir: filepath.Join(dir, "hosted"), LogDir: filepath.Join(dir, "logs")})
	defer h.stopAll()
	var total time.Duration
	for i := range n {
		hcpNS := fmt.Sprintf("bench-%d", i)
		rootCert, rootKey, err := newCA("root-ca."+hcpNS, time.Now())
		if err != nil {
			b.Fatal(err)
		}
		signer, _, err := newCA("customer-break-glass."+hcpNS, time.Now())
		if err != nil {
			b.Fatal(err)
		}
		port, err := mgmtcluster.FreePort()
		if err != nil {
			b.Fatal(err)
		}
		s := h.server(hcpNS, port)
		if err := s.writeFiles(hostedPKI{rootCert: rootCert, rootKey: rootKey, clientCABundle: signer}); err != nil {
			b.Fatal(err)
		}
		begin := time.Now()
		if err := s.start(ctx, h.o); err != nil {
			b.Fatal(err)
		}
		if err := s.proc.WaitFor(ctx, 3*time.Minute, "hosted kube-apiserver /readyz", mgmtcluster.HTTPReady(s.admin, s.url()+"/readyz")); err != nil {
			b.Fatal(err)
		}
		total += time.Since(begin)
	}
	for _, s := range h.servers {
		apiserverRSS += float64(rssOf(b, s.proc.PID()))
		etcdRSS += float64(rssOf(b, s.etcd.Proc.PID()))
	}
	return apiserverRSS, etcdRSS, total / time.Duration(n)
}

// rssOf reads a process's resident set size from /proc/<pid>/status.
func rssOf(b *testing.B, pid int) int64 {
	b.Helper()
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		b.Fatal(err)
	}
	for _, line := range strings.Split(string(data), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			if err != nil {
				b.Fatal(err)
			}
			return kb << 10
		}
	}
	b.Fatalf("no VmRSS in /proc/%d/status", pid)
	return 0
}
