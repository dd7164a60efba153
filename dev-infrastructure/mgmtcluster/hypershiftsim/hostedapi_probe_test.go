package hypershiftsim

import (
	"context"
	"crypto/x509"
	"encoding/pem"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/openhcp/openhcp/dev-infrastructure/mgmtcluster"
)

// TestRevocationProbeSeesWhatTheAPIServerAccepts: the probe behind PreviousCertificatesRevoked
// reports "accepted" while a signer is in the running kube-apiserver's client CA file, and
// "refused" (401) once the file no longer has it and the apiserver has reloaded it.
func TestRevocationProbeSeesWhatTheAPIServerAccepts(t *testing.T) {
	if testing.Short() {
		t.Skip("starts etcd and a kube-apiserver")
	}
	ctx := context.Background()
	apiserver, etcd, dir := testBinaries(t)
	h := newHostedAPIServers(HostedAPIOptions{Max: 1, APIServerPath: apiserver, EtcdPath: etcd, Dir: filepath.Join(dir, "hosted"), LogDir: dir})
	defer h.stopAll()
	rootCert, rootKey, err := newCA("root-ca.probe", time.Now())
	if err != nil {
		t.Fatal(err)
	}
	oldCert, oldKey, err := newCA("customer-break-glass.probe.old", time.Now())
	if err != nil {
		t.Fatal(err)
	}
	newCert, _, err := newCA("customer-break-glass.probe.new", time.Now())
	if err != nil {
		t.Fatal(err)
	}
	port, err := mgmtcluster.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	p := hostedPKI{rootCert: rootCert, rootKey: rootKey, clientCABundle: append(append([]byte{}, oldCert...), newCert...)}
	deadline := time.Now().Add(3 * time.Minute)
	for {
		st, err := h.ensure(ctx, "probe", port, p)
		if err != nil {
			t.Fatal(err)
		}
		if st.ready {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("hosted kube-apiserver not ready: %s", st.detail)
		}
		time.Sleep(200 * time.Millisecond)
	}
	refused, running, err := h.refuses(ctx, "probe", oldCert, oldKey, "system:customer-break-glass:probe")
	if err != nil || !running || refused {
		t.Fatalf("signer in the bundle: refused=%v running=%v err=%v, want accepted", refused, running, err)
	}
	if running, err := h.syncClientCA("probe", newCert); err != nil || !running {
		t.Fatalf("sync client CA: running=%v err=%v", running, err)
	}
	deadline = time.Now().Add(2 * time.Minute)
	for {
		refused, running, err = h.refuses(ctx, "probe", oldCert, oldKey, "system:customer-break-glass:probe")
		if refused && running {
			break
		}
		if time.Now().After(deadline) {
			b, _ := os.ReadFile(filepath.Join(dir, "hosted", "probe", clientCAFile))
			var cns []string
			for rest := b; ; {
				var blk *pem.Block
				blk, rest = pem.Decode(rest)
				if blk == nil {
					break
				}
				c, _ := x509.ParseCertificate(blk.Bytes)
				cns = append(cns, c.Subject.CommonName)
			}
			t.Fatalf("signer dropped from the bundle: refused=%v running=%v err=%v, want refused; client CA file: %v",
				refused, running, err, cns)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// testBinaries returns the pinned kube-apiserver's and etcd's paths and a temporary directory
// for a test.
func testBinaries(t *testing.T) (apiserver, etcd, dir string) {
	t.Helper()
	apiserver, etcd, err := mgmtcluster.KubeBinaries(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return apiserver, etcd, t.TempDir()
}
