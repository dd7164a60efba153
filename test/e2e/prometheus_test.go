package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/openhcp/openhcp/dev-infrastructure/mgmtcluster"
)

// promAPI GETs a Prometheus API path with the client certificate region.json names and decodes
// its data field into out.
func promAPI(c *http.Client, path string, out any) error {
	resp, err := c.Get(region.Info.Prometheus.URL + path)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: %d %.300s", path, resp.StatusCode, b)
	}
	var env struct {
		Status string          `json:"status"`
		Data   json.RawMessage `json:"data"`
	}
	if err := json.Unmarshal(b, &env); err != nil || env.Status != "success" {
		return fmt.Errorf("GET %s: %v %.300s", path, err, b)
	}
	return json.Unmarshal(env.Data, out)
}

// TestShardUnreachableAlertFiresAndResolves stops one management cluster's kube-apiserver and
// watches the region's real Prometheus: it scrapes the apiserver over mutual TLS, loads the
// shipped rules, fires ClusterServiceShardUnreachable for that shard (and no other) once the
// target has been down for the rule's minute, and drops it after the apiserver is back.
func TestShardUnreachableAlertFiresAndResolves(t *testing.T) {
	const alert = "ClusterServiceShardUnreachable"
	prom, c := promClient(t)
	mcs := region.Info.ManagementClusters
	shard := mcs[len(mcs)-1].ProvisionShard

	// Every shipped rule file is loaded: each is one or more groups, and the shard rule is there.
	var rules struct {
		Groups []struct {
			File  string `json:"file"`
			Rules []struct {
				Name string `json:"name"`
			} `json:"rules"`
		} `json:"groups"`
	}
	if err := promAPI(c, "/api/v1/rules", &rules); err != nil {
		t.Fatal(err)
	}
	files, found := map[string]bool{}, false
	for _, g := range rules.Groups {
		files[g.File] = true
		for _, r := range g.Rules {
			found = found || r.Name == "ClusterServiceShardUnreachable"
		}
	}
	if len(files) != len(prom.RuleFiles) || !found {
		t.Fatalf("Prometheus loaded rules from %d files (%v), want the %d shipped ones with ClusterServiceShardUnreachable among them (found %v)",
			len(files), files, len(prom.RuleFiles), found)
	}

	// Every target is scraped, the management kube-apiservers over mutual TLS among them.
	eventually(t, 2*time.Minute, "every scrape target up", func() error {
		var targets struct {
			ActiveTargets []struct {
				Labels    map[string]string `json:"labels"`
				ScrapeURL string            `json:"scrapeUrl"`
				Health    string            `json:"health"`
				LastError string            `json:"lastError"`
			} `json:"activeTargets"`
		}
		if err := promAPI(c, "/api/v1/targets?state=active", &targets); err != nil {
			return err
		}
		jobs := map[string]int{}
		var down []string
		for _, tg := range targets.ActiveTargets {
			jobs[tg.Labels["job"]]++
			if tg.Health != "up" {
				down = append(down, fmt.Sprintf("%s %s: %s %s", tg.Labels["job"], tg.ScrapeURL, tg.Health, tg.LastError))
			}
		}
		if len(down) > 0 {
			return fmt.Errorf("targets not up: %s", strings.Join(down, "; "))
		}
		for job, want := range map[string]int{"frontend": 1, "backend": 1, "cluster-service": 1, "admin": 1,
			"maestro-server": region.MaestroServersProvisioned(), "hypershift-sim": len(mcs), "maestro-agent": len(mcs), "management-kube-apiserver": len(mcs)} {
			if jobs[job] != want {
				return fmt.Errorf("job %s has %d targets, want %d (all: %v)", job, jobs[job], want, jobs)
			}
		}
		return nil
	})
	wantNoAlert(t, c, alert)

	restart := stopManagementAPIServer(t, shard)
	stopped := time.Now()
	waitAlertFiring(t, c, 5*time.Minute, alert, shard, "apiserver runs")
	t.Logf("%s fired for %s %s after its kube-apiserver stopped", alert, shard, time.Since(stopped).Round(time.Second))

	restart()
	back := time.Now()
	waitAlertResolved(t, c, 3*time.Minute, alert, shard)
	t.Logf("and resolved %s after it came back", time.Since(back).Round(time.Second))
}

// TestDoorProbeFindsAnOpenPrometheus shows the door probe would find a Prometheus that served
// its API without the web configuration make run gives it: Debian's prometheus, plaintext on
// loopback, answers one of doorProbes with 2xx.
func TestDoorProbeFindsAnOpenPrometheus(t *testing.T) {
	bin, err := exec.LookPath("prometheus")
	if err != nil {
		t.Fatalf("Debian's prometheus is not installed (make deps): %v", err)
	}
	dir := t.TempDir()
	cfg := filepath.Join(dir, "prometheus.yml")
	if err := os.WriteFile(cfg, []byte("global: {scrape_interval: 5s}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	port, err := mgmtcluster.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	p, err := mgmtcluster.StartProcess(context.Background(), mgmtcluster.ProcSpec{Name: "open-prometheus", Path: bin, LogDir: dir, Dir: dir,
		Args: []string{"--config.file=" + cfg, "--web.listen-address=127.0.0.1:" + strconv.Itoa(port), "--storage.tsdb.path=" + filepath.Join(dir, "data")}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Stop(10 * time.Second) })
	if err := p.WaitFor(context.Background(), time.Minute, "ready", mgmtcluster.HTTPReady(nil, "http://127.0.0.1:"+strconv.Itoa(port)+"/-/ready")); err != nil {
		t.Fatal(err)
	}
	var open []string
	for _, probe := range doorProbes {
		if code, _, err := probeDoor("http", port, probe); err == nil && code/100 == 2 {
			open = append(open, probe.path)
		}
	}
	if len(open) == 0 {
		t.Fatal("no door probe got a 2xx from a Prometheus without TLS or client certificates")
	}
	t.Logf("an open Prometheus answers %s", strings.Join(open, ", "))
}
