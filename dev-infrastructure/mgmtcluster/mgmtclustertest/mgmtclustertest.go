// Package mgmtclustertest starts a real management cluster (the pinned etcd and kube-apiserver,
// with the CRDs it serves) for a test, and stops it when the test ends.
package mgmtclustertest

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/openhcp/openhcp/dev-infrastructure/mgmtcluster"
)

// Start starts the management cluster called name, its state and logs under a temporary
// directory of the test; ctx bounds the start (and the pinned binaries' build on a first run).
// Tests that call it skip under -short.
func Start(ctx context.Context, t *testing.T, name string) *mgmtcluster.ManagementCluster {
	t.Helper()
	if testing.Short() {
		t.Skip("starts a real etcd and kube-apiserver")
	}
	apiserver, etcd, err := mgmtcluster.KubeBinaries(ctx)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	mc, err := mgmtcluster.StartManagementCluster(ctx, mgmtcluster.ManagementClusterOptions{
		Name: name, Dir: filepath.Join(dir, "state"), LogDir: filepath.Join(dir, "logs"), APIServerPath: apiserver, EtcdPath: etcd,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(mc.Stop)
	return mc
}
