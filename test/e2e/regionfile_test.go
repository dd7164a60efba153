package e2e

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/openhcp/openhcp/dev-infrastructure/localregion"
)

// TestRegionFileDescribesTheRegion checks region.json, which tools and people use to find the
// region: it matches the running region, and every metrics endpoint it lists serves Prometheus
// metrics.
func TestRegionFileDescribesTheRegion(t *testing.T) {
	needsOwnRegion(t, "compares region.json with the launcher's own Info")
	b, err := os.ReadFile(region.RegionFile())
	if err != nil {
		t.Fatalf("read region.json: %v", err)
	}
	var info localregion.Info
	dec := json.NewDecoder(strings.NewReader(string(b)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&info); err != nil {
		t.Fatalf("decode region.json: %v", err)
	}
	if !reflect.DeepEqual(info, region.Info) {
		t.Fatalf("region.json differs from the running region:\nfile:    %+v\nrunning: %+v", info, region.Info)
	}
	if len(info.ManagementClusters) != 2 {
		t.Fatalf("region.json lists %d management clusters, want 2", len(info.ManagementClusters))
	}
	metrics := map[string]string{
		"frontend":        info.Frontend.MetricsURL,
		"cluster-service": info.ClusterService.MetricsURL,
		"backend":         info.Backend.MetricsURL,
		"maestro":         info.Maestro.MetricsURL,
	}
	if len(info.Gateway.URLs) != 2 || len(info.Gateway.MetricsURLs) != 2 {
		t.Fatalf("region.json lists the gateway replicas %v (metrics %v), want 2", info.Gateway.URLs, info.Gateway.MetricsURLs)
	}
	for i, u := range info.Gateway.MetricsURLs {
		metrics[fmt.Sprintf("gateway-%d", i+1)] = u
	}
	if len(info.Monitor.Replicas) != 2 {
		t.Fatalf("region.json lists the Monitor replicas %v, want 2", info.Monitor.Replicas)
	}
	for i, u := range info.Monitor.MetricsURLs() {
		metrics[fmt.Sprintf("monitor-%d", i+1)] = u
	}
	metrics["maintenance"] = info.Maintenance.MetricsURL
	brokerLog, err := os.ReadFile(filepath.Join(info.LogDir, "mosquitto.log"))
	if err != nil {
		t.Fatalf("read mosquitto.log: %v", err)
	}
	for _, mc := range info.ManagementClusters {
		metrics[mc.Name+" hypershift-sim"] = mc.SimMetricsURL
		if _, err := os.Stat(mc.Kubeconfig); err != nil {
			t.Errorf("%s kubeconfig: %v", mc.Name, err)
		}
		// The stuck-delete watchdog reconnects an agent by its MQTT client ID: it must be the
		// one the agent really connects with.
		if !strings.Contains(string(brokerLog), " as "+mc.AgentMQTTClientID+" ") {
			t.Errorf("%s: no MQTT client %q ever connected to the broker (mosquitto.log)", mc.Name, mc.AgentMQTTClientID)
		}
	}
	for name, url := range metrics {
		t.Run(strings.ReplaceAll(name, " ", "_"), func(t *testing.T) {
			if url == "" {
				t.Fatalf("no metrics URL for %s", name)
			}
			resp, err := httpClient.Get(url)
			if err != nil {
				t.Fatalf("GET %s: %v", url, err)
			}
			defer resp.Body.Close()
			body, _ := io.ReadAll(resp.Body)
			if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), "# TYPE ") {
				t.Fatalf("GET %s: %d, body is not a Prometheus exposition: %.200s", url, resp.StatusCode, body)
			}
		})
	}
}
