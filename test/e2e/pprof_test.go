package e2e

import (
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/openhcp/openhcp/internal/pprofmux"
)

// TestPprofOnMetricsPortOnly: every service of ours answers /debug/pprof/ on its metrics
// listener to a caller holding the region's profile token (401 without it), and none on the listener its callers use (the frontend's ARM API, Cluster Service's
// gRPC port, the admin API), so profiles never reach a customer or a caller of the API.
func TestPprofOnMetricsPortOnly(t *testing.T) {
	plain := &http.Client{Timeout: 30 * time.Second}
	withToken := pprofmux.Client(region.Info.PprofTokenFile, 30*time.Second)
	services := []struct{ name, metrics string }{
		{"frontend", region.Info.Frontend.MetricsURL},
		{"backend", region.Info.Backend.MetricsURL},
		{"cluster-service", region.Info.ClusterService.MetricsURL},
		{"admin", region.Info.Admin.MetricsURL},
	}
	for i, u := range region.Info.Gateway.MetricsURLs {
		services = append(services, struct{ name, metrics string }{fmt.Sprintf("gateway-%d", i+1), u})
	}
	for _, svc := range services {
		t.Run(svc.name+"/metrics-port", func(t *testing.T) {
			base := strings.TrimSuffix(svc.metrics, "/metrics")
			code, body := get(t, withToken, base+"/debug/pprof/goroutine?debug=1")
			if code != http.StatusOK || !strings.Contains(body, "goroutine profile:") {
				t.Fatalf("%s metrics port: GET /debug/pprof/goroutine with the token: %d %.200q; want 200 with a goroutine profile", svc.name, code, body)
			}
			// Without the token a profile is a door like any other.
			if code, body := get(t, plain, base+"/debug/pprof/cmdline"); code != http.StatusUnauthorized {
				t.Fatalf("%s metrics port: GET /debug/pprof/cmdline without the token: %d %.200q; want 401", svc.name, code, body)
			}
		})
	}

	notProfiled := func(t *testing.T, c *http.Client, url string) {
		t.Helper()
		code, body := get(t, c, url)
		if code == http.StatusOK || strings.Contains(body, "goroutine profile:") {
			t.Fatalf("GET %s: %d %.200q; want no profile here", url, code, body)
		}
	}
	t.Run("frontend/arm-listener", func(t *testing.T) {
		notProfiled(t, httpClient, region.Info.Frontend.URL+"/debug/pprof/goroutine?debug=1")
	})
	t.Run("cluster-service/grpc-listener", func(t *testing.T) {
		// The SRE identity is admitted to the gRPC port; an HTTP/2 GET there must not be served.
		cfg, err := region.Info.ClusterService.Files().Client(region.Info.ClusterService.GRPC)
		if err != nil {
			t.Fatal(err)
		}
		c := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{TLSClientConfig: cfg, ForceAttemptHTTP2: true}}
		notProfiled(t, c, "https://"+region.Info.ClusterService.GRPC+"/debug/pprof/goroutine?debug=1")
	})
	t.Run("admin/api-listener", func(t *testing.T) {
		sre := region.Info.Admin.SREs[0]
		files := sre.ClientTLS(region.Info.Admin.CAFile).Files()
		files.ServerName = region.Info.Admin.ServerName
		cfg, err := files.Client(strings.TrimPrefix(region.Info.Admin.URL, "https://"))
		if err != nil {
			t.Fatal(err)
		}
		c := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{TLSClientConfig: cfg}}
		notProfiled(t, c, region.Info.Admin.URL+"/debug/pprof/goroutine?debug=1")
	})
}

func get(t *testing.T, c *http.Client, url string) (int, string) {
	t.Helper()
	resp, err := c.Get(url)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}
