package main

import (
	"bytes"
	"strings"
	"testing"
)

// TestCommandLine covers what hcpctl decides before it calls anything: exit status 2 and a
// message naming the flag or command at fault.
func TestCommandLine(t *testing.T) {
	env := func(string) string { return "" }
	for _, tc := range []struct {
		name string
		args []string
		code int
		want string
	}{
		{"global_flag_before_the_words_is_kept", []string{"--region-file", "/nope/r.json", "shard", "list"}, 2, "--region-file /nope/r.json"},
		{"global_flag_after_the_words", []string{"shard", "list", "--region-file", "/nope/s.json"}, 2, "--region-file /nope/s.json"},
		{"reason_checked_before_any_call", []string{"--region-file", "/nope/r.json", "shard", "cordon", "mgmt-1"}, 2, "--reason is required"},
		{"status_required_for_set_status", []string{"shard", "set-status", "mgmt-1", "--reason", "x"}, 2, "--status is required"},
		{"missing_argument", []string{"cluster", "describe"}, 2, "cluster describe takes <cluster service ID | ARM resource ID>, got 0"},
		{"extra_argument", []string{"shard", "list", "mgmt-1"}, 2, "shard list takes no arguments, got 1"},
		{"unknown_noun", []string{"nodes", "list"}, 2, `unknown command "nodes"`},
		{"noun_without_verb", []string{"shard"}, 2, "needs a verb: list, cordon, uncordon, set-status"},
		{"unknown_flag", []string{"shard", "list", "--colour"}, 2, "flag provided but not defined: -colour"},
		{"admin_url_needs_files", []string{"--admin-url", "https://127.0.0.1:1", "shard", "list"}, 2, "--admin-url needs --ca, --cert and --key"},
		{"bad_output", []string{"-o", "xml", "shard", "list"}, 2, `invalid value "xml" for -o`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out, errb bytes.Buffer
			code := run(tc.args, env, &out, &errb)
			if code != tc.code || !strings.Contains(errb.String(), tc.want) {
				t.Fatalf("exit %d (want %d), stderr:\n%s\nwant it to say %q", code, tc.code, errb.String(), tc.want)
			}
		})
	}
	var out bytes.Buffer
	if code := run([]string{"help"}, env, &out, &out); code != 0 || !strings.Contains(out.String(), "shard cordon <shard>") {
		t.Fatalf("help: %d\n%s", code, out.String())
	}
}
