package main

import (
	"bytes"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// runAsHcpctl makes the test binary act as hcpctl (for the completion script, which calls
// "<program> __complete …").
const runAsHcpctl = "HCPCTL_TEST_RUN_AS_HCPCTL"

func TestMain(m *testing.M) {
	if os.Getenv(runAsHcpctl) == "1" {
		os.Exit(run(os.Args[1:], os.Getenv, os.Stdout, os.Stderr))
	}
	os.Exit(m.Run())
}

// getCompWordsByRef stands in for bash-completion's function of that name (which cobra's
// script uses) where the bash-completion package is not installed: the words split at blanks.
const getCompWordsByRef = `_get_comp_words_by_ref() {
  cur=${COMP_WORDS[COMP_CWORD]}; prev=${COMP_WORDS[COMP_CWORD-1]}; words=("${COMP_WORDS[@]}"); cword=$COMP_CWORD
}
`

// TestBashCompletion sources the printed script in a real bash, with this test binary as
// hcpctl, and asks _hcpctl what it offers: nouns, verbs, flags, and shard names from the
// admin API.
func TestBashCompletion(t *testing.T) {
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Skip("no bash on PATH")
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	var script bytes.Buffer
	if code := run([]string{"completion", "bash"}, noEnv, &script, os.Stderr); code != 0 {
		t.Fatalf("completion bash: exit %d", code)
	}
	dir := t.TempDir()
	file := filepath.Join(dir, "hcpctl.bash")
	if err := os.WriteFile(file, script.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
	prelude := getCompWordsByRef
	if _, err := os.Stat("/usr/share/bash-completion/bash_completion"); err == nil {
		prelude = "source /usr/share/bash-completion/bash_completion\n"
	}
	api, _, _, _ := adminAPI(t, clusterAPI())
	for _, tc := range []struct {
		name  string
		words []string
		want  []string
	}{
		{"nouns", []string{""}, []string{"cluster", "shard", "audit", "completion", "version"}},
		{"shard_verbs", []string{"shard", ""}, []string{"cordon", "uncordon", "drain-status"}},
		{"cordon_flags", []string{"shard", "cordon", "--"}, []string{"--reason", "--if-match", "--as", "--help"}},
		{"audit_flags", []string{"audit", "--p"}, []string{"--person"}},
		{"shells", []string{"completion", ""}, []string{"bash", "zsh", "fish"}},
		{"output_formats", []string{"shard", "list", "-o", ""}, []string{"json", "yaml", "wide"}},
		{"shard_names_from_the_admin_api", append(append([]string{}, api...), "shard", "cordon", ""), []string{"mgmt-1", "mgmt-2"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			words := []string{"'" + self + "'"}
			for _, w := range tc.words {
				words = append(words, "'"+w+"'")
			}
			prog := prelude + "source " + file + "\nCOMP_WORDS=(" + strings.Join(words, " ") + ")\nCOMP_CWORD=" +
				strconv.Itoa(len(tc.words)) + "\n_hcpctl\nprintf '%s\\n' \"${COMPREPLY[@]}\"\n"
			cmd := exec.Command(bash, "--norc", "-c", prog)
			cmd.Env = append(os.Environ(), runAsHcpctl+"=1")
			out, err := cmd.CombinedOutput()
			if err != nil {
				t.Fatalf("bash: %v\n%s", err, out)
			}
			got := strings.Fields(string(out))
			for _, w := range tc.want {
				if !contains(got, w) {
					t.Errorf("completion of %q offers %v, want %s among them", tc.words, got, w)
				}
			}
		})
	}
}

// TestDynamicCompletion asks hcpctl's __complete (what every shell's script calls) for cluster
// IDs and shard names: from the admin API when it answers, nothing (and no error) when not.
func TestDynamicCompletion(t *testing.T) {
	api, _, _, _ := adminAPI(t, clusterAPI())
	down, _, _, _ := adminAPI(t, http.NotFoundHandler())
	for _, tc := range []struct {
		name      string
		args      []string
		want, not []string
	}{
		{"cluster_ids_for_describe", append(append([]string{}, api...), "__complete", "cluster", "describe", ""),
			[]string{"c0ffee00000000000000000000000001\tone ready on mgmt-1", "c0ffee00000000000000000000000002"}, nil},
		{"cluster_ids_by_prefix", append(append([]string{}, api...), "__complete", "breakglass", "open", "c0ffee00000000000000000000000002"),
			[]string{"c0ffee00000000000000000000000002"}, []string{"c0ffee00000000000000000000000001"}},
		{"no_second_cluster_id", append(append([]string{}, api...), "__complete", "cluster", "describe", "c0ffee00000000000000000000000001", ""),
			nil, []string{"c0ffee"}},
		{"shard_names_for_drain_status", append(append([]string{}, api...), "__complete", "shard", "drain-status", "mgmt"),
			[]string{"mgmt-1\tactive", "mgmt-2\tmaintenance"}, nil},
		{"shard_flag_of_cluster_list", append(append([]string{}, api...), "__complete", "cluster", "list", "--shard", ""),
			[]string{"mgmt-1", "mgmt-2"}, nil},
		{"refusing_admin_api_completes_nothing", append(append([]string{}, down...), "__complete", "shard", "cordon", ""),
			[]string{":4"}, []string{"mgmt", "hcpctl:"}},
		{"no_admin_api_completes_nothing", []string{"--region-file", "/nope/region.json", "__complete", "cluster", "describe", ""},
			[]string{":4"}, []string{"c0ffee", "hcpctl:"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out, errb bytes.Buffer
			code := run(tc.args, noEnv, &out, &errb)
			if code != 0 {
				t.Fatalf("exit %d: %s", code, errb.String())
			}
			for _, w := range tc.want {
				if !strings.Contains(out.String(), w) {
					t.Errorf("offers\n%s\nwant %q", out.String(), w)
				}
			}
			for _, n := range tc.not {
				if strings.Contains(out.String()+errb.String(), n) {
					t.Errorf("offers\n%s%s\nwant no %q", out.String(), errb.String(), n)
				}
			}
		})
	}
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}
