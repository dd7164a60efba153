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

// BenchmarkHostedControlPlaneStorage compares the two ways to store hosted control planes:
// one etcd shared by all of a management cluster's hosted kube-apiservers (each under its own
// --etcd-prefix) against one etcd per hosted cluster. It starts HOSTED_BENCH_CLUSTERS (default
// 2) control planes each way and reports, per control plane, the resident memory of the
// processes it adds (kube-apiserver, plus its etcd or its share of the shared one) after all
// answer /readyz, and the time from starting them to /readyz. Run it with
// `make bench-hostedapi` (go test -short -run '^$' -bench HostedControlPlaneStorage -benchtime 1x).
func BenchmarkHostedControlPlaneStorage(b *testing.B) {
	n := 2
	if v := os.Getenv("HOSTED_BENCH_CLUSTERS"); v != "" {
		var err error
		if n, err = strconv.Atoi(v); err != nil || n < 1 {
			b.Fatalf("HOSTED_BENCH_CLUSTERS=%q", v)
		}
	}
	ctx := context.Background()
	apiserver, etcd, err := mgmtcluster.KubeBinaries(ctx)
	if err != nil {
		b.Fatal(err)
	}
	for _, mode := range []string{"shared-etcd", "etcd-per-cluster"} {
		b.Run(mode, func(b *testing.B) {
			for range b.N {
				rss, start := runStorageMode(b, mode, n, apiserver, etcd)
				b.ReportMetric(rss/float64(n)/(1<<20), "MiB-RSS/controlplane")
				b.ReportMetric(start.Seconds(), "s-to-readyz/controlplane")
			}
		})
	}
}

func runStorageMode(b *testing.B, mode string, n int, apiserverPath, etcdPath string) (rssBytes float64, meanStart time.Duration) {
	b.Helper()
	ctx := context.Background()
	dir := b.TempDir()
	logs := filepath.Join(dir, "logs")
	var etcds []*mgmtcluster.HostedEtcd
	defer func() {
		for _, e := range etcds {
			e.Stop()
		}
	}()
	startEtcd := func(name string) EtcdClient {
		e, err := mgmtcluster.StartHostedEtcd(ctx, mgmtcluster.HostedEtcdOptions{Name: name, Dir: filepath.Join(dir, name), LogDir: logs, EtcdPath: etcdPath})
		if err != nil {
			b.Fatal(err)
		}
		etcds = append(etcds, e)
		return EtcdClient{Endpoint: e.Endpoint, CAFile: e.CAFile, CertFile: e.CertFile, KeyFile: e.KeyFile}
	}
	var shared EtcdClient
	if mode == "shared-etcd" {
		shared = startEtcd("shared-etcd")
	}
	servers := make([]*hostedAPIServer, 0, n)
	defer func() {
		for _, s := range servers {
			s.stop()
		}
	}()
	var total time.Duration
	for i := range n {
		hcpNS := fmt.Sprintf("bench-%d", i)
		// A control plane's start includes its own etcd's, where it has one; the shared etcd
		// runs already, as it does for every cluster but a management cluster's first.
		begin := time.Now()
		ec := shared
		if mode != "shared-etcd" {
			ec = startEtcd("etcd-" + hcpNS)
		}
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
		h := newHostedAPIServers(HostedAPIOptions{Max: n, APIServerPath: apiserverPath, Dir: filepath.Join(dir, "hosted"), LogDir: logs, Etcd: ec})
		s := h.server(hcpNS, port)
		if err := s.writeFiles(hostedPKI{rootCert: rootCert, rootKey: rootKey, clientCABundle: signer}); err != nil {
			b.Fatal(err)
		}
		if err := s.start(ctx, h.o); err != nil {
			b.Fatal(err)
		}
		servers = append(servers, s)
		if err := s.proc.WaitFor(ctx, 3*time.Minute, "hosted kube-apiserver /readyz", mgmtcluster.HTTPReady(s.admin, s.url()+"/readyz")); err != nil {
			b.Fatal(err)
		}
		total += time.Since(begin)
	}
	for _, s := range servers {
		rssBytes += float64(rssOf(b, s.proc.PID()))
	}
	for _, e := range etcds {
		rssBytes += float64(rssOf(b, e.Proc.PID()))
	}
	return rssBytes, total / time.Duration(n)
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
