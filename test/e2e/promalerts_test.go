package e2e

import (
	"context"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/openhcp/openhcp/dev-infrastructure/localregion"
)

// promClient is the region's Prometheus as region.json names it, and a client that holds the
// client certificate it asks for.
func promClient(t *testing.T) (*localregion.PrometheusInfo, *http.Client) {
	t.Helper()
	needsOwnRegion(t, "stops and starts its processes under its Prometheus")
	prom := region.Info.Prometheus
	if prom == nil {
		t.Fatal("region.json names no Prometheus")
	}
	c, err := prom.HTTPClient(15 * time.Second)
	if err != nil {
		t.Fatal(err)
	}
	return prom, c
}

type promAlert struct {
	Labels map[string]string `json:"labels"`
	State  string            `json:"state"`
}

// alertsNamed are the alerts of that name Prometheus holds now (pending or firing), by shard.
func alertsNamed(c *http.Client, name string) (map[string]string, error) {
	var data struct {
		Alerts []promAlert `json:"alerts"`
	}
	if err := promAPI(c, "/api/v1/alerts", &data); err != nil {
		return nil, err
	}
	out := map[string]string{}
	for _, a := range data.Alerts {
		if a.Labels["alertname"] == name {
			out[a.Labels["shard"]] = a.State
		}
	}
	return out, nil
}

// wantNoAlert fails the test if Prometheus holds alert name for any shard, before any outage.
func wantNoAlert(t *testing.T, c *http.Client, name string) {
	t.Helper()
	if alerts, err := alertsNamed(c, name); err != nil || len(alerts) != 0 {
		t.Fatalf("%s before any outage: %v (%v)", name, alerts, err)
	}
}

// waitAlertFiring waits up to timeout for alert name to fire for shard and for no other shard;
// healthy says what still runs on the others, for the failure message.
func waitAlertFiring(t *testing.T, c *http.Client, timeout time.Duration, name, shard, healthy string) {
	t.Helper()
	eventually(t, timeout, name+" firing for "+shard, func() error {
		alerts, err := alertsNamed(c, name)
		if err != nil {
			return err
		}
		if alerts[shard] != "firing" {
			return fmt.Errorf("alerts by shard: %v", alerts)
		}
		for s, state := range alerts {
			if s != shard {
				return fmt.Errorf("the alert is %s for %s too, whose %s", state, s, healthy)
			}
		}
		return nil
	})
}

// waitAlertResolved waits up to timeout until Prometheus holds alert name for no shard.
func waitAlertResolved(t *testing.T, c *http.Client, timeout time.Duration, name, shard string) {
	t.Helper()
	eventually(t, timeout, name+" resolved for "+shard, func() error {
		alerts, err := alertsNamed(c, name)
		if err != nil {
			return err
		}
		if len(alerts) != 0 {
			return fmt.Errorf("alerts by shard: %v", alerts)
		}
		return nil
	})
}

// stopManagementAPIServer stops the kube-apiserver of management cluster name and returns what
// starts it again; if the test ends without calling it, it is called then, so a failed test
// leaves the region whole for the next.
func stopManagementAPIServer(t *testing.T, name string) (restart func()) {
	t.Helper()
	if err := region.StopManagementAPIServer(name); err != nil {
		t.Fatal(err)
	}
	restarted := false
	restart = func() {
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
		defer cancel()
		if err := region.RestartManagementAPIServer(ctx, name); err != nil {
			t.Fatalf("restart the kube-apiserver of %s: %v", name, err)
		}
		restarted = true
	}
	t.Cleanup(func() {
		if !restarted {
			restart()
		}
	})
	return restart
}
