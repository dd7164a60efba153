package main

import (
	"strings"
	"testing"
	"time"
)

// TestParseFlags: the required flags and bad values stop start-up with a message naming the
// flag; environment variables stand in for flags.
func TestParseFlags(t *testing.T) {
	full := []string{"--tls-cert", "g.crt", "--tls-key", "g.key", "--tls-client-ca", "person-ca.crt",
		"--audit-db-dsn", "postgres://admin@127.0.0.1/admin", "--session-key-file", "session.key"}
	without := func(flag string) []string {
		var out []string
		for i := 0; i < len(full); i += 2 {
			if full[i] != flag {
				out = append(out, full[i], full[i+1])
			}
		}
		return out
	}
	for _, tc := range []struct {
		name string
		args []string
		env  map[string]string
		want string
	}{
		{"complete", full, nil, ""},
		{"tls_client_ca_is_required", without("--tls-client-ca"), nil, "--tls-client-ca is required"},
		{"session_key_is_required", without("--session-key-file"), nil, "--session-key-file is required"},
		{"env_stands_in_for_a_flag", without("--session-key-file"), map[string]string{"GATEWAY_SESSION_KEY_FILE": "k"}, ""},
		{"plaintext_database_is_refused", append(without("--audit-db-dsn"), "--audit-db-dsn", "postgres://admin@db.example/admin?sslmode=disable"), nil, "--audit-db-dsn"},
		{"session_poll_bounded", append(full, "--session-poll", "10ms"), nil, "--session-poll"},
		{"session_poll_env_is_read", full, map[string]string{"GATEWAY_SESSION_POLL": "10ms"}, "--session-poll"},
		{"bad_listen", append(full, "--listen", "nowhere"), nil, "--listen"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o, err := parseFlags(tc.args, func(k string) string { return tc.env[k] })
			if tc.want == "" {
				if err != nil || o.poll != time.Second || o.listen != "127.0.0.1:8445" {
					t.Fatalf("parseFlags = %+v, %v", o, err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want one naming %s", err, tc.want)
			}
		})
	}
}
