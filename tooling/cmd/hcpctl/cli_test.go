package main

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/openhcp/openhcp/admin/pkg/adminapi"
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

// TestHelpExitsZero: --help and -h print the usage, flags and an example on stdout and exit 0,
// on the root, a noun and a verb.
func TestHelpExitsZero(t *testing.T) {
	for _, args := range [][]string{{"--help"}, {"-h"}, {"shard", "--help"}, {"cluster", "list", "--help"}, {"cluster", "list", "-h"}, {"help", "shard", "cordon"}} {
		t.Run(strings.Join(args, "_"), func(t *testing.T) {
			var out, errb bytes.Buffer
			code := run(args, noEnv, &out, &errb)
			if code != 0 || !strings.Contains(out.String(), "Usage:") || !strings.Contains(out.String(), "Examples:") {
				t.Fatalf("exit %d, stdout:\n%s\nstderr:\n%s", code, out.String(), errb.String())
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
}

// TestVersion: hcpctl version prints the client's build, without an admin API to call.
func TestVersion(t *testing.T) {
	var out, errb bytes.Buffer
	if code := run([]string{"--region-file", "/nope/region.json", "version"}, noEnv, &out, &errb); code != 0 || !strings.Contains(out.String(), "Client Version:") {
		t.Fatalf("exit %d\n%s%s", code, out.String(), errb.String())
	}
}

// TestCompletionShells: each shell's script is printed; an unknown shell is a usage error.
func TestCompletionShells(t *testing.T) {
	for _, tc := range []struct {
		shell, want string
		code        int
	}{
		{"bash", "complete -F _hcpctl hcpctl", 0},
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
