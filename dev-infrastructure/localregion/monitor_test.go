package localregion

import (
	"context"
	"net/http"
	"net/url"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/openhcp/openhcp/dev-infrastructure/mgmtcluster/mgmtclustertest"
	"github.com/openhcp/openhcp/internal/tlsconfig"
)

// TestMonitorProbeReadsReadyzAndNothingElse: the --shard-probe the launcher gives the Monitor
// reaches a real management kube-apiserver's /readyz with its certificate, and that certificate
// reads nothing else there.
func TestMonitorProbeReadsReadyzAndNothingElse(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	dir := t.TempDir()
	mc := mgmtclustertest.Start(ctx, t, "probed")
	arg, err := monitorProbeArg(filepath.Join(dir, "monitor"), "mgmt-9", mc)
	if err != nil {
		t.Fatal(err)
	}
	// The value as the Monitor's --shard-probe parses it: shard=url,ca,cert,key.
	shard, rest, _ := strings.Cut(arg, "=")
	parts := strings.Split(rest, ",")
	if shard != "mgmt-9" || len(parts) != 4 || !strings.HasSuffix(parts[0], "/readyz") {
		t.Fatalf("--shard-probe %q", arg)
	}
	u, err := url.Parse(parts[0])
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := tlsconfig.Files{CA: parts[1], Cert: parts[2], Key: parts[3]}.Client(u.Host)
	if err != nil {
		t.Fatal(err)
	}
	client := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: cfg}}
	base := strings.TrimSuffix(parts[0], "/readyz")
	for _, tc := range []struct {
		path string
		want int
	}{
		{"/readyz", http.StatusOK},
		{"/api/v1/namespaces", http.StatusForbidden},
		{"/metrics", http.StatusForbidden},
	} {
		resp, err := client.Get(base + tc.path)
		if err != nil {
			t.Fatalf("GET %s: %v", tc.path, err)
		}
		resp.Body.Close()
		if resp.StatusCode != tc.want {
			t.Errorf("GET %s as %s: %d, want %d", tc.path, MonitorKubeUser, resp.StatusCode, tc.want)
		}
	}
}
