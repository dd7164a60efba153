package main

import "testing"

// The region's server certificates name their service, never an address: a server dialed by
// address is asked for its service's name, one dialed by DNS name for that name.
func TestServerNameFor(t *testing.T) {
	for _, tc := range []struct{ hostport, server, want string }{
		{"127.0.0.1:8444", "admin", "admin.openhcp.local"},
		{"[::1]:8444", "admin", "admin.openhcp.local"},
		{"localhost:8445", "gateway", "gateway.openhcp.local"},
		{"127.0.0.1", "gateway", "gateway.openhcp.local"},
		{"admin.eastus.example.com:443", "admin", ""},
		{"gateway.test:8445", "gateway", ""},
	} {
		if got := serverNameFor(tc.hostport, tc.server); got != tc.want {
			t.Errorf("serverNameFor(%q, %q) = %q, want %q", tc.hostport, tc.server, got, tc.want)
		}
	}
}
