package hypershiftsim

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// TestOneClusterStartingHoldsNoOtherCluster: a cluster's start holds its own lock for as long as
// its etcd takes to answer (up to etcdReadyTimeout). The reconcile of another cluster must not
// wait for it: counting the running apiservers (every ensure ends so) once took each cluster's
// lock under the sim's, so one slow etcd held every other cluster's reconcile and every lookup.
func TestOneClusterStartingHoldsNoOtherCluster(t *testing.T) {
	dir := t.TempDir()
	started := filepath.Join(dir, "etcd-started")
	// An etcd that runs but never answers /health.
	fakeEtcd := filepath.Join(dir, "etcd")
	if err := os.WriteFile(fakeEtcd, []byte("#!/bin/sh\ntouch '"+started+"'\nexec sleep 600\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	h := newHostedAPIServers(HostedAPIOptions{Max: 2, APIServerPath: filepath.Join(dir, "no-such-kube-apiserver"),
		EtcdPath: fakeEtcd, Dir: filepath.Join(dir, "hosted"), LogDir: dir})
	rootCert, rootKey, err := newCA("root-ca.slow", time.Now())
	if err != nil {
		t.Fatal(err)
	}
	p := hostedPKI{rootCert: rootCert, rootKey: rootKey, clientCABundle: rootCert}

	ctx, cancel := context.WithCancel(context.Background())
	slowDone := make(chan struct{})
	go func() { defer close(slowDone); _, _ = h.ensure(ctx, "slow", 1, p) }()
	t.Cleanup(func() { cancel(); <-slowDone }) // the canceled wait stops the fake etcd
	deadline := time.Now().Add(time.Minute)
	for _, err := os.Stat(started); err != nil; _, err = os.Stat(started) {
		if time.Now().After(deadline) {
			t.Fatal("the slow cluster's etcd never started")
		}
		time.Sleep(20 * time.Millisecond)
	}

	// Another cluster, waiting out the backoff of a failed start: its ensure does no start.
	other := h.server("other", 2)
	other.mu.Lock()
	other.failure, other.failures, other.retryAt = "an earlier failure", 1, time.Now().Add(time.Hour)
	other.mu.Unlock()
	done := make(chan error, 1)
	go func() { _, err := h.ensure(context.Background(), "other", 2, p); done <- err }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("another cluster's reconcile waited on the slow cluster's etcd start for 10 s")
	}
	select {
	case <-slowDone:
		t.Fatal("the slow start ended before the check; the test proves nothing")
	default:
	}
}
