//go:build !fuzzlean

// Left out of the fuzzing build (hack/fuzz-long.sh builds with -tags fuzzlean): this file links
// Cluster Service's server, whose coverage counters every fuzz execution would scan.

package frontend

import (
	"context"
	"crypto/tls"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/openhcp/openhcp/frontend/pkg/clusterstatus"
	"github.com/openhcp/openhcp/internal/pki"
	"github.com/openhcp/openhcp/internal/serverlimits"
	"github.com/openhcp/openhcp/internal/tlsconfig"
)

// BenchmarkGetServed is the CPU of an ARM GET of one unchanged cluster as the region serves it:
// ARM's client certificate over mutual TLS on a kept-alive connection, the http.Server and
// listener of cmd/frontend (internal/serverlimits, tlsconfig), the whole middleware chain with
// the subject check, request logs as JSON to a file (the region's stderr), the document read
// from PostgreSQL and the status from the watch-fed cache of a real Cluster Service. cpu-ms/op
// is this process's CPU: the frontend and the client's side of the connection (not
// PostgreSQL); a profile (-cpuprofile) tells them apart.
func BenchmarkGetServed(b *testing.B) {
	p, err := pki.Create(b.TempDir(), pki.Options{})
	if err != nil {
		b.Fatal(err)
	}
	logs, err := os.Create(filepath.Join(b.TempDir(), "frontend.log"))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { logs.Close() })
	cs := realClusterService(b)
	e := newEnv(b, withClusterService(b, cs, clusterstatus.New()), func(c *Config) {
		c.Logger = slog.New(slog.NewJSONHandler(logs, &slog.HandlerOptions{Level: slog.LevelInfo}))
	})
	path := clusterPath("rg-served", "served")
	created := e.do(http.MethodPut, path, mustJSON(realBody()), nil)
	if created.code != http.StatusCreated {
		b.Fatalf("create: %d %s", created.code, created.body)
	}
	rd, _ := e.resource(path)
	setAPIURL(b, cs, rd.InternalID, "https://api.served.example:443")
	// From here only ARM's certificate gets in, as cmd/frontend's --arm-client-subjects has it.
	e.srv.cfg.ClientSubjects = []string{pki.ARM}

	fe := p.MustFiles(pki.Frontend)
	apiTLS, err := tlsconfig.Files{Cert: fe.Cert, Key: fe.Key, CA: p.ARMCAFile}.ServerClientAuth("127.0.0.1:0", tls.VerifyClientCertIfGiven)
	if err != nil {
		b.Fatal(err)
	}
	limits := serverlimits.API()
	hs := limits.Server("127.0.0.1:0", e.srv.Handler(), apiTLS)
	l, err := limits.Listen(hs)
	if err != nil {
		b.Fatal(err)
	}
	go hs.Serve(l)
	b.Cleanup(func() { hs.Close() })
	arm := p.MustFiles(pki.ARM)
	clientTLS, err := tlsconfig.Files{CA: p.CAFile, Cert: arm.Cert, Key: arm.Key, ServerName: pki.ServerName(pki.Frontend)}.Client(l.Addr().String())
	if err != nil {
		b.Fatal(err)
	}
	client := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{TLSClientConfig: clientTLS}}
	b.Cleanup(client.CloseIdleConnections)
	url := "https://" + l.Addr().String() + path + "?api-version=" + testVersion
	get := func() (int, string) {
		req, err := http.NewRequestWithContext(context.Background(), http.MethodGet, url, nil)
		if err != nil {
			b.Fatal(err)
		}
		resp, err := client.Do(req)
		if err != nil {
			b.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		return resp.StatusCode, string(body)
	}
	// Wait until the status cache answers for the cluster at its new URL and the rendering is
	// kept: what every later GET of it finds.
	deadline := time.Now().Add(60 * time.Second)
	for {
		code, body := get()
		if code == http.StatusOK && strings.Contains(body, "api.served.example") && e.lookups("hit") > 0 {
			break
		}
		if time.Now().After(deadline) {
			b.Fatalf("the status cache never answered: %d %s", code, body)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if _, cached := e.srv.statuses.Get(rd.InternalID, 0); !cached {
		b.Fatal("the status cache does not vouch for the cluster")
	}
	b.Run("get", func(b *testing.B) {
		b.ReportAllocs()
		cpu := processCPU()
		for b.Loop() {
			if code, body := get(); code != http.StatusOK || !strings.Contains(body, "api.served.example") {
				b.Fatalf("GET: %d %s", code, body)
			}
		}
		reportCPU(b, cpu)
	})
}
