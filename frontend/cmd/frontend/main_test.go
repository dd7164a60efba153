package main

import (
	"strings"
	"testing"
	"time"

	"github.com/openhcp/openhcp/frontend/pkg/frontend"
)

func TestParseFlags(t *testing.T) {
	base := []string{"--db-dsn=postgres://127.0.0.1/x", "--cluster-service=127.0.0.1:9000", "--location=eastus"}
	for _, tc := range []struct {
		name    string
		args    []string
		env     map[string]string
		wantErr string
	}{
		{"defaults", base, nil, ""},
		{"env_fallback", nil, map[string]string{"FRONTEND_DB_DSN": "postgres://127.0.0.1/x", "FRONTEND_CLUSTER_SERVICE": "127.0.0.1:9000", "FRONTEND_LOCATION": "eastus"}, ""},
		{"missing_db_dsn_names_flag_and_env", []string{"--cluster-service=127.0.0.1:9000", "--location=eastus"}, nil, "--db-dsn is required (or set FRONTEND_DB_DSN)"},
		{"unknown_store_names_flag", append(base, "--store=mongo"), nil, `invalid value "mongo" for --store`},
		{"cosmos_store_needs_endpoint", append(base, "--store=cosmos"), nil, "--cosmos-endpoint is required with --store=cosmos (or set FRONTEND_COSMOS_ENDPOINT)"},
		{"bad_listen_names_flag", append(base, "--listen=nonsense"), nil, "--listen"},
		{"bad_duration_from_env_names_flag", base, map[string]string{"FRONTEND_RETRY_AFTER": "soon"}, "--retry-after from FRONTEND_RETRY_AFTER"},
		{"retry_after_below_a_second", append(base, "--retry-after=10ms"), nil, "--retry-after"},
		{"list_cache_bytes_must_be_positive", append(base, "--list-cache-bytes=0"), nil, "--list-cache-bytes"},
		{"cluster_service_timeout_under_the_backends_grace", append(base, "--cluster-service-timeout=2m"), nil, "--cluster-service-timeout"},
		{"cluster_service_timeout_positive", append(base, "--cluster-service-timeout=0s"), nil, "--cluster-service-timeout"},
		{"bad_log_level", append(base, "--log-level=loud"), nil, "--log-level"},
		{"unknown_flag", append(base, "--nope"), nil, "nope"},
		{"tls_needs_client_ca_and_subjects", append(base, "--tls-cert=c", "--tls-key=k"), nil, "--tls-cert needs --tls-client-ca and --arm-client-subjects"},
		{"client_ca_needs_subjects", append(base, "--tls-cert=c", "--tls-key=k", "--tls-client-ca=ca"), nil, "--arm-client-subjects"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o, err := parseFlags(tc.args, func(k string) string { return tc.env[k] })
			if tc.wantErr == "" {
				if err != nil {
					t.Fatal(err)
				}
				if o.listen != "127.0.0.1:8443" || o.retryAfter != 5*time.Second || o.location != "eastus" || o.listItemsBytes != frontend.DefaultListItemsBytes {
					t.Fatalf("options %+v", o)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("error %v, want one containing %q", err, tc.wantErr)
			}
		})
	}
}

func TestRunRefusesPlaintextOffLoopback(t *testing.T) {
	for _, tc := range []struct{ name, flag, value string }{
		{"listen", "--listen", "0.0.0.0:8443"},
		{"metrics", "--metrics-listen", "0.0.0.0:8081"},
		{"cluster_service", "--cluster-service", "cs.example.com:8090"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			args := []string{"--db-dsn=postgres://127.0.0.1/x", "--cluster-service=127.0.0.1:9000", "--location=eastus", tc.flag + "=" + tc.value}
			o, err := parseFlags(args, func(string) string { return "" })
			if err != nil {
				t.Fatal(err)
			}
			err = run(o)
			if err == nil || !strings.Contains(err.Error(), tc.flag+" ") || !strings.Contains(err.Error(), "loopback") {
				t.Fatalf("run = %v; want a refusal naming %s", err, tc.flag)
			}
		})
	}
}
