package main

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/spf13/cobra"

	"github.com/openhcp/openhcp/admin/pkg/adminapi"
	"github.com/openhcp/openhcp/dev-infrastructure/localregion"
)

func noEnv(string) string { return "" }

// clusterAPI answers GET /admin/v1/clusters with two clusters and GET /admin/v1/shards with
// two shards; anything else is 404.
func clusterAPI() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /admin/v1/clusters", func(w http.ResponseWriter, r *http.Request) {
		_ = json.NewEncoder(w).Encode(adminapi.ClusterList{Clusters: []adminapi.ClusterSummary{
			{ID: "c0ffee00000000000000000000000001", ARMResourceID: "/subscriptions/s1/resourceGroups/rg/providers/Microsoft.RedHatOpenShift/hcpOpenShiftClusters/one",
				Subscription: "s1", Shard: "mgmt-1", State: "ready", Health: "healthy", Version: "4.20", CurrentVersion: "4.20.3", Applied: true, ETag: "7", CreateTime: time.Now().Add(-time.Hour)},
			{ID: "c0ffee00000000000000000000000002", ARMResourceID: "/subscriptions/s1/resourceGroups/rg/providers/Microsoft.RedHatOpenShift/hcpOpenShiftClusters/two",
				Subscription: "s1", Shard: "mgmt-2", State: "installing", Health: "unknown", Version: "4.20", ETag: "1", CreateTime: time.Now()},
		}})
	})
	mux.HandleFunc("GET /admin/v1/shards", func(w http.ResponseWriter, r *http.Request) {
		_ = json.NewEncoder(w).Encode(adminapi.ShardList{Shards: []adminapi.Shard{
			{Name: "mgmt-1", Status: "active", MaxClusters: 10, ClusterCount: 1, Load: 0.1, ETag: "active", Health: "healthy", Labels: map[string]string{"region": "local"}},
			{Name: "mgmt-2", Status: "maintenance", MaxClusters: 10, ClusterCount: 1, Load: 0.1, ETag: "maintenance", Health: "unreachable", HealthMessage: "dial refused"},
		}})
	})
	return mux
}

// commandPaths is every command of the tree hcpctl runs, as the words that name it (the root
// is the empty path); cobra's hidden __complete commands are left out.
func commandPaths(t *testing.T) [][]string {
	t.Helper()
	root := newRootCmd(noEnv, io.Discard, io.Discard)
	var paths [][]string
	var walk func(c *cobra.Command, path []string)
	walk = func(c *cobra.Command, path []string) {
		paths = append(paths, path)
		for _, sub := range c.Commands() {
			if !sub.Hidden {
				walk(sub, append(append([]string{}, path...), sub.Name()))
			}
		}
	}
	walk(root, nil)
	if len(paths) < 30 {
		t.Fatalf("the tree has %d commands: %v", len(paths), paths)
	}
	return paths
}

// TestEveryCommandHelp: --help and -h of every command and noun in the tree (a new command is
// covered without a change here) print the usage, the flags and an example on stdout and exit 0,
// calling nothing (there is no admin API to call).
func TestEveryCommandHelp(t *testing.T) {
	for _, path := range commandPaths(t) {
		for _, help := range []string{"--help", "-h"} {
			args := append(append([]string{"--region-file", "/nope/region.json"}, path...), help)
			t.Run(strings.Join(append(path, help), "_"), func(t *testing.T) {
				var out, errb bytes.Buffer
				code := run(args, noEnv, &out, &errb)
				for _, want := range []string{"Usage:", "Flags:", "Examples:\n  "} {
					if !strings.Contains(out.String(), want) {
						t.Errorf("%v: stdout lacks %q:\n%s", args, want, out.String())
					}
				}
				if code != exitOK || errb.Len() != 0 {
					t.Errorf("%v: exit %d, stderr %q", args, code, errb.String())
				}
			})
		}
	}
	// help <command> is the same help.
	var out bytes.Buffer
	if code := run([]string{"help", "shard", "cordon"}, noEnv, &out, io.Discard); code != 0 || !strings.Contains(out.String(), "hcpctl shard cordon <shard> [flags]") {
		t.Fatalf("help shard cordon: exit %d\n%s", code, out.String())
	}
}

// TestUnknownFlagIsAUsageError: every command refuses a flag it does not have with exit 2, on
// stderr, naming the flag, before it calls anything.
func TestUnknownFlagIsAUsageError(t *testing.T) {
	for _, path := range commandPaths(t) {
		args := append(append([]string{"--region-file", "/nope/region.json"}, path...), "--no-such-flag", "x")
		t.Run(strings.Join(append(path, "unknown"), "_"), func(t *testing.T) {
			var out, errb bytes.Buffer
			code := run(args, noEnv, &out, &errb)
			if code != exitUsage || !strings.Contains(errb.String(), "unknown flag: --no-such-flag") || out.Len() != 0 {
				t.Fatalf("%v: exit %d, stdout %q, stderr %q", args, code, out.String(), errb.String())
			}
		})
	}
}

// TestExitStatus: 0 done, 1 a call the admin API refused or that failed (what to do on
// stderr), 2 a wrong command line (nothing called), as docs/sre.md says and the e2e tests
// rely on.
func TestExitStatus(t *testing.T) {
	var calls atomic.Int64
	mux := http.NewServeMux()
	mux.Handle("GET /admin/v1/", clusterAPI())
	mux.HandleFunc("POST /admin/v1/shards/{name}/cordon", func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		w.WriteHeader(http.StatusForbidden)
		_ = json.NewEncoder(w).Encode(adminapi.Error{Code: "Forbidden", Message: "sre-readonly may not cordon a shard"})
	})
	api, caFile, certFile, keyFile := adminAPI(t, mux)
	region := filepath.Join(t.TempDir(), "region.json")
	b, _ := json.Marshal(localregion.Info{Admin: localregion.AdminInfo{URL: api[1], ServerName: "example.com", CAFile: caFile,
		SREs: []localregion.SREIdentity{{Person: "bob", Group: "sre-readonly", CertFile: certFile, KeyFile: keyFile}}}})
	if err := os.WriteFile(region, b, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		args []string
		code int
		want []string // in stderr
	}{
		{"list_is_done", []string{"shard", "list"}, exitOK, nil},
		{"refused_call_says_what_to_do", []string{"shard", "cordon", "mgmt-1", "--reason", "x"}, exitFailed, []string{"Forbidden (HTTP 403)", "--as sre-admin"}},
		{"unknown_cluster_is_a_failed_call", []string{"cluster", "describe", "0000000000000000000000000000dead"}, exitFailed, []string{"HTTP 404"}},
		{"unknown_verb_lists_the_verbs", []string{"shard", "drain"}, exitUsage, []string{"shard takes list, cordon, uncordon, set-status"}},
		{"bad_output", []string{"shard", "list", "-o", "xml"}, exitUsage, []string{"-o"}},
		{"unknown_group", []string{"--as", "sre-root", "shard", "list"}, exitUsage, []string{"--as sre-root", "sre-readonly"}},
		{"kubeconfig_is_required", []string{"breakglass", "open", "c1", "--reason", "x"}, exitUsage, []string{"--kubeconfig"}},
		{"reason_is_required", []string{"shard", "cordon", "mgmt-1"}, exitUsage, []string{"--reason is required"}},
		{"portal_serves_loopback_only", []string{"portal", "--listen", "0.0.0.0:0"}, exitUsage, []string{"--listen 0.0.0.0:0", "loopback only"}},
		{"unknown_completion_shell", []string{"completion", "tcsh"}, exitUsage, []string{"bash, zsh, fish, powershell"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := calls.Load()
			var out, errb bytes.Buffer
			code := run(append([]string{"--region-file", region}, tc.args...), noEnv, &out, &errb)
			if code != tc.code {
				t.Fatalf("exit %d, want %d\nstdout: %s\nstderr: %s", code, tc.code, out.String(), errb.String())
			}
			for _, w := range tc.want {
				if !strings.Contains(errb.String(), w) {
					t.Errorf("stderr does not say %q:\n%s", w, errb.String())
				}
			}
			if tc.code == exitUsage && calls.Load() != before {
				t.Errorf("a usage error called the admin API")
			}
			if tc.code != exitOK && out.Len() != 0 {
				t.Errorf("an error printed on stdout: %q", out.String())
			}
		})
	}
}

// TestOutputWide: -o wide prints the table with more columns than the default.
func TestOutputWide(t *testing.T) {
	api, _, _, _ := adminAPI(t, clusterAPI())
	var table, wide, errb bytes.Buffer
	if code := run(append(api, "cluster", "list"), noEnv, &table, &errb); code != 0 {
		t.Fatalf("cluster list: exit %d: %s", code, errb.String())
	}
	if code := run(append(api, "cluster", "list", "-o", "wide"), noEnv, &wide, &errb); code != 0 {
		t.Fatalf("cluster list -o wide: exit %d: %s", code, errb.String())
	}
	head := strings.Fields(strings.SplitN(wide.String(), "\n", 2)[0])
	if len(head) <= len(strings.Fields(strings.SplitN(table.String(), "\n", 2)[0])) || !strings.Contains(wide.String(), "4.20.3") ||
		!strings.Contains(wide.String(), "/hcpOpenShiftClusters/one") {
		t.Fatalf("-o wide shows no more than the table:\n%s\nvs\n%s", wide.String(), table.String())
	}
	wide.Reset()
	if code := run(append(api, "shard", "list", "-o", "wide"), noEnv, &wide, &errb); code != 0 ||
		!strings.Contains(wide.String(), "LABELS") || !strings.Contains(wide.String(), "region=local") {
		t.Fatalf("shard list -o wide: exit %d\n%s%s", code, wide.String(), errb.String())
	}
}

// TestVersion: hcpctl version prints the client's build (from the binary's build
// information), as text or JSON, without an admin API to call.
func TestVersion(t *testing.T) {
	var out, errb bytes.Buffer
	if code := run([]string{"--region-file", "/nope/region.json", "version"}, noEnv, &out, &errb); code != 0 ||
		!strings.Contains(out.String(), "Client Version: ") || !strings.Contains(out.String(), "Go Version: "+runtime.Version()) {
		t.Fatalf("exit %d\n%s%s", code, out.String(), errb.String())
	}
	out.Reset()
	var v versionInfo
	if code := run([]string{"--region-file", "/nope/region.json", "version", "-o", "json"}, noEnv, &out, &errb); code != 0 ||
		json.Unmarshal(out.Bytes(), &v) != nil || v.ClientVersion.Module != "github.com/openhcp/openhcp/tooling" || v.ClientVersion.Version == "" {
		t.Fatalf("version -o json: exit %d\n%s%s", code, out.String(), errb.String())
	}
}

// TestBuildVersion: the VCS revision and time a binary was stamped with are what version
// reports.
func TestBuildVersion(t *testing.T) {
	bi := &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Path: "github.com/openhcp/openhcp/tooling", Version: "v0.3.0"},
		Settings: []debug.BuildSetting{{Key: "vcs.revision", Value: "79d4ab2"}, {Key: "vcs.time", Value: "2026-11-26T04:00:00Z"}, {Key: "vcs.modified", Value: "true"}}}
	got := buildVersion(bi, true)
	if got.Version != "v0.3.0" || got.Revision != "79d4ab2" || got.Time != "2026-11-26T04:00:00Z" || !got.Modified || got.GoVersion != "go1.26.8" {
		t.Fatalf("buildVersion = %+v", got)
	}
	if got := buildVersion(nil, false); got.Version != "unknown" || got.Revision != "" {
		t.Fatalf("without build information: %+v", got)
	}
}

// TestCompletionShells: each shell's script is printed; an unknown shell is a usage error.
func TestCompletionShells(t *testing.T) {
	for _, tc := range []struct {
		shell, want string
		code        int
	}{
		{"bash", "complete -F _hcpctl hcpctl", 0},
		{"bash", "#   shard list cordon uncordon set-status", 0}, // the command table heads the script
		{"zsh", "#compdef hcpctl", 0},
		{"fish", "complete -c hcpctl", 0},
		{"powershell", "Register-ArgumentCompleter", 0},
		{"tcsh", "tcsh", 2},
	} {
		t.Run(tc.shell, func(t *testing.T) {
			var out, errb bytes.Buffer
			code := run([]string{"completion", tc.shell}, noEnv, &out, &errb)
			if code != tc.code || !strings.Contains(out.String()+errb.String(), tc.want) {
				t.Fatalf("exit %d (want %d), want %q:\n%.400s\n%s", code, tc.code, tc.want, out.String(), errb.String())
			}
		})
	}
}

// shardListJSON and shardListYAML are what hcpctl printed for clusterAPI's shards before it was
// built on cobra: scripts and the e2e tests parse them.
const shardListJSON = `{
  "shards": [
    {
      "name": "mgmt-1",
      "status": "active",
      "maxClusters": 10,
      "clusterCount": 1,
      "load": 0.1,
      "labels": {
        "region": "local"
      },
      "etag": "active",
      "health": "healthy"
    },
    {
      "name": "mgmt-2",
      "status": "maintenance",
      "maxClusters": 10,
      "clusterCount": 1,
      "load": 0.1,
      "etag": "maintenance",
      "health": "unreachable",
      "healthMessage": "dial refused"
    }
  ]
}
`

const shardListYAML = `shards:
- clusterCount: 1
  etag: active
  health: healthy
  labels:
    region: local
  load: 0.1
  maxClusters: 10
  name: mgmt-1
  status: active
- clusterCount: 1
  etag: maintenance
  health: unreachable
  healthMessage: dial refused
  load: 0.1
  maxClusters: 10
  name: mgmt-2
  status: maintenance
`

// TestScriptOutputIsUnchanged: -o json and -o yaml print the admin API's document byte for
// byte as before, with -o before or after the words.
func TestScriptOutputIsUnchanged(t *testing.T) {
	api, _, _, _ := adminAPI(t, clusterAPI())
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"json_after", []string{"shard", "list", "-o", "json"}, shardListJSON},
		{"yaml_before", []string{"-o", "yaml", "shard", "list"}, shardListYAML},
		{"long_flag", []string{"shard", "list", "--output=json"}, shardListJSON},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out, errb bytes.Buffer
			if code := run(append(append([]string{}, api...), tc.args...), noEnv, &out, &errb); code != 0 || out.String() != tc.want {
				t.Fatalf("exit %d: %s\ngot:\n%s\nwant:\n%s", code, errb.String(), out.String(), tc.want)
			}
		})
	}
}

// TestClusterDescribeShowsTheMonitorVerdict: describe prints the Monitor's verdict and its node
// pools', and says so when there is none yet.
func TestClusterDescribeShowsTheMonitorVerdict(t *testing.T) {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /admin/v1/clusters/{id}", func(w http.ResponseWriter, r *http.Request) {
		d := adminapi.ClusterDescription{Summary: adminapi.ClusterSummary{ID: r.PathValue("id"), Shard: "mgmt-1", State: "ready"}}
		if r.PathValue("id") == "checked" {
			d.Monitor = &adminapi.MonitorHealth{Health: "stale", Reason: "no feedback from its management cluster for 4m0s",
				Since: time.Now().Add(-time.Minute), CheckedAt: time.Now().Add(-5 * time.Second), Replica: "monitor-2",
				NodePools: []adminapi.NodePoolHealth{{ID: "np1", Health: "stale", Reason: "no feedback"}}}
		}
		_ = json.NewEncoder(w).Encode(d)
	})
	api, _, _, _ := adminAPI(t, mux)
	for _, tc := range []struct {
		id   string
		want []string
	}{
		{"checked", []string{"Monitor:", "stale since", "no feedback from its management cluster for 4m0s", "by monitor-2", "node pool np1:"}},
		{"unchecked", []string{"Monitor:", "no verdict yet"}},
	} {
		t.Run(tc.id, func(t *testing.T) {
			var out, errb bytes.Buffer
			if code := run(append(api, "cluster", "describe", tc.id), noEnv, &out, &errb); code != 0 {
				t.Fatalf("exit %d: %s", code, errb.String())
			}
			for _, w := range tc.want {
				if !strings.Contains(out.String(), w) {
					t.Errorf("describe does not say %q:\n%s", w, out.String())
				}
			}
		})
	}
}
