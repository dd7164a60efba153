package hypershiftsim

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/openhcp/openhcp/dev-infrastructure/mgmtcluster"
)

// TestAControlPlaneOverItsMemoryLimitEndsAlone: with real kube-apiservers and etcds, a customer
// who writes big objects into their cluster drives its control plane's memory up (etcd keeps
// its last raft entries in memory, the apiserver its watch cache). The sim must kill that
// plane's larger process, say why on its next reconcile, and start it again, while the other
// cluster's processes keep running and answering.
func TestAControlPlaneOverItsMemoryLimitEndsAlone(t *testing.T) {
	if testing.Short() {
		t.Skip("starts two etcds and two kube-apiservers")
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	apiserver, etcd, err := mgmtcluster.KubeBinaries(ctx)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	h := newHostedAPIServers(HostedAPIOptions{Max: 2, APIServerPath: apiserver, EtcdPath: etcd,
		Dir: filepath.Join(dir, "hosted"), LogDir: dir, MemoryCheckInterval: 200 * time.Millisecond})
	t.Cleanup(h.stopAll)
	used := map[int]bool{}
	planes := []testPlane{newTestPlane(t, "quiet", used), newTestPlane(t, "greedy", used)}
	for _, pl := range planes {
		pl.ensureReady(ctx, t, h, "first start", nil)
	}
	quiet, greedy := h.lookup("quiet"), h.lookup("greedy")
	memory := func(s *hostedAPIServer) (sum int64) {
		for _, p := range planeProcesses(s.dir) {
			sum += p.anon
		}
		return sum
	}
	idle := max(memory(quiet), memory(greedy))
	h.mu.Lock()
	h.o.MemoryLimitBytes = idle + 160<<20
	h.mu.Unlock()
	t.Logf("idle planes: quiet %d MiB, greedy %d MiB; limit %d MiB", memory(quiet)>>20, memory(greedy)>>20, h.o.MemoryLimitBytes>>20)
	quietPIDs := planeProcesses(quiet.dir)
	kills := func() float64 {
		return testutil.ToFloat64(hostedMemoryKills.WithLabelValues("etcd")) + testutil.ToFloat64(hostedMemoryKills.WithLabelValues("kube-apiserver"))
	}
	before := kills()
	go h.watchMemory(ctx)

	cs, err := kubernetes.NewForConfig(greedy.restConfig())
	if err != nil {
		t.Fatal(err)
	}
	blob := strings.Repeat("x", 1<<20-4096)
	written := 0
	for ; written < 400 && kills() == before; written++ {
		_, err := cs.CoreV1().ConfigMaps("default").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("big-%d", written)},
			Data: map[string]string{"blob": blob}}, metav1.CreateOptions{})
		if err != nil && kills() == before {
			t.Fatalf("write %d into the greedy cluster before any kill: %v", written, err)
		}
	}
	if kills() == before {
		t.Fatalf("%d MiB written into the greedy cluster, its plane at %d MiB, and nothing killed at a limit of %d MiB", written, memory(greedy)>>20, h.o.MemoryLimitBytes>>20)
	}
	t.Logf("killed after %d writes of 1 MiB", written)
	st, err := h.ensure(ctx, "greedy", planes[1].port, planes[1].pki)
	if err != nil {
		t.Fatal(err)
	}
	if st.ready || !strings.Contains(st.detail, "was killed") {
		t.Errorf("the greedy plane's state after the kill: %+v, want not ready, saying a process was killed", st)
	}
	for _, p := range quietPIDs {
		if !processRunning(p.pid) {
			t.Errorf("the quiet plane's %s (pid %d) is gone", p.component, p.pid)
		}
	}
	planes[0].ensureReady(ctx, t, h, "the quiet plane after the other's kill", nil)
	// The greedy plane starts again once its backoff has passed. Its objects come back with it
	// (the apiserver's watch cache), near the test's tight limit: the limit is raised first, as
	// an operator would, so that this checks the restart, not the machine's margins.
	h.mu.Lock()
	h.o.MemoryLimitBytes = idle + 512<<20
	h.mu.Unlock()
	st = planes[1].ensureReady(ctx, t, h, "the greedy plane after its kill", nil)
	t.Logf("greedy plane back: %+v, %d MiB", st, memory(greedy)>>20)
}
