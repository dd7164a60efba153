package hypershiftsim

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/openhcp/openhcp/dev-infrastructure/mgmtcluster"
)

// TestRBACOfAFullHostedEtcdIsNotWrittenAgain: a customer fills their etcd's space quota, and
// their kube-apiserver starts again (it crashed, its etcd did, or the sim restarted). etcd then
// refuses every write, a create of an object that exists included; the sim's SRE RBAC is there
// from the first start and must not be written again, or the sim reports an apiserver that
// answers as not ready ("creating RBAC: … database space exceeded") until an operator disarms
// the etcd.
func TestRBACOfAFullHostedEtcdIsNotWrittenAgain(t *testing.T) {
	if testing.Short() {
		t.Skip("starts etcd and a kube-apiserver")
	}
	ctx := context.Background()
	apiserver, etcd, err := mgmtcluster.KubeBinaries(ctx)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	h := newHostedAPIServers(HostedAPIOptions{Max: 1, APIServerPath: apiserver, EtcdPath: etcd,
		Dir: filepath.Join(dir, "hosted"), LogDir: dir, EtcdQuotaBytes: 24 << 20})
	t.Cleanup(h.stopAll)
	const ns = "full"
	pl := newTestPlane(t, ns, map[int]bool{})
	pl.ensureReady(ctx, t, h, "first start", nil)
	s := h.lookup(ns)
	s.mu.Lock()
	first := s.proc
	s.mu.Unlock()

	cs, err := kubernetes.NewForConfig(s.restConfig())
	if err != nil {
		t.Fatal(err)
	}
	blob := strings.Repeat("x", 1<<20-4096)
	var full error
	for i := 0; i < 4*24 && full == nil; i++ {
		_, full = cs.CoreV1().ConfigMaps("default").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("fill-%d", i)},
			Data: map[string]string{"blob": blob}}, metav1.CreateOptions{})
	}
	if full == nil || !strings.Contains(full.Error(), "database space exceeded") {
		t.Fatalf("filling the cluster's etcd: %v, want \"database space exceeded\"", full)
	}

	pid := first.PID()
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	pl.ensureReady(ctx, t, h, "the apiserver started again on its full etcd", func() bool {
		s.mu.Lock()
		defer s.mu.Unlock()
		return s.proc != nil && s.proc != first
	})
}
