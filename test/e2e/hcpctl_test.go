package e2e

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/google/uuid"
	"sigs.k8s.io/yaml"

	"github.com/openhcp/openhcp/admin/pkg/adminapi"
	csv1 "github.com/openhcp/openhcp/cluster-service/api/v1"
	"github.com/openhcp/openhcp/dev-infrastructure/mgmtcluster"
)

func untarFile(t *testing.T, path string) map[string][]byte {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	files, err := adminapi.ReadMustGather(f)
	if err != nil {
		t.Fatal(err)
	}
	return files
}

func mapKeys(m map[string][]byte) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

// hcpctlBinary builds hcpctl once per test.
func hcpctlBinary(t *testing.T) string {
	t.Helper()
	root, err := mgmtcluster.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(t.TempDir(), "hcpctl")
	cmd := exec.Command("go", "build", "-o", bin, "./tooling/cmd/hcpctl")
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("build hcpctl: %v\n%s", err, out)
	}
	return bin
}

// hcpctl runs the CLI against the running region (found through its region.json) and returns
// stdout, stderr and the exit status.
func hcpctl(t *testing.T, bin string, args ...string) (string, string, int) {
	t.Helper()
	cmd := exec.Command(bin, append([]string{"--region-file", region.RegionFile()}, args...)...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	code := 0
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("run hcpctl %v: %v", args, err)
	}
	return out.String(), errb.String(), code
}

// TestHcpctl drives hcpctl against the running region: aligned tables, JSON and YAML, a shard
// cordon and its audit record, and errors that say which flag or ID is wrong and what to do.
func TestHcpctl(t *testing.T) {
	bin := hcpctlBinary(t)

	t.Run("shard_list_is_an_aligned_table", func(t *testing.T) {
		out, stderr, code := hcpctl(t, bin, "shard", "list")
		lines := strings.Split(strings.TrimSpace(out), "\n")
		if code != 0 || len(lines) != 3 || !strings.HasPrefix(lines[0], "NAME") {
			t.Fatalf("exit %d, stdout:\n%s\nstderr: %s", code, out, stderr)
		}
		t.Logf("$ hcpctl shard list\n%s", out) // docs/sre.md shows this output
		col := strings.Index(lines[0], "STATUS")
		health := strings.Index(lines[0], "HEALTH")
		for _, l := range lines[1:] {
			if len(l) <= col || l[col-1] != ' ' || l[col] == ' ' {
				t.Fatalf("column STATUS (at %d) is not aligned:\n%s", col, out)
			}
			// Both management clusters' apiservers answer /readyz to the admin API's reader.
			if health < 0 || !strings.HasPrefix(l[health:], "healthy ") {
				t.Fatalf("shard not shown healthy in column HEALTH (at %d):\n%s", health, out)
			}
		}
	})

	t.Run("json_and_yaml_decode", func(t *testing.T) {
		out, _, code := hcpctl(t, bin, "shard", "list", "-o", "json")
		var l adminapi.ShardList
		if code != 0 || json.Unmarshal([]byte(out), &l) != nil || len(l.Shards) != 2 {
			t.Fatalf("json: exit %d: %s", code, out)
		}
		out, _, code = hcpctl(t, bin, "-o", "yaml", "shard", "list")
		l = adminapi.ShardList{}
		if code != 0 || yaml.Unmarshal([]byte(out), &l) != nil || len(l.Shards) != 2 || l.Shards[0].Name != "mgmt-1" {
			t.Fatalf("yaml: exit %d: %s", code, out)
		}
	})

	t.Run("cordon_as_admin_reaches_cluster_service_and_the_audit_log", func(t *testing.T) {
		reason := "e2e hcpctl " + uuid.NewString()
		out, stderr, code := hcpctl(t, bin, "--as", "sre-admin", "shard", "cordon", "mgmt-1", "--reason", reason, "--if-match", "active")
		if code != 0 || !strings.Contains(out, "mgmt-1 is maintenance") {
			t.Fatalf("exit %d: %s %s", code, out, stderr)
		}
		t.Cleanup(func() { hcpctl(t, bin, "--as", "sre-admin", "shard", "uncordon", "mgmt-1", "--reason", "cleanup") })
		if csShardStatus(t, "mgmt-1") != csv1.ShardStatus_SHARD_STATUS_MAINTENANCE {
			t.Fatal("Cluster Service does not see the cordon")
		}
		out, _, code = hcpctl(t, bin, "audit", "--person", "alice", "--outcome", "allowed", "--target", "mgmt-1", "--since", "10m")
		if code != 0 || !strings.Contains(out, reason) || !strings.Contains(out, "POST /admin/v1/shards/{name}/cordon") {
			t.Fatalf("audit does not show the cordon: exit %d\n%s", code, out)
		}
		if out, _, code := hcpctl(t, bin, "--as", "sre-admin", "shard", "uncordon", "mgmt-1", "--reason", "done"); code != 0 {
			t.Fatalf("uncordon: %d %s", code, out)
		}
	})

	t.Run("set_status_offline_and_back", func(t *testing.T) {
		out, stderr, code := hcpctl(t, bin, "--as", "sre-admin", "shard", "set-status", "mgmt-1", "--status", "offline", "--reason", "e2e: power maintenance", "--if-match", "active")
		if code != 0 || !strings.Contains(out, "mgmt-1 is offline") {
			t.Fatalf("exit %d: %s %s", code, out, stderr)
		}
		t.Cleanup(func() { hcpctl(t, bin, "--as", "sre-admin", "shard", "uncordon", "mgmt-1", "--reason", "cleanup") })
		if csShardStatus(t, "mgmt-1") != csv1.ShardStatus_SHARD_STATUS_OFFLINE {
			t.Fatal("Cluster Service does not see the shard offline")
		}
		out, stderr, code = hcpctl(t, bin, "--as", "sre-admin", "shard", "set-status", "mgmt-1", "--status", "active", "--reason", "e2e: back", "--if-match", "offline")
		if code != 0 || !strings.Contains(out, "mgmt-1 is active") || csShardStatus(t, "mgmt-1") != csv1.ShardStatus_SHARD_STATUS_ACTIVE {
			t.Fatalf("back to active: exit %d: %s %s", code, out, stderr)
		}
	})

	for _, tc := range []struct {
		name string
		args []string
		code int
		want []string // in stderr
	}{
		{"cordon_without_reason_names_the_flag", []string{"shard", "cordon", "mgmt-1"}, 2, []string{"--reason is required"}},
		{"readonly_cordon_is_forbidden_and_says_what_to_do", []string{"shard", "cordon", "mgmt-1", "--reason", "x"}, 1, []string{"Forbidden (HTTP 403)", "--as sre-admin"}},
		{"unknown_shard_names_it", []string{"--as", "sre-admin", "shard", "cordon", "mgmt-7", "--reason", "x"}, 1, []string{"InvalidRequest (HTTP 400)", "mgmt-7", "hcpctl shard list"}},
		{"stale_etag_says_how_to_retry", []string{"--as", "sre-admin", "shard", "uncordon", "mgmt-2", "--reason", "x", "--if-match", "offline"}, 1, []string{"HTTP 412", "--if-match"}},
		{"unknown_cluster_names_it", []string{"cluster", "describe", "0000000000000000000000000000dead"}, 1, []string{"0000000000000000000000000000dead"}},
		{"bad_state_names_the_flag", []string{"cluster", "list", "--state", "sleepy"}, 1, []string{"Fix --state"}},
		{"unknown_command", []string{"shard", "drain"}, 2, []string{"shard takes list, cordon, uncordon, set-status"}},
		{"bad_output", []string{"shard", "list", "-o", "xml"}, 2, []string{"-o"}},
		{"unknown_group", []string{"--as", "sre-root", "shard", "list"}, 2, []string{"--as sre-root", "sre-readonly"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, stderr, code := hcpctl(t, bin, tc.args...)
			if code != tc.code {
				t.Fatalf("exit %d, want %d\nstdout: %s\nstderr: %s", code, tc.code, out, stderr)
			}
			for _, w := range tc.want {
				if !strings.Contains(stderr, w) {
					t.Errorf("stderr does not say %q:\n%s", w, stderr)
				}
			}
		})
	}

	t.Run("cluster_list_describe_and_operations", func(t *testing.T) {
		sub := uuid.NewString()
		registerSubscription(t, sub)
		path := clusterPath(sub, "rg-hcpctl", "c1")
		c, _ := createCluster(t, path, clusterBody(sub, "rg-hcpctl"))
		out, _, code := hcpctl(t, bin, "cluster", "list", "--subscription", sub)
		if code != 0 || !regexp.MustCompile(`(?m)^`+c.GetId()+`\s+c1\s+`+sub+`\s+mgmt-\d\s+ready\s+`).MatchString(out) {
			t.Fatalf("cluster list: exit %d\n%s", code, out)
		}
		out, _, code = hcpctl(t, bin, "cluster", "describe", path)
		if code != 0 || !strings.Contains(out, "Where it is, stage by stage:") || !strings.Contains(out, "Available=True") || !strings.Contains(out, "cluster-"+c.GetId()) ||
			!regexp.MustCompile(`Management cluster mgmt-\d: healthy \(kube-apiserver /readyz: ok\)`).MatchString(out) {
			t.Fatalf("cluster describe: exit %d\n%s", code, out)
		}
		tarball := filepath.Join(t.TempDir(), "mg.tar.gz")
		if out, stderr, code := hcpctl(t, bin, "cluster", "must-gather", c.GetId(), "-f", tarball); code != 0 {
			t.Fatalf("must-gather: exit %d %s %s", code, out, stderr)
		}
		files := untarFile(t, tarball)
		root := "must-gather-" + c.GetId() + "/"
		if !strings.Contains(string(files[root+"describe.json"]), c.GetArmResourceId()) ||
			!strings.Contains(string(files[root+"logs/cluster-service.log"]), c.GetId()) ||
			!strings.Contains(string(files[root+"maestro/bundles.json"]), "cluster-"+c.GetId()) {
			t.Fatalf("must-gather lacks the describe view, Cluster Service's log lines or the bundle: %v", mapKeys(files))
		}
		// The objects as they are on the management cluster, read by the admin API's read-only
		// user: the HostedCluster and NodePools carry the cluster's ID label.
		var hcs []map[string]any
		label := func(o map[string]any) any {
			md, _ := o["metadata"].(map[string]any)
			l, _ := md["labels"].(map[string]any)
			return l["openhcp.io/cluster-id"]
		}
		if err := json.Unmarshal(files[root+"management/hostedclusters.json"], &hcs); err != nil || len(hcs) != 1 || label(hcs[0]) != c.GetId() {
			t.Fatalf("management/hostedclusters.json: %v %.300s (files %v)", err, files[root+"management/hostedclusters.json"], mapKeys(files))
		}
		// The ManifestWork's status as Maestro holds it, with the status feedback the agent
		// scraped (the HostedCluster's generation among the values).
		if b := string(files[root+"maestro/bundles.json"]); !strings.Contains(b, "statusFeedback") || !strings.Contains(b, `"generation"`) {
			t.Fatalf("maestro/bundles.json lacks the status feedback: %.2000s", b)
		}
		for _, f := range []string{"management/nodepools.json", "management/events.json", "clusterservice/cluster.json", "arm/documents.json"} {
			if _, ok := files[root+f]; !ok {
				t.Fatalf("must-gather lacks %s: %v", f, mapKeys(files))
			}
		}
		out, _, code = hcpctl(t, bin, "operation", "list", "--all", "-o", "json")
		var ops adminapi.OperationList
		if code != 0 || json.Unmarshal([]byte(out), &ops) != nil {
			t.Fatalf("operation list: exit %d\n%s", code, out)
		}
		found := false
		for _, op := range ops.Operations {
			found = found || strings.EqualFold(op.ResourceID, path)
		}
		if !found {
			t.Fatalf("operation list --all does not show the create of %s", path)
		}
	})

	t.Run("revoke_refuses_the_person_from_the_next_call_on", func(t *testing.T) {
		// A person the region has no certificate for: revoking them changes no other test's SRE.
		person := "mallory-" + uuid.NewString()[:8]
		if out, stderr, code := hcpctl(t, bin, "--as", "sre-admin", "sre", "revoke", person, "--reason", "e2e: leaked"); code != 0 {
			t.Fatalf("revoke: exit %d %s %s", code, out, stderr)
		}
		out, _, code := hcpctl(t, bin, "sre", "revocations")
		if code != 0 || !regexp.MustCompile(`(?m)^`+person+`\s+\S+\s+alice \(sre-admin\)\s+e2e: leaked`).MatchString(out) {
			t.Fatalf("revocations: exit %d\n%s", code, out)
		}
	})

	t.Run("completion_lists_the_commands", func(t *testing.T) {
		out, _, code := hcpctl(t, bin, "completion", "bash")
		if code != 0 || !strings.Contains(out, "complete -F _hcpctl hcpctl") || !strings.Contains(out, "cordon uncordon") {
			t.Fatalf("exit %d: %s", code, out)
		}
	})
}
