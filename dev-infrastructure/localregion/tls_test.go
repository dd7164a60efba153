package localregion

import (
	"io"
	"testing"
	"time"

	"github.com/openhcp/openhcp/internal/pki"
)

func TestKeepRenewedRenewsEveryIdentityUntilStop(t *testing.T) {
	p, err := pki.Create(t.TempDir(), pki.Options{})
	if err != nil {
		t.Fatal(err)
	}
	r := &Region{pki: p, cfg: Config{Progress: io.Discard}}
	before, _ := pki.ReadCertificate(p.MustFiles(pki.Frontend).Cert)
	broker, _ := pki.ReadCertificate(p.MustFiles(pki.Broker).Cert)
	r.keepRenewed(20*time.Millisecond, 0)
	deadline := time.Now().Add(5 * time.Second)
	for {
		now, _ := pki.ReadCertificate(p.MustFiles(pki.Frontend).Cert)
		if now != nil && now.SerialNumber.Cmp(before.SerialNumber) != 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the frontend certificate was not renewed")
		}
		time.Sleep(10 * time.Millisecond)
	}
	r.Stop()
	if b, _ := pki.ReadCertificate(p.MustFiles(pki.Broker).Cert); b.SerialNumber.Cmp(broker.SerialNumber) == 0 {
		t.Fatal("the broker's certificate was not renewed: every identity rotates")
	}
}
