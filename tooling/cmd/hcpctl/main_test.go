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
		{"unknown_flag", []string{"shard", "list", "--colour"}, 2, "unknown flag: --colour"},
		{"admin_url_needs_files", []string{"--admin-url", "https://127.0.0.1:1", "shard", "list"}, 2, "--admin-url needs --ca, --cert and --key"},
		{"bad_output", []string{"-o", "xml", "shard", "list"}, 2, `invalid value "xml" for -o`},
		{"scale_needs_a_size", []string{"nodepool", "scale", "np1", "--reason", "x"}, 2, "give --replicas N, or --min N --max M"},
		{"scale_replicas_or_autoscaling", []string{"nodepool", "scale", "np1", "--replicas", "3", "--min", "1", "--max", "2", "--reason", "x"}, 2, "not both"},
		{"autoscaling_needs_min_and_max", []string{"nodepool", "scale", "np1", "--min", "1", "--reason", "x"}, 2, "needs both --min and --max"},
		{"scale_needs_a_reason", []string{"nodepool", "scale", "np1", "--replicas", "3"}, 2, "--reason is required: say why you scale node pool np1"},
		{"upgrade_needs_a_version", []string{"upgrade", "start", "c1", "--reason", "x"}, 2, "--version is required"},
		{"pause_until_or_for", []string{"cluster", "pause", "c1", "--until", "2030-01-01T00:00:00Z", "--for", "1h", "--reason", "x"}, 2, "--until or --for, not both"},
		{"resume_needs_a_reason", []string{"cluster", "resume", "c1"}, 2, "--reason is required: say why you change cluster c1"},
		{"maintenance_needs_a_reason", []string{"shard", "maintenance", "mgmt-1"}, 2, "--reason is required"},
		// A person is named by identity.ValidPerson's rule, checked before any call.
		{"revoke_names_a_person", []string{"--region-file", "/nope/r.json", "sre", "revoke", "sre.", "--reason", "x"}, 2, `"sre." must not end with a dot`},
		{"revoke_names_no_service", []string{"--region-file", "/nope/r.json", "sre", "revoke", "Cluster-Service", "--reason", "x"}, 2, "is a service's name"},
		{"breakglass_revoke_person", []string{"--region-file", "/nope/r.json", "breakglass", "revoke", "--person", "Alice Smith", "--reason", "x"}, 2, "--person: not a person's name"},
		{"breakglass_list_person", []string{"--region-file", "/nope/r.json", "breakglass", "list", "--person", "a\u200bdmin"}, 2, "--person: not a person's name"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out, errb bytes.Buffer
			code := run(tc.args, env, &out, &errb)
			if code != tc.code || !strings.Contains(errb.String(), tc.want) {
				t.Fatalf("exit %d (want %d), stderr:\n%s\nwant it to say %q", code, tc.code, errb.String(), tc.want)
			}
		})
	}
}
