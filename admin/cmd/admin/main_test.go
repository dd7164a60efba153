package main

import (
	"strings"
	"testing"
)

// TestParseFlagsRefusesPlaintext: the admin API has no plaintext mode (every TLS flag is
// required), its database logins must be verified TLS off loopback, and Maestro's REST API is
// https only; each refusal names its flag.
func TestParseFlagsRefusesPlaintext(t *testing.T) {
	base := map[string]string{
		"tls-cert": "s.crt", "tls-key": "s.key", "tls-client-ca": "ca.crt",
		"audit-db-dsn": "postgres://adminsvc@127.0.0.1/admin", "db-dsn": "postgres://adminsvc@127.0.0.1/resourceprovider",
		"cluster-service": "127.0.0.1:8090", "cluster-service-ca": "ca.crt", "cluster-service-cert": "c.crt", "cluster-service-key": "c.key",
	}
	for _, tc := range []struct {
		name, flag, value, wantErr string
	}{
		{"valid", "", "", ""},
		{"no_server_certificate", "tls-cert", "", "--tls-cert is required"},
		{"no_client_ca", "tls-client-ca", "", "--tls-client-ca is required"},
		{"no_cluster_service_certificate", "cluster-service-cert", "", "--cluster-service-cert is required"},
		{"plaintext_remote_document_store", "db-dsn", "postgres://adminsvc@db.example.com/rp?sslmode=disable", "--db-dsn: database host db.example.com"},
		{"unverified_remote_audit_log", "audit-db-dsn", "postgres://adminsvc@db.example.com/admin?sslmode=require", "--audit-db-dsn: database host db.example.com"},
		{"management_kubeconfig_without_shard", "management-kubeconfigs", "/tmp/k.yaml", "--management-kubeconfigs: entry \"/tmp/k.yaml\" is not shard=kubeconfig-path"},
		{"management_kubeconfig_twice", "management-kubeconfigs", "mgmt-1=/a,mgmt-1=/b", "--management-kubeconfigs: shard mgmt-1 is named twice"},
		{"plaintext_maestro_rest", "maestro-rest", "http://127.0.0.1:8000", "--maestro-rest: must be an https:// URL"},
		{"maestro_rest_without_a_client_certificate", "maestro-rest", "https://127.0.0.1:8000", "--maestro-rest needs --maestro-cert"},
		{"session_key_without_a_gateway", "session-key-file", "/tmp/session.key", "--gateway-url"},
		{"plaintext_url", "url", "http://admin.example:8444", "--url: must be an https:// URL"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var args []string
			for k, v := range base {
				if k != tc.flag {
					args = append(args, "--"+k+"="+v)
				}
			}
			if tc.flag != "" && tc.value != "" {
				args = append(args, "--"+tc.flag+"="+tc.value)
			}
			_, err := parseFlags(args, func(string) string { return "" })
			if tc.wantErr == "" {
				if err != nil {
					t.Fatalf("parseFlags = %v", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("parseFlags = %v, want an error containing %q", err, tc.wantErr)
			}
		})
	}
}

// TestOwnURL: the admin API's own URL (the origin the portal's forms must come from) is --url,
// or --listen's address when that names a host; never a request's Host.
func TestOwnURL(t *testing.T) {
	for _, tc := range []struct{ listen, url, want string }{
		{"127.0.0.1:8444", "", "https://127.0.0.1:8444"},
		{"0.0.0.0:8444", "", ""},
		{"[::]:8444", "", ""},
		{"0.0.0.0:8444", "https://admin.example:8444, https://10.0.0.5:31444", "https://admin.example:8444,https://10.0.0.5:31444"},
	} {
		o := &options{listen: tc.listen, urls: tc.url}
		if got := strings.Join(o.urlList(), ","); got != tc.want {
			t.Errorf("--listen %s --url %q: %q, want %q", tc.listen, tc.url, got, tc.want)
		}
	}
}
