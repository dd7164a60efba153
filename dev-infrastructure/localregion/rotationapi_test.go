package localregion

import (
	"context"
	"io"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/openhcp/openhcp/internal/pki"
	"github.com/openhcp/openhcp/internal/pkirotation"
	"github.com/openhcp/openhcp/internal/tlsconfig"
)

// TestRotationAPIRotatesThroughTheLauncher: the launcher's rotation API, called as the
// maintenance service, renews the region's certificates with the launcher's own
// RotateCertificates and rolls the CA a scope names with RollCA, lists itself among the
// listeners, and serves its own renewed certificate afterwards. (No holder processes run here:
// reloading them is rotate.go's, covered by the e2e rotation tests.)
func TestRotationAPIRotatesThroughTheLauncher(t *testing.T) {
	p, err := pki.Create(t.TempDir(), pki.Options{})
	if err != nil {
		t.Fatal(err)
	}
	r := &Region{pki: p, cfg: Config{Progress: io.Discard}, Info: Info{Location: "westus3"}}
	t.Cleanup(func() {
		for _, stop := range r.stoppers {
			stop()
		}
	})
	addr, err := r.startRotationAPI()
	if err != nil {
		t.Fatal(err)
	}
	if r.Info.RegionPKI == nil || r.Info.RegionPKI.Addr != addr || r.Info.RegionPKI.ServerName != "region-pki.openhcp.local" {
		t.Fatalf("region.json's regionPKI: %+v", r.Info.RegionPKI)
	}
	mf := p.MustFiles(pki.Maintenance)
	api, err := pkirotation.NewClient(addr, tlsconfig.Files{CA: p.CAFile, Cert: mf.Cert, Key: mf.Key})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	reg, err := api.Region(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if reg.Name != "westus3" || len(reg.Listeners) != 1 || reg.Listeners[0].Name != "region-pki" {
		t.Fatalf("region %+v; want westus3 listing the API itself", reg)
	}
	serving := func() string {
		t.Helper()
		roots, err := pkirotation.ReadCAFile(p.CAFile)
		if err != nil {
			t.Fatal(err)
		}
		s := pkirotation.Probe(ctx, reg.Listeners, roots)[0]
		if s.Err != nil {
			t.Fatal(s.Err)
		}
		return s.Cert.SerialNumber.String()
	}
	for _, tc := range []struct {
		key   string
		scope pkirotation.Scope
	}{
		{"renew", pkirotation.ScopeCertificates},
		{"roll-the-person-ca", "ca:person"},
		{"roll-the-service-ca", "ca:service"},
	} {
		t.Run(string(tc.scope), func(t *testing.T) {
			before := serving()
			personCA, err := os.ReadFile(p.PersonCAFile)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := api.Request(ctx, tc.key, tc.scope); err != nil {
				t.Fatal(err)
			}
			deadline := time.Now().Add(2 * time.Minute)
			for {
				rot, err := api.Get(ctx, tc.key)
				if err == nil && rot.State == pkirotation.StateDone {
					break
				}
				if err == nil && rot.State == pkirotation.StateFailed || time.Now().After(deadline) {
					t.Fatalf("rotation %s: %+v, %v", tc.key, rot, err)
				}
				time.Sleep(20 * time.Millisecond)
			}
			// The API's certificate is the service CA's: a person CA rollover leaves it.
			if after := serving(); (after == before) != (tc.scope == "ca:person") {
				t.Fatalf("the API served %s before and %s after %s", before, after, tc.scope)
			}
			now, err := os.ReadFile(p.PersonCAFile)
			if err != nil {
				t.Fatal(err)
			}
			if rolled := string(now) != string(personCA); rolled != (tc.scope == "ca:person") {
				t.Fatalf("person CA replaced: %t; want %t", rolled, tc.scope == "ca:person")
			}
			if strings.Count(string(now), "BEGIN CERTIFICATE") != 1 {
				t.Fatal("the person CA file holds more than one CA after the rotation")
			}
		})
	}
}
