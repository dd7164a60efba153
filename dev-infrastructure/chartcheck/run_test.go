package chartcheck

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/openhcp/openhcp/cluster-service/pkg/srestatement"
	"github.com/openhcp/openhcp/internal/envelope"
	"github.com/openhcp/openhcp/internal/pki"
)

// The chart's container as the kubelet would start it: its environment (ConfigMaps by envFrom,
// env entries) and where each Secret volume is mounted with which keys.
type chartContainer struct {
	env    map[string]string
	args   []string
	mounts []secretMount
}

type secretMount struct {
	path string
	keys []string // the items projected; nil: every key of the Secret
}

// mainContainer returns the one Deployment's first container of a rendered service chart.
func mainContainer(t *testing.T, rendered []byte) chartContainer {
	t.Helper()
	configMaps := map[string]map[string]string{}
	var deployments []*appsv1.Deployment
	for _, obj := range objects(t, rendered) {
		switch o := obj.(type) {
		case *corev1.ConfigMap:
			configMaps[o.Name] = o.Data
		case *appsv1.Deployment:
			deployments = append(deployments, o)
		}
	}
	if len(deployments) != 1 {
		t.Fatalf("rendered %d Deployments, want 1", len(deployments))
	}
	spec := deployments[0].Spec.Template.Spec
	c := spec.Containers[0]
	out := chartContainer{env: map[string]string{}, args: c.Args}
	for _, from := range c.EnvFrom {
		if from.ConfigMapRef != nil {
			for k, v := range configMaps[from.ConfigMapRef.Name] {
				out.env[from.Prefix+k] = v
			}
		}
	}
	for _, e := range c.Env {
		if e.ValueFrom != nil {
			out.env[e.Name] = "from-a-secret" // e.g. PGPASSWORD; its value does not matter here
			continue
		}
		out.env[e.Name] = e.Value
	}
	volumes := map[string]corev1.Volume{}
	for _, v := range spec.Volumes {
		volumes[v.Name] = v
	}
	for _, m := range c.VolumeMounts {
		v, ok := volumes[m.Name]
		if !ok || v.Secret == nil {
			continue
		}
		sm := secretMount{path: m.MountPath}
		for _, it := range v.Secret.Items {
			sm.keys = append(sm.keys, it.Path)
		}
		out.mounts = append(out.mounts, sm)
	}
	return out
}

// fillSecrets writes, under dir, a file for every Secret key the container mounts: a server and
// client certificate of the local PKI for tls.crt/tls.key, both CAs for ca.crt, a fresh
// key-encryption key for kek, a session key for session.key, one SRE statement key pair for
// sre-statement.key/.pub, a kubeconfig for any other key (the admin API's management
// clusters). Mount paths keep their layout below dir.
func fillSecrets(t *testing.T, dir string, c chartContainer) {
	t.Helper()
	p, err := pki.Create(filepath.Join(dir, "pki"), pki.Options{})
	if err != nil {
		t.Fatal(err)
	}
	id := p.MustFiles(pki.ClusterService) // server and client usage
	stmtKey, stmtPub := filepath.Join(dir, "pki", "sre-statement.key"), filepath.Join(dir, "pki", "sre-statement.pub")
	if err := srestatement.WriteKeyPair(stmtKey, stmtPub); err != nil {
		t.Fatal(err)
	}
	copyFile := func(from, to string) {
		b, err := os.ReadFile(from)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(to, b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	for _, m := range c.mounts {
		d := filepath.Join(dir, m.path)
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
		keys := m.keys
		if keys == nil {
			keys = []string{"tls.crt", "tls.key", "ca.crt"}
		}
		for _, k := range keys {
			path := filepath.Join(d, k)
			switch k {
			case "tls.crt":
				copyFile(id.Cert, path)
			case "tls.key":
				copyFile(id.Key, path)
			case "ca.crt":
				copyFile(p.CAFile, path)
			case "kek":
				if _, err := envelope.WriteKeyFile(path); err != nil {
					t.Fatal(err)
				}
			case "sre-statement.key":
				copyFile(stmtKey, path)
			case "sre-statement.pub":
				copyFile(stmtPub, path)
			case "session.key":
				// The break-glass session key: base64 of 32 random bytes, as the deployer makes it.
				raw := make([]byte, 32)
				if _, err := rand.Read(raw); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(path, []byte(base64.StdEncoding.EncodeToString(raw)+"\n"), 0o600); err != nil {
					t.Fatal(err)
				}
			default:
				kc := "apiVersion: v1\nkind: Config\nclusters: [{name: c, cluster: {server: \"https://127.0.0.1:1\"}}]\n" +
					"users: [{name: u, user: {}}]\ncontexts: [{name: c, context: {cluster: c, user: u}}]\ncurrent-context: c\n"
				if err := os.WriteFile(path, []byte(kc), 0o600); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
}

var listenAddr = regexp.MustCompile(`^0\.0\.0\.0:[0-9]+$`)

// runAsThePodWould starts exe with the container's environment and arguments, its mounts under
// dir (paths in either rewritten to there) and every listener on a free port of every address (as in a pod: off loopback, so TLS),
// and returns how it ended within timeout.
func runAsThePodWould(t *testing.T, exe, dir string, c chartContainer, timeout time.Duration) (exitCode int, stderr string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	args := make([]string, len(c.args))
	for i, a := range c.args {
		args[i] = strings.ReplaceAll(a, "/etc/openhcp", filepath.Join(dir, "etc", "openhcp"))
	}
	cmd := exec.CommandContext(ctx, exe, args...)
	cmd.Env = []string{"PATH=/usr/bin:/bin", "HOME=" + dir}
	for k, v := range c.env {
		if listenAddr.MatchString(v) {
			v = "0.0.0.0:0"
		}
		cmd.Env = append(cmd.Env, k+"="+strings.ReplaceAll(v, "/etc/openhcp", filepath.Join(dir, "etc", "openhcp")))
	}
	var errb bytes.Buffer
	cmd.Stderr = &errb
	err := cmd.Run()
	if ctx.Err() != nil {
		t.Fatalf("%s still running after %s with the chart's settings; stderr:\n%s", exe, timeout, errb.String())
	}
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		t.Fatalf("run %s: %v", exe, err)
	}
	return cmd.ProcessState.ExitCode(), errb.String()
}

// closedPort is a loopback port nothing listens on (one just released).
func closedPort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	return port
}

// TestServiceChartsAgainstTheirBinaries builds each service chart's binary and checks the
// chart's dev-region rendering against it:
//   - environment names: every <PREFIX>_* variable the chart sets is one the binary reads (a
//     misspelt name would be ignored silently);
//   - settings accepted: the binary, started as its pod would be (environment, arguments and
//     mounted Secret files, listeners off loopback so with TLS) with the database port a
//     deployer sets (the dev values say 0, "chosen at start-up") pointing at a loopback port
//     nothing listens on, gets as far as connecting to PostgreSQL and fails there (exit status
//     1), not on its settings (status 2): every flag parses and every file loads.
func TestServiceChartsAgainstTheirBinaries(t *testing.T) {
	root := repoRoot(t)
	helmBin := helm(t, root)
	found := map[string]bool{}
	for _, c := range installable(t, root) {
		found[c] = true
	}
	bin := t.TempDir()
	for chart, svc := range serviceCharts() {
		t.Run(chart, func(t *testing.T) {
			if !found[chart] {
				t.Fatalf("chart %s is gone: update serviceCharts()", chart)
			}
			exe := buildService(t, root, bin, svc.pkg)
			t.Run("environment names", func(t *testing.T) {
				checkEnvNames(t, exe, svc.envPrefix, render(t, helmBin, root, chart))
			})
			t.Run("settings accepted", func(t *testing.T) {
				port := closedPort(t)
				c := mainContainer(t, renderWith(t, helmBin, root, chart, valuesFile(t, root, chart),
					"--set", fmt.Sprintf("database.host=127.0.0.1,database.port=%d", port)))
				dir := t.TempDir()
				fillSecrets(t, dir, c)
				code, stderr := runAsThePodWould(t, exe, dir, c, 30*time.Second)
				t.Log(stderr)
				if want := fmt.Sprintf("127.0.0.1:%d", port); code != 1 || !strings.Contains(stderr, want) {
					t.Fatalf("%s exited %d; want 1 with an error reaching the database at %s. stderr:\n%s", svc.pkg, code, want, stderr)
				}
			})
		})
	}
}

// TestMaintenanceChartCarriesBlackoutsToTheBinary: the region's blackouts (config
// maintenance.blackouts → the chart's blackouts) reach the binary's --blackouts: a valid list is
// accepted (the binary gets as far as the database, exit 1), one whose span ends before it starts
// stops start-up on its settings (exit 2) naming the flag.
func TestMaintenanceChartCarriesBlackoutsToTheBinary(t *testing.T) {
	root := repoRoot(t)
	helmBin := helm(t, root)
	const chart = "backend/deploy/maintenance"
	exe := buildService(t, root, t.TempDir(), serviceCharts()[chart].pkg)
	for _, tc := range []struct {
		name, blackouts string
		wantCode        int
		want            string
	}{
		{"a_valid_list_is_accepted", `[{"from":"2026-12-24T00:00:00Z","to":"2026-12-27T00:00:00Z","reason":"holidays"}]`, 1, "127.0.0.1:"},
		{"a_span_ending_before_it_starts_stops_start_up", `[{"from":"2026-12-27T00:00:00Z","to":"2026-12-24T00:00:00Z"}]`, 2, "--blackouts"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			port := closedPort(t)
			c := mainContainer(t, renderWith(t, helmBin, root, chart, valuesFile(t, root, chart),
				"--set", fmt.Sprintf("database.host=127.0.0.1,database.port=%d", port), "--set-json", "blackouts="+tc.blackouts))
			dir := t.TempDir()
			fillSecrets(t, dir, c)
			code, stderr := runAsThePodWould(t, exe, dir, c, 30*time.Second)
			if code != tc.wantCode || !strings.Contains(stderr, tc.want) {
				t.Fatalf("maintenance exited %d; want %d naming %q. stderr:\n%s", code, tc.wantCode, tc.want, stderr)
			}
		})
	}
}

// TestMonitorChartCarriesShardProbesToTheBinary: the chart's shardProbes (make deploy's, one per
// management cluster) reach the binary as one --shard-probe each, its files the ones the chart
// mounts from the probe's Secret: the Monitor loads every probe's TLS files before it opens the
// document store, so it gets as far as the database (exit 1 naming it), where a probe whose files
// were not mounted would stop it naming --shard-probe.
func TestMonitorChartCarriesShardProbesToTheBinary(t *testing.T) {
	root := repoRoot(t)
	helmBin := helm(t, root)
	const chart = "backend/deploy/monitor"
	exe := buildService(t, root, t.TempDir(), serviceCharts()[chart].pkg)
	probes := `[{"shard":"mgmt-1","url":"https://kubernetes.default.svc/readyz","secret":"monitor-shard-probe-mgmt-1"},` +
		`{"shard":"mgmt-2","url":"https://mgmt-2-apiserver.openhcp-outside.svc:6443/readyz","secret":"monitor-shard-probe-mgmt-2"}]`
	port := closedPort(t)
	rendered := renderWith(t, helmBin, root, chart, valuesFile(t, root, chart),
		"--set", fmt.Sprintf("database.host=127.0.0.1,database.port=%d", port), "--set-json", "shardProbes="+probes)
	c := mainContainer(t, rendered)
	for _, want := range []string{"--shard-probe=mgmt-1=https://kubernetes.default.svc/readyz,", "--shard-probe=mgmt-2=https://mgmt-2-apiserver.openhcp-outside.svc:6443/readyz,"} {
		n := 0
		for _, a := range c.args {
			if strings.HasPrefix(a, want) {
				n++
			}
		}
		if n != 1 {
			t.Errorf("args %q: %d starting %q, want 1", c.args, n, want)
		}
	}
	for _, secret := range []string{"monitor-shard-probe-mgmt-1", "monitor-shard-probe-mgmt-2"} {
		if !bytes.Contains(rendered, []byte("secretName: "+secret+"\n")) {
			t.Errorf("no volume of Secret %s", secret)
		}
	}
	dir := t.TempDir()
	fillSecrets(t, dir, c)
	code, stderr := runAsThePodWould(t, exe, dir, c, 30*time.Second)
	if code != 1 || !strings.Contains(stderr, fmt.Sprintf("127.0.0.1:%d", port)) || strings.Contains(stderr, "--shard-probe") {
		t.Fatalf("monitor exited %d; want 1 naming the database, not --shard-probe. stderr:\n%s", code, stderr)
	}
}
