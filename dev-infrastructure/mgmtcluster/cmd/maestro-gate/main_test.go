package main

import (
	"strings"
	"testing"
)

// chartAllow is the --allow the maestro server chart renders for the dev region.
const chartAllow = "spiffe://cluster.local/ns/openhcp-admin/sa/admin=read-only,spiffe://cluster.local/ns/openhcp-cluster-service/sa/cluster-service=read-write"

// TestParse: the chart's arguments are accepted, and a gate that would be open, or would proxy
// off the pod's loopback, does not start.
func TestParse(t *testing.T) {
	chart := []string{"--listen=:8000", "--tls-cert=/t/tls.crt", "--tls-key=/t/tls.key", "--client-ca=/t/ca.crt",
		"--upstream=https://127.0.0.1:18000", "--upstream-ca=/t/ca.crt", "--allow=" + chartAllow,
		"--forward=:8090=127.0.0.1:18090,:8080=127.0.0.1:18080,:8083=127.0.0.1:18083"}
	with := func(flag, value string) []string {
		var out []string
		for _, a := range chart {
			if !strings.HasPrefix(a, flag+"=") {
				out = append(out, a)
			}
		}
		if value != "" {
			out = append(out, flag+"="+value)
		}
		return out
	}
	for _, tc := range []struct {
		name    string
		args    []string
		wantErr string
	}{
		{"chart_arguments_accepted", chart, ""},
		{"no_allow_list_refused", with("--allow", ""), "--allow"},
		{"a_common_name_allow_list_refused", with("--allow", "admin=read-only,cluster-service=read-write"), "--allow"},
		{"no_client_ca_refused", with("--client-ca", ""), "--client-ca"},
		{"plaintext_upstream_refused", with("--upstream", "http://127.0.0.1:18000"), "--upstream"},
		{"upstream_off_loopback_refused", with("--upstream", "https://10.0.0.1:18000"), "--upstream"},
		{"forward_off_loopback_refused", with("--forward", ":8090=10.0.0.1:18090"), "--forward"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := parse(tc.args)
			if tc.wantErr == "" {
				if err != nil {
					t.Fatalf("parse: %v", err)
				}
				if len(c.forwards) != 3 || c.rules.String() != chartAllow {
					t.Fatalf("parsed %+v", c)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("parse = %v, want an error naming %s", err, tc.wantErr)
			}
		})
	}
}
