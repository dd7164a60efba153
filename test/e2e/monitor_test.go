package e2e

import (
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/openhcp/openhcp/admin/pkg/access"
	"github.com/openhcp/openhcp/admin/pkg/adminapi"
)

// promQuery runs an instant query and returns each series' labels and value.
func promQuery(c *http.Client, q string) ([]map[string]string, []string, error) {
	var data struct {
		Result []struct {
			Metric map[string]string `json:"metric"`
			Value  [2]any            `json:"value"`
		} `json:"result"`
	}
	if err := promAPI(c, "/api/v1/query?query="+url.QueryEscape(q), &data); err != nil {
		return nil, nil, err
	}
	var labels []map[string]string
	var values []string
	for _, r := range data.Result {
		labels = append(labels, r.Metric)
		values = append(values, fmt.Sprint(r.Value[1]))
	}
	return labels, values, nil
}

// monitorVerdict reads the Monitor's verdict on cluster as the admin API's describe view shows
// it to a read-only SRE.
func monitorVerdict(t *testing.T, cluster string) func() (*adminapi.MonitorHealth, error) {
	t.Helper()
	a := adminInfo(t)
	return func() (*adminapi.MonitorHealth, error) {
		var d adminapi.ClusterDescription
		if code, ae := adminCall(t, a, access.GroupReadOnly, "GET", "/admin/v1/clusters/"+cluster, "", uuid.NewString(), &d); code != 200 {
			return nil, fmt.Errorf("describe: %d %+v", code, ae)
		}
		if d.Monitor == nil {
			return nil, fmt.Errorf("no Monitor verdict in describe")
		}
		return d.Monitor, nil
	}
}

// TestMonitorStaleFeedbackAlertFiresAndResolves: both Monitor replicas run and share every
// bucket; a new cluster is judged healthy, in Prometheus and in the admin API's describe view.
// When its management cluster's kube-apiserver stops (its feedback path), the Monitor judges
// the cluster stale and MonitorFeedbackStale fires for that shard only; when it comes back,
// the alert resolves and the cluster is healthy again.
func TestMonitorStaleFeedbackAlertFiresAndResolves(t *testing.T) {
	const alert = "MonitorFeedbackStale"
	_, c := promClient(t)
	if n := len(region.Info.Monitor.Replicas); n != 2 {
		t.Fatalf("region.json names %d Monitor replicas, want 2", n)
	}
	eventually(t, 2*time.Minute, "both Monitor replicas scraped and every bucket held", func() error {
		_, up, err := promQuery(c, `sum(up{job="monitor"})`)
		if err != nil || len(up) != 1 || up[0] != "2" {
			return fmt.Errorf("monitor targets up: %v %v", up, err)
		}
		_, held, err := promQuery(c, `sum(monitor_buckets_held) == max(monitor_buckets)`)
		if err != nil || len(held) != 1 {
			return fmt.Errorf("buckets held: %v %v", held, err)
		}
		_, holders, err := promQuery(c, `count(monitor_buckets_held > 0)`)
		if err != nil || len(holders) != 1 || holders[0] != "2" {
			return fmt.Errorf("replicas holding buckets: %v %v", holders, err)
		}
		return nil
	})

	sub, rg := uuid.NewString(), "rg-monitor"
	registerSubscription(t, sub)
	cl, mc := createCluster(t, clusterPath(sub, rg, "watched"), clusterBody(sub, rg))
	shard := mc.ProvisionShard
	verdict := monitorVerdict(t, cl.GetId())
	healthy := func() error {
		labels, _, err := promQuery(c, `monitor_cluster_info{cluster_id="`+cl.GetId()+`"}`)
		if err != nil {
			return err
		}
		if len(labels) != 1 || labels[0]["health"] != "healthy" || labels[0]["shard"] != shard {
			return fmt.Errorf("monitor_cluster_info for %s: %v", cl.GetId(), labels)
		}
		v, err := verdict()
		if err != nil {
			return err
		}
		if v.Health != "healthy" {
			return fmt.Errorf("describe says %+v", v)
		}
		return nil
	}
	eventually(t, 2*time.Minute, "the new cluster judged healthy", healthy)
	wantNoAlert(t, c, alert)

	restart := stopManagementAPIServer(t, mc.Name)
	stopped := time.Now()
	// --stale-after (1m in the local region), then the rule's for: 1m, then scrape and evaluation.
	waitAlertFiring(t, c, 6*time.Minute, alert, shard, "apiserver runs")
	t.Logf("%s fired for %s %s after its kube-apiserver stopped", alert, shard, time.Since(stopped).Round(time.Second))
	v, err := verdict()
	if err != nil || v.Health != "stale" || !strings.Contains(v.Reason, "no feedback") {
		t.Fatalf("describe during the outage: %+v (%v), want stale", v, err)
	}

	restart()
	back := time.Now()
	waitAlertResolved(t, c, 3*time.Minute, alert, shard)
	eventually(t, 2*time.Minute, "the cluster judged healthy again", healthy)
	t.Logf("and resolved %s after it came back", time.Since(back).Round(time.Second))
}

// TestMonitorClusterFeedbackStaleAlertFiresAndResolves: a cluster's own feedback goes stale
// while its management cluster's kube-apiserver keeps answering. Its shard's Maestro agent
// hangs (SIGSTOP: connected, answering nothing), so Cluster Service's feedback heartbeat (every
// minute here) gets no answer; the shard probe stays green, and the Monitor judges the cluster
// stale by its own last feedback (feedback-stale) and MonitorFeedbackStale fires for that
// shard. When the agent runs again, the next heartbeat is answered, the alert resolves and the
// cluster is healthy again.
func TestMonitorClusterFeedbackStaleAlertFiresAndResolves(t *testing.T) {
	const alert = "MonitorFeedbackStale"
	_, c := promClient(t)
	sub, rg := uuid.NewString(), "rg-monitor-feedback"
	registerSubscription(t, sub)
	cl, mc := createCluster(t, clusterPath(sub, rg, "heartbeat"), clusterBody(sub, rg))
	shard := mc.ProvisionShard
	verdict := monitorVerdict(t, cl.GetId())
	judged := func(want string) func() error {
		return func() error {
			labels, _, err := promQuery(c, `monitor_cluster_info{cluster_id="`+cl.GetId()+`"}`)
			if err != nil {
				return err
			}
			if len(labels) != 1 || labels[0]["health"] != want || labels[0]["shard"] != shard {
				return fmt.Errorf("monitor_cluster_info for %s: %v, want %s", cl.GetId(), labels, want)
			}
			return nil
		}
	}
	eventually(t, 2*time.Minute, "the new cluster judged healthy", judged("healthy"))
	wantNoAlert(t, c, alert)

	agent := "maestro-agent-" + mc.Name
	pid, err := region.ComponentPID(agent)
	if err != nil {
		t.Fatal(err)
	}
	if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
		t.Fatalf("stop %s (%d): %v", agent, pid, err)
	}
	resumed := false
	resume := func() {
		if err := syscall.Kill(pid, syscall.SIGCONT); err != nil {
			t.Errorf("resume %s (%d): %v", agent, pid, err)
		}
		resumed = true
	}
	t.Cleanup(func() {
		if !resumed {
			resume()
		}
	})
	stopped := time.Now()
	// The last feedback is at most a heartbeat (1m) old; it must pass --feedback-stale-after
	// (4m here), then the rule's for: 1m, then scrape and evaluation.
	waitAlertFiring(t, c, 9*time.Minute, alert, shard, "agent runs")
	t.Logf("%s fired for %s %s after its Maestro agent hung", alert, shard, time.Since(stopped).Round(time.Second))
	eventually(t, time.Minute, "describe says the cluster's own feedback is stale", func() error {
		v, err := verdict()
		if err != nil {
			return err
		}
		if v.Health != "stale" || !strings.HasPrefix(v.Reason, "feedback-stale") {
			return fmt.Errorf("describe during the hang: %+v, want stale feedback-stale", v)
		}
		return nil
	})
	_, up, err := promQuery(c, `monitor_shard_feedback_age_seconds{shard="`+shard+`"} == 0`)
	if err != nil || len(up) == 0 {
		t.Fatalf("the shard's kube-apiserver probe should still pass while only the agent hangs: %v %v", up, err)
	}

	resume()
	back := time.Now()
	waitAlertResolved(t, c, 5*time.Minute, alert, shard)
	eventually(t, 3*time.Minute, "the cluster judged healthy again", judged("healthy"))
	t.Logf("and resolved %s after the agent ran again", time.Since(back).Round(time.Second))
}

// TestMonitorHostedAPIServerAlertFiresAndResolves: a new cluster's hosted kube-apiserver (the
// real process hypershift-sim runs at its api.url) answers the Monitor's probe; when that
// process hangs (SIGSTOP: it holds its port, accepts connections and answers nothing, as a
// wedged control plane does), the Monitor judges the cluster unhealthy with reason
// hosted-apiserver-unreachable and MonitorHostedAPIServersUnreachable fires for its shard only;
// when it runs again (SIGCONT), the alert resolves and the cluster is healthy again.
func TestMonitorHostedAPIServerAlertFiresAndResolves(t *testing.T) {
	const alert = "MonitorHostedAPIServersUnreachable"
	_, c := promClient(t)
	sub, rg := uuid.NewString(), "rg-monitor-hosted"
	registerSubscription(t, sub)
	path := clusterPath(sub, rg, "hosted")
	cl, mc := createCluster(t, path, clusterBody(sub, rg))
	shard := mc.ProvisionShard
	u, err := url.Parse(apiURL(t, path))
	if err != nil {
		t.Fatal(err)
	}
	if ip := net.ParseIP(u.Hostname()); ip == nil || !ip.IsLoopback() {
		// A cluster past hypershift-sim's --hosted-apiservers cap has a made-up endpoint
		// and no process; the Monitor does not probe it (CapReached).
		t.Skipf("api.url %s is not served by a hosted kube-apiserver here (the sim's cap is reached)", u)
	}
	pid, err := strconv.Atoi(hostedAPIServerPID(u.Port()))
	if err != nil {
		t.Fatalf("no kube-apiserver process serves %s: %v", u, err)
	}
	verdict := monitorVerdict(t, cl.GetId())
	judged := func(want string) func() error {
		return func() error {
			labels, _, err := promQuery(c, `monitor_cluster_info{cluster_id="`+cl.GetId()+`"}`)
			if err != nil {
				return err
			}
			if len(labels) != 1 || labels[0]["health"] != want || labels[0]["shard"] != shard {
				return fmt.Errorf("monitor_cluster_info for %s: %v, want %s", cl.GetId(), labels, want)
			}
			return nil
		}
	}
	eventually(t, 2*time.Minute, "the new cluster judged healthy, its hosted apiserver probed", func() error {
		if err := judged("healthy")(); err != nil {
			return err
		}
		_, up, err := promQuery(c, `sum(monitor_hosted_apiservers{shard="`+shard+`",result="up"}) > 0`)
		if err != nil || len(up) != 1 {
			return fmt.Errorf("hosted apiservers up on %s: %v %v", shard, up, err)
		}
		return nil
	})
	wantNoAlert(t, c, alert)

	if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
		t.Fatalf("stop the hosted kube-apiserver %d: %v", pid, err)
	}
	resumed := false
	resume := func() {
		if err := syscall.Kill(pid, syscall.SIGCONT); err != nil {
			t.Errorf("resume the hosted kube-apiserver %d: %v", pid, err)
		}
		resumed = true
	}
	t.Cleanup(func() {
		if !resumed {
			resume()
		}
	})
	stopped := time.Now()
	// A probe times out (5 s) every pass, then the rule's for: 2m, then scrape and evaluation.
	waitAlertFiring(t, c, 6*time.Minute, alert, shard, "hosted apiservers run")
	t.Logf("%s fired for %s %s after the hosted kube-apiserver hung", alert, shard, time.Since(stopped).Round(time.Second))
	if err := judged("unhealthy")(); err != nil {
		t.Fatal(err)
	}
	eventually(t, time.Minute, "describe says why", func() error {
		v, err := verdict()
		if err != nil {
			return err
		}
		if v.Health != "unhealthy" || !strings.HasPrefix(v.Reason, "hosted-apiserver-unreachable") {
			return fmt.Errorf("describe during the outage: %+v, want unhealthy hosted-apiserver-unreachable", v)
		}
		return nil
	})

	resume()
	back := time.Now()
	waitAlertResolved(t, c, 3*time.Minute, alert, shard)
	eventually(t, 2*time.Minute, "the cluster judged healthy again", judged("healthy"))
	t.Logf("and resolved %s after it ran again", time.Since(back).Round(time.Second))
}
