package e2e

import (
	"context"
	"crypto/x509"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/openhcp/openhcp/internal/pki"
)

// TestEveryCertificateRotatesUnderTraffic runs the region across two rotations of every
// certificate and one rollover of the service CA while ARM traffic flows over new connections,
// then creates a cluster end to end. Every ARM request is answered, every certificate of the
// region is new and chains only to the new CA, and the Maestro path (servers and agents
// restarted, broker and databases reloaded) still delivers.
func TestEveryCertificateRotatesUnderTraffic(t *testing.T) {
	needsOwnRegion(t, "rotates its PKI")
	p := region.PKI()
	before := map[string]*x509.Certificate{}
	for _, n := range p.Names() {
		c, err := pki.ReadCertificate(p.MustFiles(n).Cert)
		if err != nil {
			t.Fatal(err)
		}
		before[n] = c
	}
	oldCA, err := os.ReadFile(p.CAFile)
	if err != nil {
		t.Fatal(err)
	}

	sub := uuid.NewString()
	registerSubscription(t, sub)
	traffic := startARMTraffic(context.Background(), t, sub)

	rctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	for i := 1; i <= 2; i++ {
		if err := region.RotateCertificates(rctx); err != nil {
			traffic.Stop()
			t.Fatalf("rotation %d: %v", i, err)
		}
	}
	if err := region.RollCA(rctx, pki.ServiceCA); err != nil {
		traffic.Stop()
		t.Fatalf("service CA rollover: %v", err)
	}
	traffic.Stop()
	sent, failed, failures := traffic.Tally()
	t.Logf("ARM list requests during the rotations: %d, failed %d", sent, failed)
	if sent < 10 || failed > 0 {
		t.Fatalf("ARM traffic during the rotations: %d sent, %d failed: %v", sent, failed, failures)
	}

	newCA, err := os.ReadFile(p.CAFile)
	if err != nil {
		t.Fatal(err)
	}
	if string(newCA) == string(oldCA) || strings.Count(string(newCA), "BEGIN CERTIFICATE") != 1 {
		t.Fatalf("the service CA file was not replaced by the new CA alone")
	}
	newPool, oldPool := x509.NewCertPool(), x509.NewCertPool()
	newPool.AppendCertsFromPEM(newCA)
	oldPool.AppendCertsFromPEM(oldCA)
	for n, old := range before {
		now, err := pki.ReadCertificate(p.MustFiles(n).Cert)
		if err != nil {
			t.Fatal(err)
		}
		if now.SerialNumber.Cmp(old.SerialNumber) == 0 {
			t.Errorf("%s: the certificate was never renewed", n)
		}
		by, _ := p.IssuerOf(n)
		if by != pki.ServiceCA {
			continue
		}
		opts := x509.VerifyOptions{KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageAny}}
		opts.Roots = newPool
		if _, err := now.Verify(opts); err != nil {
			t.Errorf("%s does not chain to the new service CA: %v", n, err)
		}
		opts.Roots = oldPool
		if _, err := now.Verify(opts); err == nil {
			t.Errorf("%s still chains to the old service CA", n)
		}
	}

	// The whole path works under the new certificates: a cluster is created end to end.
	rg := "rotation"
	createCluster(t, clusterPath(sub, rg, "after-rotation"), clusterBody(sub, rg))
}
