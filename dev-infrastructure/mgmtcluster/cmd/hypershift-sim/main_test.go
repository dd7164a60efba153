package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	hyperv1 "github.com/openshift/hypershift/api/hypershift/v1beta1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/openhcp/openhcp/dev-infrastructure/mgmtcluster"
	"github.com/openhcp/openhcp/dev-infrastructure/mgmtcluster/hypershiftsim"
)

func envMap(m map[string]string) func(string) (string, bool) {
	return func(k string) (string, bool) { v, ok := m[k]; return v, ok }
}

func TestRun_badConfigurationStopsStartupNamingTheSetting(t *testing.T) {
	tests := []struct {
		name    string
		args    []string
		env     map[string]string
		wantErr string
	}{
		{name: "negative_delay", args: []string{"--available-delay=-1s"}, wantErr: "available-delay"},
		{name: "unparsable_delay", args: []string{"--nodepool-ready-delay=soon"}, wantErr: "nodepool-ready-delay"},
		{name: "bad_env_delay", env: map[string]string{"HYPERSHIFT_SIM_DELETE_DELAY": "abc"}, wantErr: "HYPERSHIFT_SIM_DELETE_DELAY"},
		{name: "bad_env_bool", env: map[string]string{"HYPERSHIFT_SIM_NEVER_AVAILABLE": "maybe"}, wantErr: "HYPERSHIFT_SIM_NEVER_AVAILABLE"},
		{name: "fail_cluster_without_namespace", args: []string{"--fail-clusters=ns/a,b"}, wantErr: "--fail-clusters"},
		{name: "health_addr_without_port", args: []string{"--health-addr=localhost"}, wantErr: "--health-addr"},
		// Plaintext only on loopback: metrics on the pod's address need a certificate.
		{name: "plaintext_metrics_off_loopback", args: []string{"--metrics-addr=:8080", "--hosted-apiservers=0"}, wantErr: "--metrics-addr"},
		{name: "metrics_cert_dir_without_a_key_pair", args: []string{"--metrics-addr=:8080", "--metrics-cert-dir=/nonexistent", "--hosted-apiservers=0"}, wantErr: "--metrics-cert-dir"},
		{name: "unknown_log_level", args: []string{"--log-level=loud"}, wantErr: "--log-level"},
		{name: "missing_kubeconfig", args: []string{"--kubeconfig=/nonexistent/kubeconfig", "--hosted-apiservers=0"}, wantErr: "--kubeconfig"},
		{name: "hosted_apiservers_without_binary_or_etcd", args: []string{"--hosted-apiservers=2"}, wantErr: "--hosted-apiservers"},
		{name: "hosted_address_not_an_ip", args: []string{"--hosted-apiservers=0", "--hosted-address=pod"}, wantErr: "--hosted-address"},
		{name: "hosted_address_unspecified", env: map[string]string{"HYPERSHIFT_SIM_HOSTED_ADDRESS": "0.0.0.0"}, args: []string{"--hosted-apiservers=0"}, wantErr: "--hosted-address"},
		{name: "hosted_etcd_quota_not_a_quantity", args: []string{"--hosted-apiservers=0", "--hosted-etcd-quota=lots"}, wantErr: "--hosted-etcd-quota"},
		{name: "hosted_etcd_quota_not_positive", env: map[string]string{"HYPERSHIFT_SIM_HOSTED_ETCD_QUOTA": "0"}, args: []string{"--hosted-apiservers=0"}, wantErr: "--hosted-etcd-quota"},
		{name: "hosted_memory_limit_not_a_quantity", args: []string{"--hosted-apiservers=0", "--hosted-memory-limit=much"}, wantErr: "--hosted-memory-limit"},
		{name: "hosted_memory_limit_not_positive", env: map[string]string{"HYPERSHIFT_SIM_HOSTED_MEMORY_LIMIT": "-1Mi"}, args: []string{"--hosted-apiservers=0"}, wantErr: "--hosted-memory-limit"},
		{name: "negative_hosted_apiservers", env: map[string]string{"HYPERSHIFT_SIM_HOSTED_APISERVERS": "-1"}, wantErr: "hosted"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := run(context.Background(), tt.args, envMap(tt.env))
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("run: %v, want an error naming %q", err, tt.wantErr)
			}
		})
	}
}

// TestRun_againstManagementCluster runs the command's wiring (flags from the environment, health
// and metrics servers, controllers) against a real management cluster.
func TestRun_againstManagementCluster(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a real etcd and kube-apiserver")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	apiserver, etcd, err := mgmtcluster.KubeBinaries(ctx)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	mc, err := mgmtcluster.StartManagementCluster(ctx, mgmtcluster.ManagementClusterOptions{
		Name: "sim", Dir: filepath.Join(dir, "mc"), LogDir: dir, APIServerPath: apiserver, EtcdPath: etcd,
	})
	if err != nil {
		t.Fatal(err)
	}
	defer mc.Stop()

	ports, err := mgmtcluster.FreePorts(2)
	if err != nil {
		t.Fatal(err)
	}
	metricsURL := "http://127.0.0.1:" + strconv.Itoa(ports[0]) + "/metrics"
	readyURL := "http://127.0.0.1:" + strconv.Itoa(ports[1]) + "/readyz"
	simCtx, stopSim := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() {
		done <- run(simCtx, []string{"--metrics-addr", "127.0.0.1:" + strconv.Itoa(ports[0])}, envMap(map[string]string{
			"KUBECONFIG":                     mc.Kubeconfig,
			"HYPERSHIFT_SIM_HEALTH_ADDR":     "127.0.0.1:" + strconv.Itoa(ports[1]),
			"HYPERSHIFT_SIM_AVAILABLE_DELAY": "1s",
			"HYPERSHIFT_SIM_FAIL_CLUSTERS":   "clusters/broken",
			// Status only: hosted kube-apiservers are tested in package hypershiftsim.
			"HYPERSHIFT_SIM_HOSTED_APISERVERS": "0",
		}))
	}()
	defer func() {
		stopSim()
		if err := <-done; err != nil {
			t.Errorf("run returned %v after cancel", err)
		}
	}()

	waitHTTP(t, readyURL, 30*time.Second)

	scheme, err := hypershiftsim.NewScheme()
	if err != nil {
		t.Fatal(err)
	}
	c, err := client.New(mc.RESTConfig(), client.Options{Scheme: scheme})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "clusters"}}); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"good", "broken"} {
		if err := c.Create(ctx, hypershiftsim.ExampleHostedCluster("clusters", name, "quay.io/openshift-release-dev/ocp-release:4.19.7-multi")); err != nil {
			t.Fatal(err)
		}
	}
	waitCondition(t, c, "good", hyperv1.HostedClusterAvailable, 20*time.Second)
	waitCondition(t, c, "broken", hyperv1.HostedClusterDegraded, 20*time.Second)

	body := get(t, metricsURL)
	for _, want := range []string{
		`hypershift_sim_hostedcluster_transitions_total{transition="available"} 1`,
		`hypershift_sim_hostedcluster_transitions_total{transition="degraded"} 1`,
		`hypershift_sim_hostedcluster_time_to_available_seconds_count 1`,
		`controller_runtime_reconcile_total{controller="hostedcluster"`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
}

func waitCondition(t *testing.T, c client.Client, name string, typ hyperv1.ConditionType, timeout time.Duration) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		hc := &hyperv1.HostedCluster{}
		err := c.Get(context.Background(), client.ObjectKey{Namespace: "clusters", Name: name}, hc)
		if err == nil && meta.IsStatusConditionTrue(hc.Status.Conditions, string(typ)) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("HostedCluster %s: %s not True after %s (err %v, conditions %+v)", name, typ, timeout, err, hc.Status.Conditions)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func waitHTTP(t *testing.T, url string, timeout time.Duration) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		resp, err := http.Get(url)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return
			}
			err = fmt.Errorf("status %d", resp.StatusCode)
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s not ready after %s: %v", url, timeout, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func get(t *testing.T, url string) string {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %d", url, resp.StatusCode)
	}
	return string(b)
}
